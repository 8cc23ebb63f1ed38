#!/usr/bin/python3
"""Mis-measurement suite: each case makes one of the measurement mistakes of
DESIGN.md's rules on purpose and asserts the tool catches it. Rows already
caught by another test are listed in tests/validity/README.md with that test;
the cases here are the ones no other test made.

  test_validity.py CASE     single-run | config-diff | truncation | resume-workers | wedged |
                            stale-memory | power | dead-server
Every server and program is started here, bounded in time, stopped by PID.
"""
import json
import re
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import test_eval_run as ev  # noqa: E402  (fake server, sixi_eval, rows)

REPORT = os.path.join(ev.BUILD, "src", "sixi-report")
SERVER = os.path.join(ev.BUILD, "src", "sixi-server")
BENCH = os.path.join(ev.BUILD, "src", "sixi-bench")
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


def write_protocol(path, url, concurrency):
    with open(path, "w") as f:
        json.dump({"name": "workers", "conditions": [{"name": "fake", "endpoint": url, "model": "fake"}],
                   "datasets": [os.path.abspath(ev.DEMO)], "repeats": 2, "concurrency": concurrency,
                   "attempts": 2, "timeout_s": 30, "stall_s": 10}, f)


def case_resume_workers(tmp):
    """Mistake (row 9): workers changed mid-run. A resume that asks for another
    --concurrency, or brings a protocol with another concurrency, is refused and
    the refusal names the change; the stored run keeps its configuration."""
    srv = ev.Server(tmp, ev.rules({}))
    db = os.path.join(tmp, "workers.db")
    p2, p4 = os.path.join(tmp, "c2.json"), os.path.join(tmp, "c4.json")
    write_protocol(p2, srv.url, 2)
    write_protocol(p4, srv.url, 4)
    try:
        r = ev.sixi_eval("run", p2, "--no-preflight", "--db", db)
        check(r.returncode == 0, "the run with 2 workers works: %s" % r.stderr[-400:])
        r = ev.sixi_eval("resume", "1", "--concurrency", "4", "--db", db)
        check(r.returncode == 2 and "--concurrency cannot change on a resume" in r.stderr,
              "resume --concurrency 4 is refused (exit %d): %r" % (r.returncode, r.stderr[-300:]))
        r = ev.sixi_eval("resume", "1", "--protocol", p4, "--db", db)
        check(r.returncode != 0 and "concurrency: 2 -> 4" in r.stderr,
              "resume with a 4-worker protocol is refused naming the change: %r" % r.stderr[-400:])
        r = ev.sixi_eval("resume", "1", "--protocol", p2, "--db", db)
        check(r.returncode == 0, "resume with the same protocol is accepted: %r" % r.stderr[-300:])
    finally:
        srv.stop()
    con = sqlite3.connect(db)
    proto = json.loads(con.execute("SELECT protocol_json FROM runs WHERE id = 1").fetchone()[0])
    n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    con.close()
    check(proto["protocol"]["concurrency"] == 2 and n == 1, "the stored run still says 2 workers, and is the only run")


