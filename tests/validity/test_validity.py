#!/usr/bin/python3
"""Mis-measurement suite: each case makes one of the measurement mistakes of
DESIGN.md's rules on purpose and asserts the tool catches it. Rows already
caught by another test are listed in tests/validity/README.md with that test;
the cases here are the ones no other test made.

  test_validity.py CASE     single-run | config-diff | truncation
Every server and program is started here, bounded in time, stopped by PID.
"""
import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import test_eval_run as ev  # noqa: E402  (fake server, sixi_eval, rows)

REPORT = os.path.join(ev.BUILD, "src", "sixi-report")
SERVER = os.path.join(ev.BUILD, "src", "sixi-server")
check = ev.check


def run_eval(srv, db, *extra):
    return ev.sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO, "--concurrency", "2",
                        "--no-preflight", "--db", db, *extra)


def case_single_run(tmp):
    """Mistake: one run reported as a finding. The tool says a single run cannot
    separate a difference from noise, and compare refuses a run-to-run figure."""
    srv = ev.Server(tmp, ev.rules({}))
    db = os.path.join(tmp, "single.db")
    try:
        r = run_eval(srv, db, "--repeats", "1")
        check(r.returncode == 0, "a one-repeat run works: %s" % r.stderr[-500:])
        said = r.stdout + r.stderr
        check("single run cannot separate" in said, "a one-repeat run is warned about: %r" % said[-400:])
        r3 = run_eval(srv, db, "--repeats", "3")
        check("single run cannot" not in r3.stdout + r3.stderr, "three repeats carry no such warning")
    finally:
        srv.stop()


def case_config_diff(tmp):
    """Mistake: two configurations quoted as one (max_tokens changed between the
    runs being compared). compare refuses, names what differs, and with
    --allow-config-diff says so in the report."""
    srv = ev.Server(tmp, ev.rules({}))
    db = os.path.join(tmp, "cfg.db")
    try:
        a = run_eval(srv, db, "--repeats", "3", "--max-tokens", "400")
        b = run_eval(srv, db, "--repeats", "3", "--max-tokens", "200")
        check(a.returncode == 0 and b.returncode == 0, "both runs work: %s %s" % (a.stderr[-300:], b.stderr[-300:]))
    finally:
        srv.stop()
    out = os.path.join(tmp, "cmp")
    r = ev.subprocess.run([REPORT, "compare", "--db", db, "1", "2", "--out", out, "--formats", "md", "--no-plots"],
                          capture_output=True, text=True, timeout=120)
    check(r.returncode == 2, "compare of two configurations is refused (exit %d)" % r.returncode)
    check("different frozen configurations" in r.stderr and "differ in: protocol" in r.stderr,
          "the refusal names what differs: %r" % r.stderr[-400:])
    r = ev.subprocess.run([REPORT, "compare", "--db", db, "1", "2", "--allow-config-diff", "--out", out,
                           "--formats", "md", "--no-plots"], capture_output=True, text=True, timeout=120)
    md = open(out + ".md").read() if os.path.exists(out + ".md") else ""
    check(r.returncode == 0 and "configurations differ" in md,
          "forced, the report carries the warning (exit %d, %s)" % (r.returncode, r.stderr[-300:]))


def case_truncation(tmp):
    """Mistake: a token budget that stops the model mid-thought, scored as a wrong
    answer. Against the real sixi-server (simulated device) with max_tokens 4,
    every reply is cut off: each row must be 'truncated', never 'wrong'."""
    if not os.access(SERVER, os.X_OK):
        print("sixi-server is not built in this tree: case left out")
        return 77
    proc, log, url = ev.start_sixi_server(tmp, SERVER, "trunc", ["--simulate", "thor", "--time-scale", "20"])
    db = os.path.join(tmp, "trunc.db")
    try:
        check(url is not None, "sixi-server started")
        r = ev.sixi_eval("run", "--url", url, "--model", "sim-thor", "--dataset", ev.DEMO, "--repeats", "3",
                         "--concurrency", "2", "--max-tokens", "4", "--no-preflight", "--db", db)
        check(r.returncode == 0, "the run works: %s" % r.stderr[-500:])
    finally:
        ev.stop_sixi_server(proc, log)
    con = sqlite3.connect(db)
    classes = dict(con.execute("SELECT failure_class, count(*) FROM eval_rows GROUP BY 1").fetchall())
    fin = dict(con.execute("SELECT coalesce(finish_reason, 'null'), count(*) FROM eval_rows GROUP BY 1").fetchall())
    con.close()
    print("max_tokens 4 against sixi-server: classes %r, finish reasons %r" % (classes, fin))
    check(classes.get("truncated", 0) > 0, "cut-off replies are counted as truncated")
    check(classes.get("wrong", 0) == 0, "no cut-off reply is scored wrong: %r" % classes)
    return 0


def main():
    case = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="sixi-validity-") as tmp:
        rc = {"single-run": case_single_run, "config-diff": case_config_diff,
              "truncation": case_truncation}[case](tmp) or 0
    print("%d checks, %d failed" % (ev.checks, ev.failures))
    return 1 if ev.failures else rc


if __name__ == "__main__":
    sys.exit(main())
