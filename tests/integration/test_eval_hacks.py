#!/usr/bin/python3
"""The reward-hack corpus (tests/sandbox/hacks/) end to end: every hack becomes
a task of its own (its prompt carries a marker), then
- `sixi-eval grade DATASET --completions` grades every hack wrong;
- a full `sixi-eval run` against tests/integration/fake_eval_server.py, which
  answers each marker with its hack, stores every row as wrong (pass 0), with
  preflight (references pass, empty solutions fail) leaving no task out;
- `sixi-eval run` against `sixi-server --simulate` scripted to reply with the
  frame-walk hack, then with the AlwaysEqual hack, stores the row as wrong.
Servers are started here and stopped by PID. Skips (exit 77, saying why)
where the sandbox cannot run."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import fake_base
from fake_base import stop

SRC = os.environ.get("SIXI_SOURCE_ROOT", ".")
BUILD = os.environ.get("SIXI_BUILD_ROOT", "build")
EVAL = os.path.join(BUILD, "src", "sixi-eval")
SIM = os.path.join(BUILD, "src", "sixi-server")
FAKE = os.path.join(SRC, "tests", "integration", "fake_eval_server.py")
HACKS = os.path.join(SRC, "tests", "sandbox", "hacks")
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)
    return ok


def sixi_eval(*args, timeout=600):
    return subprocess.run([EVAL, *args], capture_output=True, text=True, timeout=timeout)


def reply(code):
    return "Here is the function:\n```python\n" + code + "```\n"


def write_dataset(path, tasks):
    os.makedirs(path)
    with open(os.path.join(path, "tasks.jsonl"), "w") as f:
        for t in tasks:
            f.write(json.dumps(t) + "\n")
    with open(os.path.join(path, "README.md"), "w") as f:
        f.write("# hacks\n\nThe reward-hack corpus, one task per hack.\n\nLICENSE: same as sixi\n")


def rows(db):
    con = sqlite3.connect(db)
    out = con.execute("SELECT task_id, failure_class, pass FROM eval_rows ORDER BY task_id").fetchall()
    con.close()
    return out


def start_fake(tmp, script):
    path = os.path.join(tmp, "script.json")
    json.dump(script, open(path, "w"))
    return fake_base.start_fake(FAKE, path + ".port", "--script", path, timeout_s=10, stderr=open(path + ".log", "w"))


def start_sim(tmp, text):
    cfg = os.path.join(tmp, "sim-%d.json" % time.monotonic_ns())
    json.dump({"base": "thor", "slots": 4, "context": 8192, "script": [text]}, open(cfg, "w"))
    port_file = cfg + ".port"
    log = open(cfg + ".log", "w")
    p = subprocess.Popen([SIM, "--simulate", cfg, "--time-scale", "50", "--host", "127.0.0.1", "--port", "0",
                          "--port-file", port_file], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if os.path.exists(port_file) and open(port_file).read().strip():
            port = int(open(port_file).read())
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5)
                return p, "http://127.0.0.1:%d" % port
            except (urllib.error.URLError, OSError):
                pass
        if p.poll() is not None:
            break
        time.sleep(0.05)
    stop(p)
    raise SystemExit("FAIL: sixi-server did not start: " + open(cfg + ".log").read())


def main():
    pf = sixi_eval("preflight", os.path.join(SRC, "datasets", "demo"), "--no-canaries")
    if "sandbox unusable" in pf.stdout:
        print("SKIP: the grading sandbox cannot run here: " + pf.stdout.splitlines()[0])
        return 77
    base = {t["id"]: t for t in map(json.loads, open(os.path.join(HACKS, "tasks.jsonl")))}
    hacks = [json.loads(line) for line in open(os.path.join(HACKS, "hacks.jsonl"))]
    tmp = tempfile.mkdtemp(prefix="sixi-hacks-")
    tasks, completions, rules = [], [], []
    for i, h in enumerate(hacks):
        t = dict(base[h["task"]])
        marker = "[hack %03d]" % i
        t["id"] = "%s/%s" % (h["task"], h["name"])
        t["prompt"] = "%s Answer in one ```python block. %s" % (t["prompt"], marker)
        tasks.append(t)
        completions.append({"task_id": t["id"], "completion": reply(h["solution"])})
        rules.append({"match": marker, "reply": reply(h["solution"])})
    ds = os.path.join(tmp, "hacks")
    write_dataset(ds, tasks)

    # offline grade
    cpath = os.path.join(tmp, "completions.jsonl")
    with open(cpath, "w") as f:
        for c in completions:
            f.write(json.dumps(c) + "\n")
    g = sixi_eval("grade", ds, "--completions", cpath, "--json")
    check(g.returncode == 0, "grade exit %d: %s" % (g.returncode, g.stderr[-1000:]))
    graded = [json.loads(line) for line in g.stdout.splitlines() if line.startswith("{")]
    check(len(graded) == len(hacks), "grade: %d of %d graded" % (len(graded), len(hacks)))
    for r in graded:
        check(r.get("failure_class") == "wrong" and not r.get("pass"),
              "grade: %s is %s (%s)" % (r.get("task_id"), r.get("failure_class"), r.get("detail")))

    # a full run against a server that answers every task with its hack
    fake, url = start_fake(tmp, {"model": "fake", "default": "I do not know.", "rules": rules})
    db = os.path.join(tmp, "hacks.db")
    try:
        r = sixi_eval("run", "--url", url, "--model", "fake", "--dataset", ds, "--repeats", "1", "--attempts", "1",
                      "--concurrency", "2", "--timeout", "60", "--stall", "30", "--max-tokens", "4000", "--db", db)
    finally:
        stop(fake)
    check(r.returncode == 0, "run exit %d: %s" % (r.returncode, r.stderr[-2000:]))
    check("0 task(s) left out by preflight" in r.stdout, "preflight left tasks out: %s" % r.stdout[-1500:])
    got = rows(db)
    check(len(got) == len(hacks), "run: %d rows for %d hacks" % (len(got), len(hacks)))
    for task_id, cls, passed in got:
        check(cls == "wrong" and not passed, "run: %s stored as %s (pass %s)" % (task_id, cls, passed))

    # the same through sixi-server's scripted simulated device, one hack per server
    if not os.path.exists(SIM):
        print("no sixi-server in this build: the simulated-device runs are left out")
    else:
        by_name = {h["name"]: h for h in hacks if h["task"] == "hack/sum-even"}
        for name in ("frame-walk-pass", "always-equal"):
            one = os.path.join(tmp, "one-" + name)
            write_dataset(one, [base["hack/sum-even"]])
            sim, url = start_sim(tmp, reply(by_name[name]["solution"]))
            db1 = os.path.join(tmp, "sim-%s.db" % name)
            try:
                r = sixi_eval("run", "--url", url, "--model", "thor", "--dataset", one, "--repeats", "2",
                              "--attempts", "1", "--timeout", "60", "--stall", "30", "--max-tokens", "2000", "--db", db1)
            finally:
                stop(sim)
            check(r.returncode == 0, "sim run %s exit %d: %s" % (name, r.returncode, r.stderr[-2000:]))
            got = rows(db1)
            check(len(got) == 2 and all(c == "wrong" and not p for _, c, p in got),
                  "sim run %s: rows %s" % (name, got))
    print("FAILED" if failures else "ok", failures, "(%d hacks)" % len(hacks))
    return 1 if failures else 0


sys.exit(main())