def case_wedged(tmp):
    """Mistake (row 18): a wedged server taken as ready. The server answers
    /health and /v1/models, but every generation hangs. sixi-eval must not
    declare it ready: the readiness deadline ends the run with a clear error,
    the readiness requests are stored apart (phase 'ready'), no task row exists."""
    srv = ev.Server(tmp, {"model": "fake", "rules": [{"match": "", "fault": "hang"}]})
    db = os.path.join(tmp, "wedged.db")
    try:
        for path in ("/health", "/v1/models"):
            with ev.urllib.request.urlopen(srv.url + path, timeout=5) as r:
                check(r.status == 200, "the wedged server answers %s" % path)
        t0 = time.monotonic()
        r = ev.sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO, "--no-preflight",
                         "--ready-timeout", "3", "--timeout", "900", "--stall", "5", "--db", db, timeout=150)
        took = time.monotonic() - t0
    finally:
        srv.stop()
    print("wedged server: exit %d after %.1f s: %s" % (r.returncode, took, r.stderr.strip()[-300:]))
    check(r.returncode != 0, "the run does not go ahead")
    check("never returned tokens within 3 s" in r.stderr and "wedged" in r.stderr,
          "the error says readiness failed and why: %r" % r.stderr[-400:])
    # a hang guard, not a speed claim: typically ~3 s, against 900 s if the request time-out ruled
    check(took < 120, "the readiness deadline (3 s) bounds the wait, not the 900 s request time-out (%.1f s)" % took)
    con = sqlite3.connect(db)
    ready = con.execute("SELECT count(*), sum(error IS NOT NULL) FROM bench_requests WHERE phase = 'ready'").fetchone()
    task_rows = con.execute("SELECT count(*) FROM eval_rows").fetchone()[0]
    con.close()
    check(ready[0] >= 1 and ready[0] == ready[1], "the failed readiness requests are stored apart: %r" % (ready,))
    check(task_rows == 0, "no task row from a server that never generated (%d)" % task_rows)


def run_json(db, sql):
    con = sqlite3.connect(db)
    rows = [json.loads(r[0]) for r in con.execute(sql).fetchall()]
    con.close()
    return rows


def names_stale(text, pid):
    """The warning names the stale server, or, when more than four other servers run on this
    machine (the warning names the first four, then '...'), it counts them and is cut short; the
    full list recorded with the run is checked apart. Other servers on a busy machine cannot
    change the verdict."""
    if "sixi-server (pid %d" % pid in text:
        return True
    m = re.search(r"(\d+) other LLM server processes on this machine hold", text)
    return m is not None and int(m.group(1)) > 4 and ", ...;" in text


def case_stale_memory(tmp):
    """Mistake (row 19): a server process left holding memory. A stale
    sixi-server keeps running while another sixi-server is measured. sixi-eval
    names the stale one (not the target) before the run, records it with the
    run, and sixi-report compare shows the warning."""
    if not os.access(SERVER, os.X_OK):
        print("sixi-server is not built in this tree: case left out")
        return 77
    stale, stale_log, stale_url = ev.start_sixi_server(tmp, SERVER, "stale", ["--simulate", "thor"])
    target, target_log, url = ev.start_sixi_server(tmp, SERVER, "target",
                                                   ["--simulate", "thor", "--time-scale", "20"])
    db = os.path.join(tmp, "stale.db")
    try:
        check(stale_url is not None and url is not None, "both sixi-servers started")
        outs = []
        for _ in range(2):
            r = ev.sixi_eval("run", "--url", url, "--model", "sim-thor", "--dataset", ev.DEMO, "--repeats", "2",
                             "--max-tokens", "8", "--no-preflight", "--db", db)
            check(r.returncode == 0, "the run works: %s" % r.stderr[-400:])
            outs.append(r.stdout + r.stderr)
        bdb = os.path.join(tmp, "stale-bench.db")
        b = subprocess.run([BENCH, "sweep", "--url", url, "--model", "sim-thor", "--concurrency", "2",
                            "--max-tokens", "8", "--rounds", "1", "--warmup", "1", "--db", bdb, "--no-plots",
                            "--quiet"], capture_output=True, text=True, timeout=120)
        check(b.returncode == 0 and names_stale(b.stderr, stale.pid),
              "sixi-bench names the stale server too (exit %d): %r" % (b.returncode, b.stderr[-400:]))
    finally:
        ev.stop_sixi_server(target, target_log)
        ev.stop_sixi_server(stale, stale_log)
    said = outs[0]
    check("WARNING" in said and names_stale(said, stale.pid),
          "the stale server is named before the run: %r" % said[:600])
    check("(pid %d" % target.pid not in said, "the server under test is not named as stale")
    facts = run_json(db, "SELECT host_facts FROM runs ORDER BY id")
    mem = facts[0].get("memory", {})
    pids = [o["pid"] for o in mem.get("other_servers", [])]
    print("memory recorded with run 1: target %r, others %r, warning %r" % (mem.get("target_pid"), pids,
                                                                            (mem.get("warning") or "")[:120]))
    check(mem.get("checked") is True and stale.pid in pids and target.pid not in pids,
          "the run records the stale server and not the target: %r" % mem)
    check(mem.get("target_pid") == target.pid, "the target is found by its listening port")
    check(mem.get("total_bytes", 0) > 0 and mem.get("available_bytes", 0) > 0, "memory totals are recorded")
    out = os.path.join(tmp, "cmp")
    r = subprocess.run([REPORT, "compare", "--db", db, "1", "2", "--out", out, "--formats", "md", "--no-plots"],
                       capture_output=True, text=True, timeout=120)
    md = open(out + ".md").read() if os.path.exists(out + ".md") else ""
    check(r.returncode == 0 and "Warning (run 1): when it started" in md and names_stale(md, stale.pid),
          "the compare report carries the warning (exit %d): %r" % (r.returncode, r.stderr[-300:]))
    bmem = run_json(bdb, "SELECT host_facts FROM runs")[0].get("memory", {})
    check(stale.pid in [o["pid"] for o in bmem.get("other_servers", [])] and bmem.get("target_pid") == target.pid,
          "the bench run records it: %r" % bmem)
    r = subprocess.run([REPORT, "bench", "--db", bdb, "1", "--out", out + "-bench", "--formats", "md", "--no-plots"],
                       capture_output=True, text=True, timeout=120)
    md = open(out + "-bench.md").read() if os.path.exists(out + "-bench.md") else ""
    check(r.returncode == 0 and "Warning (run 1): when it started" in md and names_stale(md, stale.pid),
          "the bench report carries the warning (exit %d): %r" % (r.returncode, r.stderr[-300:]))


