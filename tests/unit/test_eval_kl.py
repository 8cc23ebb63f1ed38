#!/usr/bin/env python3
"""test_eval_kl.py — sixi-eval kl's stored rows recomputed in Python (plain python3, sqlite3 from
the standard library): the tiny qwen35moe model in F32, Q8_0 and Q4_0 (sixi-server --write-tiny
--moe --type T), three runs of `sixi-eval kl` against the F32 file on a text, then
 - mean KL, nearest-rank p99, top-1 agreement and the perplexity ratio recomputed from kl_rows
   equal what `sixi-report kl --json` and `sixi-eval kl --json` say (1e-12 relative);
 - the files order as expected: F32 against itself 0 exactly, then Q8_0, then Q4_0 (KL grows);
 - every row's KL is >= 0 and the positions are 0..n-2.
usage: test_eval_kl.py BUILD_ROOT (meson passes it; SIXI_SOURCE_ROOT gives the text)."""
import json, math, os, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from kl_files import write_models, write_text, close_within  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SIXI_BUILD_ROOT", "build")
src = os.environ.get("SIXI_SOURCE_ROOT", ".")
server, ev, rep = (os.path.join(build, "src", p) for p in ("sixi-server", "sixi-eval", "sixi-report"))
fails = 0


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print("FAIL: " + what)


close = close_within(1e-12)


with tempfile.TemporaryDirectory(prefix="sixi-test-klpy-") as d:
    files = write_models(server, d)
    text, _ = write_text(src, d, 4000)
    db = os.path.join(d, "kl.db")
    live = {}
    for t in ("F32", "Q8_0", "Q4_0"):
        r = subprocess.run([ev, "kl", "--reference", files["F32"], "--model", files[t], "--text", text,
                            "--ctx", "128", "--threads", "2", "--db", db, "--json"], capture_output=True, text=True)
        check(r.returncode == 0, "sixi-eval kl %s: %s" % (t, r.stderr))
        live[t] = json.loads(r.stdout)
    r = subprocess.run([rep, "kl", "--db", db, "--json"], capture_output=True, text=True)
    check(r.returncode == 0, "sixi-report kl: " + r.stderr)
    report = {row["run"]: row for row in json.loads(r.stdout)}
    con = sqlite3.connect(db)
    mine = {}
    for t in ("F32", "Q8_0", "Q4_0"):
        run = live[t]["run"]
        rows = con.execute("SELECT position, kl, top1_same, logp_ref, logp_cand FROM kl_rows WHERE run = ?"
                           " ORDER BY position", (run,)).fetchall()
        n = len(rows)
        kls = sorted(x[1] for x in rows)
        fig = {
            "positions": n,
            "kl_mean": sum(x[1] for x in rows) / n,
            "kl_p99": kls[math.ceil(0.99 * n) - 1],
            "top1": sum(x[2] for x in rows) / n,
            "ppl_ratio": math.exp(-sum(x[4] for x in rows) / n) / math.exp(-sum(x[3] for x in rows) / n),
        }
        mine[t] = fig
        check([x[0] for x in rows] == list(range(n)), "%s: positions are 0..n-2" % t)
        check(all(x[1] >= 0 for x in rows), "%s: every KL >= 0" % t)
        for k, v in fig.items():
            check(close(v, report[run][k]), "%s %s: python %r, sixi-report %r" % (t, k, v, report[run][k]))
            check(close(v, live[t][k]), "%s %s: python %r, sixi-eval %r" % (t, k, v, live[t][k]))
        print("%s vs F32: %d positions, mean KL %.4g, p99 %.4g, top-1 %.4f, perplexity ratio %.6f (python = report)"
              % (t, n, fig["kl_mean"], fig["kl_p99"], fig["top1"], fig["ppl_ratio"]))
    check(mine["F32"]["kl_mean"] == 0 and mine["F32"]["top1"] == 1, "F32 against itself is exactly 0")
    check(0 < mine["Q8_0"]["kl_mean"] < mine["Q4_0"]["kl_mean"], "KL grows: F32 < Q8_0 < Q4_0")
    check(mine["Q8_0"]["kl_p99"] < mine["Q4_0"]["kl_p99"], "p99 grows: Q8_0 < Q4_0")
    con.close()
print("%d failed" % fails)
sys.exit(1 if fails else 0)
