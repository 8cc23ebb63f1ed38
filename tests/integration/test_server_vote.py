#!/usr/bin/python3
"""test_server_vote — server-side voting ("vote": true, "n": k) in sixi-server.

On the simulated device with scripted texts (the JSON "script" field: sample i of a vote
produces script[i] and then ends), checks that the majority answer is returned, that the
samples still running are cancelled as soon as the majority can no longer change (their
token counts stay below their scripted lengths, /metrics counts them), that a vote without
a majority is reported as a tie, and that malformed vote requests get a 400 naming the field.
On the random tiny model (structural: its text is noise): a vote of 3 samples forked from one
prompt state returns 3 samples with consistent usage, is deterministic for a seed, and at
temperature 0 every sample equals a plain greedy request (so the forked state is exact), with
and without speculative decoding.
On the trained sixi-small (behaviour: it answers these prompts): a vote of 5 samples at
temperature 0.7 on a sixi-math task and on a problem in sixi-math's style returns the right
answer, its count is the number of samples that give that answer, and each sample's answer
is the number its text ends with; greedy, the vote's answer is a plain greedy reply's.
Servers listen on 127.0.0.1 (a free port) and are stopped by PID; every request has a timeout.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_itest import check, finish, sixi_server_exe  # noqa: E402

exe = sixi_server_exe()


tmp = tempfile.mkdtemp(prefix="sixi-vote-")


def serve(args):
    port_file = os.path.join(tmp, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    log = open(os.path.join(tmp, "server.log"), "w")
    p = subprocess.Popen([exe, "--host", "127.0.0.1", "--port", "0", "--port-file", port_file] + args,
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if os.path.exists(port_file) and open(port_file).read().strip():
            port = int(open(port_file).read())
            for _ in range(100):  # until the warm-up is done
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                    return p, port
                except urllib.error.HTTPError:
                    time.sleep(0.05)
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    raise SystemExit("FAIL: the server did not start: " + open(os.path.join(tmp, "server.log")).read())


def stop(p):
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()


def post(port, body):
    r = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=120) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l and not l.startswith("#")}


def consistent_usage(r, n, what):
    samples = r["sixi"]["vote"]["samples"]
    check(len(r["choices"]) == n and len(samples) == n, f"{what}: {n} choices and samples")
    check(r["usage"]["completion_tokens"] == sum(s["completion_tokens"] for s in samples),
          f"{what}: usage.completion_tokens is the sum of the samples' tokens")
    check(r["usage"]["total_tokens"] == r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"],
          f"{what}: total_tokens")
    for c, s in zip(r["choices"], samples):
        check(c["finish_reason"] == s["finish_reason"], f"{what}: finish_reason of sample {s['index']}")


# ---- scripted simulated device: a majority decided early ----
MAJ = ["We add 40 and 2, so \\boxed{42}.",
       "40 plus 2 makes 42.",
       "It is\n42",
       "Let me think about this for a rather long while before answering, carefully, step by step: 41",
       "Another long and winding chain of thought that goes on and on and on before it ends with 41"]
cfg = os.path.join(tmp, "majority.json")
json.dump({"base": "thor", "slots": 8, "context": 4096, "script": MAJ}, open(cfg, "w"))
p, port = serve(["--simulate", cfg, "--time-scale", "20"])
try:
    st, r = post(port, {"prompt": "What is 40 + 2?", "n": 5, "vote": True, "max_tokens": 200})
    check(st == 200, f"vote n=5: status {st} {r}")
    v = r["sixi"]["vote"]
    check(v["answer"] == "42" and v["count"] == 3 and v["majority"] and not v["tie"], f"majority: {v}")
    consistent_usage(r, 5, "n=5")
    fin = [s["finish_reason"] for s in v["samples"]]
    check(fin == ["stop", "stop", "stop", "cancelled", "cancelled"], f"early stop: finish reasons {fin}")
    for i in (0, 1, 2):
        check(r["choices"][i]["text"] == MAJ[i], f"sample {i} text {r['choices'][i]['text']!r}")
        check(v["samples"][i]["completion_tokens"] == len(MAJ[i]) + 1, f"sample {i}: its text and the end token")
    for i in (3, 4):
        n = v["samples"][i]["completion_tokens"]
        check(0 < n < len(MAJ[i]), f"cancelled sample {i}: {n} tokens, scripted {len(MAJ[i])}")
        check(MAJ[i].startswith(r["choices"][i]["text"]) and len(r["choices"][i]["text"]) == n,
              f"cancelled sample {i}: its text so far")
        check(v["samples"][i]["answer"] is None, f"cancelled sample {i} casts no vote")
    saved = sum(200 - v["samples"][i]["completion_tokens"] for i in (3, 4))
    check(v["cancelled"] == 2 and v["tokens_saved"] == saved, f"cancelled/tokens_saved: {v}")
    check(r["usage"]["prompt_tokens"] == len("What is 40 + 2?"), "prompt counted once")
    m = metrics(port)
    check(m["sixi_votes_total"] == 1 and m["sixi_vote_samples_cancelled_total"] == 2 and
          m["sixi_vote_tokens_saved_total"] == saved, f"/metrics vote counters {m.get('sixi_votes_total')}")
    check(m["sixi_state_forks_total"] == 4, f"/metrics forks {m['sixi_state_forks_total']} (want 4)")
    check(m["sixi_prompt_tokens_total"] == len("What is 40 + 2?"), "/metrics: the prompt prefilled once")
    check(m["sixi_state_copies_total"] == 0, "/metrics state copies stay 0")
    print(f"n=5: answer {v['answer']} ({v['count']}/5), cancelled {v['cancelled']}, "
          f"tokens {[s['completion_tokens'] for s in v['samples']]}, saved {v['tokens_saved']}")

    # n=3: samples 2 and 1 agree first; sample 0 (the longest of the three) is stopped
    st, r = post(port, {"prompt": "What is 40 + 2?", "n": 3, "vote": True, "max_tokens": 200, "temperature": 0.7})
    v = r["sixi"]["vote"]
    check(st == 200 and v["answer"] == "42" and v["count"] == 2, f"n=3 majority: {v}")
    check([s["finish_reason"] for s in v["samples"]] == ["cancelled", "stop", "stop"], f"n=3 early stop: {v}")
    consistent_usage(r, 3, "n=3")

    # without vote, n samples are independent and nothing is cancelled
    st, r = post(port, {"prompt": "What is 40 + 2?", "n": 2, "max_tokens": 200})
    check(st == 200 and "sixi" not in r and all(c["finish_reason"] == "stop" for c in r["choices"]),
          f"plain n=2: {r}")

    for body, param, words in [
            ({"prompt": "x", "vote": "yes", "n": 3}, "vote", "true or false"),
            ({"prompt": "x", "vote": 1, "n": 3}, "vote", "true or false"),
            ({"prompt": "x", "vote": True}, "n", "vote needs n"),
            ({"prompt": "x", "vote": True, "n": 1}, "n", "at least 2"),
            ({"prompt": "x", "vote": True, "n": 9}, "n", "from 2 to 8"),
            ({"prompt": "x", "vote": True, "n": 3, "stream": True}, "stream", "\"stream\": false")]:
        st, r = post(port, body)
        err = r.get("error", {})
        check(st == 400 and err.get("param") == param and words in err.get("message", ""),
              f"refusal of {body}: {st} {r}")
    m = metrics(port)
    check(m["sixi_votes_total"] == 2 and m["sixi_requests_rejected_total"] == 6, "/metrics after refusals")
finally:
    stop(p)

# ---- scripted: no majority ----
TIE = ["so the answer is 41", "so the answer is 42", "a longer text that still ends in 7"]
cfg = os.path.join(tmp, "tie.json")
json.dump({"base": "thor", "slots": 4, "context": 2048, "script": TIE}, open(cfg, "w"))
p, port = serve(["--simulate", cfg, "--time-scale", "20"])
try:
    for n in (2, 3):
        st, r = post(port, {"prompt": "Pick one.", "n": n, "vote": True, "max_tokens": 100})
        v = r["sixi"]["vote"]
        check(st == 200 and v["answer"] is None and v["tie"] and not v["majority"] and v["count"] == 0,
              f"tie n={n}: {v}")
        check([s["answer"] for s in v["samples"]] == ["41", "42", "7"][:n], f"tie n={n} answers")
        check(v["cancelled"] == 0 and all(s["finish_reason"] == "stop" for s in v["samples"]),
              f"tie n={n}: nothing cancelled")
        consistent_usage(r, n, f"tie n={n}")
    m = metrics(port)
    check(m["sixi_vote_ties_total"] == 2 and m["sixi_vote_samples_cancelled_total"] == 0, "/metrics ties")
    print("ties: n=2 and n=3 reported without a majority")
finally:
    stop(p)

# ---- the tiny model ----
model = os.path.join(tmp, "tiny.gguf")
subprocess.run([exe, "--write-tiny", model], check=True, capture_output=True, timeout=60)
PROMPT = "The cat sat on the mat. The cat sat on the"
for extra in ([], ["--spec", "ngram", "--draft-max", "4"]):
    p, port = serve(["--model", model, "--parallel", "3", "--context", "512", "--threads", "1"] + extra)
    name = "tiny" + (" spec" if extra else "")
    try:
        body = {"prompt": PROMPT, "n": 3, "vote": True, "max_tokens": 24, "temperature": 0.9, "seed": 11}
        st, r = post(port, body)
        check(st == 200, f"{name}: vote status {st} {r}")
        consistent_usage(r, 3, name)
        v = r["sixi"]["vote"]
        check(all(s["finish_reason"] in ("stop", "length", "cancelled") for s in v["samples"]), f"{name}: {v}")
        check(all(0 < s["completion_tokens"] <= 24 for s in v["samples"]), f"{name}: token counts")
        st, r2 = post(port, body)
        check([c["text"] for c in r2["choices"]] == [c["text"] for c in r["choices"]], f"{name}: seeded vote repeats")
        st, g = post(port, {"prompt": PROMPT, "max_tokens": 40, "temperature": 0})
        st, r = post(port, {"prompt": PROMPT, "n": 3, "vote": True, "max_tokens": 40, "temperature": 0})
        texts = [c["text"] for c in r["choices"] if c["finish_reason"] != "cancelled"]
        check(len(texts) >= 2 and all(t == g["choices"][0]["text"] for t in texts),
              f"{name}: greedy samples of forked states equal the plain greedy text")
        m = metrics(port)
        check(m["sixi_state_forks_total"] == 6 and m["sixi_votes_total"] == 3, f"{name}: forks {m['sixi_state_forks_total']}")
        print(f"{name}: vote of 3 ok, answers {[s['answer'] for s in v['samples']]}, "
              f"tokens {[s['completion_tokens'] for s in v['samples']]}")
    finally:
        stop(p)

# ---- the trained model (src/model/trained/sixi-small): a vote on answers it gives ----
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
small = os.path.join(tmp, "small.gguf")
subprocess.run([exe, "--write-tiny", small, "--from", os.path.join(ROOT, "src", "model", "trained", "sixi-small")],
               check=True, capture_output=True, timeout=60)
with open(os.path.join(ROOT, "datasets", "sixi-math", "tasks.jsonl")) as f:
    bakery = [json.loads(line) for line in f if '"sixi-math/bakery-trays"' in line][0]
CASES = [("sixi-math/bakery-trays", bakery["prompt"], "%g" % bakery["answer"]),
         ("handshakes of 9", "At a meeting, each of 9 people shakes hands once with every other person. "
          "How many handshakes are there? Put the final answer in \\boxed{}.", "36")]


def final_number(text):
    """The number after the last '####', else in the last \\boxed{} (the model ends its replies so)."""
    m = re.findall(r"####\s*(-?\d+)", text) or re.findall(r"\\boxed\{(-?\d+)\}", text)
    return m[-1] if m else None


p, port = serve(["--model", small, "--parallel", "5", "--context", "1024", "--threads", "1"])
try:
    for name, question, want in CASES:
        chatml = "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n" % question
        st, r = post(port, {"prompt": chatml, "n": 5, "vote": True, "max_tokens": 96, "temperature": 0.7, "seed": 5})
        check(st == 200, f"trained {name}: vote status {st} {r}")
        consistent_usage(r, 5, f"trained {name}")
        v = r["sixi"]["vote"]
        answers = [s["answer"] for s in v["samples"]]
        # which samples finish before the majority is settled depends on scheduling; the
        # seeded texts do not, and at least 3 of the 5 give the right answer
        check(v["answer"] == want and v["majority"] and not v["tie"], f"trained {name}: vote {v['answer']} (want {want})")
        check(v["count"] == answers.count(want) and v["count"] >= 3, f"trained {name}: count {v['count']} of {answers}")
        for c, s in zip(r["choices"], v["samples"]):
            if s["finish_reason"] != "cancelled":
                check(s["answer"] == final_number(c["text"]), f"trained {name}: sample {s['index']} answer "
                      f"{s['answer']} from {c['text']!r}")
        st, g = post(port, {"prompt": chatml, "max_tokens": 96, "temperature": 0})
        st, r = post(port, {"prompt": chatml, "n": 3, "vote": True, "max_tokens": 96, "temperature": 0})
        check(final_number(g["choices"][0]["text"]) == want and r["sixi"]["vote"]["answer"] == want,
              f"trained {name}: greedy {g['choices'][0]['text']!r}, vote {r['sixi']['vote']['answer']}")
        print(f"trained {name}: vote {v['answer']} ({v['count']}/5), answers {answers}")
finally:
    stop(p)

finish()