def case_power(tmp):
    """Mistake (row 20): no power planning. --detect-gap refuses a run too small
    to detect the stated difference with 80 % power (nothing stored), runs it
    when allowed (the plan stored, marked underpowered) or when big enough; and
    compare states the minimum detectable difference and flags its "no
    difference" verdict as underpowered."""
    # two of the six demo tasks get a wrong answer: both runs pass 4 of 6
    script = ev.rules({})
    script["rules"] = [r for r in script["rules"] if r["match"] not in ("apples", "capital of France")]
    srv = ev.Server(tmp, script)
    db = os.path.join(tmp, "power.db")
    try:
        base = ["run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO, "--repeats", "3",
                "--concurrency", "2", "--no-preflight", "--db", db]
        r = ev.sixi_eval(*base, "--detect-gap", "10")
        check(r.returncode != 0 and "too few to detect" in r.stderr and "needs 392 attempts" in r.stderr,
              "a run too small for a 10-point gap is refused with the numbers: %r" % r.stderr[-500:])
        check(not os.path.exists(db) or run_json(db, "SELECT '1' FROM runs") == [], "the refused run is not stored")
        for _ in range(2):
            r = ev.sixi_eval(*base, "--detect-gap", "10", "--allow-underpowered")
            check(r.returncode == 0 and "underpowered" in r.stdout + r.stderr, "allowed, it warns: %r" % r.stderr[-300:])
        r = ev.sixi_eval(*base, "--detect-gap", "80")
        # (other tests' servers may be running: only the power warning is looked for)
        check(r.returncode == 0 and "underpowered" not in r.stdout + r.stderr,
              "a plan big enough for an 80-point gap runs without the power warning")
    finally:
        srv.stop()
    plans = [p.get("power_plan") for p in run_json(db, "SELECT protocol_json FROM runs ORDER BY id")]
    check(plans[0]["underpowered"] is True and plans[0]["needed_per_condition"] == 392 and plans[0]["planned"] == 18,
          "the plan is stored with the run: %r" % plans[0])
    check(plans[2]["underpowered"] is False, "the 80-point plan is not underpowered: %r" % plans[2])
    out = os.path.join(tmp, "cmp")
    r = subprocess.run([REPORT, "compare", "--db", db, "1", "2", "--out", out, "--formats", "md", "--no-plots"],
                       capture_output=True, text=True, timeout=120)
    md = open(out + ".md").read() if os.path.exists(out + ".md") else ""
    i = md.find("smallest difference these runs could detect")
    print("compare: %s" % md[i:i + 260].replace("\n", " "))
    check(r.returncode == 0 and i >= 0, "compare states the minimum detectable difference (exit %d)" % r.returncode)
    check("UNDERPOWERED: no difference found" in md and "the gap the run was planned to detect" in md,
          "the no-difference verdict is flagged as underpowered")


