#!/usr/bin/python3
"""resume retries attempts that ended in api_error: with --attempts 1, a task
whose only attempt got a 500 has no result; `sixi-eval resume` gives it a new
attempt (within attempts + the api_error_retries recorded with the run), and
tasks with a result are not run again. The fake server of test_eval_run.py
(started here, stopped by PID) answers the first request of one task with a
500 and every later one normally."""
import json
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_eval_run as ev  # noqa: E402

check = ev.check


def main():
    tmp = ev.tempfile.mkdtemp(prefix="sixi-resume-api-")
    db = os.path.join(tmp, "r.db")
    srv = ev.Server(tmp, ev.rules({"apples": ("500", 1)}))
    try:
        r = ev.sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO, "--attempts", "1",
                         "--repeats", "1", "--no-preflight", "--db", db)
        check(r.returncode == 0, "run: %s" % r.stderr[-500:])
        before = ev.rows(db)
        api = [row for row in before if row[3] == "api_error"]
        check(len(api) == 1 and api[0][1] == "demo/apples", "one api_error row, for demo/apples: %s" % api)
        frozen = json.loads(sqlite3.connect(db).execute("SELECT protocol_json FROM runs").fetchone()[0])
        check(frozen.get("api_error_retries", 0) >= 1, "the retries are recorded with the run")
        r = ev.sixi_eval("resume", "1", "--db", db)
        check(r.returncode == 0, "resume: %s" % r.stderr[-500:])
        after = ev.rows(db)
        apples = [row for row in after if row[1] == "demo/apples"]
        check([a[2] for a in apples] == [1, 2] and apples[-1][3] == "pass",
              "resume retried the api_error attempt as attempt 2 and it passed: %s" % apples)
        check(len(after) == len(before) + 1, "no other task ran again: %d rows, then %d" % (len(before), len(after)))
        r = ev.sixi_eval("resume", "1", "--db", db)
        check(r.returncode == 0 and len(ev.rows(db)) == len(after), "a second resume has nothing to do")
    finally:
        srv.stop()
    print("FAILED" if ev.failures else "ok", ev.failures)
    return 1 if ev.failures else 0


sys.exit(main())
