#!/usr/bin/python3
"""A scriptable OpenAI-compatible server for the sixi-eval integration tests.

Streams /v1/completions and /v1/chat/completions (SSE, usage in the last
chunk), answers /v1/models, and misbehaves on purpose following a script, so
that tests can check that sixi-eval records each failure as api_error (never
wrong), cuts loops, and notices a chat endpoint that eats the answer.
Listens on 127.0.0.1 only; Python standard library only.

  fake_eval_server.py --script SCRIPT.json --port-file FILE [--event-delay-ms D] [--port P]

The script: {"default": TEXT, "chat_empty_content": BOOL, "model": NAME,
             "rules": [{"match": SUBSTRING, "reply": TEXT,
                        "fault": "hang|stall|reset|500|malformed|loop|none",
                        "times": N}]}
The first rule whose "match" is in the prompt applies. Its fault is applied to
the first N requests that match (all of them when "times" is absent), then the
reply is sent normally. "hang" never sends headers; "stall" stops sending
halfway through the stream; "reset" closes the socket with a TCP RST halfway;
"malformed" sends a broken SSE event halfway. "loop" streams the reply's first sentence forever
(until the client closes). chat_empty_content puts all chat output in
reasoning_content and leaves content empty, as a broken reasoning parser does.
GET /health answers 200 whatever the script says (a server can look healthy
while its generation hangs). GET /stats returns how many requests each rule saw, GET /prompts the path and
prompt of the last 50 requests.
"""
import argparse
import json
import sys
import threading
import time

import fake_base

SCRIPT = {}
ARGS = None
SEEN = {}
PROMPTS = []  # (path, prompt) of the last 50 requests
LOCK = threading.Lock()


def words(text):
    # one "token" per word, keeping the spaces so the text survives joining
    out, cur = [], ""
    for ch in text:
        cur += ch
        if ch in " \n":
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def pick_rule(prompt):
    for i, rule in enumerate(SCRIPT.get("rules", [])):
        if rule.get("match", "") in prompt:
            with LOCK:
                n = SEEN.get(i, 0)
                SEEN[i] = n + 1
            faulty = "times" not in rule or n < rule["times"]
            return rule, (rule.get("fault", "none") if faulty else "none")
    return {"reply": SCRIPT.get("default", "OK.")}, "none"


class Handler(fake_base.Handler):
    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": SCRIPT.get("model", "fake"), "object": "model", "created": int(time.time())}]})
        elif self.path == "/health":
            self.send_json(200, {"status": "ok"})
        elif self.path == "/stats":
            with LOCK:
                self.send_json(200, {str(k): v for k, v in SEEN.items()})
        elif self.path == "/prompts":
            with LOCK:
                self.send_json(200, PROMPTS)
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def delta(self, chat, text, finish=None):
        if chat:
            d = {"reasoning_content": text} if SCRIPT.get("chat_empty_content") else {"content": text}
            return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
        return {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        chat = self.path.startswith("/v1/chat/")
        prompt = fake_base.prompt_text(body)
        with LOCK:
            PROMPTS.append([self.path, prompt])
            del PROMPTS[:-50]
        rule, fault = pick_rule(prompt)
        if fault == "500":
            self.send_json(500, {"error": {"message": "scripted internal error"}})
            return
        if fault == "hang":
            # headers never come: the client's stall/first-byte timeout must end it
            time.sleep(3600)
            return
        self.start_stream()
        delay = ARGS.event_delay_ms / 1000.0
        max_tokens = int(body.get("max_tokens") or 1 << 30)
        toks = words(rule.get("reply", ""))
        try:
            if fault == "loop":
                sentence = words(rule.get("reply", "").split(". ")[0].strip(".") + ". ")
                n = 0
                while n < max_tokens:
                    for w in sentence:
                        self.event(self.delta(chat, w))
                        n += 1
                    time.sleep(delay)
                self.event(self.delta(chat, "", "length"))
                self.done()
                return
            sent = 0
            for i, w in enumerate(toks[:max_tokens]):
                if fault == "reset" and i == len(toks) // 2:
                    self.reset()
                    return
                if fault == "stall" and i == len(toks) // 2:
                    time.sleep(3600)  # mid-stream: the client's stall limit must end it
                    return
                if fault == "malformed" and i == len(toks) // 2:
                    self.chunk(b"data: {\"choices\": [{\"delta\": {\"content\": \"unterminated\n\n")
                self.event(self.delta(chat, w))
                sent += 1
                if delay:
                    time.sleep(delay)
            finish = "length" if len(toks) > max_tokens else "stop"
            last = self.delta(chat, "", finish)
            last["usage"] = {"prompt_tokens": len(prompt.split()), "completion_tokens": sent,
                             "total_tokens": len(prompt.split()) + sent}
            self.event(last)
            self.done()
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    global ARGS, SCRIPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--event-delay-ms", type=float, default=0)
    ap.add_argument("--port", type=int, default=0)
    ARGS = ap.parse_args()
    with open(ARGS.script) as f:
        SCRIPT = json.load(f)
    srv, _ = fake_base.listen(Handler, ARGS.port, ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