def case_dead_server(tmp):
    """Not a measurement row but the same spirit: the server dies mid-run.
    sixi-eval stops within seconds with a clear message (not a 15 s health
    probe per remaining task), records the failed requests as api_error (never
    a model failure), leaves the other tasks unrun, and a resume against the
    restarted server completes the run."""
    srv = ev.Server(tmp, ev.rules({}), delay_ms=40)
    db = os.path.join(tmp, "dead.db")
    p = subprocess.Popen([ev.EVAL, "run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO, "--repeats", "3",
                          "--concurrency", "2", "--attempts", "3", "--no-preflight", "--db", db],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and ev.count_rows(db) < 3 and p.poll() is None:
        time.sleep(0.02)
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    srv.log.close()
    t_kill = time.monotonic()
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    took = time.monotonic() - t_kill
    rows = ev.rows(db, 1)
    print("server killed after %d rows: sixi-eval exit %d %.1f s later with %d rows: %s" % (
        3, p.returncode, took, len(rows), err.strip().splitlines()[-1][:300] if err.strip() else ""))
    check(p.returncode != 0, "the run stops with an error")
    check("is not running" in err and "sixi-eval resume 1" in err, "the message says the server is gone and how to go on")
    # typically 1-3 s; a 15 s health probe per remaining task would take minutes
    check(took < 60, "it stops within seconds of the server's death (%.1f s), not a health probe per task" % took)
    check(len(rows) < 18, "tasks are left for the resume (%d rows)" % len(rows))
    check(all(r[3] in ("pass", "api_error") for r in rows), "no model failure from a dead server: %r" %
          sorted(set(r[3] for r in rows)))
    refused = [r for r in rows if r[4] == "connect"]
    check(len(refused) <= 2, "the failed connections are api_error rows, one per worker at most: %r" % refused)
    log = open(os.path.join(tmp, "restart.log"), "w")
    script = os.path.join(tmp, "restart.json")
    with open(script, "w") as f:
        json.dump(ev.rules({}), f)
    proc = subprocess.Popen([sys.executable, ev.SERVER, "--script", script, "--port-file", script + ".port",
                             "--port", str(srv.port)], stderr=log)
    try:
        for _ in range(200):
            if os.path.exists(script + ".port"):
                break
            time.sleep(0.025)
        r = ev.sixi_eval("resume", "1", "--db", db)
        check(r.returncode == 0, "resume against the restarted server works: %s" % r.stderr[-300:])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        log.close()
    ev.check_complete(db, 1, 3, 6, 3, "after the resume")


def main():
    case = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="sixi-validity-") as tmp:
        rc = {"single-run": case_single_run, "config-diff": case_config_diff,
              "truncation": case_truncation, "resume-workers": case_resume_workers, "wedged": case_wedged,
              "stale-memory": case_stale_memory, "power": case_power, "dead-server": case_dead_server}[case](tmp) or 0
    print("%d checks, %d failed" % (ev.checks, ev.failures))
    return 1 if ev.failures else rc


if __name__ == "__main__":
    sys.exit(main())
