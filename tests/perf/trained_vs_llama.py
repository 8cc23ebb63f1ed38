#!/usr/bin/env python3
"""Greedy text of the trained sixi-small: sixi-server against llama.cpp's llama-server.

    LLAMA_SERVER=/path/to/llama-server python3 tests/perf/trained_vs_llama.py BUILD_DIR

Writes sixi-small as GGUF (sixi-server --write-tiny --from src/model/trained/sixi-small),
serves it with both servers on 127.0.0.1 (no logit_bias, no other sampling options), sends
each datasets/demo prompt rendered with the model's ChatML template to /v1/completions,
greedy, max_tokens 64, and prints per prompt the tokens each produced and whether the texts
are equal. Exits 1 when a text differs, 77 without LLAMA_SERVER (llama.cpp is built outside
the project and never committed). A run: reports/perf/trained-vs-llama.md.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def post(port, body):
    req = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def wait_health(port, proc, log):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit("server exited:\n" + open(log).read())
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.1)
    sys.exit("server not healthy after 60 s")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    llama = os.environ.get("LLAMA_SERVER")
    if not llama or not os.access(llama, os.X_OK):
        print("SKIP: set LLAMA_SERVER to a llama-server binary")
        return 77
    server = os.path.join(sys.argv[1], "src", "sixi-server")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "sixi-small.gguf")
        subprocess.run([server, "--write-tiny", model, "--from", os.path.join(ROOT, "src/model/trained/sixi-small")],
                       check=True, stderr=subprocess.DEVNULL)
        lport, sport = free_port(), free_port()
        llog, slog = os.path.join(tmp, "llama.log"), os.path.join(tmp, "sixi.log")
        lp = subprocess.Popen([llama, "-m", model, "--host", "127.0.0.1", "--port", str(lport), "-t", "1", "-c", "2048"],
                              stdout=open(llog, "w"), stderr=subprocess.STDOUT)
        sp = subprocess.Popen([server, "--model", model, "--host", "127.0.0.1", "--port", str(sport), "--threads", "1"],
                              stdout=subprocess.DEVNULL, stderr=open(slog, "w"))
        bad = 0
        try:
            wait_health(lport, lp, llog)
            wait_health(sport, sp, slog)
            with open(os.path.join(ROOT, "datasets", "demo", "tasks.jsonl")) as f:
                tasks = [json.loads(line) for line in f]
            print("%-20s %6s %6s  equal" % ("prompt", "llama", "sixi"))
            for t in tasks:
                body = {"model": "sixi-small", "max_tokens": 64, "temperature": 0,
                        "prompt": "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n" % t["prompt"]}
                a, s = post(lport, body), post(sport, body)
                at, st = a["choices"][0]["text"], s["choices"][0]["text"]
                bad += at != st
                print("%-20s %6d %6d  %s" % (t["id"], a["usage"]["completion_tokens"], s["usage"]["completion_tokens"],
                                             "yes" if at == st else "NO: %r vs %r" % (at, st)))
        finally:
            for p in (lp, sp):
                p.terminate()
                p.wait()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
