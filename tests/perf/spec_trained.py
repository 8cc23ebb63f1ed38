#!/usr/bin/env python3
"""Speculative decoding with the trained draft on the CPU server, at one stream.

    python3 tests/perf/spec_trained.py BUILD_DIR [--threads N] [--rounds N] [--draft-max N] [--type T]

Writes the trained sixi-small and its draft as GGUF (sixi-server --write-tiny --from), starts
two servers on 127.0.0.1 (plain, and --draft with the trained draft) and sends them the
prompts of datasets/demo and datasets/sixi-math (the first 20), one request at a time, the
two servers taking turns request by request (both see the same load on a shared machine),
greedy, max_tokens 96, through /v1/chat/completions, `rounds` times, and prints: generated
tokens, wall seconds, tokens per second (sum of tokens / sum of request wall time), the
ratio, and the server's acceptance rate from /metrics. A second line per server splits the
wall time at each request's first token (the server's sixi_prefill_wait_seconds, read before
and after): the mean time to the first token (the prompt's prefill, the same work in both
servers) and the decode rate after it (tokens after the first / the time after it), which is
what speculation changes. Greedy speculation gives the same
text as plain decoding; the script checks that each reply is equal in both servers.
Output: reports/perf/spec-trained.md holds a run and its command.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def prompts():
    out = []
    for path, limit in (("datasets/demo/tasks.jsonl", None), ("datasets/sixi-math/tasks.jsonl", 20)):
        with open(os.path.join(ROOT, path)) as f:
            rows = [json.loads(line)["prompt"] for line in f]
        out += rows[:limit] if limit else rows
    return out


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def metric(url, name):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def metric_sum(url, name):
    """Sum of a metric's series over all its labels."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        return sum(float(line.split()[-1]) for line in r.read().decode().splitlines()
                   if line.startswith(name + "{") or line.startswith(name + " "))


def serve(server, model, extra, threads, tmp, tag):
    port_file = os.path.join(tmp, "port-" + tag)
    p = subprocess.Popen([server, "--model", model, "--host", "127.0.0.1", "--port", "0", "--port-file", port_file,
                          "--threads", str(threads), "--parallel", "1"] + extra,
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log-" + tag), "w"))
    for _ in range(600):
        if os.path.exists(port_file) and open(port_file).read().strip():
            break
        if p.poll() is not None:
            sys.exit("server %s exited: %s" % (tag, open(os.path.join(tmp, "log-" + tag)).read()))
        time.sleep(0.1)
    url = "http://127.0.0.1:%s" % open(port_file).read().strip()
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    break
        except Exception:
            time.sleep(0.1)
    return p, url


def run(url, ps, rounds):
    toks, wall, texts = 0, 0.0, []
    for _ in range(rounds):
        for p in ps:
            t0 = time.perf_counter()
            r = post(url + "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": p}],
                                                    "max_tokens": 96, "temperature": 0})
            wall += time.perf_counter() - t0
            toks += r["usage"]["completion_tokens"]
            texts.append(r["choices"][0]["message"]["content"])
    return toks, wall, texts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--draft-max", type=int, default=4)
    ap.add_argument("--type", default="BF16", help="matrix type of both GGUFs (F32, F16, BF16, Q8_0)")
    a = ap.parse_args()
    server = os.path.join(a.build, "src", "sixi-server")
    ps = prompts()
    with tempfile.TemporaryDirectory() as tmp:
        big, draft = os.path.join(tmp, "small.gguf"), os.path.join(tmp, "draft.gguf")
        for d, out in (("sixi-small", big), ("sixi-small-draft", draft)):
            subprocess.run([server, "--write-tiny", out, "--from", os.path.join(ROOT, "src/model/trained", d),
                            "--type", a.type],
                           check=True, stderr=subprocess.DEVNULL)
        tags = ("plain", "draft")
        extras = {"plain": [], "draft": ["--draft", draft, "--draft-max", str(a.draft_max)]}
        procs, urls = {}, {}
        try:
            for tag in tags:
                procs[tag], urls[tag] = serve(server, big, extras[tag], a.threads, tmp, tag)
            for tag in tags:
                run(urls[tag], ps[:2], 1)  # warm-up, not counted
            first0 = {tag: metric_sum(urls[tag], "sixi_prefill_wait_seconds_sum") for tag in tags}
            res = {tag: {"tokens": 0, "wall_s": 0.0, "texts": []} for tag in tags}
            # One request at a time, the two servers taking turns (which goes first alternates),
            # so that both see the same load on a shared machine.
            for i, prompt in enumerate(ps * a.rounds):
                for tag in (tags if i % 2 == 0 else tags[::-1]):
                    toks, wall, texts = run(urls[tag], [prompt], 1)
                    res[tag]["tokens"] += toks
                    res[tag]["wall_s"] += wall
                    res[tag]["texts"] += texts
            n_req = len(ps) * a.rounds
            for tag in tags:
                r = res[tag]
                first = metric_sum(urls[tag], "sixi_prefill_wait_seconds_sum") - first0[tag]
                r.update({"tok_s": r["tokens"] / r["wall_s"], "ttft_ms": 1e3 * first / n_req,
                          "decode_tok_s": (r["tokens"] - n_req) / (r["wall_s"] - first),
                          "accept_rate": metric(urls[tag], "sixi_spec_accept_rate"),
                          "accept_len": metric(urls[tag], "sixi_spec_accept_len")})
        finally:
            for p in procs.values():
                p.terminate()
                p.wait()
    same = sum(x == y for x, y in zip(res["plain"]["texts"], res["draft"]["texts"]))
    n = len(res["plain"]["texts"])
    print("prompts %d x %d rounds, greedy, max_tokens 96, 1 stream, --threads %d, draft-max %d, matrices %s"
          % (len(ps), a.rounds, a.threads, a.draft_max, a.type))
    for tag in ("plain", "draft"):
        r = res[tag]
        print("%-6s %6d tokens %7.2f s %8.1f tok/s%s" % (
            tag, r["tokens"], r["wall_s"], r["tok_s"],
            "   acceptance rate %.3f, %.2f tokens a step" % (r["accept_rate"], r["accept_len"])
            if tag == "draft" and r["accept_rate"] is not None else ""))
    for tag in ("plain", "draft"):
        r = res[tag]
        print("%-6s first token %6.2f ms a request, then %8.1f tok/s" % (tag, r["ttft_ms"], r["decode_tok_s"]))
    print("speed-up %.2fx (after the first token %.2fx); replies equal in both servers: %d of %d" % (
        res["draft"]["tok_s"] / res["plain"]["tok_s"], res["draft"]["decode_tok_s"] / res["plain"]["decode_tok_s"],
        same, n))
    return 0 if same == n else 1


if __name__ == "__main__":
    sys.exit(main())
