#!/usr/bin/env python3
"""sixi-report export and the bench report's plots, against real runs of sixi-bench on
sixi-server --simulate (127.0.0.1): a sweep with two levels, a sweep with --repeats 2,
and a small concurrency search on a one-slot device.

export: the vLLM --save-result JSON and the AIPerf CSV are recomputed here, in Python,
from the bench_requests rows by each tool's own definition (sixi(7)), and must agree
to rounding; a run with several levels or repeats must be told which one, and bad
input exits 2 and leaves no file.
plots: sixi-report bench writes the Pareto, timeline and (for the search) goodput
plots as PNG and SVG, the HTML page references them, and the data files behind them
hold what the DB (and the search's stored summary) says.
No verdict depends on speed: every check compares two computations from the same
stored times. Servers are stopped by PID; every run is bounded by a timeout.

  test_report_export.py   (SIXI_SOURCE_ROOT, SIXI_BUILD_ROOT)
"""
import csv
import io
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_proc import Server  # noqa: E402

BUILD = os.environ.get("SIXI_BUILD_ROOT", "build")
EXE = {p: os.path.join(BUILD, "src", "sixi-" + p) for p in ("bench", "report", "server")}
TMP = tempfile.mkdtemp(prefix="sixi-export-")
FAILS = []
CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def close(a, b, what, rel=1e-9, abs_=1e-9):
    ok = a is not None and b is not None and abs(a - b) <= abs_ + rel * abs(b)
    return check(ok, "%s: export %r, recomputed %r" % (what, a, b))


def run(*args, timeout=300):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


class Sim(Server):
    def __init__(self, *args):
        super().__init__(EXE["server"], ["--simulate", *args], TMP)


# ---- numpy's definitions, written out ----

def pct(v, p):
    v = sorted(v)
    if not v:
        return 0.0
    pos = p / 100 * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def mean(v):
    return sum(v) / len(v) if v else 0.0


def pstd(v):
    if not v:
        return 0.0
    m = mean(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / len(v))


