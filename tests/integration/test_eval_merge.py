#!/usr/bin/python3
"""sixi-eval merge against a real sixi-server on 127.0.0.1 (the trained default model
sixi-small, temperature 0.9 with seeded sampling: --sample-seed gives every attempt its own
seed, so a task's reply is the same in every run, sharded or not):

- a 4-shard run (run --shard K/4, one file per shard) merged equals the unsharded
  run: the same (task, repeat) pairs, the same per-task pass counts, the same replies;
- merging again, or in another order, changes no row;
- a missing shard is reported by number (exit 1) and the merged run is 'incomplete';
- a shard of another configuration is refused, naming the nested key (exit 2), and
  no file is written;
- sixi-eval summary and sixi-report compare read the merged file like any other.
The server is started here and stopped by PID."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_eval_run as ev  # noqa: E402  (sixi_eval, start/stop_sixi_server, check)

check = ev.check
SERVER = os.path.join(ev.BUILD, "src", "sixi-server")
REPORT = os.path.join(ev.BUILD, "src", "sixi-report")
TRAINED = os.path.join(ev.SRC, "src", "model", "trained", "sixi-small")


def pass_counts(db, run=None):
    """Per-task pass counts and pair count over final attempts."""
    con = sqlite3.connect(db)
    where = "WHERE run = %d" % run if run else ""
    q = ("SELECT task_id, SUM(pass), COUNT(*) FROM eval_rows e %s AND attempt = (SELECT MAX(attempt) FROM eval_rows x"
         " WHERE x.run = e.run AND x.repeat_index = e.repeat_index AND x.task_id = e.task_id)"
         " GROUP BY task_id ORDER BY task_id" % (where or "WHERE 1"))
    res = con.execute(q).fetchall()
    con.close()
    return res


def dump(db):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT run, repeat_index, task_id, attempt, pass, failure_class, raw_sha256, completion_tokens,"
                       " seconds FROM eval_rows ORDER BY 1, 2, 3, 4").fetchall()
    runs = con.execute("SELECT id, status, config_hash FROM runs ORDER BY id").fetchall()
    n_raw = con.execute("SELECT COUNT(*) FROM raw_text").fetchone()[0]
    con.close()
    return rows, runs, n_raw


def main():
    if not os.access(ev.EVAL, os.X_OK) or not os.access(SERVER, os.X_OK):
        print("SKIP: sixi-eval or sixi-server is not built")
        return 77
    with tempfile.TemporaryDirectory(prefix="sixi-merge-") as tmp:
        gguf = os.path.join(tmp, "small.gguf")
        w = subprocess.run([SERVER, "--write-tiny", gguf, "--from", TRAINED], capture_output=True, text=True,
                           timeout=120)
        if not check(w.returncode == 0, "sixi-server --write-tiny --from: %s" % w.stderr[-500:]):
            return 1
        proc, log, url = ev.start_sixi_server(tmp, SERVER, "small", ["--model", gguf, "--threads", "1"])
        try:
            if not check(url is not None, "sixi-server started"):
                return 1
            args = ["--url", url, "--model", "sixi-small", "--dataset", ev.DEMO, "--repeats", "3", "--temperature",
                    "0.9", "--sample-seed", "7", "--max-tokens", "48", "--timeout", "120", "--no-preflight"]

            def run(db, *extra):
                r = ev.sixi_eval("run", *args, "--db", db, *extra, timeout=300)
                check(r.returncode == 0, "run %s %s: %s" % (os.path.basename(db), extra, r.stderr[-800:]))

            whole = os.path.join(tmp, "whole.db")
            run(whole)
            shards = [os.path.join(tmp, "shard-%d.db" % k) for k in range(4)]
            for k, db in enumerate(shards):
                run(db, "--shard", "%d/4" % k)
            other = os.path.join(tmp, "other.db")
            budget = args[:args.index("--max-tokens") + 1] + ["24"] + args[args.index("--max-tokens") + 2:]
            r = ev.sixi_eval("run", *budget, "--db", other, "--shard", "1/4", timeout=300)
            check(r.returncode == 0, "run with another budget: %s" % r.stderr[-500:])
        finally:
            ev.stop_sixi_server(proc, log)

        # each shard recorded its slice; together they hold every pair once
        per_shard = [sum(c for _, _, c in pass_counts(db)) for db in shards]
        total = sum(c for _, _, c in pass_counts(whole))
        check(total == 18 and sum(per_shard) == total, "the shards hold the whole run's 18 pairs: %s" % per_shard)
        con = sqlite3.connect(shards[2])
        s = json.loads(con.execute("SELECT summary_json FROM runs WHERE id = 1").fetchone()[0])
        con.close()
        check(s.get("shard") == {"k": 2, "n": 4}, "the shard spec is stored with the shard: %r" % s.get("shard"))

        merged = os.path.join(tmp, "merged.db")
        r = ev.sixi_eval("merge", merged, *shards)
        check(r.returncode == 0 and "complete" in r.stdout, "merge of 4 shards: %s %s" % (r.stdout[-300:], r.stderr[-500:]))
        check(pass_counts(merged) == pass_counts(whole),
              "merged per-task pass counts equal the unsharded run's: %s vs %s" % (pass_counts(merged), pass_counts(whole)))
        q = "SELECT repeat_index, task_id, attempt, raw_sha256, pass FROM eval_rows ORDER BY 1, 2, 3"
        replies = [sqlite3.connect(db).execute(q).fetchall() for db in (whole, merged)]
        check(replies[0] == replies[1], "the merged replies are the unsharded run's, byte for byte (seeded sampling)")
        check(len({r[3] for r in replies[0]}) > 1, "sampling drew different replies")
        first = dump(merged)
        check(first[1] and first[1][0][1] == "done", "the merged run is done: %s" % (first[1],))

        # again, and in another order into another file: no row changes
        r = ev.sixi_eval("merge", merged, shards[3], shards[1], shards[0], shards[2])
        check(r.returncode == 0 and "0 row(s) added" in r.stdout, "merging again adds nothing: %s" % r.stdout[-300:])
        check(dump(merged) == first, "merging again changes no row")
        rev = os.path.join(tmp, "reverse.db")
        for k in (3, 2):
            r = ev.sixi_eval("merge", rev, shards[k])
            check(r.returncode == 1, "a partial merge is incomplete (exit 1): %d %s" % (r.returncode, r.stderr[-300:]))
        check("shard(s) 0, 1 of 4" in r.stderr, "the missing shards are named: %s" % r.stderr[-400:])
        check(dump(rev)[1][0][1] == "incomplete", "the partial merged run is marked incomplete")
        r = ev.sixi_eval("merge", rev, shards[1], shards[0])
        check(r.returncode == 0, "the rest of the shards complete it: %s" % r.stderr[-300:])
        check(dump(rev)[0] == first[0] and dump(rev)[1][0][1] == "done", "another order, the same rows")

        # another configuration: refused, nothing written
        mixed = os.path.join(tmp, "mixed.db")
        r = ev.sixi_eval("merge", mixed, shards[0], other)
        check(r.returncode == 2 and "protocol.sampling.max_tokens" in r.stderr,
              "mixed configurations refused, naming the key: %d %s" % (r.returncode, r.stderr[-400:]))
        check(not os.path.exists(mixed), "nothing written on a refusal")
        r = ev.sixi_eval("merge", merged, other, shards[0])
        check(r.returncode == 2 and dump(merged) == first, "a refused merge leaves an existing file as it was")

        # the merged file is a results file like any other
        r = ev.sixi_eval("summary", "1", "--db", merged, "--json")
        rw = ev.sixi_eval("summary", "1", "--db", whole, "--json")
        try:
            sm, sw = json.loads(r.stdout), json.loads(rw.stdout)
        except ValueError:
            sm, sw = {}, {"bad": r.stdout[-300:] + r.stderr[-300:]}
        check(sm.get("passed") == sw.get("passed") and sm.get("task_runs") == sw.get("task_runs") == 18,
              "sixi-eval summary of the merged file: %s vs %s" % (sm.get("passed"), sw.get("passed")))
        r = ev.sixi_eval("merge", whole, *shards)  # the merged run beside the unsharded one
        check(r.returncode == 0, "merge into the unsharded run's file: %s" % r.stderr[-300:])
        c = subprocess.run([REPORT, "compare", "--db", whole, "1", "2", "--json"], capture_output=True, text=True,
                           timeout=120)
        try:
            t = json.loads(c.stdout)["tables"]
            pooled = [row["passes"] for row in t["pooled"]["rows"]]
            mc = t["mcnemar"]["rows"][0]
        except (ValueError, KeyError, IndexError):
            pooled, mc = None, {}
        check(c.returncode == 0 and pooled and pooled[0] == pooled[1],
              "sixi-report compare of the unsharded and the merged run: %s %s" % (pooled, c.stderr[-300:]))
        check(mc.get("only A") == 0 and mc.get("only B") == 0, "no task solved by one and not the other: %s" % mc)
    print("FAILED" if ev.failures else "ok", ev.failures, "of", ev.checks)
    return 1 if ev.failures else 0


sys.exit(main())
