#!/usr/bin/python3
"""Integration tests of sixi-eval against a real server process
(tests/integration/fake_eval_server.py) on 127.0.0.1:

- hangs, resets, 500s and malformed SSE mid-stream become api_error rows that
  are retried as fresh attempts, never wrong, and the run finishes;
- the loop guard closes a stream that repeats a sentence (early_stop = loop);
- kill -9 of sixi-eval at several points, then resume: no row lost or doubled;
- the parser-bypass probe notices a chat endpoint that returns empty content;
- a run's configuration is frozen (another protocol or server is refused);
- bad input is refused before any request; export, regrade, offline grade and
  preflight give what they promise.
Every server and sixi-eval process is started here, bounded in time, and
stopped by PID.
"""
import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

import fake_base

SRC = os.environ.get("SIXI_SOURCE_ROOT", ".")
BUILD = os.environ.get("SIXI_BUILD_ROOT", "build")
EVAL = os.path.join(BUILD, "src", "sixi-eval")
SERVER = os.path.join(SRC, "tests", "integration", "fake_eval_server.py")
DEMO = os.path.join(SRC, "datasets", "demo")
checks = failures = 0


def check(cond, what):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print("check failed:", what, file=sys.stderr)
    return cond


GOOD = {
    "add(a, b)": "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\nThat adds the two numbers and returns the result.",
    "is_palindrome": "```python\ndef is_palindrome(s):\n    s = s.lower()\n    return s == s[::-1]\n```\nIt lowers the case and compares the string with its reverse.",
    "two integers": "```python\na, b = map(int, input().split())\nprint(a + b)\n```\nIt reads both numbers from one line and prints the sum.",
    "contiguous subarray": "```python\ninput()\nbest = cur = None\nfor x in map(int, input().split()):\n    cur = x if cur is None or cur < 0 else cur + x\n    best = cur if best is None or cur > best else best\nprint(best)\n```",
    "apples": "Three bags of four is twelve, plus five makes seventeen apples in total.\n#### 17",
    "capital of France": "The capital of France is Paris, so the answer is the second option.\nAnswer: B",
    "hello world": "print('hello world')",
    "2 + 3": "5",
}


class Server:
    def __init__(self, tmp, script, delay_ms=0):
        self.tmp = tmp
        path = os.path.join(tmp, "script-%d.json" % time.monotonic_ns())
        with open(path, "w") as f:
            json.dump(script, f)
        self.port_file = path + ".port"
        self.log = open(path + ".log", "w")
        self.proc, self.url = fake_base.start_fake(SERVER, self.port_file, "--script", path, "--event-delay-ms",
                                                   str(delay_ms), timeout_s=10, stderr=self.log)
        self.port = int(self.url.rsplit(":", 1)[1])

    def stats(self):
        with urllib.request.urlopen(self.url + "/stats", timeout=5) as r:
            return json.load(r)

    def stop(self):
        fake_base.stop(self.proc, timeout_s=5)
        self.log.close()


def rules(faults, model="fake"):
    out = []
    for match, reply in GOOD.items():
        r = {"match": match, "reply": reply}
        if match in faults:
            r["fault"], r["times"] = faults[match]
        out.append(r)
    return {"model": model, "default": "I do not know.", "rules": out}


def sixi_eval(*args, timeout=120):
    return subprocess.run([EVAL, *args], capture_output=True, text=True, timeout=timeout)


def rows(db, run=None):
    con = sqlite3.connect(db)
    q = "SELECT repeat_index, task_id, attempt, failure_class, api_error, early_stop, raw_sha256, pass FROM eval_rows"
    res = con.execute(q + (" WHERE run = ?" if run else "") + " ORDER BY 1, 2, 3", (run,) if run else ()).fetchall()
    con.close()
    return res


