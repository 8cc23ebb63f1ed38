#!/usr/bin/env python3
"""Does the trained sixi-small loop? A search for replies that repeat until max_tokens.

    python3 tests/perf/loop_search.py BUILD_DIR [--fuzz N] [--sampled N] [--no-eos N] [--max-tokens N] [--seed S]

Writes sixi-small as GGUF (sixi-server --write-tiny --from), starts sixi-server on it on
127.0.0.1 (one thread) and sends, one request at a time through /v1/chat/completions:

  crafted   out-of-distribution prompts, greedy: repeated words and sentences (up to ~2,800
            prompt tokens), "count to 100", "repeat this", lists of equal numbers to copy,
            long sums, open-ended requests, code with an unclosed loop, sixi-math-style
            problems cut short, prompts in the training data's form with a suffix removed;
  fuzz      N prompts of the training data's kinds (make_data.py) mutated 1 to 3 times (cut,
            concatenated, a word or sentence repeated, numbers made large, a number replaced
            by a list, words shuffled or deleted), greedy;
  sampled   N demo, sixi-math and training-kind prompts at a temperature drawn from 0.3 to 2.0;
  no-eos    the demo's tasks and the first 8 of sixi-math, the training data's chat turns and
            N training-kind prompts with "ignore_eos": true (the model's end-of-turn token not
            honoured, as with a GGUF whose end token is set wrong), greedy, through
            /v1/completions with the ChatML prompt.

For each reply it prints a line when the reply ran to max_tokens or its tail repeats: the
finish reason, completion tokens, the shortest period p of the repeating tail and how many
characters it covers (a loop: the last 3p characters or more repeat with period p), and
the loop ratio as sixi-eval computes it (score.h: sentences of more than 40 code points,
100 * (1 - unique/total), 0 below 5 sentences). Then one summary line per phase.
Measured results are in src/model/trained/README.md ("Does it loop?").
"""
import argparse
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def load_make_data():
    spec = importlib.util.spec_from_file_location("make_data", os.path.join(ROOT, "src/model/trained/make_data.py"))
    md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(md)
    return md


def loop_ratio(text):
    """sixi-eval's loop ratio (src/grade/score.h), for text without multi-byte characters."""
    pieces = [p.strip() for p in re.split(r"(?<=[.?!])\s+", text)]
    long = [p for p in pieces if len(p) > 40]
    return 0.0 if len(long) < 5 else 100.0 * (1 - len(set(long)) / len(long))


