#!/usr/bin/env python3
"""The live summary and the report of the same run print the same numbers: a real
sixi-bench sweep (once, and once with --repeats 3: per run and across runs) and two real sixi-eval runs against sixi-server --simulate (the real
scheduler on a simulated device), two more against the scripted eval server of
test_eval_run.py (replies that pass, and faults that make a task's final attempt
a later one), then sixi-report bench and sixi-report compare of those runs. Both sides compute each figure with one function (stats/level.h for the
bench levels, the store's final-attempt rule, stats_mean_sd for the spread), so the
report's printed value must equal the live value to the report's printed precision
(half a unit of its last digit). No verdict depends on speed: both read the same
measured times. Servers are stopped by PID; every run is bounded by a timeout.

  test_live_vs_report.py   (SIXI_SOURCE_ROOT, SIXI_BUILD_ROOT)
"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_proc import Server  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_eval_run as ev  # noqa: E402  (the scripted eval server)

SRC = os.environ.get("SIXI_SOURCE_ROOT", ".")
BUILD = os.environ.get("SIXI_BUILD_ROOT", "build")
EXE = {p: os.path.join(BUILD, "src", "sixi-" + p) for p in ("bench", "eval", "report", "server")}
DEMO = os.path.join(SRC, "datasets", "demo")
TMP = tempfile.mkdtemp(prefix="sixi-live-report-")
FAILS = []
CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(*args, timeout=300):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def same(printed, live, digits, what):
    """printed is the report's number, shown with `digits` decimals; live the program's."""
    if isinstance(printed, str) or live is None:
        check(False, "%s: report %r, live %r" % (what, printed, live))
        return
    if math.isnan(live):
        check(math.isnan(printed), "%s: report %r, live NaN" % (what, printed))
        return
    half = 0.5 * 10 ** -digits
    check(abs(printed - live) <= half * (1 + 1e-9) + 1e-9 * abs(live),
          "%s: report %r, live %r (printed with %d decimals)" % (what, printed, live, digits))


class Sim(Server):
    def __init__(self):
        super().__init__(EXE["server"], ["--simulate", "thor", "--time-scale", "10"], TMP)


def bench_case(url):
    db = os.path.join(TMP, "bench.db")
    rc, out, err = run(EXE["bench"], "sweep", "--url", url, "--db", db, "--no-plots", "--concurrency", "1,3",
                       "--rounds", "3", "--max-tokens", "24", "--json")
    check(rc == 0, "sixi-bench sweep exits 0: %s" % err[-500:])
    if rc:
        return
    live = json.loads(out)
    rc, out, err = run(EXE["report"], "bench", "--db", db, str(live["run"]), "--json")
    check(rc == 0, "sixi-report bench exits 0: %s" % err[-500:])
    if rc:
        return
    table = json.loads(out)["tables"]["bench_%d" % live["run"]]
    rows = {int(r[next(iter(r))]): r for r in table["rows"]}
    levels = live.get("levels", [])
    check(len(levels) == 2 and sorted(rows) == [1, 3], "two levels on both sides (live %d, report %s)" %
          (len(levels), sorted(rows)))
    for lv in levels:
        r = rows.get(int(lv["level"]))
        if r is None:
            continue
        what = "level %d" % lv["level"]
        check(lv["valid"] and r["status"].startswith("valid"), "%s valid on both sides (%r, %r)" %
              (what, lv["invalid_reason"], r["status"]))
        check(r["requests"] == lv["requests"], "%s requests: report %r, live %r" % (what, r["requests"], lv["requests"]))
        same(r["tok/s aggregate"], lv["aggregate_tok_s"], 1, what + " aggregate tok/s")
        same(r["tok/s per stream"], lv["stream_tok_s_mean"], 1, what + " per-stream tok/s")
        for p in ("50", "90", "99"):
            same(r["TTFT p%s ms" % p], lv["ttft_p%s_ms" % p], 1, what + " TTFT p" + p)
        same(r["prefill tok/s p50"], lv["prefill_tok_s_p50"], 0, what + " prefill tok/s")


def bench_repeats_case(url):
    """sweep --repeats 3 --slo: each run of a level on its own report row, and the figures
    across runs (mean, t interval, CV; SLO goodput and attainment too) equal to the live
    summary's across_runs."""
    db = os.path.join(TMP, "bench-repeats.db")
    rc, out, err = run(EXE["bench"], "sweep", "--url", url, "--db", db, "--no-plots", "--concurrency", "1,3",
                       "--rounds", "3", "--max-tokens", "24", "--repeats", "3", "--slo", "ttft=15ms,e2e=20s",
                       "--json")
    check(rc == 0, "sixi-bench sweep --repeats exits 0: %s" % err[-500:])
    if rc:
        return
    live = json.loads(out)
    rc, out, err = run(EXE["report"], "bench", "--db", db, str(live["run"]), "--json")
    check(rc == 0, "sixi-report bench of a repeats run exits 0: %s" % err[-500:])
    if rc:
        return
    tables = json.loads(out)["tables"]
    table = tables.get("bench_%d" % live["run"], {"rows": []})
    rows = {(int(r[next(iter(r))]), r.get("repeat")): r for r in table["rows"]}
    levels = live.get("levels", [])
    check(len(levels) == 6 and len(rows) == 6, "six runs of a level on both sides (live %d, report %s)" %
          (len(levels), sorted(rows)))
    for lv in levels:
        r = rows.get((int(lv["level"]), lv.get("repeat")))
        what = "level %d run %s" % (lv["level"], lv.get("repeat"))
        check(r is not None, what + ": the report has a row for this run of the level (not one pooled row)")
        if r is None:
            continue
        check(r["requests"] == lv["requests"], "%s requests: report %r, live %r" % (what, r["requests"], lv["requests"]))
        same(r["tok/s aggregate"], lv["aggregate_tok_s"], 1, what + " aggregate tok/s")
        for p in ("50", "90", "99"):
            same(r["TTFT p%s ms" % p], lv["ttft_p%s_ms" % p], 1, what + " TTFT p" + p)
    across = tables.get("bench_%d_across" % live["run"], {"rows": []})["rows"]
    arows = {(int(r["level"]), r["metric"]): r for r in across}
    acr = live.get("detail", {}).get("across_runs", [])
    check(len(acr) == 2, "live across_runs has both levels (%d)" % len(acr))
    compared = 0
    for lv in acr:
        for name, m in lv["metrics"].items():
            r = arows.get((int(lv["level"]), name))
            what = "level %d %s across runs" % (lv["level"], name)
            check(r is not None, what + ": in the report's across-runs table")
            if r is None:
                continue
            compared += 1
            check(r["runs with a value"] == m["n"], "%s n: report %r, live %r" % (what, r["runs with a value"], m["n"]))
            same(r["mean"], m.get("mean"), 3, what + " mean")
            if "low" in m:
                same(r["t 95% low"], m["low"], 3, what + " t low")
                same(r["t 95% high"], m["high"], 3, what + " t high")
                same(r["sd"], m["sd"], 3, what + " sd")
            if "cv" in m:
                same(r["CV %"], 100 * m["cv"], 1, what + " CV")
            check(r["stability"].startswith("UNSTABLE") == m["unstable"], "%s: flagged %r, live unstable %r" %
                  (what, r["stability"], m["unstable"]))
    check(compared == 16, "16 figures compared across runs, SLO goodput and attainment with them (%d)" % compared)