def check_complete(db, run, repeats, n_tasks, attempts, label):
    """Every (repeat, task) has a final row, attempts are 1..k without gaps, no doubles."""
    by = {}
    for rep, task, att, cls, *_ in rows(db, run):
        by.setdefault((rep, task), []).append((att, cls))
    check(len(by) == repeats * n_tasks, "%s: %d task runs, expected %d" % (label, len(by), repeats * n_tasks))
    for key, lst in by.items():
        atts = [a for a, _ in lst]
        check(atts == list(range(1, len(atts) + 1)), "%s: attempts of %s are %s" % (label, key, atts))
        finals = [c for _, c in lst if c != "api_error"]
        check(len(finals) <= 1, "%s: %s has %d final rows" % (label, key, len(finals)))
        check(len(finals) == 1 or len(atts) == attempts, "%s: %s unfinished: %s" % (label, key, lst))


def test_faults(tmp, sandbox_ok):
    srv = Server(tmp, rules({"add(a, b)": ("reset", 1), "is_palindrome": ("500", 2),
                             "two integers": ("malformed", 1), "capital of France": ("hang", 1),
                             "apples": ("stall", 1)}))
    db = os.path.join(tmp, "faults.db")
    try:
        r = sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", DEMO, "--repeats", "1",
                      "--concurrency", "2", "--timeout", "2", "--stall", "1", "--max-tokens", "400", "--db", db)
        check(r.returncode == 0, "faults run exit %d: %s" % (r.returncode, r.stderr[-2000:]))
        rs = rows(db)
        api = [(t, e) for _, t, _, c, e, *_ in rs if c == "api_error"]
        kinds = {t: e for t, e in api}
        check(kinds.get("demo/add") == "reset", "reset recorded as api_error reset: %s" % api)
        check(kinds.get("demo/palindrome") == "http", "500 recorded as api_error http: %s" % api)
        check(kinds.get("demo/sum-stdin") == "parse", "malformed SSE recorded as api_error parse: %s" % api)
        check(kinds.get("demo/capital") in ("timeout", "stall"), "hang recorded as api_error timeout: %s" % api)
        check(kinds.get("demo/apples") == "stall", "mid-stream stall recorded as api_error stall: %s" % api)
        check(len([1 for t, _ in api if t == "demo/palindrome"]) == 2, "two 500s, two api_error rows")
        check(not any(c == "wrong" for _, _, _, c, *_ in rs), "no fault scored wrong: %s" % rs)
        for _, t, att, c, e, _, sha, _ in rs:
            check(sha is not None and len(sha) == 64, "raw text stored for every attempt")
        finals = {t: c for _, t, _, c, *_ in rs if c != "api_error"}
        check(len(finals) == 6, "every task finished after retries: %s" % finals)
        if sandbox_ok:
            check(all(c == "pass" for c in finals.values()), "retried attempts pass: %s" % finals)
        check_complete(db, 1, 1, 6, 3, "faults")
        con = sqlite3.connect(db)
        status, = con.execute("SELECT status FROM runs WHERE id = 1").fetchone()
        phases = [p for p, in con.execute("SELECT phase FROM bench_requests WHERE run = 1")]
        con.close()
        check(status == "done", "run status done")
        check(phases.count("warmup") == 2 and "ready" in phases, "readiness and two warm-ups stored: %s" % phases)
        con = sqlite3.connect(db)
        summ, facts = con.execute("SELECT summary_json, host_facts FROM runs WHERE id = 1").fetchone()
        con.close()
        audit = json.loads(summ).get("audit", {})
        check(audit.get("max_tokens") == 400 and audit.get("stop") == [] and audit.get("tools") == []
              and audit.get("api") == "/v1/chat/completions", "audit stored: %s" % audit)
        check("grader_python" in json.loads(facts), "host facts stored: %s" % facts)

        # export has the essay's columns and the raw text
        e = sixi_eval("export", "1", "--csv", "--db", db)
        table = list(csv.DictReader(io.StringIO(e.stdout)))
        check(e.returncode == 0 and len(table) == len(rs), "csv export: one line per attempt")
        for col in ("task", "pass", "tokens", "seconds", "truncated", "has_code", "loop_pct", "completion"):
            check(col in table[0], "csv has column %s" % col)
        check(any("def add" in row["completion"] for row in table), "csv carries the raw text")
        j = sixi_eval("export", "1", "--jsonl", "--db", db)
        lines = [json.loads(x) for x in j.stdout.splitlines()]
        check(len(lines) == len(rs) and all("failure_class" in x for x in lines), "jsonl export")
        # regrade at a tiny budget cuts code replies: fewer passes than at a large one
        g = sixi_eval("regrade", "1", "--max-tokens", "3,100000", "--json", "--db", db)
        res = json.loads(g.stdout) if g.returncode == 0 else []
        check(len(res) == 2 and res[0]["truncated"] > 0, "regrade reports truncation: %s %s" % (g.stdout, g.stderr))
        if sandbox_ok and len(res) == 2:
            check(res[0]["passed"] < res[1]["passed"], "regrade: a small budget costs passes")
        s = sixi_eval("summary", "1", "--json", "--db", db)
        summ = json.loads(s.stdout)
        check(summ["api_error_attempts"] == 6, "summary counts api errors: %s" % summ["api_error_attempts"])
        check(summ["classes"]["api_error"] == 0, "no task run lost to api errors")
    finally:
        srv.stop()


