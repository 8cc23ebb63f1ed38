#!/usr/bin/python3
"""sixi-eval run --url A,B,C: one condition on three replicas of one model (sixi-server
--simulate processes on 127.0.0.1, port files, stopped by PID).

- replica B is killed with SIGKILL once the run has stored its first rows: the run
  finishes; every (task, repeat) has exactly one result, none doubled; B's attempts
  after the kill are api_error rows and each was retried on A or C; B gets no
  request after its first api_error;
- the summary's per-replica counts (stored in runs.summary_json) add up to the rows;
- a replica of another configuration is refused before anything is stored (exit 2,
  naming the replica and the fingerprint field); so is a malformed URL list.
Verdicts read the stored rows only; the loops that wait are bounded."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_eval_run as ev  # noqa: E402  (sixi_eval, check, count_rows, DEMO)

check = ev.check
SIM = os.path.join(ev.BUILD, "src", "sixi-server")
REPEATS = 6


def start_sim(tmp, name, path):
    """A simulated server of the device file path (its name is the model's id)."""
    port_file = os.path.join(tmp, name + ".port")
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([SIM, "--simulate", path, "--time-scale", "30", "--host", "127.0.0.1", "--port", "0",
                          "--port-file", port_file], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if os.path.exists(port_file) and open(port_file).read().strip():
            url = "http://127.0.0.1:%d" % int(open(port_file).read())
            try:
                urllib.request.urlopen(url + "/health", timeout=5)
                return p, url
            except (urllib.error.URLError, OSError):
                pass
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    p.wait()
    raise SystemExit("FAIL: sixi-server --simulate did not start: " + open(os.path.join(tmp, name + ".log")).read())


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    if not os.access(ev.EVAL, os.X_OK) or not os.access(SIM, os.X_OK):
        print("SKIP: sixi-eval or sixi-server is not built")
        return 77
    text = "Let me think about this step by step. " * 12 + "The answer is 5."
    cfg = {"base": "thor", "slots": 4, "context": 8192, "script": [text]}
    tmp = tempfile.mkdtemp(prefix="sixi-replicas-")
    procs = []
    dev = os.path.join(tmp, "device.json")
    json.dump(cfg, open(dev, "w"))
    try:
        for name in ("a", "b", "c"):
            procs.append(start_sim(tmp, name, dev))
        urls = [u for _, u in procs]
        db = os.path.join(tmp, "replicas.db")
        log = open(os.path.join(tmp, "eval.log"), "w")
        run = subprocess.Popen([ev.EVAL, "run", "--url", ",".join(urls), "--model", "m", "--dataset", ev.DEMO,
                                "--repeats", str(REPEATS), "--concurrency", "3", "--attempts", "3", "--max-tokens",
                                "200", "--timeout", "60", "--no-preflight", "--json", "--db", db],
                               stdout=subprocess.PIPE, stderr=log, text=True)
        # kill B once rows are stored and the run is going (36 task runs, 3 at a time)
        for _ in range(2400):
            if ev.count_rows(db) >= 3 or run.poll() is not None:
                break
            time.sleep(0.05)
        still_running = run.poll() is None
        procs[1][0].send_signal(signal.SIGKILL)
        procs[1][0].wait()
        killed_at = ev.count_rows(db)
        try:
            out, _ = run.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            run.kill()
            out, _ = run.communicate()
        log.close()
        err = open(os.path.join(tmp, "eval.log")).read()
        check(still_running and killed_at < REPEATS * 6, "B was killed mid-run (%d rows stored then)" % killed_at)
        check(run.returncode == 0, "the run finishes on A and C: %d %s" % (run.returncode, err[-1500:]))

        if run.returncode != 0:
            return 1
        con = sqlite3.connect(db)
        rows = con.execute("SELECT id, repeat_index, task_id, attempt, failure_class,"
                           " json_extract(grader_detail, '$.replica') FROM eval_rows WHERE run = 1 ORDER BY id").fetchall()
        frozen = json.loads(con.execute("SELECT protocol_json FROM runs WHERE id = 1").fetchone()[0])
        summary = json.loads(con.execute("SELECT summary_json FROM runs WHERE id = 1").fetchone()[0] or "{}")
        con.close()
        pairs = {(r, t) for r, order in enumerate(frozen["task_order"]) for t in order}
        keys = [(r, t, a) for _, r, t, a, _, _ in rows]
        check(len(keys) == len(set(keys)), "no row doubled")
        results = {}
        for _, r, t, a, cls, _ in rows:
            if cls != "api_error":
                results.setdefault((r, t), []).append(a)
        check(len(pairs) == REPEATS * 6 and set(results) == pairs, "no row lost: %d of %d pairs have a result" %
              (len(set(results) & pairs), len(pairs)))
        check(all(len(v) == 1 for v in results.values()), "each pair has exactly one result")
        b = urls[1]
        b_rows = [x for x in rows if x[5] == b]
        b_api = [x for x in b_rows if x[4] == "api_error"]
        check(len(b_api) >= 1, "B's attempts after the kill are api_error rows: %s" % (b_rows,))
        first_api = min((x[0] for x in b_api), default=0)
        check(all(x[4] == "api_error" for x in b_rows if x[0] > first_api),
              "B gets no request that succeeds after its first api_error")
        for _, r, t, a, _, _ in b_api:
            later = [x for x in rows if x[1] == r and x[2] == t and x[3] > a and x[4] != "api_error"]
            check(len(later) == 1 and later[0][5] in (urls[0], urls[2]),
                  "B's failed attempt %s/%d/%d was retried on A or C: %s" % (t, r, a, later))
        check(all(x[5] in urls for x in rows), "every row names its replica")
        # least outstanding requests: 3 workers on A and C keep both busy, neither starves
        ac = [sum(1 for x in rows if x[5] == u) for u in (urls[0], urls[2])]
        check(min(ac) >= 0.25 * sum(ac), "A and C share the work (least outstanding requests): %s" % ac)
        reps = summary.get("eval", {}).get("replicas", [])
        by_url = {x["url"]: x for x in reps}
        check(sum(x["attempts"] for x in reps) == len(rows), "per-replica attempts add up: %s" % reps)
        check(by_url.get(b, {}).get("api_error_attempts") == len(b_api), "B's api errors counted: %s" % reps)
        check(sum(x["task_runs"] for x in reps) == len(pairs), "per-replica task runs add up: %s" % reps)
        try:
            printed = json.loads(out)
        except ValueError:
            printed = {}
        check(printed.get("replicas") == reps, "the printed summary has the same per-replica counts")

        # another configuration behind one condition: refused before anything is stored
        small = os.path.join(tmp, "small", "device.json")  # the same model id, a smaller context
        os.makedirs(os.path.dirname(small))
        json.dump(dict(cfg, context=4096), open(small, "w"))
        other = start_sim(tmp, "d", small)
        procs.append(other)
        db2 = os.path.join(tmp, "refused.db")
        r = ev.sixi_eval("run", "--url", "%s,%s" % (urls[0], other[1]), "--model", "m", "--dataset", ev.DEMO,
                         "--no-preflight", "--db", db2)
        check(r.returncode == 2 and "replica 2 (%s)" % other[1] in r.stderr and "differ in" in r.stderr,
              "a replica of another configuration is refused, named: %d %s" % (r.returncode, r.stderr[-600:]))
        n_runs = 0
        if os.path.exists(db2):
            con = sqlite3.connect(db2)
            n_runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
            con.close()
        check(n_runs == 0, "nothing stored for the refused run")
        r = ev.sixi_eval("run", "--url", "%s,,%s" % (urls[0], urls[2]), "--model", "m", "--dataset", ev.DEMO,
                         "--no-preflight", "--db", db2)
        check(r.returncode == 2 and "replica 2" in r.stderr, "a malformed URL list: %d %s" % (r.returncode, r.stderr))
    finally:
        for p, _ in procs:
            stop(p)
    print("FAILED" if ev.failures else "ok", ev.failures, "of", ev.checks)
    return 1 if ev.failures else 0


sys.exit(main())
