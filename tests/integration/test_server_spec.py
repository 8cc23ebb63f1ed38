#!/usr/bin/python3
"""test_server_spec — sixi-server's speculative decoding on the tiny model.

Starts the server (127.0.0.1, a free port, stopped by PID) without speculation, with
`--spec ngram --rollback log`, with `--rollback snapshot` and with the model as its own
draft (`--draft`, every draft accepted); sends the same greedy requests,
two at a time (so speculative and plain rows share passes) plus sampled requests, and
checks: the greedy texts (one of 520 tokens), token counts and finish reasons are identical
in all three, a seeded sampled request repeats its text with speculation on, the
speculative counters appear in the responses' usage and in /metrics only when speculation is
on, and bad flags are refused with a message (exit 2). Bounded: every request has a timeout.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_itest import check, finish, sixi_server_exe  # noqa: E402

exe = sixi_server_exe()


tmp = tempfile.mkdtemp(prefix="sixi-spec-")
model = os.path.join(tmp, "tiny.gguf")
subprocess.run([exe, "--write-tiny", model], check=True, capture_output=True, timeout=60)

PROMPTS = ["The cat sat on the mat. The cat sat on the", "one two three one two three one two",
           "In the beginning the model wrote"]


def serve(extra):
    port_file = os.path.join(tmp, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    log = open(os.path.join(tmp, "server.log"), "w")
    p = subprocess.Popen([exe, "--model", model, "--host", "127.0.0.1", "--port", "0", "--port-file", port_file,
                          "--parallel", "3", "--context", "1024", "--threads", "1"] + extra,
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(150):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return p, int(open(port_file).read())
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    raise SystemExit("FAIL: the server did not start: " + open(os.path.join(tmp, "server.log")).read())


def post(port, body):
    r = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(r, timeout=120))


def run(extra):
    p, port = serve(extra)
    try:
        out = {}

        def one(i, prompt):
            out[i] = post(port, {"prompt": prompt, "max_tokens": 160, "temperature": 0})

        ts = [threading.Thread(target=one, args=(i, pr)) for i, pr in enumerate(PROMPTS[:2])]
        ts.append(threading.Thread(target=lambda: out.__setitem__(
            "sampled", post(port, {"prompt": PROMPTS[2], "max_tokens": 40, "temperature": 0.8, "seed": 7}))))
        for t in ts:
            t.start()
        for t in ts:
            t.join(180)
        out[2] = post(port, {"prompt": PROMPTS[2], "max_tokens": 520, "temperature": 0, "ignore_eos": True})
        out["sampled2"] = post(port, {"prompt": PROMPTS[2], "max_tokens": 40, "temperature": 0.8, "seed": 7})
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        return out, metrics
    finally:
        p.terminate()
        p.wait(30)


plain, m_plain = run([])
for name, extra in [("log", ["--spec", "ngram", "--draft-max", "6"]),
                    ("snapshot", ["--spec", "ngram", "--draft-max", "4", "--rollback", "snapshot"]),
                    ("self-draft", ["--draft", model, "--draft-max", "5"])]:
    got, metrics = run(extra)
    for i in range(3):
        check(got[i]["choices"][0]["text"] == plain[i]["choices"][0]["text"], f"{name}: greedy text {i} differs")
        want = 160 if i < 2 else 520
        n = got[i]["usage"]["completion_tokens"]
        check(n == plain[i]["usage"]["completion_tokens"] and n <= want and
              got[i]["choices"][0]["finish_reason"] == plain[i]["choices"][0]["finish_reason"],
              f"{name}: completion_tokens / finish_reason of request {i}")
    spec = [got[i]["usage"].get("speculative") for i in range(3)]
    check(all(s is not None for s in spec), f"{name}: usage.speculative missing")
    steps = sum(s["steps"] for s in spec if s)
    acc = sum(s["accepted_tokens"] for s in spec if s)
    check(steps > 0 and acc > 0, f"{name}: no accepted drafts")
    check(got["sampled"]["usage"]["completion_tokens"] == 40, f"{name}: sampled request length")
    check(got["sampled"]["choices"][0]["text"] == got["sampled2"]["choices"][0]["text"],
          f"{name}: a seeded sampled request repeats with speculation")
    acc_all = acc + sum(got[k]["usage"].get("speculative", {}).get("accepted_tokens", 0) for k in ("sampled", "sampled2"))
    vals = dict(l.split() for l in metrics.splitlines() if l.startswith("sixi_spec_"))
    check(int(vals.get("sixi_spec_accepted_total", "0")) == acc_all, f"{name}: /metrics accepted != responses")
    check(float(vals.get("sixi_spec_accept_rate", "0")) > 0, f"{name}: /metrics accept_rate")
    mem = dict(l.split() for l in metrics.splitlines() if l.startswith(("sixi_rollback_bytes", "sixi_snapshot_ring")))
    rb, ring = int(mem.get("sixi_rollback_bytes", "0")), int(mem.get("sixi_snapshot_ring_bytes", "0"))
    if name == "self-draft":  # the target drafting for itself: every draft is right, except
        # the ones after the token that ends a sequence (at most one step's drafts)
        check(all(s and s["drafted_tokens"] - s["accepted_tokens"] <= 5 for s in spec), f"self-draft: {spec}")
    if name != "snapshot":
        check(rb > 0 and ring > 10 * rb, f"{name}: /metrics rollback {rb} vs snapshot ring {ring} bytes")
    else:
        check(rb > 0 and ring == rb, f"snapshot: /metrics rollback {rb} should equal the ring {ring}")
    print(f"{name}: " + ", ".join(f"request {i}: accept_len {s['accept_len']:.2f} accept_rate {s['accept_rate']:.2f}"
                                 for i, s in enumerate(spec) if s))
for i in range(3):
    check("speculative" not in plain[i]["usage"], "plain run reports speculation")
check("sixi_spec_steps_total 0" in m_plain, "plain /metrics spec steps")
check(plain[2]["usage"]["completion_tokens"] == 520, "the long greedy request ran 520 tokens")
check("sixi_rollback_bytes 0" in m_plain and "sixi_gdn_state_bytes 0" not in m_plain, "plain /metrics memory")

for args, words in [(["--model", model, "--draft", os.path.join(tmp, "missing.gguf")], "draft model"),
                    (["--model", model, "--spec", "medusa"], "unknown drafter"),
                    (["--simulate", "thor", "--spec", "ngram"], "needs --model"),
                    (["--model", model, "--spec", "ngram", "--rollback", "ring"], "log or snapshot"),
                    (["--model", model, "--spec", "ngram", "--draft-max", "99"], "--draft-max")]:
    r = subprocess.run([exe] + args + ["--port", "0"], capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and words in r.stderr, f"refusal of {args[-2:]}: rc {r.returncode}, {r.stderr!r}")

finish()