def test_loop_guard(tmp):
    # A scripted loop, not a model's: the trained sixi-small was not found looping (greedy or
    # sampled, tests/perf/loop_search.py), and its loops with the end token ignored repeat
    # units shorter than the ratio's 41-character sentences (src/model/trained/README.md).
    script = rules({})
    sentence = ("Alternatively, perhaps think of the expression as the sum over all pairs of indices i and j. "
                "Hmm, but I am not sure.")
    for r in script["rules"]:
        if r["match"] == "contiguous subarray":
            r["reply"], r["fault"] = sentence, "loop"
    srv = Server(tmp, script, delay_ms=1)
    db = os.path.join(tmp, "loop.db")
    try:
        t0 = time.monotonic()
        r = sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", DEMO, "--repeats", "1",
                      "--loop-stop", "50", "--max-tokens", "100000", "--timeout", "20", "--stall", "5", "--no-preflight",
                      "--json", "--db", db)
        check(r.returncode == 0, "loop run exit %d: %s" % (r.returncode, r.stderr[-2000:]))
        try:
            summ = json.loads(r.stdout)
        except ValueError:
            summ = {}
        check(summ.get("classes", {}).get("loop") == 1, "--json prints the summary object only: %r" % r.stdout[:300])
        # a hang guard (typically ~1 s); the bytes stored below show the early stop
        check(time.monotonic() - t0 < 120, "the loop did not run to max_tokens")
        con = sqlite3.connect(db)
        row = con.execute("SELECT failure_class, early_stop, loop_pct, length(t.bytes) FROM eval_rows e "
                          "JOIN raw_text t ON t.sha256 = e.raw_sha256 WHERE task_id = 'demo/max-subarray'").fetchone()
        con.close()
        check(row is not None and row[0] == "loop" and row[1] == "loop", "loop row: %s" % (row,))
        check(row is not None and row[2] >= 50, "loop_pct at the threshold: %s" % (row,))
        # cut right after the 5th sentence: far fewer bytes than 100000 tokens would be
        check(row is not None and row[3] < 2000, "stream closed early: %s bytes" % (row[3] if row else None))
    finally:
        srv.stop()


def count_rows(db):
    try:
        con = sqlite3.connect(db, timeout=5)
        n = con.execute("SELECT count(*) FROM eval_rows").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


