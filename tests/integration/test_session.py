#!/usr/bin/python3
"""One server, one fingerprint: sixi-bench and sixi-eval greet a server through the
same module (src/session/), so a real sixi-server --simulate (127.0.0.1, port 0)
measured by both gets the same stored fingerprint, JSON and hash, in both runs'
rows, and both runs store the same host facts.

Usage: test_session.py SIXI_BENCH SIXI_EVAL SIXI_SERVER. Both runs write one
database; every process started here is bounded in time and stopped by PID."""
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_eval_run as ev  # noqa: E402  (start_sixi_server, stop_sixi_server, DEMO)

check = ev.check


def main():
    bench, evalexe, server = sys.argv[1:4]
    if not os.access(server, os.X_OK):
        print("sixi-server is not built in this tree: test left out")
        return 77
    with tempfile.TemporaryDirectory(prefix="sixi-session-") as tmp:
        db = os.path.join(tmp, "one.db")
        proc, log, url = ev.start_sixi_server(tmp, server, "sim", ["--simulate", "thor", "--time-scale", "20"])
        try:
            if not check(url is not None, "sixi-server started"):
                return 1
            r = subprocess.run([evalexe, "run", "--url", url, "--model", "sim-thor", "--dataset", ev.DEMO,
                                "--max-tokens", "8", "--no-preflight", "--db", db],
                               capture_output=True, text=True, timeout=120)
            check(r.returncode == 0, "sixi-eval run exits 0: %s" % r.stderr[-400:])
            b = subprocess.run([bench, "sweep", "--url", url, "--model", "sim-thor", "--concurrency", "2",
                                "--max-tokens", "8", "--rounds", "1", "--warmup", "2", "--db", db, "--no-plots",
                                "--quiet"], capture_output=True, text=True, timeout=120)
            check(b.returncode == 0, "sixi-bench sweep exits 0: %s" % b.stderr[-400:])
        finally:
            ev.stop_sixi_server(proc, log)
        con = sqlite3.connect(db)
        runs = con.execute("SELECT id, kind, fingerprint, host_facts, protocol_json FROM runs"
                           " WHERE workload != 'selftest' ORDER BY id").fetchall()
        # (sixi-bench measures its own ceiling first, a run of workload selftest)
        if not check([k for _, k, *_ in runs] == ["eval", "bench"], "one eval and one bench run: %r" %
                     [k for _, k, *_ in runs]):
            return 1
        (eid, _, efp, efacts, eproto), (bid, _, bfp, bfacts, _) = runs
        print("fingerprint of the eval run: %s" % efp)
        check(efp is not None and efp == bfp, "the same fingerprint JSON in both runs: %r / %r" % (efp, bfp))
        fp = json.loads(efp or "{}")
        fp = fp if isinstance(fp, dict) else {}
        ids = [m.get("id") for m in fp.get("/v1/models", {}).get("data", [])]
        check(ids == ["sim-thor"], "the fingerprint holds the server's model list: %r" % ids)
        check(json.loads(eproto).get("server_fingerprint") == fp,
              "the eval run's frozen configuration holds the same fingerprint")
        want = hashlib.sha256((efp or "").encode()).hexdigest()
        for run, phases in ((eid, ("warmup",)), (bid, ("warmup", "measure"))):
            for phase in phases:
                got = con.execute("SELECT count(*), count(DISTINCT fingerprint_hash), min(fingerprint_hash)"
                                  " FROM bench_requests WHERE run = ? AND phase = ?", (run, phase)).fetchone()
                check(got[0] >= 1 and got[1] == 1 and got[2] == want,
                      "run %d, phase %s: every row has the fingerprint's sha256 %s: %r" % (run, phase, want, got))
        ready = con.execute("SELECT run, count(*), sum(error IS NULL) FROM bench_requests WHERE phase = 'ready'"
                            " GROUP BY run ORDER BY run").fetchall()
        check([(r, n >= 1, ok >= 1) for r, n, ok in ready] == [(eid, True, True), (bid, True, True)],
              "both runs stored their readiness by real generation: %r" % ready)
        warm = con.execute("SELECT run, count(*) FROM bench_requests WHERE phase = 'warmup' GROUP BY run"
                           " ORDER BY run").fetchall()
        check(warm == [(eid, 2), (bid, 2)], "two warm-ups each, as asked: %r" % warm)
        con.close()
        ef, bf = json.loads(efacts), json.loads(bfacts)
        shared = ("hostname", "kernel", "machine", "cpus", "memory_bytes")
        check(all(k in ef and ef[k] == bf.get(k) for k in shared), "the same host facts: %r / %r" % (ef, bf))
        check(ef.get("memory", {}).get("checked") is True and bf.get("memory", {}).get("checked") is True
              and ef["memory"].get("target_pid") == proc.pid == bf["memory"].get("target_pid"),
              "both runs checked for other servers and found the target by its port")
        check("grader_python" in ef and "grader_python" not in bf, "eval adds what grading depends on")
    print("%d checks, %d failed" % (ev.checks, ev.failures))
    return 1 if ev.failures else 0


if __name__ == "__main__":
    sys.exit(main())
