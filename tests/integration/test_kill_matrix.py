#!/usr/bin/python3
"""Kill matrix: SIGKILL at many points, then check what the database holds.

  test_kill_matrix.py eval     sixi-eval killed at >= 20 points of one run (after
                               N new rows, or T seconds into a resume: warm-up,
                               mid-stream, between rows); after each kill no
                               earlier row is lost, after the final resume every
                               (repeat, task) has exactly one final row and
                               attempts 1..k with no gap or double.
  test_kill_matrix.py bench    sixi-bench killed at >= 20 moments of a sweep; each
                               time the database passes integrity_check, every row
                               is complete (finished or with an error class), the
                               rows of earlier runs are unchanged, the killed run is
                               left 'running' and sixi-report marks it INCOMPLETE,
                               and a later run into the same database works.
  test_kill_matrix.py server   sixi-server (simulated device) killed under an eval
                               run: the requests it drops are api_error rows, never
                               a model failure (wrong, truncated, loop), and a resume
                               against a restarted server completes the run.
Every process is started here, bounded in time, and stopped by PID.
"""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_eval_run as ev  # noqa: E402  (its helpers: fake server, rows, check_complete)

BUILD = ev.BUILD
BENCH = os.path.join(BUILD, "src", "sixi-bench")
REPORT = os.path.join(BUILD, "src", "sixi-report")
SERVER = os.path.join(BUILD, "src", "sixi-server")
check = ev.check


def kill_at(argv, db, count, rows_more, after_s, timeout_s=20):
    """Starts argv, SIGKILLs it once count(db) grew by rows_more and after_s more
    seconds passed. True when it was still running at the kill."""
    start = count(db)
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and count(db) < start + rows_more and p.poll() is None:
        time.sleep(0.01)
    t = time.monotonic() + after_s
    while time.monotonic() < t and p.poll() is None:
        time.sleep(0.005)
    alive = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.wait()
    return alive


def integrity(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def matrix_eval(tmp):
    srv = ev.Server(tmp, ev.rules({"is_palindrome": ("500", 1)}), delay_ms=12)
    db = os.path.join(tmp, "kill-eval.db")
    repeats = 8
    try:
        args = [ev.EVAL, "run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO, "--repeats", str(repeats),
                "--concurrency", "2", "--timeout", "10", "--stall", "5", "--no-preflight", "--db", db]
        # points: (new rows to wait for, then seconds) -- 0 rows = warm-up and first requests
        points = [(1, 0.0)] + [(r, s) for r in (0, 1, 2) for s in (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5)]
        kills = 0
        before = []
        for i, (more, s) in enumerate(points):
            argv = args if i == 0 else [ev.EVAL, "resume", "1", "--db", db]
            kills += kill_at(argv, db, ev.count_rows, more, s)
            now = ev.rows(db, 1)
            check(set(before) <= set(now), "eval kill %d (%d rows, %.2f s): every earlier row kept" % (i, more, s))
            check(integrity(db) == "ok", "eval kill %d: integrity_check" % i)
            before = now
        r = ev.sixi_eval("resume", "1", "--db", db)
        check(r.returncode == 0, "final resume exit %d: %s" % (r.returncode, r.stderr[-1000:]))
        after = ev.rows(db, 1)
        check(set(before) <= set(after), "the final resume kept every row")
        ev.check_complete(db, 1, repeats, 6, 3, "kill matrix")
        print("eval: %d kill points while running (%d tried), %d rows before the final resume, %d after" %
              (kills, len(points), len(before), len(after)))
        check(kills >= 20, "at least 20 kills landed while sixi-eval ran (%d)" % kills)
    finally:
        srv.stop()


def bench_rows(db):
    try:
        con = sqlite3.connect(db)
        n = con.execute("SELECT count(*) FROM bench_requests").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


def matrix_bench(tmp):
    pf = os.path.join(tmp, "fake.port")
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_openai.py"), "--port-file", pf,
                            "--lifetime", "200", "--event-delay-ms", "4"], stderr=subprocess.DEVNULL)
    db = os.path.join(tmp, "kill-bench.db")
    try:
        for _ in range(400):
            if os.path.exists(pf) and open(pf).read().strip():
                break
            time.sleep(0.025)
        url = "http://127.0.0.1:" + open(pf).read().strip()
        argv = [BENCH, "sweep", "--url", url, "--model", "fake", "--db", db, "--no-plots",
                "--concurrency", "1,2,4", "--max-tokens", "24", "--rounds", "2"]
        # the first, clean run also measures the client ceiling once for this database
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "a clean sweep: %s" % r.stderr[-500:])
        kills = 0
        points = [(0, 0.0), (0, 0.03)] + [(n, s) for n in (1, 3, 6) for s in (0.0, 0.01, 0.03, 0.06, 0.1, 0.2, 0.3)]
        for i, (more, s) in enumerate(points):
            con = sqlite3.connect(db)
            kept = dict(con.execute("SELECT run, count(*) FROM bench_requests GROUP BY run").fetchall())
            prev = con.execute("SELECT max(id) FROM runs").fetchone()[0]
            con.close()
            alive = kill_at(argv, db, bench_rows, more, s)
            kills += alive
            con = sqlite3.connect(db)
            now = dict(con.execute("SELECT run, count(*) FROM bench_requests GROUP BY run").fetchall())
            bad = con.execute("SELECT count(*) FROM bench_requests WHERE error IS NULL AND t_done IS NULL").fetchone()[0]
            last, status = con.execute("SELECT id, status FROM runs WHERE kind = 'bench' ORDER BY id DESC LIMIT 1"
                                       ).fetchone()
            con.close()
            what = "bench kill %d (%d rows, %.2f s)" % (i, more, s)
            check(integrity(db) == "ok", what + ": integrity_check")
            check(bad == 0, what + ": %d half-written rows" % bad)
            check(all(now.get(k) == v for k, v in kept.items()), what + ": rows of earlier runs unchanged")
            if alive and last > prev:  # the killed process had begun its run
                check(status == "running", what + ": the killed run is left 'running' (%r)" % status)
                if now.get(last):
                    rep = subprocess.run([REPORT, "bench", "--db", db, str(last), "--out", os.path.join(tmp, "rep"),
                                          "--formats", "md", "--no-plots"], capture_output=True, text=True, timeout=60)
                    md = open(os.path.join(tmp, "rep.md")).read() if rep.returncode == 0 else ""
                    check(rep.returncode != 0 or "INCOMPLETE" in md,
                          what + ": the report of the killed run says it is incomplete (%s)" % rep.stderr[-200:])
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "a sweep after all the kills works: %s" % r.stderr[-500:])
        print("bench: %d kill points while running (%d tried)" % (kills, len(points)))
        check(kills >= 20, "at least 20 kills landed while sixi-bench ran (%d)" % kills)
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=10)