def kill_when(args, rows_more, extra_s, db):
    """Starts sixi-eval, SIGKILLs it once the DB has rows_more more rows (then
    extra_s later), or after 20 s at most."""
    start = count_rows(db)
    p = subprocess.Popen([EVAL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and count_rows(db) < start + rows_more and p.poll() is None:
        time.sleep(0.02)
    time.sleep(extra_s)
    p.send_signal(signal.SIGKILL)
    p.wait()


def test_kill_resume(tmp):
    srv = Server(tmp, rules({"is_palindrome": ("500", 1)}), delay_ms=8)
    db = os.path.join(tmp, "kill.db")
    try:
        args = ["run", "--url", srv.url, "--model", "fake", "--dataset", DEMO, "--repeats", "3",
                "--concurrency", "2", "--timeout", "10", "--stall", "5", "--db", db]
        # kill points: right after the first row, in the middle of a resumed run,
        # and during a resume's warm-up (before any new row)
        kill_when(args, 1, 0.0, db)
        before = rows(db, 1)
        check(0 < len(before) < 18, "the first kill came after some rows (%d)" % len(before))
        for more, extra in ((3, 0.05), (0, 0.2), (2, 0.3)):
            kill_when(["resume", "1", "--db", db], more, extra, db)
            now = rows(db, 1)
            check(set(before) <= set(now), "resume kept every earlier row")
            before = now
        r = sixi_eval("resume", "1", "--db", db)
        check(r.returncode == 0, "final resume exit %d: %s" % (r.returncode, r.stderr[-2000:]))
        after = rows(db, 1)
        check(len(after) > len(before), "the final resume had work left (%d -> %d rows)" % (len(before), len(after)))
        check(set(before) <= set(after), "final resume kept every earlier row")
        check_complete(db, 1, 3, 6, 3, "kill/resume")
        r2 = sixi_eval("resume", "1", "--db", db)
        check(r2.returncode == 0 and rows(db, 1) == after, "resuming a finished run adds nothing")
    finally:
        srv.stop()


def test_frozen(tmp):
    srv = Server(tmp, rules({}))
    db = os.path.join(tmp, "frozen.db")
    proto = {"name": "frozen", "conditions": [{"name": "a", "endpoint": srv.url, "model": "fake"}],
             "datasets": [DEMO], "repeats": 1, "timeout_s": 10, "stall_s": 5}
    p1 = os.path.join(tmp, "p1.json")
    p2 = os.path.join(tmp, "p2.json")
    with open(p1, "w") as f:
        json.dump(proto, f)
    proto["sampling"] = {"temperature": 0.2}
    with open(p2, "w") as f:
        json.dump(proto, f)
    try:
        r = sixi_eval("run", p1, "--no-preflight", "--db", db)
        check(r.returncode == 0, "protocol run: %s" % r.stderr[-2000:])
        r = sixi_eval("resume", "1", "--protocol", p2, "--db", db)
        check(r.returncode != 0 and "frozen" in r.stderr, "a different protocol is refused: %s" % r.stderr)
        r = sixi_eval("resume", "1", "--protocol", p1, "--db", db)
        check(r.returncode == 0, "the same protocol is accepted: %s" % r.stderr[-500:])
        con = sqlite3.connect(db)
        pj, ph = con.execute("SELECT protocol_json, protocol_hash FROM runs WHERE id = 1").fetchone()
        con.close()
        import hashlib
        check(hashlib.sha256(pj.encode()).hexdigest() == ph, "stored protocol hash is the sha256 of its JSON")
        check(json.loads(pj)["protocol"]["sampling"]["temperature"] == 0.7, "defaults frozen in the stored protocol")
        order = json.loads(pj)["task_order"]
        check(len(order) == 1 and sorted(order[0]) == sorted(set(order[0])) and len(order[0]) == 6,
              "task order recorded: %s" % order)
        check(order[0] != sorted(order[0]), "tasks not run in id order")
    finally:
        srv.stop()
    r = sixi_eval("resume", "1", "--db", db)
    check(r.returncode == 0, "a complete run resumes with nothing to do, no server needed: %s" % r.stderr)
    other = Server(tmp, rules({}, model="another-model"))
    try:
        con = sqlite3.connect(db)
        pj, = con.execute("SELECT protocol_json FROM runs WHERE id = 1").fetchone()
        pj = pj.replace(srv.url, other.url)
        con.execute("UPDATE runs SET protocol_json = ? WHERE id = 1", (pj,))
        con.execute("DELETE FROM eval_rows WHERE run = 1 AND task_id = 'demo/apples'")
        con.commit()
        con.close()
        r = sixi_eval("resume", "1", "--db", db)
        check(r.returncode != 0 and "another-model" in r.stderr, "another server is refused: %s" % r.stderr)
    finally:
        other.stop()


def test_conditions(tmp):
    """Two conditions of one protocol: one run each, the same tasks in the same order."""
    srv = Server(tmp, rules({}))
    db = os.path.join(tmp, "conds.db")
    proto = {"name": "two", "conditions": [{"name": "a", "endpoint": srv.url, "model": "fake"},
                                           {"name": "b", "endpoint": srv.url, "model": "fake",
                                            "template": {"source": "raw"}}],
             "datasets": [DEMO], "repeats": 2, "timeout_s": 10, "stall_s": 5, "shuffle_seed": 99}
    p = os.path.join(tmp, "two.json")
    with open(p, "w") as f:
        json.dump(proto, f)
    try:
        r = sixi_eval("run", p, "--no-preflight", "--db", db)
        check(r.returncode == 0, "two-condition run: %s" % r.stderr[-500:])
        con = sqlite3.connect(db)
        runs = con.execute("SELECT protocol_json, protocol_hash FROM runs ORDER BY id").fetchall()
        con.close()
        check(len(runs) == 2, "one run per condition")
        if len(runs) == 2:
            a, b = json.loads(runs[0][0]), json.loads(runs[1][0])
            check(a["condition"] == "a" and b["condition"] == "b", "conditions named")
            check(a["task_order"] == b["task_order"] and len(a["task_order"]) == 2, "same order for both")
            check(a["task_order"][0] != a["task_order"][1], "each repeat has its own order")
            check(a["api"] == "/v1/chat/completions" and b["api"] == "/v1/completions", "each condition's api")
            check(runs[0][1] != runs[1][1], "each condition has its own configuration hash")
    finally:
        srv.stop()


def test_probe(tmp):
    script = rules({})
    script["chat_empty_content"] = True
    srv = Server(tmp, script)
    db = os.path.join(tmp, "probe.db")
    try:
        r = sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", DEMO, "--repeats", "1",
                      "--timeout", "10", "--stall", "5", "--no-preflight", "--db", db)
        check("parser-bypass probe" in r.stdout + r.stderr, "the probe warns: %s" % r.stdout[-1000:])
        con = sqlite3.connect(db)
        summ = json.loads(con.execute("SELECT summary_json FROM runs WHERE id = 1").fetchone()[0])
        con.close()
        check(summ["parser_probe"]["chat_content_empty"] is True, "probe result stored: %s" % summ.get("parser_probe"))
    finally:
        srv.stop()
    # and a healthy server does not trigger it
    srv = Server(tmp, rules({}))
    db = os.path.join(tmp, "probe-ok.db")
    try:
        r = sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", DEMO, "--repeats", "1",
                      "--timeout", "10", "--stall", "5", "--no-preflight", "--db", db)
        check("parser-bypass probe" not in r.stdout + r.stderr, "no warning on a healthy server")
    finally:
        srv.stop()


