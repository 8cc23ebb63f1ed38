#!/usr/bin/env python3
"""A scriptable OpenAI-compatible streaming server for integration tests.

It speaks /v1/completions and /v1/chat/completions (streamed with SSE over
chunked HTTP/1.1, or not), /v1/models and /props, and misbehaves on purpose
when told to, so that tests can show how the client records each failure.
Listens on 127.0.0.1 only. Python standard library only.

  fake_openai.py --port 0 --port-file F [--tokens-per-event N] [--no-usage]
                 [--cached N] [--ready-after S] [--fail MODE --fail-every K | --fail-after N]
                 [--event-delay-ms D] [--fingerprint TEXT]
MODE: reset | 500 | malformed | stall | error-event | huge-event | non-json | bad-utf8
"""
import argparse
import io
import json
import math
import sys
import threading
import time

import fake_base

ARGS = None
START = time.monotonic()
COUNTER = {"n": 0}
LOCK = threading.Lock()


def prompt_tokens_of(body):
    if isinstance(body.get("prompt"), list) and "messages" not in body:
        return len(body["prompt"])  # token ids
    words = len(fake_base.prompt_text(body).split())
    return max(1, math.ceil(words * 4 / 3))


class Handler(fake_base.Handler):
    event_end = b"\r\n\r\n"

    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        elif self.path == "/props":
            self.send_json(200, {"fingerprint": ARGS.fingerprint, "tokens_per_event": ARGS.tokens_per_event})
        elif self.path == "/health":
            self.send_json(200, {"status": "ok"})
        else:
            self.send_json(404, {"error": {"message": "no such path: " + self.path}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            self.send_json(404, {"error": {"message": "no such path: " + self.path}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self.send_json(400, {"error": {"message": "body is not JSON"}})
            return
        if time.monotonic() - START < ARGS.ready_after:
            self.send_json(503, {"error": {"message": "model is loading"}})
            return
        with LOCK:
            COUNTER["n"] += 1
            k = COUNTER["n"]
        fail = ARGS.fail if (ARGS.fail_every and k % ARGS.fail_every == 0) or (ARGS.fail_after and k > ARGS.fail_after) \
            else None
        chat = self.path.endswith("chat/completions")
        max_tokens = int(body.get("max_tokens", 16))
        ptoks = prompt_tokens_of(body)
        if fail == "500":
            self.send_json(500, {"error": {"message": "internal error (scripted)"}})
            return
        if fail == "non-json":
            data = b"<html><body>502 Bad Gateway</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        usage = {"prompt_tokens": ptoks, "completion_tokens": max_tokens, "total_tokens": ptoks + max_tokens,
                 "prompt_tokens_details": {"cached_tokens": ARGS.cached}}
        if not body.get("stream"):
            text = "tok " * max_tokens
            choice = {"index": 0, "finish_reason": "length"}
            if chat:
                choice["message"] = {"role": "assistant", "content": text}
            else:
                choice["text"] = text
            out = {"id": "x", "object": "text_completion", "choices": [choice]}
            if not ARGS.no_usage:
                out["usage"] = usage
            self.send_json(200, out)
            return
        self.start_stream()
        if chat:
            self.event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        self.chunk(b": keep-alive\r\n\r\n")
        sent = 0
        i = 0
        nreq = k
        reply = []
        while sent < max_tokens:
            i += 1
            if fail and i == 3:
                if fail == "reset":
                    self.reset()
                    self.wfile = io.BytesIO()
                    return
                if fail == "malformed":
                    self.chunk(b"data: {\"choices\": [\r\n\r\n")
                if fail == "error-event":
                    self.event({"error": {"message": "scripted failure", "code": 500}})
                if fail == "huge-event":
                    self.chunk(b"data: \"" + b"x" * (2 << 20) + b"\"\r\n\r\n")
                if fail == "bad-utf8":
                    # bytes that are not UTF-8, inside an otherwise valid chunk
                    self.chunk(b'data: {"choices": [{"index": 0, "text": "\xff\xfe\xc3"}]}\r\n\r\n')
                    sent += 1
                    continue
                if fail == "stall":
                    time.sleep(ARGS.stall_seconds)
                    return
                if fail in ("malformed", "error-event", "huge-event"):
                    self.chunk(b"")
                    return
            k = min(ARGS.tokens_per_event, max_tokens - sent)
            text = ("r%de%d " % (nreq, i)) * k if ARGS.distinct_replies else "tok " * k
            reply.append(text)
            if chat:
                self.event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
            else:
                self.event({"choices": [{"index": 0, "text": text, "finish_reason": None}]})
            sent += k
            if ARGS.event_delay_ms:
                time.sleep(ARGS.event_delay_ms / 1000.0)
        final = {"choices": [{"index": 0, "finish_reason": "length"}]}
        if chat:
            final["choices"][0]["delta"] = {}
        else:
            final["choices"][0]["text"] = ""
        self.event(final)
        if ARGS.record:
            with LOCK, open(ARGS.record, "a") as f:
                f.write(json.dumps({"n": nreq, "body": body, "reply": "".join(reply)}) + "\n")
        so = body.get("stream_options") or {}
        if so.get("include_usage") and not ARGS.no_usage:
            self.event({"choices": [], "usage": usage})
        self.done()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--tokens-per-event", type=int, default=1)
    ap.add_argument("--no-usage", action="store_true")
    ap.add_argument("--cached", type=int, default=0)
    ap.add_argument("--ready-after", type=float, default=0.0)
    ap.add_argument("--fail", choices=["reset", "500", "malformed", "stall", "error-event", "huge-event", "non-json", "bad-utf8"])
    ap.add_argument("--fail-every", type=int, default=0)
    ap.add_argument("--fail-after", type=int, default=0, help="every request after the first N fails (MODE)")
    ap.add_argument("--stall-seconds", type=float, default=20.0)
    ap.add_argument("--event-delay-ms", type=float, default=0.0)
    ap.add_argument("--fingerprint", default="fake-1")
    ap.add_argument("--record", help="append each streamed request's body and reply text to this JSONL file")
    ap.add_argument("--distinct-replies", action="store_true", help="reply text names the request and event")
    ap.add_argument("--lifetime", type=float, default=600.0, help="exit after this many seconds regardless")
    ARGS = ap.parse_args()
    srv, port = fake_base.listen(Handler, ARGS.port, ARGS.port_file, lifetime=ARGS.lifetime, queue=1024)
    print(f"listening on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
