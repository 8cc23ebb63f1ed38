#!/usr/bin/python3
"""Fault injection through a short sixi-eval run (core/fault.h), then resume.

For each kind (sqlite: SQLITE_IOERR on a write, full: SQLITE_FULL, read: a
failed response-body read, alloc: a failed malloc, alloc@0: a failed malloc of
the main thread) a one-repeat run of the demo
dataset is repeated with SIXI_FAULT=KIND=k for k on a schedule, until the fault
no longer fires or the schedule ends. Each run must:
  - end by itself, not by a signal, and without a sanitizer report;
  - on a non-zero exit, say why in a "sixi-eval: ..." line;
  - leave a database that passes PRAGMA integrity_check, whose rows are
    complete (every stored raw text reference resolves);
  - resume cleanly without the fault: every row kept, then every task has
    exactly one final row and attempts 1..k without gap or double.

  test_eval_fault.py [KIND...]
"""
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_eval_run as ev  # noqa: E402

check = ev.check
KINDS = sys.argv[1:] or ["sqlite", "full", "read", "alloc", "alloc@0"]
# (first k, step, most runs); alloc@0 counts the main thread's allocations only
# (core/fault.h: a sequence that does not depend on scheduling, so it replays)
SCHEDULE = {"sqlite": (1, 9, 12), "full": (5, 13, 6), "read": (1, 2, 6), "alloc": (1, 613, 8),
            "alloc@0": (307, 997, 7)}


def spec(kind, k):
    """SIXI_FAULT's value and the line the injected fault prints."""
    base, _, thread = kind.partition("@")
    if thread:
        return "%s=%d@%s" % (base, k, thread), "fault injected: %s #%d in thread %s\n" % (base, k, thread)
    return "%s=%d" % (kind, k), "fault injected: %s #%d\n" % (kind, k)


def has_run(db):
    try:
        con = sqlite3.connect(db)
        n = con.execute("SELECT count(*) FROM runs WHERE id = 1 AND kind = 'eval'").fetchone()[0]
        con.close()
        return n == 1
    except sqlite3.Error:
        return False


def db_checks(db, what):
    con = sqlite3.connect(db)
    try:
        integ = con.execute("PRAGMA integrity_check").fetchone()[0]
        check(integ == "ok", "%s: integrity_check %r" % (what, integ))
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "eval_rows" in names:
            dangling = con.execute("SELECT count(*) FROM eval_rows e WHERE e.raw_sha256 IS NOT NULL AND NOT EXISTS"
                                   " (SELECT 1 FROM raw_text t WHERE t.sha256 = e.raw_sha256)").fetchone()[0]
            check(dangling == 0, "%s: %d rows point at raw text that was not stored" % (what, dangling))
    finally:
        con.close()


def main():
    with tempfile.TemporaryDirectory(prefix="sixi-eval-fault-") as tmp:
        srv = ev.Server(tmp, ev.rules({}))
        total = 0
        try:
            for kind in KINDS:
                k, step, most = SCHEDULE[kind]
                fired = 0
                hit = False
                for _ in range(most):
                    what, said_line = spec(kind, k)
                    db = os.path.join(tmp, "%s-%d.db" % (kind, k))
                    env = dict(os.environ, SIXI_FAULT=what)
                    r = subprocess.run([ev.EVAL, "run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO,
                                        "--repeats", "1", "--concurrency", "2", "--no-preflight", "--db", db],
                                       capture_output=True, text=True, env=env, timeout=120)
                    hit = said_line in r.stderr
                    check(0 <= r.returncode < 64, "%s: ends by itself (rc=%d)" % (what, r.returncode))
                    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr,
                          "%s: no sanitizer report" % what)
                    if r.returncode != 0:
                        said = [x for x in r.stderr.splitlines() if x.startswith("sixi-eval: ")]
                        check(said, "%s: exit %d says why (%r)" % (what, r.returncode, r.stderr[-300:]))
                    if os.path.exists(db):
                        db_checks(db, what)
                    if has_run(db):
                        before = set(ev.rows(db, 1))
                        r2 = ev.sixi_eval("resume", "1", "--db", db)
                        check(r2.returncode == 0, "%s: resume exit %d: %s" % (what, r2.returncode, r2.stderr[-500:]))
                        after = set(ev.rows(db, 1))
                        check(before <= after, "%s: resume kept every row" % what)
                        ev.check_complete(db, 1, 1, 6, 3, what)
                        db_checks(db, what + " resumed")
                    elif os.path.exists(db):
                        r2 = ev.sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", ev.DEMO,
                                          "--repeats", "1", "--no-preflight", "--db", db)
                        check(r2.returncode == 0, "%s: the database is usable afterwards: %s" % (what, r2.stderr[-300:]))
                    if not hit:
                        break
                    fired += 1
                    k += step
                total += fired
                if kind.startswith("alloc") and fired == 0 and k == SCHEDULE[kind][0]:
                    print("%s: not injected in this build (a sanitizer owns the allocator)" % kind)
                    continue
                print("%s: %d faults injected (k up to %d); past the run's last event: %s" %
                      (kind, fired, k, "yes" if not hit else "no (bounded)"))
                check(fired > 0, "%s: at least one fault fired" % kind)
        finally:
            srv.stop()
        print("%d faults injected in all" % total)
    print("%d checks, %d failed" % (ev.checks, ev.failures))
    return 1 if ev.failures else 0


if __name__ == "__main__":
    sys.exit(main())