def test_bad_input(tmp):
    srv = Server(tmp, rules({}))
    db = os.path.join(tmp, "bad.db")
    try:
        proto = {"name": "bad", "conditions": [{"name": "a", "endpoint": srv.url, "model": "fake"}],
                 "datasets": [DEMO], "repeets": 3}
        p = os.path.join(tmp, "bad.json")
        with open(p, "w") as f:
            json.dump(proto, f)
        r = sixi_eval("run", p, "--db", db)
        check(r.returncode != 0 and 'unknown key "repeets"' in r.stderr, "unknown key refused: %s" % r.stderr)
        r = sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", DEMO, "--temperature", "-1",
                      "--db", db)
        check(r.returncode != 0 and "impossible" in r.stderr, "impossible value refused: %s" % r.stderr)
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"id": "x", "prompt": "p", "grader": "numeric", "answer": 1}\n{"id": "x", "prompt": "p", "grader": "numeric", "answer": 2}\n')
        r = sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", bad, "--db", db)
        check(r.returncode != 0 and "bad.jsonl:2: duplicate task id" in r.stderr, "duplicate id refused: %s" % r.stderr)
        check(srv.stats() == {}, "nothing was sent for bad input: %s" % srv.stats())
        check(not os.path.exists(db) or not sqlite3.connect(db).execute(
            "SELECT count(*) FROM runs").fetchone()[0], "no run stored for bad input")
    finally:
        srv.stop()