def matrix_server(tmp):
    if not os.access(SERVER, os.X_OK):
        print("sixi-server is not built in this tree: the server kill is left out")
        return 77
    db = os.path.join(tmp, "kill-server.db")
    sargs = ["--simulate", "thor", "--time-scale", "10"]
    proc, log, url = ev.start_sixi_server(tmp, SERVER, "sx1", sargs)
    check(url is not None, "sixi-server started")
    args = [ev.EVAL, "run", "--url", url, "--model", "sim-thor", "--dataset", ev.DEMO, "--repeats", "3",
            "--concurrency", "2", "--max-tokens", "48", "--timeout", "10", "--stall", "5", "--attempts", "2",
            "--no-preflight", "--db", db]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and ev.count_rows(db) < 2 and p.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)  # the server dies under load
    proc.wait()
    log.close()
    at_kill = set(ev.rows(db, 1))
    # with the server gone sixi-eval stops after 3 failed connections in a row; if it
    # has not stopped yet, stop it too (one more kill point)
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline and len(set(ev.rows(db, 1)) - at_kill) < 4 and p.poll() is None:
        time.sleep(0.1)
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
    _, err = p.communicate()
    rows = ev.rows(db, 1)
    classes = {}
    for rep, task, att, cls, api, *_ in set(rows) - at_kill:
        classes[cls] = classes.get(cls, 0) + 1
    print("server killed under load: %d rows at the kill, rows after it by class %r" % (len(at_kill), classes))
    # sixi-eval now stops within about a second of the server's death, so the
    # requests cut by the kill may be stored before at_kill was read: count them all
    all_api = sum(1 for r in rows if r[3] == "api_error")
    check(all_api > 0, "the dead server shows as api_error rows (%d in the run)" % all_api)
    for cls in ("wrong", "truncated", "loop"):
        check(classes.get(cls, 0) == 0, "no %s row from a dead server (%r)" % (cls, classes))
    # the server restarted on the same port: resume (the run's URL is frozen) completes the run
    port = url.rsplit(":", 1)[1]
    log2 = open(os.path.join(tmp, "sx2.log"), "w")
    proc2 = subprocess.Popen([SERVER, *sargs, "--port", port], stderr=log2)
    try:
        r = None
        for _ in range(100):
            r = ev.sixi_eval("resume", "1", "--db", db)
            if r.returncode == 0 or proc2.poll() is not None:
                break
            time.sleep(0.2)
        check(r.returncode == 0, "resume against the restarted server: %s" % r.stderr[-800:])
        ev.check_complete(db, 1, 3, 6, 2, "server kill")
        after = ev.rows(db, 1)
        check(set(rows) <= set(after), "no row lost across the server's death")
    finally:
        ev.stop_sixi_server(proc2, log2)
    return 0


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "eval"
    with tempfile.TemporaryDirectory(prefix="sixi-kill-") as tmp:
        t0 = time.monotonic()
        rc = {"eval": matrix_eval, "bench": matrix_bench, "server": matrix_server}[what](tmp) or 0
        print("%s: %.1f s" % (what, time.monotonic() - t0))
    print("%d checks, %d failed" % (ev.checks, ev.failures))
    if ev.failures:
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
