#!/usr/bin/python3
"""sixi-eval gate against real server processes.

1. The scripted OpenAI-compatible server (fake_eval_server.py): a gate
   protocol whose arithmetic and tool-call gates are answered correctly
   (PASS) and whose needle gate is not (FAIL); then the bundled
   protocols/gate.json, which the scripted model fails gate by gate (exit 3),
   and its --json form.
2. sixi-server, simulated (no model) and with its random tiny model: a small
   gate run completes and prints a line per gate (the models fail them: the
   pipeline is tested; structural).
3. sixi-server with the trained sixi-small (src/model/trained/), greedy, on the
   eight sixi-math tasks of the demo: the model answers six (two of them wrong:
   average-score 101 for 78, consecutive-sum 54 for 50), so a gate needing 6
   passes, one needing 7 fails naming average-score's answer, and a sixi-code
   gate fails (behaviour: the verdict follows what the model answers).
Servers listen on 127.0.0.1, port 0, and are stopped by PID.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fake_base
from fake_base import stop

SRC = os.environ.get("SIXI_SOURCE_ROOT", ".")
BUILD = os.environ.get("SIXI_BUILD_ROOT", "build")
EVAL = os.path.join(BUILD, "src", "sixi-eval")
FAKE = os.path.join(SRC, "tests", "integration", "fake_eval_server.py")
checks = failures = 0


def check(cond, what):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print("check failed:", what, file=sys.stderr)
    return cond


def wait_port(port_file, proc):
    return fake_base.wait_port(proc, port_file, "the server", timeout_s=10)


def gate(*args, timeout=240):
    return subprocess.run([EVAL, "gate", *args], capture_output=True, text=True, timeout=timeout)


def gate_lines(out):
    return {line.split()[1].rstrip(":"): line.split()[0] for line in out.splitlines()
            if line.startswith(("PASS ", "FAIL "))}


CALL = '{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}'


def test_fake(tmp):
    script = {"model": "fake", "default": "OK.", "rules": [
        {"match": "6 times 7", "reply": "Six sevens are forty-two.\n#### 42"},
        {"match": "weather like in Oslo", "reply": "<tool_call>" + CALL + "</tool_call>"},
    ]}
    sp = os.path.join(tmp, "script.json")
    with open(sp, "w") as f:
        json.dump(script, f)
    port_file = os.path.join(tmp, "fake.port")
    log = open(os.path.join(tmp, "fake.log"), "w")
    proc = subprocess.Popen([sys.executable, FAKE, "--script", sp, "--port-file", port_file], stderr=log)
    try:
        url = "http://127.0.0.1:%d" % wait_port(port_file, proc)
        with open(os.path.join(tmp, "arith.jsonl"), "w") as f:
            f.write(json.dumps({"id": "a/1", "grader": "numeric", "answer": 42,
                                "prompt": "What is 6 times 7? End with '#### N'."}) + "\n")
        with open(os.path.join(SRC, "datasets", "gates", "tool-calls.jsonl")) as f:
            oslo = [line for line in f if "weather-oslo" in line]
        with open(os.path.join(tmp, "tools.jsonl"), "w") as f:
            f.writelines(oslo)
        proto = {"name": "it", "model": "fake", "max_tokens": 64, "timeout_s": 30, "seed": 3, "gates": [
            {"name": "arith", "kind": "dataset", "dataset": "arith.jsonl", "min_passed": 1},
            {"name": "tools", "kind": "tool_calls", "dataset": "tools.jsonl", "text_calls": True, "min_rate": 1},
            {"name": "needle", "kind": "needle", "context_tokens": [300, 1200], "depths": [0, 0.5], "min_rate": 0.5}]}
        pp = os.path.join(tmp, "gate.json")
        with open(pp, "w") as f:
            json.dump(proto, f)
        r = gate(pp, "--url", url)
        print(r.stdout)
        lines = gate_lines(r.stdout)
        check(lines == {"arith": "PASS", "tools": "PASS", "needle": "FAIL"}, "per-gate lines: %s" % lines)
        check("FAIL needle: 0/4 passed (0.0 %), needs 2" in r.stdout, "needle counts: %s" % r.stdout)
        check(r.stdout.strip().splitlines()[-1] == "gate it: FAIL (2 of 3 gates passed)", "verdict line")
        check(r.returncode == 3, "exit 3 when a gate fails (got %d: %s)" % (r.returncode, r.stderr))
        r = gate(pp, "--url", url, "--only", "arith")
        check(r.returncode == 0 and "gate it: PASS (1 of 1 gates passed)" in r.stdout, "--only: %s" % r.stdout)
        # without text_calls the same reply is no structured call
        proto["gates"][1]["text_calls"] = False
        with open(pp, "w") as f:
            json.dump(proto, f)
        r = gate(pp, "--url", url, "--only", "tools")
        check("FAIL tools: 0/1" in r.stdout and "no tool call in the reply" in r.stdout, "structured only: %s" % r.stdout)

        # the bundled protocol: every gate runs and fails against the scripted model
        bundled = os.path.join(SRC, "protocols", "gate.json")
        r = gate(bundled, "--url", url, "--model", "fake")
        print(r.stdout)
        lines = gate_lines(r.stdout)
        check(lines == {"math": "FAIL", "code": "FAIL", "tool-calls": "FAIL", "needle": "FAIL"},
              "bundled gate lines: %s" % lines)
        check("FAIL math: 0/30 passed (0.0 %), needs 28" in r.stdout, "math gate of 30, needs 28")
        check("FAIL code: 0/20 passed (0.0 %), needs 19" in r.stdout, "code gate of 20, needs 19")
        check("FAIL tool-calls: 0/24 passed" in r.stdout, "24 tool-call prompts")
        check("FAIL needle: 0/6 passed" in r.stdout, "6 needle prompts")
        check(r.returncode == 3, "bundled gate exit 3")
        r = gate(bundled, "--url", url, "--only", "needle", "--json", "--seed", "5")
        try:
            js = json.loads(r.stdout)
        except ValueError:
            js = {}
        check(js.get("result") == "FAIL" and js.get("needle_seed") == 5 and len(js.get("gates", [])) == 1 and
              js["gates"][0]["items"] == 6 and js["gates"][0]["failed"] == 6, "--json: %s" % r.stdout[:500])
        # an unreachable server: api errors, never passes, never a crash
        r = gate(pp, "--url", "http://127.0.0.1:9", "--only", "arith")
        check(r.returncode == 3 and "1 api errors" in r.stdout, "unreachable server: %s %s" % (r.stdout, r.stderr))
        # bad input
        r = gate(pp, "--only", "nope", "--url", url)
        check(r.returncode == 1 and "no gate named \"nope\"" in r.stderr, "unknown --only: %s" % r.stderr)
        r = gate(os.path.join(tmp, "missing.json"))
        check(r.returncode == 1 and "missing.json" in r.stderr, "missing protocol: %s" % r.stderr)
    finally:
        stop(proc)
        log.close()


class ToolServer(BaseHTTPRequestHandler):
    """Answers tool-call prompts with structured tool_calls: streamed in pieces
    (name first, arguments split across chunks) or as one JSON body."""
    protocol_version = "HTTP/1.1"
    bodies = []

    def log_message(self, fmt, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        ToolServer.bodies.append(body)
        prompt = body["messages"][0]["content"]
        args = json.dumps({"city": "Oslo", "unit": "celsius"})
        if "Phoenix" in prompt:  # one whole JSON body, arguments as an object
            data = json.dumps({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                    "name": "get_weather", "arguments": {"city": "phoenix", "unit": "fahrenheit"}}}]}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if "Oslo" in prompt:
            deltas = [{"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                            "function": {"name": "get_weather", "arguments": ""}}]}]
            deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 7]}}]}
                       for i in range(0, len(args), 7)]
        else:  # a wrong tool
            deltas = [{"tool_calls": [{"index": 0, "function": {"name": "lookup_stock",
                                                                 "arguments": "{\"ticker\": \"NVDA\"}"}}]}]
        data = b"".join(b"data: " + json.dumps({"choices": [{"index": 0, "delta": d, "finish_reason": None}]}).encode()
                        + b"\n\n" for d in deltas) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_structured_calls(tmp):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), ToolServer)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        with open(os.path.join(SRC, "datasets", "gates", "tool-calls.jsonl")) as f:
            cases = [line for line in f if "weather-oslo" in line or "weather-phoenix" in line or "currency-eur" in line]
        with open(os.path.join(tmp, "three.jsonl"), "w") as f:
            f.writelines(cases)
        pp = os.path.join(tmp, "tools.json")
        with open(pp, "w") as f:
            json.dump({"name": "tc", "model": "m", "max_tokens": 64, "gates": [
                {"name": "tools", "kind": "tool_calls", "dataset": "three.jsonl", "min_passed": 2}]}, f)
        r = gate(pp, "--url", url)
        print(r.stdout)
        check("PASS tools: 2/3 passed" in r.stdout and "called lookup_stock, expected convert_currency" in r.stdout,
              "structured tool calls, streamed and whole: %s %s" % (r.stdout, r.stderr))
        sent = [b for b in ToolServer.bodies if b.get("tools")]
        check(len(sent) == 3 and all(b["stream"] is True for b in sent) and
              {t["function"]["name"] for t in sent[0]["tools"]} >= {"get_weather"},
              "every request offers the case's tools")
    finally:
        srv.shutdown()
        srv.server_close()


def test_sixi_server(tmp, mode):
    """mode "simulate": sixi-server --simulate thor (no model); "tiny": its embedded tiny model."""
    exe = os.path.join(BUILD, "src", "sixi-server")
    if not os.access(exe, os.X_OK):
        print("note: sixi-server is not built; its gate run is left out")
        return
    port_file, pid_file = os.path.join(tmp, mode + ".port"), os.path.join(tmp, mode + ".pid")
    if mode == "tiny":
        gguf = os.path.join(tmp, "tiny.gguf")
        w = subprocess.run([exe, "--write-tiny", gguf], capture_output=True, text=True, timeout=60)
        if not check(w.returncode == 0, "sixi-server --write-tiny: %s" % w.stderr.strip()):
            return
        args, model = ["--model", gguf, "--threads", "1"], "tiny"
    else:
        args, model = ["--simulate", "thor", "--time-scale", "10"], "sim-thor"
    log = open(os.path.join(tmp, mode + ".log"), "w")
    proc = subprocess.Popen([exe, *args, "--port", "0", "--port-file", port_file, "--pid-file", pid_file],
                            stderr=log)
    try:
        url = "http://127.0.0.1:%d" % wait_port(port_file, proc)
        with open(os.path.join(SRC, "datasets", "gates", "tool-calls.jsonl")) as f:
            three = f.readlines()[:3]
        with open(os.path.join(tmp, "tools3.jsonl"), "w") as f:
            f.writelines(three)
        proto = {"name": mode, "model": model, "max_tokens": 16, "timeout_s": 60, "seed": 1, "gates": [
            {"name": "math", "kind": "dataset", "dataset": os.path.join(SRC, "datasets", "sixi-math"), "tasks": 2,
             "min_passed": 2},
            {"name": "code", "kind": "dataset", "dataset": os.path.join(SRC, "datasets", "sixi-code"), "tasks": 1,
             "min_passed": 1},
            {"name": "tool-calls", "kind": "tool_calls", "dataset": "tools3.jsonl", "min_rate": 0.9},
            {"name": "needle", "kind": "needle", "context_tokens": [256], "depths": [0.5], "min_rate": 1}]}
        pp = os.path.join(tmp, mode + ".json")
        with open(pp, "w") as f:
            json.dump(proto, f)
        r = gate(pp, "--url", url, timeout=300)
        print(r.stdout)
        lines = gate_lines(r.stdout)
        check(set(lines) == {"math", "code", "tool-calls", "needle"}, "a line per gate against sixi-server (%s): %s %s"
              % (mode, r.stdout, r.stderr[-500:]))
        check(r.returncode in (0, 3) and ("gate %s: " % mode) in r.stdout, "the gate completes against sixi-server")
    finally:
        stop(proc)
        log.close()


DEMO_MATH = ("bakery-trays", "handshakes", "lcm-buses", "sequence-term", "average-score", "hexagon-diagonals",
             "trapezoid-area", "consecutive-sum")


def test_trained(tmp):
    """Gates whose verdicts follow the trained model's (greedy, deterministic) answers."""
    exe = os.path.join(BUILD, "src", "sixi-server")
    if not os.access(exe, os.X_OK):
        print("note: sixi-server is not built; the trained model's gate run is left out")
        return
    gguf = os.path.join(tmp, "small.gguf")
    w = subprocess.run([exe, "--write-tiny", gguf, "--from", os.path.join(SRC, "src", "model", "trained", "sixi-small")],
                       capture_output=True, text=True, timeout=60)
    if not check(w.returncode == 0, "sixi-server --write-tiny --from: %s" % w.stderr.strip()):
        return
    with open(os.path.join(SRC, "datasets", "sixi-math", "tasks.jsonl")) as f:
        rows = [line for line in f if json.loads(line)["id"].split("/")[1] in DEMO_MATH]
    check(len(rows) == 8, "the demo's eight sixi-math tasks")
    with open(os.path.join(tmp, "math8.jsonl"), "w") as f:
        f.writelines(rows)
    port_file, pid_file = os.path.join(tmp, "trained.port"), os.path.join(tmp, "trained.pid")
    log = open(os.path.join(tmp, "trained.log"), "w")
    proc = subprocess.Popen([exe, "--model", gguf, "--threads", "1", "--port", "0", "--port-file", port_file,
                             "--pid-file", pid_file], stderr=log)
    try:
        url = "http://127.0.0.1:%d" % wait_port(port_file, proc)
        proto = {"name": "trained", "model": "sixi-small", "max_tokens": 160, "temperature": 0, "timeout_s": 60,
                 "seed": 1, "gates": [
                     {"name": "math6", "kind": "dataset", "dataset": "math8.jsonl", "min_passed": 6},
                     {"name": "math7", "kind": "dataset", "dataset": "math8.jsonl", "min_passed": 7},
                     {"name": "code", "kind": "dataset", "dataset": os.path.join(SRC, "datasets", "sixi-code"),
                      "tasks": 2, "min_passed": 1}]}
        pp = os.path.join(tmp, "trained.json")
        with open(pp, "w") as f:
            json.dump(proto, f)
        r = gate(pp, "--url", url, timeout=300)
        print(r.stdout)
        lines = gate_lines(r.stdout)
        check(lines == {"math6": "PASS", "math7": "FAIL", "code": "FAIL"}, "trained: verdicts %s %s"
              % (lines, r.stderr[-500:]))
        check(r.returncode == 3, "trained: exit 3 when a gate fails, got %d" % r.returncode)
        check("6/8 passed" in r.stdout and "sixi-math/average-score: answer 101, expected 78" in r.stdout,
              "trained: the math line counts 6 of 8 and names the first wrong answer: %s" % r.stdout)
    finally:
        stop(proc)
        log.close()


def main():
    if not os.access(EVAL, os.X_OK):
        print("SKIP: %s is not built" % EVAL)
        return 77
    with tempfile.TemporaryDirectory(prefix="sixi-gate-it-") as tmp:
        test_fake(tmp)
        test_structured_calls(tmp)
        test_sixi_server(tmp, "simulate")
        test_sixi_server(tmp, "tiny")
        test_trained(tmp)
    print("%d checks, %d failed" % (checks, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