def test_offline(tmp, sandbox_ok):
    comp = os.path.join(tmp, "completions.jsonl")
    with open(comp, "w") as f:
        f.write(json.dumps({"task_id": "demo/add", "completion": GOOD["add(a, b)"]}) + "\n")
        f.write(json.dumps({"task_id": "demo/apples", "completion": "#### 16"}) + "\n")
        f.write(json.dumps({"task_id": "demo/capital", "completion": "Let me think", "finish_reason": "length"}) + "\n")
    r = sixi_eval("grade", DEMO, "--completions", comp, "--json")
    out = [json.loads(x) for x in r.stdout.splitlines()]
    check(r.returncode == 0 and len(out) == 3, "offline grade: %s" % r.stderr)
    if len(out) == 3:
        if sandbox_ok:
            check(out[0]["failure_class"] == "pass", "offline: add passes")
        check(out[1]["failure_class"] == "wrong", "offline: wrong number")
        check(out[2]["failure_class"] == "truncated", "offline: cut-off reply is truncated")
    with open(comp, "a") as f:
        f.write('{"task_id": "nope", "completion": "x"}\n')
    r = sixi_eval("grade", DEMO, "--completions", comp)
    check(r.returncode != 0 and "completions.jsonl:4: unknown task_id" in r.stderr, "bad line named: %s" % r.stderr)


def test_template(tmp, sandbox_ok):
    srv = Server(tmp, rules({}))
    db = os.path.join(tmp, "tmpl.db")
    tmpl = os.path.join(SRC, "tests", "fixtures", "templates", "sixi-plain.jinja")
    try:
        r = sixi_eval("run", "--url", srv.url, "--model", "fake", "--dataset", DEMO, "--repeats", "1",
                      "--template", tmpl, "--timeout", "10", "--stall", "5", "--no-preflight", "--db", db)
        check(r.returncode == 0, "template run: %s" % r.stderr[-1000:])
        with urllib.request.urlopen(srv.url + "/prompts", timeout=5) as resp:
            prompts = json.load(resp)
        task_prompts = [p for path, p in prompts if "apples" in p]
        check(all(path == "/v1/completions" for path, _ in prompts), "template runs use raw /v1/completions")
        check(len(task_prompts) == 1 and task_prompts[0].startswith("### User:\nMia has 5 apples")
              and task_prompts[0].endswith("### Assistant:\n"), "prompt rendered by the model's template: %r" % task_prompts)
        con = sqlite3.connect(db)
        frozen = json.loads(con.execute("SELECT protocol_json FROM runs WHERE id = 1").fetchone()[0])
        con.close()
        import hashlib
        with open(tmpl, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        check(frozen.get("template_sha256") == want, "template hash frozen with the run")
        if sandbox_ok:
            s = json.loads(sixi_eval("summary", "1", "--json", "--db", db).stdout)
            check(s["passed"] == 6, "template run passes: %s" % s["classes"])
    finally:
        srv.stop()


def test_sixi_server(tmp):
    """The real server (simulated device, no model): 3 repeats, kill -9, resume."""
    exe = os.path.join(BUILD, "src", "sixi-server")
    if not os.access(exe, os.X_OK):
        print("note: sixi-server is not built; its end-to-end check is left out")
        return
    port_file, pid_file = os.path.join(tmp, "sx.port"), os.path.join(tmp, "sx.pid")
    log = open(os.path.join(tmp, "sx.log"), "w")
    proc = subprocess.Popen([exe, "--simulate", "thor", "--time-scale", "10", "--port", "0",
                             "--port-file", port_file, "--pid-file", pid_file], stderr=log)
    db = os.path.join(tmp, "sx.db")
    try:
        for _ in range(400):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.025)
        url = "http://127.0.0.1:%s" % open(port_file).read().strip()
        args = ["run", "--url", url, "--model", "sim-thor", "--dataset", DEMO, "--repeats", "3",
                "--concurrency", "2", "--max-tokens", "48", "--timeout", "30", "--stall", "10",
                "--no-preflight", "--db", db]
        kill_when(args, 2, 0.0, db)
        mid = rows(db, 1)
        check(0 < len(mid) < 18, "killed mid-run against sixi-server (%d rows)" % len(mid))
        r = sixi_eval("resume", "1", "--db", db)
        check(r.returncode == 0, "resume against sixi-server: %s" % r.stderr[-1000:])
        after = rows(db, 1)
        check(set(mid) <= set(after), "no row lost across the kill")
        check_complete(db, 1, 3, 6, 3, "sixi-server")
        con = sqlite3.connect(db)
        n_raw = con.execute("SELECT count(*) FROM eval_rows e JOIN raw_text t ON t.sha256 = e.raw_sha256"
                            " WHERE e.run = 1").fetchone()[0]
        toks = con.execute("SELECT min(completion_tokens), max(completion_tokens) FROM eval_rows WHERE run = 1"
                           " AND failure_class != 'api_error'").fetchone()
        con.close()
        check(n_raw == len(after), "raw text stored for every row (%d of %d)" % (n_raw, len(after)))
        check(toks[0] is not None and 0 < toks[0] <= toks[1] <= 48, "tokens from usage: %s" % (toks,))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def start_sixi_server(tmp, exe, name, args):
    port_file = os.path.join(tmp, name + ".port")
    log = open(os.path.join(tmp, name + ".log"), "w")
    proc = subprocess.Popen([exe, *args, "--port", "0", "--port-file", port_file], stderr=log)
    for _ in range(400):
        if os.path.exists(port_file) and open(port_file).read().strip():
            break
        if proc.poll() is not None:
            break
        time.sleep(0.025)
    url = "http://127.0.0.1:%s" % open(port_file).read().strip() if os.path.exists(port_file) else None
    return proc, log, url