def tail_period(text, min_rep=3):
    """(p, covered): the shortest period whose repetition covers >= min_rep * p tail characters."""
    n = len(text)
    for p in range(1, n // min_rep + 1):
        k = 0
        while k + p < n and text[n - 1 - k] == text[n - 1 - k - p]:
            k += 1
        if k + p >= min_rep * p:
            return p, k + p
    return None, 0


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError:
        return None  # e.g. a prompt longer than the context


def crafted(md, r):
    out = []
    for unit in ["The cat sat on the mat. ", "Water boils at 100 degrees Celsius at sea level. ", "5 + ", "apple ",
                 "1, 2, 3, ", "Tom has 7 pears. ", "def add(a, b):\n    return a + b\n"]:
        out += [unit * n for n in (5, 20, 60)]
    out += ["Repeat after me: the cat sat on the mat.", "Say hello ten times.", "Repeat the word apple 50 times.",
            "Write the same sentence again and again.", "Count to 100.", "Count from 1 to 50.",
            "Can you count to five hundred?", "List the numbers 1 to 1000.", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,",
            "List all prime numbers.", "Tell me ten jokes.", "Write a long story about a dragon.",
            "Explain the theory of relativity.", "Tell me a short fact. Then another. Then another.", "Continue.",
            "while True:\n    print(", "for i in range(10):\n    for j in range(10):\n        for k in",
            "Write a Python function fib(n) that returns the nth Fibonacci number." + md.CODE_SUFFIX,
            "Write a Python program that prints the numbers 1 to 100." + md.CODE_SUFFIX]
    for k in (5, 12, 20, 30, 50):
        out.append("The average of %d test scores is 70. %d of them are %s and 70. What is the last score?"
                   % (k + 1, k, ", ".join(["70"] * (k - 1))))
        out.append("What is " + " + ".join(["7"] * k) + "?")
        out.append("Compute " + " + ".join(str(i) for i in range(1, k + 1)) + ".")
    for _ in range(40):
        q, _steps, _ans = md.math_problem(r)
        full = q + md.MATH_SUFFIX
        out += [full[:int(len(full) * f)] for f in (0.3, 0.6)] + [q]
        code = [t for role, t in md.ex_code(r) if role == "user"][0]
        out += [code[:len(code) // 2], code.replace(md.CODE_SUFFIX, "")]
    return out


def mutate(r, p, base):
    k = r.randrange(8)
    if k == 0:
        return p[:r.randint(min(5, len(p)), len(p))]
    if k == 1:
        return p + " " + base()
    if k == 2:
        ws = p.split(" ")
        i = r.randrange(len(ws))
        return " ".join(ws[:i] + [ws[i]] * r.randint(3, 30) + ws[i + 1:])
    if k == 3:
        return re.sub(r"\d+", lambda m: str(r.choice([0, 1, 99, 1000, 12345, 999999, int(m.group()) * 7])), p)
    if k == 4:
        ss = p.split(". ")
        i = r.randrange(len(ss))
        return ". ".join(ss[:i + 1] + [ss[i]] * r.randint(2, 8) + ss[i + 1:])
    if k == 5:
        ws = p.split(" ")
        r.shuffle(ws)
        return " ".join(ws)
    if k == 6:
        ws = p.split(" ")
        i = r.randrange(len(ws))
        return " ".join(ws[:i] + ws[i + r.randint(1, 6):])
    nums = ", ".join(str(r.choice([r.randint(1, 99), 7])) for _ in range(r.randint(3, 40)))
    return re.sub(r"\d+", nums, p, count=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--fuzz", type=int, default=2000)
    ap.add_argument("--sampled", type=int, default=1500)
    ap.add_argument("--no-eos", type=int, default=300)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    md = load_make_data()
    r = random.Random(a.seed)
    gens = [md.ex_code, md.ex_stdio, md.ex_array, md.ex_apples, md.ex_math, md.ex_arith, md.ex_choice, md.ex_chat,
            md.ex_tool]

    def base():
        return [t for role, t in r.choice(gens)(r) if role == "user"][0]

    tasks = []
    for path, limit in (("datasets/demo/tasks.jsonl", None), ("datasets/sixi-math/tasks.jsonl", None)):
        with open(os.path.join(ROOT, path)) as f:
            tasks += [json.loads(line)["prompt"] for line in f]
    exe = os.path.join(a.build, "src", "sixi-server")
    with tempfile.TemporaryDirectory() as tmp:
        gguf, port_file = os.path.join(tmp, "small.gguf"), os.path.join(tmp, "port")
        subprocess.run([exe, "--write-tiny", gguf, "--from", os.path.join(ROOT, "src/model/trained/sixi-small")],
                       check=True, capture_output=True)
        srv = subprocess.Popen([exe, "--model", gguf, "--host", "127.0.0.1", "--port", "0", "--port-file", port_file,
                                "--threads", "1", "--parallel", "2"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                if os.path.exists(port_file) and open(port_file).read().strip():
                    break
                time.sleep(0.1)
            url = "http://127.0.0.1:%s" % open(port_file).read().strip()
            for _ in range(100):
                try:
                    urllib.request.urlopen(url + "/health", timeout=5)
                    break
                except (urllib.error.URLError, ConnectionError):
                    time.sleep(0.1)
            phases = [("crafted", [(p, 0, False) for p in crafted(md, r)])]
            fz = []
            for _ in range(a.fuzz):
                p = base()
                for _ in range(r.randint(1, 3)):
                    p = mutate(r, p, base)
                fz.append((p, 0, False))
            phases.append(("fuzz", fz))
            phases.append(("sampled", [(r.choice(tasks) if r.random() < 0.5 else base(),
                                        r.choice([0.3, 0.5, 0.7, 1.0, 1.3, 1.6, 2.0]), False)
                                       for _ in range(a.sampled)]))
            ne = tasks[:14] + [u for u, _ in md.CHAT] + [base() for _ in range(a.no_eos)]
            phases.append(("no-eos", [(p, 0, True) for p in ne]))
            for name, items in phases:
                t0, n, length, loops, fired, longest = time.monotonic(), 0, 0, 0, 0, 0
                for prompt, temp, no_eos in items:
                    body = {"model": "sixi-small", "max_tokens": a.max_tokens, "temperature": temp,
                            "seed": r.randrange(1 << 30)}
                    if no_eos:
                        body.update(prompt="<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n" % prompt,
                                    ignore_eos=True)
                        j = post(url + "/v1/completions", body)
                    else:
                        body["messages"] = [{"role": "user", "content": prompt}]
                        j = post(url + "/v1/chat/completions", body)
                    if j is None:
                        continue
                    c = j["choices"][0]
                    text = c["text"] if no_eos else c["message"]["content"]
                    toks = j["usage"]["completion_tokens"]
                    per, cov = tail_period(text)
                    lr = loop_ratio(text)
                    n += 1
                    longest = max(longest, toks)
                    length += c["finish_reason"] == "length"
                    loops += per is not None and cov >= 60
                    fired += lr >= 50
                    if c["finish_reason"] == "length" or cov >= 60 or lr > 0:
                        print("%-8s t=%.1f %s %d tokens, period %s over %d chars, loop ratio %.0f%% | %r -> ...%r" % (
                            name, temp, c["finish_reason"], toks, per, cov, lr, prompt[:48], text[-90:]))
                print("== %s: %d replies in %.0f s; %d ran to max_tokens %d, %d end in a repeating tail "
                      "(>= 60 chars), %d with loop ratio >= 50 %%; longest %d tokens" % (
                          name, n, time.monotonic() - t0, length, a.max_tokens, loops, fired, longest), flush=True)
        finally:
            srv.terminate()
            srv.wait(30)


if __name__ == "__main__":
    main()
