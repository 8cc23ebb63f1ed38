#!/usr/bin/env python3
"""test_report_kl_rule.py — sixi-report kl --speed: the file-choice rule ("a file closer to the
reference wins when it costs less than about 10 % of the speed") applied to stored rows.

Files: the tiny qwen35moe model in F32, Q8_0 and Q4_0 (sixi-server --write-tiny --moe --type T);
two sixi-eval kl runs against the F32 file (Q8_0 is the closer one). Speeds: two sixi-bench
sweeps (concurrency 1 and 2) against sixi-server --simulate on 127.0.0.1, a device whose pass
takes 40 ms and one whose pass takes 80 ms, so the slow run costs about half the speed (host
overhead can only bring the two closer, never past the 10 % line). Checks:
 - Q8_0 on the slow device, Q4_0 on the fast: Q4_0 wins, Q8_0 "costs too much", each line says why;
 - both on the fast device's run (the same run, so cost 0 exactly): Q8_0 wins, Q4_0 is "worse";
 - --max-cost 60: Q8_0 wins again on the slow device (its cost is below 60 %);
 - every tok/s and cost the report prints is recomputed here from bench_requests (1e-9);
 - bad input is refused with exit 2 and a message naming it: a malformed pair, a missing bench
   run, a kl run given as the bench run, a shown run without a pair, runs against other
   references.
No verdict depends on how fast this machine is. usage: test_report_kl_rule.py BUILD_ROOT"""
import json, os, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kl_files import write_models, write_text, close_within  # noqa: E402
from server_proc import Server  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SIXI_BUILD_ROOT", "build")
src = os.environ.get("SIXI_SOURCE_ROOT", ".")
server, ev, rep, bench = (os.path.join(build, "src", p) for p in ("sixi-server", "sixi-eval", "sixi-report", "sixi-bench"))
fails = 0


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print("FAIL: " + what)
    return ok


def run(*args, timeout=300):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def start_sim(d, name, weight_gb):
    cfg = os.path.join(d, name + ".json")
    with open(cfg, "w") as f:
        json.dump({"base": "thor", "weight_gb": weight_gb, "bandwidth_gbps": 25, "decode_row_ms": 0,
                   "prefill_row_ms": 0, "host_row_ms": 0, "slots": 4, "context": 4096}, f)
    return Server(server, ["--simulate", cfg], d, name)


def agg_tok_s(con, bench_run):
    """Aggregate tok/s per level as sixi(7) defines it: completion tokens of the successful
    requests over first send to last done."""
    out = {}
    for level, in con.execute("SELECT DISTINCT level FROM bench_requests WHERE run = ? AND phase = 'measure'",
                              (bench_run,)):
        rows = con.execute("SELECT completion_tokens, coalesce(t_intended, 0), t_send, t_done FROM bench_requests"
                           " WHERE run = ? AND phase = 'measure' AND level = ? AND error IS NULL",
                           (bench_run, level)).fetchall()
        t0 = min(ti if ti else ts for _, ti, ts, _ in rows)
        t1 = max(td for *_, td in rows)
        out[str(level)] = sum(r[0] for r in rows) / ((t1 - t0) / 1e9)
    return out


close = close_within(1e-9)


