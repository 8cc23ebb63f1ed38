#!/usr/bin/env python3
"""The peer for perf_client.sh: a Python asyncio + aiohttp streaming client that
does what sixi-bench's client does per request — POST, read the SSE stream line by
line, json.loads every data event, note the first token, take completion_tokens
from usage — and prints events/s and tokens/s as JSON.

  aiohttp_client.py --url URL --streams N --rounds R
"""
import argparse
import asyncio
import json
import time

import aiohttp


async def one_stream(session, url, rounds, stats):
    body = {"model": "emitter", "prompt": "hello", "max_tokens": 256, "stream": True,
            "stream_options": {"include_usage": True}}
    for _ in range(rounds):
        t_send = time.monotonic_ns()
        first = 0
        async with session.post(url + "/v1/completions", json=body) as resp:
            if resp.status != 200:
                stats["errors"] += 1
                continue
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                while True:
                    i = buf.find(b"\n\n")
                    if i < 0:
                        break
                    event, buf = buf[:i], buf[i + 2:]
                    for line in event.split(b"\n"):
                        if not line.startswith(b"data:"):
                            continue
                        data = line[5:].strip()
                        stats["events"] += 1
                        if data == b"[DONE]":
                            continue
                        obj = json.loads(data)
                        ch = obj.get("choices") or []
                        if ch and ch[0].get("text") and not first:
                            first = time.monotonic_ns()
                        u = obj.get("usage")
                        if u:
                            stats["tokens"] += u["completion_tokens"]
        stats["requests"] += 1
        stats["ttft"].append((first - t_send) / 1e6 if first else None)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    stats = {"events": 0, "tokens": 0, "requests": 0, "errors": 0, "ttft": []}
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as session:
        t0 = time.monotonic()
        await asyncio.gather(*(one_stream(session, a.url, a.rounds, stats) for _ in range(a.streams)))
        wall = time.monotonic() - t0
    print(json.dumps({"events": stats["events"], "events_per_s": stats["events"] / wall,
                      "tokens_per_s": stats["tokens"] / wall,
                      "requests": stats["requests"], "errors": stats["errors"], "wall_s": wall}))


asyncio.run(main())