def stop_sixi_server(proc, log):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def test_sixi_server_tiny(tmp):
    """The real server with its random tiny model (structural: rows, not answers): a 3-repeat
    run stores every row and raw text; the prompt is rendered with the GGUF's own chat template."""
    exe = os.path.join(BUILD, "src", "sixi-server")
    if not os.access(exe, os.X_OK):
        print("note: sixi-server is not built; the tiny-model check is left out")
        return
    gguf = os.path.join(tmp, "tiny.gguf")
    w = subprocess.run([exe, "--write-tiny", gguf], capture_output=True, text=True, timeout=60)
    if w.returncode != 0:
        print("note: sixi-server --write-tiny failed (%s); the tiny-model check is left out" % w.stderr.strip())
        return
    proc, log, url = start_sixi_server(tmp, exe, "tiny", ["--model", gguf, "--threads", "1"])
    db = os.path.join(tmp, "tiny.db")
    try:
        check(url is not None, "sixi-server started with the tiny model")
        if url is None:
            return
        r = sixi_eval("run", "--url", url, "--model", "tiny", "--dataset", DEMO, "--repeats", "3",
                      "--max-tokens", "24", "--timeout", "60", "--stall", "30", "--no-preflight",
                      "--template", gguf, "--db", db)
        check(r.returncode == 0, "tiny-model run: %s" % r.stderr[-1000:])
        check("/v1/completions" in r.stdout and "template: gguf" in r.stdout, "GGUF template used")
        check_complete(db, 1, 3, 6, 3, "tiny model")
        con = sqlite3.connect(db)
        n, n_raw, n_tok = con.execute(
            "SELECT count(*), count(t.sha256), count(e.completion_tokens) FROM eval_rows e"
            " LEFT JOIN raw_text t ON t.sha256 = e.raw_sha256 WHERE e.run = 1").fetchone()
        con.close()
        check(n == 18 and n_raw == 18 and n_tok == 18, "18 rows, each with raw text and usage tokens: %s" %
              ((n, n_raw, n_tok),))
        # kill -9 against the tiny model: long replies (up to 1500 tokens, one request at a
        # time) keep the run going long enough to be killed after 2 rows, then again in a
        # resume after 3 more; the last resume completes the run with nothing lost or doubled
        kdb = os.path.join(tmp, "tiny-kill.db")
        args = ["run", "--url", url, "--model", "tiny", "--dataset", DEMO, "--repeats", "3",
                "--concurrency", "1", "--max-tokens", "1500", "--timeout", "60", "--stall", "30",
                "--no-preflight", "--template", gguf, "--db", kdb]
        kill_when(args, 2, 0.0, kdb)
        first = rows(kdb, 1)
        check(0 < len(first) < 18, "tiny model: killed mid-run (%d rows)" % len(first))
        kill_when(["resume", "1", "--db", kdb], 3, 0.0, kdb)
        second = rows(kdb, 1)
        check(set(first) <= set(second), "tiny model: no row lost across the first kill")
        r = sixi_eval("resume", "1", "--db", kdb)
        check(r.returncode == 0, "tiny model: final resume: %s" % r.stderr[-1000:])
        final = rows(kdb, 1)
        check(set(second) <= set(final), "tiny model: no row lost across the second kill")
        check_complete(kdb, 1, 3, 6, 3, "tiny model, kill/resume")
    finally:
        stop_sixi_server(proc, log)


