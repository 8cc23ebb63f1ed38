#!/usr/bin/env python3
"""Fault injection through a whole short sixi-bench run (core/fault.h).

For each kind (sqlite: SQLITE_IOERR on a write, full: SQLITE_FULL, read: a
failed response-body read, alloc: a failed malloc, alloc@T: a failed malloc of
thread T) the run is repeated with SIXI_FAULT=KIND=k (alloc@T: alloc=k@T) for
k = first, first+step, ... until the fault no longer fires
(k is past the run's last event of that kind), bounded in runs. Each run must:
  - end by itself, not by a signal, and without a sanitizer report;
  - on a non-zero exit, say why in a "sixi-bench: ..." line;
  - leave a database that passes PRAGMA integrity_check, whose rows are all
    complete (finished or carrying an error class), where every run marked
    'done' holds all its rows (a lost row must never make a 'done' run);
  - leave that database usable: a clean run into it afterwards succeeds.
A bench run is not resumable: rows written before the fault stay, the run is
marked failed (or left 'running' when the fault hit that very write).

  test_bench_fault.py SIXI_BENCH [KIND...]
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = sys.argv[1]
KINDS = sys.argv[2:] or ["sqlite", "full", "read", "alloc", "alloc@0", "alloc@1", "alloc@2"]
TMP = tempfile.mkdtemp(prefix="sixi-bench-fault-")
FAILS = []
# (first k, step, most runs) per kind: writes and reads are few, allocations many.
# "alloc" counts over all threads (which thread's allocation is the k-th depends on
# scheduling); "alloc@T" counts thread T's only (0: the main thread, which makes
# most of them; 1, 2: the first threads started after it), a sequence that does not
# depend on scheduling, so a failure found there can be replayed with
# SIXI_FAULT=alloc=K@T. Thread 0's step is prime to alloc's, so the two visit
# different allocations.
SCHEDULE = {"sqlite": (1, 1, 60), "full": (2, 3, 25), "read": (1, 1, 30), "alloc": (1, 37, 60),
            "alloc@0": (5, 31, 100), "alloc@1": (1, 1, 40), "alloc@2": (1, 1, 40)}


def spec(kind, k):
    """SIXI_FAULT's value and the line the injected fault prints."""
    base, _, thread = kind.partition("@")
    if thread:
        return "%s=%d@%s" % (base, k, thread), "fault injected: %s #%d in thread %s\n" % (base, k, thread)
    return "%s=%d" % (kind, k), "fault injected: %s #%d\n" % (kind, k)


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def start_server():
    pf = os.path.join(TMP, "port")
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_openai.py"), "--port-file", pf,
                             "--lifetime", "170"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(pf):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("fake server did not start")
        time.sleep(0.02)
    time.sleep(0.05)
    return proc, "http://127.0.0.1:" + open(pf).read().strip()


def bench(url, db, fault=None):
    env = dict(os.environ)
    env.pop("SIXI_FAULT", None)
    if fault:
        env["SIXI_FAULT"] = fault
    p = subprocess.run([BENCH, "sweep", "--url", url, "--model", "fake", "--db", db, "--no-plots",
                        "--concurrency", "1,2", "--max-tokens", "8", "--rounds", "1"],
                       capture_output=True, text=True, timeout=60, env=env)
    return p.returncode, p.stderr


def db_state(db):
    """(integrity, {run: (workload, status, rows)}, incomplete rows) or None when no schema."""
    if not os.path.exists(db):
        return None
    con = sqlite3.connect(db)
    try:
        integ = con.execute("PRAGMA integrity_check").fetchone()[0]
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "runs" not in names or "bench_requests" not in names:
            return integ, {}, 0
        runs = {rid: (wl, st, n) for rid, wl, st, n in con.execute(
            "SELECT r.id, r.workload, r.status, (SELECT count(*) FROM bench_requests b WHERE b.run = r.id) "
            "FROM runs r WHERE r.kind = 'bench'")}
        bad = con.execute("SELECT count(*) FROM bench_requests WHERE error IS NULL AND t_done IS NULL").fetchone()[0]
        return integ, runs, bad
    finally:
        con.close()


def main():
    proc, url = start_server()
    try:
        base_db = os.path.join(TMP, "base.db")
        rc, err = bench(url, base_db)
        if not check(rc == 0, "the clean run exits 0 (%s)" % err[-300:]):
            return
        _, runs, _ = db_state(base_db)
        full = {wl: n for wl, st, n in runs.values()}  # rows of a complete run, per workload
        print("clean run: rows per workload %r" % full)
        total_faults = 0
        for kind in KINDS:
            k, step, most = SCHEDULE[kind]
            fired = 0
            for i in range(most):
                db = os.path.join(TMP, "%s-%d.db" % (kind, k))
                # the clean run's database already has the client ceiling: faults land in the sweep
                shutil.copy(base_db, db)
                what, said_line = spec(kind, k)
                rc, err = bench(url, db, what)
                hit = said_line in err
                check(0 <= rc < 64, "%s: ends by itself with a small exit code (rc=%d)" % (what, rc))
                check("Sanitizer" not in err and "runtime error" not in err, "%s: no sanitizer report" % what)
                if rc != 0:
                    said = [line for line in err.splitlines() if line.startswith("sixi-bench: ")]
                    check(said and len(said[-1]) > 20, "%s: exit %d says why (%r)" % (what, rc, err[-300:]))
                st = db_state(db)
                if st:
                    integ, runs, bad = st
                    check(integ == "ok", "%s: integrity_check %r" % (what, integ))
                    check(bad == 0, "%s: %d rows neither finished nor failed" % (what, bad))
                    for rid, (wl, status, n) in runs.items():
                        if status == "done":
                            # a failed request is a row too: more rows are fine, fewer are lost rows
                            check(n >= full.get(wl), "%s: run %d (%s) is 'done' with %d of %r rows" %
                                  (what, rid, wl, n, full.get(wl)))
                        else:
                            check(status in ("failed", "running"), "%s: run %d status %r" % (what, rid, status))
                    if rc == 0:
                        check(any(wl == "sweep" and s == "done" for wl, s, _ in runs.values()),
                              "%s: exit 0 with the sweep 'done'" % what)
                    rc2, err2 = bench(url, db)
                    check(rc2 == 0, "%s: the database is usable afterwards (%s)" % (what, err2[-200:]))
                if not hit:
                    break
                fired += 1
                k += step
            total_faults += fired
            print("%s: %d faults injected (k up to %d), the run's last event passed: %s" %
                  (kind, fired, k, "yes" if not hit else "no (bounded)"))
            if kind.startswith("alloc") and fired == 0 and k == SCHEDULE[kind][0]:
                print("alloc: not injected in this build (a sanitizer owns the allocator)")
                continue
            check(fired > 0, "%s: at least one fault fired" % kind)
        print("%d faults injected in all" % total_faults)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    if FAILS:
        print("%d check(s) failed" % len(FAILS), file=sys.stderr)
        sys.exit(1)
    print("ok")


main()