with tempfile.TemporaryDirectory(prefix="sixi-test-klrule-") as d:
    files = write_models(server, d)
    text, _ = write_text(src, d, 2000)
    db = os.path.join(d, "kl.db")
    kl = {}
    for ref, t in (("F32", "Q8_0"), ("F32", "Q4_0"), ("Q8_0", "Q4_0")):
        r = run(ev, "kl", "--reference", files[ref], "--model", files[t], "--text", text, "--ctx", "128",
                "--threads", "2", "--db", db, "--json")
        check(r.returncode == 0, "sixi-eval kl %s against %s: %s" % (t, ref, r.stderr))
        kl[(ref, t)] = json.loads(r.stdout)
    q8, q4, other = kl[("F32", "Q8_0")]["run"], kl[("F32", "Q4_0")]["run"], kl[("Q8_0", "Q4_0")]["run"]
    check(kl[("F32", "Q8_0")]["kl_mean"] < kl[("F32", "Q4_0")]["kl_mean"], "Q8_0 is closer to F32 than Q4_0")

    runs = {}
    for name, gb in (("fast", 1), ("slow", 2)):
        srv = start_sim(d, name, gb)
        try:
            r = run(bench, "sweep", "--url", srv.url, "--model", "sim", "--concurrency", "1,2", "--max-tokens", "8",
                    "--rounds", "3", "--warmup", "1", "--db", db, "--no-plots", "--json")
        finally:
            srv.stop()
        check(r.returncode == 0, "sixi-bench sweep on the %s device: %s" % (name, r.stderr[-2000:]))
        runs[name] = json.loads(r.stdout)["run"]
    con = sqlite3.connect(db)
    speed = {name: agg_tok_s(con, run_id) for name, run_id in runs.items()}
    print("tok/s per level: fast %r, slow %r" % (speed["fast"], speed["slow"]))

    def report(*args):
        r = run(rep, "kl", "--db", db, *args)
        return r.returncode, r.stdout, r.stderr

    def judged(*args):
        rc, out, err = report(*args, "--json")
        check(rc == 0, "sixi-report kl %s: %s" % (" ".join(args), err))
        return {row["run"]: row for row in json.loads(out)} if rc == 0 else {}

    # 1. the closer file on the slow device: it costs about half the speed and loses
    j = judged(str(q8), str(q4), "--speed", "%d=%d" % (q8, runs["slow"]), "--speed", "%d=%d" % (q4, runs["fast"]))
    if j:
        check(j[q4]["rule"] == "winner" and j[q8]["rule"] == "costs too much",
              "Q4_0 on the fast device wins, Q8_0 on the slow one costs too much (%r)" % j)
        for run_id, name in ((q8, "slow"), (q4, "fast")):
            for lv, v in speed[name].items():
                check(close(j[run_id]["tok_s"][lv], v), "run %d tok/s at %s: %r against %r recomputed" %
                      (run_id, lv, j[run_id]["tok_s"][lv], v))
        cost = max(1 - speed["slow"][lv] / max(speed["slow"][lv], speed["fast"][lv]) for lv in speed["slow"])
        check(close(j[q8]["speed_cost"], cost), "Q8_0's cost %r equals %r recomputed" % (j[q8]["speed_cost"], cost))
        check(j[q8]["speed_cost"] > 0.10 and j[q4]["speed_cost"] == 0, "costs: %r, %r" %
              (j[q8]["speed_cost"], j[q4]["speed_cost"]))
    rc, out, err = report(str(q8), str(q4), "--speed", "%d=%d" % (q8, runs["slow"]), "--speed",
                          "%d=%d" % (q4, runs["fast"]))
    check(rc == 0 and "Rule: a file closer to the reference wins when it costs less than 10% of the speed" in out
          and ("run %d (" % q4) in out and "wins:" in out and "slower than the fastest file" in out,
          "the Markdown says the rule and why each file won or lost:\n" + out + err)

    # 2. both on the fast device's run: the same speed, so the closer file wins
    j = judged(str(q8), str(q4), "--speed", "%d=%d" % (q8, runs["fast"]), "--speed", "%d=%d" % (q4, runs["fast"]))
    if j:
        check(j[q8]["rule"] == "winner" and j[q4]["rule"] == "worse" and j[q8]["speed_cost"] == 0,
              "same speed: Q8_0 wins, Q4_0 is worse (%r)" % j)

    # 3. a looser rule lets the closer, slower file win
    j = judged("--speed", "%d=%d" % (q8, runs["slow"]), "--speed", "%d=%d" % (q4, runs["fast"]), "--max-cost", "60")
    if j:
        check(j[q8]["rule"] == "winner" and j[q8]["max_cost"] == 0.6, "--max-cost 60: Q8_0 wins (%r)" % j)

    # 4. bad input: exit 2, a message naming what is wrong, nothing printed on stdout
    bad = [
        (["--speed", "%d" % q8], "is not KL_RUN=BENCH_RUN"),
        (["--speed", "%d=999" % q8], "bench run 999 does not exist"),
        (["--speed", "%d=%d" % (q8, q4)], "not a finished sixi-bench run"),
        ([str(q8), str(q4), "--speed", "%d=%d" % (q8, runs["fast"])], "kl run %d has no --speed" % q4),
        (["--speed", "%d=%d" % (q8, runs["fast"]), "--speed", "%d=%d" % (other, runs["fast"])],
         "measured against other references"),
        (["--speed", "%d=%d" % (q8, runs["fast"]), "--max-cost", "0"], "--max-cost"),
    ]
    for args, want in bad:
        rc, out, err = report(*args)
        check(rc == 2 and want in err and out == "", "%r: exit 2 and '%s' (got %d, %r, %r)" % (args, want, rc, err, out))

print("%d failed" % fails if fails else "ok")
sys.exit(1 if fails else 0)