def test_import(tmp):
    he = os.path.join(tmp, "he.jsonl")
    with open(he, "w") as f:
        f.write(json.dumps({"task_id": "HumanEval/0", "entry_point": "inc",
                            "prompt": "def inc(x: int) -> int:\n    \"\"\"x plus one\"\"\"\n",
                            "canonical_solution": "    return x + 1\n",
                            "test": "def check(candidate):\n    assert candidate(1) == 2\n"}) + "\n")
    gsm = os.path.join(tmp, "gsm.jsonl")
    with open(gsm, "w") as f:
        f.write(json.dumps({"question": "Tom has 1,000 coins and spends 250. How many are left?",
                            "answer": "1000 - 250 = 750\n#### 750"}) + "\n")
        f.write(json.dumps({"question": "no answer here", "answer": "none"}) + "\n")
    r = subprocess.run([EVAL, "import", "--format", "humaneval", he], cwd=tmp, capture_output=True, text=True)
    check(r.returncode == 0 and os.path.exists(os.path.join(tmp, "datasets", "he", "tasks.jsonl")),
          "humaneval import: %s" % r.stderr)
    pf = sixi_eval("preflight", os.path.join(tmp, "datasets", "he"), "--no-canaries")
    check(pf.stdout.strip().endswith("passed, 0 failed"), "imported task passes preflight: %s" % pf.stdout)
    r = subprocess.run([EVAL, "import", "--format", "gsm8k", gsm], cwd=tmp, capture_output=True, text=True)
    check(r.returncode != 0 and "gsm.jsonl:2:" in r.stderr, "bad gsm8k line named: %s" % r.stderr)
    check(not os.path.exists(os.path.join(tmp, "datasets", "gsm", "tasks.jsonl")), "nothing half-written")


def main():
    if not os.access(EVAL, os.X_OK):
        print("SKIP: %s is not built" % EVAL)
        return 77
    pf = sixi_eval("preflight", DEMO, "--no-canaries")
    last = pf.stdout.strip().splitlines()[-1] if pf.stdout.strip() else ""
    check(last == "12 passed, 0 failed" or "sandbox unusable" in pf.stdout, "preflight ends with N passed, M failed: %r" % last)
    sandbox_ok = "sandbox unusable" not in pf.stdout
    if not sandbox_ok:
        print("note: the sandbox is unusable here; pass-specific checks are left out")
    with tempfile.TemporaryDirectory(prefix="sixi-eval-it-") as tmp:
        for name, fn in (("bad input", lambda: test_bad_input(tmp)), ("faults", lambda: test_faults(tmp, sandbox_ok)),
                         ("loop guard", lambda: test_loop_guard(tmp)), ("kill/resume", lambda: test_kill_resume(tmp)),
                         ("frozen", lambda: test_frozen(tmp)), ("conditions", lambda: test_conditions(tmp)), ("probe", lambda: test_probe(tmp)),
                         ("offline", lambda: test_offline(tmp, sandbox_ok)), ("import", lambda: test_import(tmp)),
                         ("template", lambda: test_template(tmp, sandbox_ok)),
                         ("sixi-server", lambda: test_sixi_server(tmp)),
                         ("tiny model", lambda: test_sixi_server_tiny(tmp))):
            t0 = time.monotonic()
            fn()
            print("%-12s %.1f s" % (name, time.monotonic() - t0))
    print("%d checks, %d failed" % (checks, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