def db_rows(db, run_id, level, repeat=None, rounds=None):
    con = sqlite3.connect(db)
    try:
        rs = con.execute("SELECT seq, prompt_tokens, completion_tokens, t_intended, t_send, t_first_token, t_last,"
                         " t_done, error, itl_json FROM bench_requests WHERE run = ? AND level = ? AND"
                         " phase = 'measure' ORDER BY level, stream, seq", (run_id, level)).fetchall()
    finally:
        con.close()
    keys = ("seq", "prompt", "completion", "intended", "send", "first", "last", "done", "error", "itl")
    out = [dict(zip(keys, r)) for r in rs]
    if repeat is not None:
        out = [r for r in out if r["seq"] // rounds == repeat - 1]
    return out


# ---- export ----

def check_vllm(v, rs, what, level):
    ok = [r for r in rs if r["error"] is None and r["first"]]
    check(len(v["input_lens"]) == len(rs) == v["num_prompts"], "%s: one array entry per request (%d, %d)" %
          (what, len(v["input_lens"]), len(rs)))
    check(v["completed"] == len(ok), "%s completed %r, rows %d" % (what, v["completed"], len(ok)))
    check(v["total_input_tokens"] == sum(r["prompt"] for r in ok), what + " total_input_tokens")
    check(v["total_output_tokens"] == sum(r["completion"] for r in ok), what + " total_output_tokens")
    check(v["max_concurrency"] == level and v["request_rate"] == "inf", "%s: a sweep level is a concurrency "
          "(%r, %r)" % (what, v["max_concurrency"], v["request_rate"]))
    t0 = min((r["intended"] or r["send"]) for r in rs)
    t1 = max((r["done"] or r["last"]) for r in rs)
    dur = (t1 - t0) / 1e9
    close(v["duration"], dur, what + " duration")
    close(v["request_throughput"], len(ok) / dur, what + " request_throughput")
    close(v["output_throughput"], sum(r["completion"] for r in ok) / dur, what + " output_throughput")
    close(v["total_token_throughput"], sum(r["prompt"] + r["completion"] for r in ok) / dur,
          what + " total_token_throughput")
    ttft = [(r["first"] - r["send"]) / 1e6 for r in ok]
    e2el = [(r["last"] - r["send"]) / 1e6 for r in ok]
    tpot = [(r["last"] - r["first"]) / 1e6 / (r["completion"] - 1) for r in ok if r["completion"] > 1]
    itl = [g / 1e6 for r in ok for g in json.loads(r["itl"] or "[]")]
    check(len(itl) > 0, what + ": event gaps were stored (itl_json)")
    for name, xs in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
        close(v["mean_%s_ms" % name], mean(xs), "%s mean_%s_ms" % (what, name), abs_=1e-6)
        close(v["median_%s_ms" % name], pct(xs, 50), "%s median_%s_ms" % (what, name), abs_=1e-6)
        close(v["std_%s_ms" % name], pstd(xs), "%s std_%s_ms" % (what, name), rel=1e-6, abs_=1e-6)
        close(v["p99_%s_ms" % name], pct(xs, 99), "%s p99_%s_ms" % (what, name), abs_=1e-6)
    for i, r in enumerate(rs):
        good = r["error"] is None and r["first"]
        close(v["ttfts"][i], (r["first"] - r["send"]) / 1e9 if good else 0.0, "%s ttfts[%d]" % (what, i))
        want = [g / 1e9 for g in json.loads(r["itl"] or "[]")] if good else []
        check(len(v["itls"][i]) == len(want) and all(abs(a - b) < 1e-12 for a, b in zip(v["itls"][i], want)),
              "%s itls[%d] is the request's event gaps in s" % (what, i))
        check(v["output_lens"][i] == (r["completion"] if good else 0), "%s output_lens[%d]" % (what, i))
        check(v["errors"][i] == ("" if good else v["errors"][i]) and v["generated_texts"][i] is None,
              "%s errors/generated_texts[%d]" % (what, i))


def check_aiperf(text, rs, what):
    lines = text.split("\n\n")
    check(len(lines) == 2, what + ": a statistics block and a throughput block")
    stats = {r["Metric"]: r for r in csv.DictReader(io.StringIO(lines[0]))}
    want_cols = ["Metric", "avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"]
    check(lines[0].split("\n")[0].split(",") == want_cols, what + ": AIPerf's statistics columns")
    ok = [r for r in rs if r["error"] is None and r["first"]]
    ttft = [(r["first"] - r["send"]) / 1e6 for r in ok]
    lat = [((r["done"] or r["last"]) - r["send"]) / 1e6 for r in ok]
    itl = [(l - t) / (r["completion"] - 1) for r, t, l in zip(ok, ttft, lat) if r["completion"] > 1]
    for name, xs in (("Time to First Token (ms)", ttft), ("Request Latency (ms)", lat),
                     ("Inter Token Latency (ms)", itl)):
        row = stats.get(name)
        if not check(row is not None, "%s: row %r" % (what, name)):
            continue
        for col, want in (("avg", mean(xs)), ("p50", pct(xs, 50)), ("p90", pct(xs, 90)), ("max", max(xs)),
                          ("std", pstd(xs))):
            close(float(row[col]), want, "%s %s %s" % (what, name, col), abs_=1e-6 + 1e-6 * abs(want))
    osl = stats.get("Output Sequence Length (tokens)", {})
    check(osl and float(osl["avg"]) == mean([r["completion"] for r in ok]), what + " output sequence length")
    tput = {r["Metric"]: float(r["Value"]) for r in csv.DictReader(io.StringIO(lines[1].strip()))}
    check(tput.get("Request Count (requests)") == len(ok), "%s request count %r" % (what, tput))
    dur = (max((r["done"] or r["last"]) for r in rs) - min(r["send"] for r in rs)) / 1e9
    close(tput.get("Output Token Throughput (tokens/sec)"), sum(r["completion"] for r in ok) / dur,
          what + " output token throughput", abs_=1e-5)


def check_guidellm(text, db, rid, levels, what):
    rows = list(csv.reader(io.StringIO(text)))
    check(len(rows) == 3 + len(levels), "%s: three header rows and one row per level (%d rows)" % (what, len(rows)))
    if len(rows) < 3 + len(levels):
        return
    cols = {(rows[0][i], rows[1][i], rows[2][i]): i for i in range(len(rows[0]))}
    for want in (("Request Counts", "Successful", ""), ("Time to First Token", "Successful ms", "Mean"),
                 ("Time per Output Token", "Successful ms", "Mean"), ("Inter Token Latency", "Successful ms", "Median"),
                 ("Request Latency", "Successful Sec", "Percentiles")):
        check(want in cols, "%s: GuideLLM's column %r" % (what, want))
    for row, level in zip(rows[3:], levels):
        rs = [r for r in db_rows(db, rid, level) if r["error"] is None and r["first"]]
        w = "%s level %d" % (what, level)
        check(int(row[cols[("Request Counts", "Successful", "")]]) == len(rs), w + " successful count")
        lat = [((r["done"] or r["last"]) - r["send"]) / 1e9 for r in rs]
        tpot = [l * 1e3 / r["completion"] for r, l in zip(rs, lat)]  # GuideLLM: with the TTFT
        itl = [(r["last"] - r["first"]) / 1e6 / (r["completion"] - 1) for r in rs if r["completion"] > 1]
        ttft = [(r["first"] - r["send"]) / 1e6 for r in rs]
        for key, xs, f in (("Time to First Token", ttft, mean), ("Time per Output Token", tpot, mean),
                           ("Inter Token Latency", itl, lambda v: pct(v, 50))):
            stat = "Median" if key == "Inter Token Latency" else "Mean"
            i = cols.get((key, "Successful ms", stat))
            if i is not None:
                close(float(row[i]), f(xs), "%s %s %s" % (w, key, stat), rel=1e-8)
        i = cols.get(("Request Latency", "Successful Sec", "Percentiles"))
        if i is not None:
            ps = json.loads(row[i])
            check(len(ps) == 11 and abs(ps[0] - min(lat)) < 1e-8 and abs(ps[-1] - max(lat)) < 1e-8 and
                  abs(ps[9] - pct(lat, 99)) < 1e-8, "%s request latency [min, p0.1 ... p99, max] %r" % (w, ps))


def case_export(url):
    db = os.path.join(TMP, "sweep.db")
    rc, out, err = run(EXE["bench"], "sweep", "--url", url, "--db", db, "--no-plots", "--concurrency", "1,3",
                       "--rounds", "3", "--max-tokens", "16", "--json")
    if not check(rc == 0, "sweep exits 0: %s" % err[-400:]):
        return None
    rid = json.loads(out)["run"]
    path = os.path.join(TMP, "vllm.json")
    rc, out, err = run(EXE["report"], "export", str(rid), "--db", db, "--level", "3", "--out", path)
    if check(rc == 0 and os.path.exists(path), "export --format vllm exits 0: %s" % err[-400:]):
        check_vllm(json.load(open(path)), db_rows(db, rid, 3), "vllm level 3", 3)
    rc, out, err = run(EXE["report"], "export", str(rid), "--db", db, "--level", "1", "--format", "aiperf")
    if check(rc == 0, "export --format aiperf exits 0: %s" % err[-400:]):
        check_aiperf(out, db_rows(db, rid, 1), "aiperf level 1")
    rc, out, err = run(EXE["report"], "export", str(rid), "--db", db, "--format", "guidellm")
    if check(rc == 0, "export --format guidellm exits 0: %s" % err[-400:]):
        check_guidellm(out, db, rid, [1, 3], "guidellm")
    # bad input: exit 2, a message that says what to do, no file
    for args, says in ((["--out", os.path.join(TMP, "no1.json")], "--level"),
                       (["--level", "2", "--out", os.path.join(TMP, "no2.json")], "no measured request at level 2"),
                       (["--level", "1", "--repeat", "1", "--out", os.path.join(TMP, "no3.json")], "no repeats"),
                       (["--level", "1", "--format", "guess", "--out", os.path.join(TMP, "no4.json")], "--format")):
        rc, out, err = run(EXE["report"], "export", str(rid), "--db", db, *args)
        check(rc == 2 and says in err, "export %s: exit 2 naming %r (rc %d: %s)" % (" ".join(args), says, rc, err))
        outp = args[args.index("--out") + 1]
        check(not os.path.exists(outp) and not os.path.exists(outp + ".tmp"), "no file after refusing %s" % args)
    rc, out, err = run(EXE["report"], "export", "99", "--db", db, "--level", "1")
    check(rc == 2 and "99" in err, "export of an unknown run exits 2 naming it (%d: %s)" % (rc, err))
    # a damaged itl_json: refused by name, by export and by the report, with no file
    bad = os.path.join(TMP, "damaged.db")
    with open(db, "rb") as f, open(bad, "wb") as g:
        g.write(f.read())
    con = sqlite3.connect(bad)
    con.execute("UPDATE bench_requests SET itl_json = '[1, \"x\"]' WHERE id = (SELECT min(id) FROM bench_requests"
                " WHERE run = ? AND phase = 'measure')", (rid,))
    con.commit()
    con.close()
    outp = os.path.join(TMP, "no5.json")
    rc, out, err = run(EXE["report"], "export", str(rid), "--db", bad, "--level", "1", "--out", outp)
    check(rc == 2 and "itl_json" in err and not os.path.exists(outp), "export of a damaged itl_json exits 2 naming "
          "it, no file (%d: %s)" % (rc, err))
    rc, out, err = run(EXE["report"], "bench", "--db", bad, str(rid), "--out", os.path.join(TMP, "dmg", "r"))
    check(rc == 2 and "itl_json" in err and not os.path.exists(os.path.join(TMP, "dmg", "r.md")),
          "bench report of a damaged itl_json exits 2 naming it (%d: %s)" % (rc, err))
    # a repeats run: each run of the level is exported on its own
    rdb = os.path.join(TMP, "repeats.db")
    rc, out, err = run(EXE["bench"], "sweep", "--url", url, "--db", rdb, "--no-plots", "--concurrency", "2",
                       "--rounds", "2", "--max-tokens", "12", "--repeats", "2", "--json")
    if check(rc == 0, "sweep --repeats exits 0: %s" % err[-400:]):
        rr = json.loads(out)["run"]
        rc, out, err = run(EXE["report"], "export", str(rr), "--db", rdb)
        check(rc == 2 and "--repeat K" in err, "a repeats run needs --repeat (%d: %s)" % (rc, err))
        rc, out, err = run(EXE["report"], "export", str(rr), "--db", rdb, "--repeat", "2")
        if check(rc == 0, "export --repeat 2 exits 0: %s" % err[-400:]):
            check_vllm(json.loads(out), db_rows(rdb, rr, 2, repeat=2, rounds=2), "vllm repeat 2", 2)
    return db, rid


# ---- plots ----

def dat_series(path):
    """The series of a plot's data file: blocks '# name' then 'x y' lines."""
    out, cur = {}, None
    for line in open(path):
        line = line.strip()
        if line.startswith("# "):
            cur = out.setdefault(line[2:], [])
        elif line and cur is not None:
            x, y = line.split()
            cur.append((float(x), float(y)))
    return out


def check_files(base, pid):
    png, svg = "%s-%s.png" % (base, pid), "%s-%s.svg" % (base, pid)
    check(os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "%s is a PNG" % png)
    try:
        root = ET.parse(svg).getroot()
        check(root.tag.endswith("svg"), "%s is an SVG (root %s)" % (svg, root.tag))
    except (OSError, ET.ParseError) as e:
        check(False, "%s is an SVG: %s" % (svg, e))
    html = open(base + ".html").read()
    name = os.path.basename(base)
    for ext in ("png", "svg"):
        check('href="%s-%s.%s"' % (name, pid, ext) in html, "the HTML references %s-%s.%s" % (name, pid, ext))
    check('id="p-%s"' % pid in html, "the HTML shows plot %s" % pid)


def case_plots(db, rid):
    base = os.path.join(TMP, "rep", "bench")
    rc, out, err = run(EXE["report"], "bench", "--db", db, str(rid), "--out", base)
    if not check(rc == 0, "sixi-report bench exits 0: %s" % err[-400:]):
        return
    if "gnuplot was not found" in out:
        check(False, "gnuplot is a dependency of the report: %s" % out)
        return
    tl, par = "timeline-%d" % rid, "pareto"
    for pid in (tl, par):
        check_files(base, pid)
    # the timeline: every request's start -> first token, then first -> last token, in start order
    con = sqlite3.connect(db)
    rs = con.execute("SELECT coalesce(t_intended, t_send), t_first_token, t_last FROM bench_requests WHERE run = ?"
                     " AND phase = 'measure' ORDER BY level, stream, seq", (rid,)).fetchall()
    con.close()
    rs.sort(key=lambda r: r[0])
    t0 = rs[0][0]
    s = dat_series("%s-%s.dat" % (base, tl))
    wait = [p for p in s.get("start to first token", []) if not math.isnan(p[1])]
    gen = [p for p in s.get("first to last token", []) if not math.isnan(p[1])]
    want_wait = [((a - t0) / 1e9, i + 1) for i, (a, f, l) in enumerate(rs) for a in (a, f)]
    want_gen = [((x - t0) / 1e9, i + 1) for i, (a, f, l) in enumerate(rs) for x in (f, l)]
    check(len(wait) == len(want_wait) and all(abs(p[0] - q[0]) < 1e-9 and p[1] == q[1] for p, q in
                                               zip(wait, want_wait)), "timeline: start to first token per request")
    check(len(gen) == len(want_gen) and all(abs(p[0] - q[0]) < 1e-9 and p[1] == q[1] for p, q in
                                             zip(gen, want_gen)), "timeline: first to last token per request")
    # the Pareto plot: one point per level (TTFT p50, aggregate tok/s) recomputed from the rows; the
    # front is the points no other beats on both
    pts = []
    for level in (1, 3):
        lr = [r for r in db_rows(db, rid, level) if r["error"] is None]
        ttft = pct([(r["first"] - (r["intended"] or r["send"])) / 1e6 for r in lr], 50)
        wall = (max(r["done"] for r in lr) - min(r["intended"] or r["send"] for r in lr)) / 1e9
        pts.append((ttft, sum(r["completion"] for r in lr) / wall))
    s = dat_series("%s-%s.dat" % (base, par))
    got = s.get("run %d levels" % rid, [])
    check(len(got) == 2 and all(abs(a[0] - b[0]) < 1e-6 and abs(a[1] - b[1]) < 1e-6 * b[1] for a, b in
                                zip(sorted(got), sorted(pts))), "pareto: the levels' points %r, rows %r" % (got, pts))
    front = [p for p in pts if not any(q != p and q[0] <= p[0] and q[1] > p[1] for q in pts)]
    check(len(s.get("run %d Pareto front" % rid, [])) == len(front), "pareto: the front has %d points" % len(front))


SLOT1 = {"base": "thor", "weight_gb": 1, "bandwidth_gbps": 25, "decode_row_ms": 0, "prefill_row_ms": 0,
         "host_row_ms": 0, "slots": 1, "context": 4096}


def case_search_plot():
    cfg = os.path.join(TMP, "slot1.json")
    with open(cfg, "w") as f:
        json.dump(SLOT1, f)
    srv = Sim(cfg, "--straggler-wait", "off")
    db = os.path.join(TMP, "search.db")
    try:
        rc, out, err = run(EXE["bench"], "search", "--url", srv.url, "--db", db, "--no-plots", "--mode", "concurrency",
                           "--max-tokens", "4", "--warmup", "0", "--slo", "e2e=560ms", "--lo", "1", "--hi", "4",
                           "--requests", "6", "--target", "0.5", "--json", timeout=300)
    finally:
        srv.stop()
    if not check(rc == 0, "search exits 0: %s" % err[-400:]):
        return
    j = json.loads(out)
    rid, d = j["run"], j["detail"]
    base = os.path.join(TMP, "srep", "search")
    rc, out, err = run(EXE["report"], "bench", "--db", db, str(rid), "--out", base)
    if not check(rc == 0, "sixi-report bench of a search exits 0: %s" % err[-400:]):
        return
    pid = "goodput-%d" % rid
    check_files(base, pid)
    s = dat_series("%s-%s.dat" % (base, pid))
    want = sorted((p["load"], p["goodput_rps"]) for p in d["probes"])
    got = s.get("goodput (good requests/s)", [])
    check(len(got) == len(want) and all(abs(a[0] - b[0]) < 1e-12 and abs(a[1] - b[1]) < 1e-9 for a, b in
                                         zip(got, want)), "goodput: each probe's load and goodput (%r, %r)" % (got, want))
    xs = sorted({p[0] for p in s.get("search bracket", [])})
    res = d["result"]
    check(xs == sorted({res["bracket_low"], res["bracket_high"]}), "goodput: the bracket's lines at %r (%r)" % (xs, res))
    # a probe exported for vLLM: its load is the concurrency (this search's mode)
    p1 = d["probes"][0]
    rc, out, err = run(EXE["report"], "export", str(rid), "--db", db, "--level", str(p1["probe"]))
    if check(rc == 0, "export of a search probe exits 0: %s" % err[-400:]):
        v = json.loads(out)
        check(v["max_concurrency"] == p1["load"] and v["request_rate"] == "inf",
              "the probe's load is vLLM's max_concurrency (%r, %r)" % (v["max_concurrency"], p1))


def main():
    for p, exe in EXE.items():
        if not os.access(exe, os.X_OK):
            print("SKIP: %s not built" % exe)
            return 77
    srv = Sim("thor", "--time-scale", "10")
    try:
        got = case_export(srv.url)
    finally:
        srv.stop()
    if got:
        case_plots(*got)
    case_search_plot()
    check(CHECKS[0] >= 100, "the comparisons ran (%d checks)" % CHECKS[0])
    print("%d checks;" % CHECKS[0], "FAILED" if FAILS else "ok", FAILS[:10])
    return 1 if FAILS else 0


sys.exit(main())