def eval_case(url, model, name):
    db = os.path.join(TMP, name + ".db")
    live = []
    for _ in range(2):
        rc, out, err = run(EXE["eval"], "run", "--url", url, "--model", model, "--dataset", DEMO, "--repeats",
                           "3", "--concurrency", "2", "--max-tokens", "48", "--timeout", "30", "--stall", "10",
                           "--no-preflight", "--db", db, "--json", timeout=600)
        check(rc == 0, "sixi-eval run exits 0: %s" % err[-500:])
        if rc:
            return
        live.append(json.loads(out))
    rc, out, err = run(EXE["report"], "compare", "--db", db, "1", "2", "--json")
    check(rc == 0, "sixi-report compare exits 0: %s" % err[-500:])
    if rc:
        return
    t = json.loads(out)["tables"]
    reps = {r["repeat"]: r for r in t["repeats"]["rows"]}
    classes = {r["failure class"]: r for r in t["classes"]["rows"]}
    tokens = {r["tokens"]: r for r in t["tokens"]["rows"]}
    for side, e in zip(("A", "B"), live):
        what = "%s run %s" % (name, "1" if side == "A" else "2")
        per = e["pass_rate_per_repeat"]
        check(len(per) == 3, "%s: three repeats graded (%r)" % (what, per))
        for i, v in enumerate(per):
            same(reps.get(str(i), reps.get(i, {})).get(side + " rate %"), 100 * v, 1, "%s repeat %d pass rate" % (what, i))
        if len(per) > 1:
            same(reps["sd"][side + " rate %"], 100 * e["pass_rate_sd_across_repeats"], 1, what + " run-to-run sd")
            same(reps["mean"][side + " rate %"], 100 * sum(per) / len(per), 1, what + " mean of the repeats")
        for c, n in e["classes"].items():
            got = classes.get(c, {}).get(side)
            check(got == n, "%s: final attempts of class %s: report %r, live %r" % (what, c, got, n))
        same(tokens["per attempt"][side], e["tokens_per_attempt"], 0, what + " tokens per attempt")
        if e["passed"]:
            same(tokens["per solved task"][side], e["tokens_per_solved_task"], 0, what + " tokens per solved task")


def main():
    for p, exe in EXE.items():
        if not os.access(exe, os.X_OK):
            print("SKIP: %s not built" % exe)
            return 77
    srv = Sim()
    try:
        bench_case(srv.url)
        bench_repeats_case(srv.url)
        eval_case(srv.url, "sim-thor", "eval-sim")
    finally:
        srv.stop()
    fake = ev.Server(TMP, ev.rules({"add(a, b)": ("reset", 1), "is_palindrome": ("500", 2)}))
    try:
        eval_case(fake.url, "fake", "eval-fake")
    finally:
        fake.stop()
    check(CHECKS[0] >= 40, "the comparisons ran (%d checks)" % CHECKS[0])
    print("%d checks;" % CHECKS[0], "FAILED" if FAILS else "ok", FAILS)
    return 1 if FAILS else 0


sys.exit(main())
