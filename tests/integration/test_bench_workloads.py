#!/usr/bin/env python3
"""Integration tests of sixi-bench's workloads against real server processes on 127.0.0.1:
tests/integration/fake_openai.py (which records what it received) and sixi-server --simulate
(the real scheduler and prefix cache on a simulated device whose capacity is set by a JSON
file, so the answers are known in advance). Servers are stopped by PID; every sixi-bench
run is bounded by a timeout that is only a hang guard. No verdict depends on speed.

  test_bench_workloads.py SIXI_BENCH SIXI_SERVER CASE
"""
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import fake_base

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH, SERVER, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
TMP = tempfile.mkdtemp(prefix="sixi-bench-wl-")
DB = os.path.join(TMP, "sixi.db")
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def wait_port(proc, pf, what):
    return "http://127.0.0.1:%d" % fake_base.wait_port(proc, pf, what, timeout_s=30)


class Fake:
    def __init__(self, *args):
        pf = os.path.join(TMP, "port-%d" % time.monotonic_ns())
        self.record = os.path.join(TMP, "record-%d.jsonl" % time.monotonic_ns())
        self.proc, self.url = fake_base.start_fake(fake_base.FAKE_OPENAI, pf, "--lifetime", "300", "--record",
                                                   self.record, *args, stderr=subprocess.DEVNULL)

    def received(self):
        if not os.path.exists(self.record):
            return []
        return [json.loads(l) for l in open(self.record)]

    def stop(self):
        fake_base.stop(self.proc)


class Sim:
    def __init__(self, preset, *args):
        if not os.access(SERVER, os.X_OK):
            print("SKIP: %s not built" % SERVER)
            sys.exit(77)
        pf = os.path.join(TMP, "sport-%d" % time.monotonic_ns())
        self.log = open(os.path.join(TMP, "server.log"), "a")
        self.proc = subprocess.Popen([SERVER, "--simulate", preset, "--host", "127.0.0.1", "--port", "0",
                                      "--port-file", pf, *args], stderr=self.log, stdout=subprocess.DEVNULL)
        self.url = wait_port(self.proc, pf, "sixi-server")

    def stop(self):
        os.kill(self.proc.pid, signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        check(rc == 0, "sixi-server exits 0 (got %d)" % rc)


def bench(*args, timeout=300):
    p = subprocess.run([BENCH, args[0], "--db", DB, "--no-plots", *args[1:]], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def bench_json(*args, timeout=300):
    rc, out, err = bench(*args, "--json", timeout=timeout)
    check(rc == 0, "%s exits 0 (rc=%d, stderr=%s)" % (args[0], rc, err[-400:]))
    return json.loads(out) if rc == 0 else None


def bench_once(srv, mode, *args, timeout=300):
    """One sixi-bench run against srv (a Fake or a Sim), which is stopped after it, whatever happened."""
    try:
        return bench_json(mode, "--url", srv.url, *args, timeout=timeout)
    finally:
        srv.stop()


def rows(sql, *params):
    con = sqlite3.connect(DB)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


CONVS = [
    {"conversations": [{"from": "system", "value": "You answer briefly."},
                       {"from": "human", "value": "first question of one"},
                       {"from": "gpt", "value": "the dataset's own reply, never sent"},
                       {"from": "human", "value": "second question of one"},
                       {"from": "gpt", "value": "another dataset reply"},
                       {"from": "human", "value": "third question of one"}]},
    {"conversations": [{"from": "human", "value": "first question of two"},
                       {"from": "gpt", "value": "x"},
                       {"from": "human", "value": "second question of two"}]},
    {"conversations": []},
    {"conversations": [{"from": "human", "value": "only question of three"}]},
]


def sharegpt_file():
    return write("sharegpt.json", "[\n" + ",\n".join(json.dumps(c) for c in CONVS) + "\n]\n")


def user_turns(conv):
    return [m["value"] for m in conv["conversations"] if m["from"] == "human"]


# ---- multi-turn: what the server received ----

def case_multiturn_received():
    """Turn k's request carries the system prompt, turns 1..k-1, and the replies the server itself
    sent to those turns (not the dataset's), in order: read from the server's own record."""
    path = sharegpt_file()
    for api in ("chat", "completions"):
        srv = Fake("--distinct-replies")
        try:
            extra = ["--chat"] if api == "chat" else []
            j = bench_json("replay", "--url", srv.url, "--prompts", path, "--max-tokens", "3", "--conversations", "2",
                           "--warmup", "0", *extra)
            got = srv.received()
        finally:
            srv.stop()
        if not j:
            continue
        turns = {t["turn"]: t["requests"] for t in j["detail"]["turns"]}
        check(turns == {1: 3, 2: 2, 3: 1}, "%s: 3 conversations replayed turn by turn (%r)" % (api, turns))
        # the measured requests: those whose text holds a dataset turn
        def text_of(b):
            return json.dumps(b["messages"]) if api == "chat" else b["prompt"]
        meas = [r for r in got if "question of" in text_of(r["body"])]
        check(len(meas) == 6, "%s: 6 turns reached the server (%d)" % (api, len(meas)))
        check(all("dataset" not in text_of(r["body"]) and '"x"' not in text_of(r["body"]) for r in meas),
              "%s: the dataset's own replies are never sent" % api)
        for conv in (c for c in CONVS if user_turns(c)):
            us = user_turns(conv)
            system = [m["value"] for m in conv["conversations"] if m["from"] == "system"]
            mine = [r for r in meas if us[0] in text_of(r["body"])]
            check(len(mine) == len(us), "%s: every turn of %r sent once" % (api, us[0]))
            by_turn = {}
            for r in mine:
                k = sum(text_of(r["body"]).count(u) for u in us)
                by_turn[k] = r
            for k in range(1, len(us) + 1):
                r = by_turn.get(k)
                if not check(r is not None, "%s: turn %d of %r present" % (api, k, us[0])):
                    continue
                if api == "chat":
                    want = [{"role": "system", "content": s} for s in system]
                    for i in range(k):
                        want.append({"role": "user", "content": us[i]})
                        if i < k - 1:
                            want.append({"role": "assistant", "content": by_turn[i + 1]["reply"]})
                    check(r["body"]["messages"] == want,
                          "chat: turn %d carries turns 1..%d and the server's replies: %r" % (k, k - 1, r["body"]))
                else:
                    want = "".join("System: %s\n\n" % s for s in system)
                    for i in range(k):
                        want += ("\n\n" if i else "") + "User: %s\n\nAssistant:" % us[i]
                        if i < k - 1:
                            want += by_turn[i + 1]["reply"]
                    check(r["body"]["prompt"] == want,
                          "completions: turn %d is the transcript with the replies: %r" % (k, r["body"]["prompt"]))
                    if k > 1:
                        prev = by_turn[k - 1]
                        check(r["body"]["prompt"].startswith(prev["body"]["prompt"] + prev["reply"]),
                              "completions: turn %d extends turn %d's prompt and reply byte for byte" % (k, k - 1))
        # think time: the next turn is due think_time after the reply, measured from then
    srv = Fake()
    j = bench_once(srv, "replay", "--prompts", path, "--max-tokens", "2", "--warmup", "0",
                   "--think-time", "0.3", "--max-conversations", "1")
    if j:
        r = rows("SELECT seq, t_intended, t_send, t_done FROM bench_requests WHERE run = ? AND phase = 'measure'"
                 " ORDER BY seq", j["run"])
        check(len(r) == 3, "one conversation of 3 turns (%r)" % (r,))
        for a, b in zip(r, r[1:]):
            check(b[1] - a[3] >= 300_000_000 and b[2] >= b[1],
                  "turn %d is due 0.3 s after turn %d ended and not sent before (%r)" % (b[0], a[0], (a, b)))


def case_multiturn_cache():
    """Against the real sixi-server with its prefix cache: turn k's prompt begins with turn k-1's
    prompt and reply token for token, so the server reuses all of it but the last sampled token
    (which a finished sequence never fed): cached_k = prompt_{k-1} + completion_{k-1} - 1."""
    path = sharegpt_file()
    srv = Sim("thor", "--time-scale", "20", "--prefix-cache")
    try:
        for extra in (["--chat"], []):
            j = bench_json("replay", "--url", srv.url, "--prompts", path, "--max-tokens", "6", "--conversations", "3",
                           "--warmup", "0", *extra)
            if not j:
                continue
            r = rows("SELECT stream, seq, prompt_tokens, cached_tokens, completion_tokens, finish_reason"
                     " FROM bench_requests WHERE run = ? AND phase = 'measure' ORDER BY stream, seq", j["run"])
            check(len(r) == 6, "6 turns stored (%d)" % len(r))
            prev = {}
            for s, k, pt, ct, comp, fin in r:
                if k == 0:
                    check(ct == 0, "turn 1 of conversation %d is cache-cold (%d)" % (s, ct))
                else:
                    p_pt, p_comp = prev[s]
                    check(ct == p_pt + p_comp - 1,
                          "%s conv %d turn %d: cached %d == previous prompt %d + reply %d - 1" %
                          (extra or "completions", s, k + 1, ct, p_pt, p_comp))
                    check(pt > p_pt + p_comp, "turn %d's prompt is longer than all before it" % (k + 1))
                check(comp == 6 and fin == "length", "each reply is 6 tokens (%d, %s)" % (comp, fin))
                prev[s] = (pt, comp)
            lv = j["levels"][0]
            check(lv["valid"], "a replay level is valid with cached tokens (cache reuse is what it measures)")
    finally:
        srv.stop()


# ---- prefix sharing ----

def case_prefix_cache():
    """G groups share an L-token prefix. sixi-server's cache reuses a finished sequence whose whole
    history is a prefix of the new prompt, and hands that sequence over (it is not copied): so in each
    group the prime (the prefix alone, one token generated) is reused by exactly one later request,
    with cached_tokens = the prime's prompt_tokens, and the others get 0. Without --prefix-cache: 0."""
    for cache in (True, False):
        srv = Sim("thor", "--time-scale", "20", *(["--prefix-cache"] if cache else []))
        j = bench_once(srv, "prefix", "--groups", "3", "--prefix-tokens", "400", "--requests", "3",
                       "--max-tokens", "4", "--warmup", "0")
        if not j:
            continue
        r = rows("SELECT stream, seq, tag, prompt_tokens, cached_tokens FROM bench_requests WHERE run = ?"
                 " AND phase = 'measure' ORDER BY stream, seq", j["run"])
        check(len(r) == 12, "3 groups x (1 prime + 3) stored (%d)" % len(r))
        total = 0
        for g in range(3):
            grp = [x for x in r if x[0] == g]
            prime = grp[0]
            check(prime[2] == "prime" and prime[4] == 0, "group %d: the prime is cache-cold" % g)
            check(abs(prime[3] - 400) <= 40, "group %d: the prefix is ~400 tokens (%d)" % (g, prime[3]))
            cached = [x[4] for x in grp[1:]]
            if cache:
                check(cached == [prime[3], 0, 0], "group %d: one request reuses the whole prime (%r, prime %d)" %
                      (g, cached, prime[3]))
            else:
                check(cached == [0, 0, 0], "group %d: no cache, no cached tokens (%r)" % (g, cached))
            check(all(x[3] > prime[3] for x in grp[1:]), "group %d: shared requests are prefix + question" % g)
            total += prime[3] * 3
        d = j["detail"]
        check(d["shared_prefix_tokens"] == total, "shared prefix tokens reported (%r == %d)" % (d["shared_prefix_tokens"], total))
        want = total // 3 if cache else 0
        check(d["cached_tokens"] == want, "cached_tokens reported, not hidden (%r == %d)" % (d["cached_tokens"], want))
        check(abs(d["reuse"] - (1 / 3 if cache else 0)) < 1e-9, "reuse %r" % d["reuse"])
        (s,), = rows("SELECT json_extract(summary_json, '$.prefix.cached_tokens') FROM runs WHERE id = ?", j["run"])
        check(s == want, "the stored summary holds cached_tokens (%r)" % s)


# ---- search ----

# One 160 ms pass per request (4 GB at 25 GB/s, one token): the host's own lateness between
# passes (thread wake-ups on a loaded machine, a few ms) then weighs on one pass per request,
# not on four, so the scripted capacity holds within the checks' margin on a busy machine.
SLOT1 = {"base": "thor", "weight_gb": 4, "bandwidth_gbps": 25, "decode_row_ms": 0, "prefill_row_ms": 0,
         "host_row_ms": 0, "slots": 1, "context": 4096}


def case_search():
    """One sequence at a time, 160 ms per pass (4 GB at 25 GB/s), 1 token per request: each request
    needs one pass (the prompt with its first token), so the server completes mu = 1 / 0.16 s =
    6.25 requests/s. With constant arrivals below mu nobody waits; above it the queue grows by
    (1/mu - 1/rate) per request and e2e passes 250 ms after a few requests. The search must find
    6.25 within 10 %, give the attainment interval, and stop the over-saturated probes early."""
    cfg = write("slot1.json", json.dumps(SLOT1))
    srv = Sim(cfg, "--straggler-wait", "off")
    j = bench_once(srv, "search", "--max-tokens", "1", "--warmup", "0", "--arrival", "constant",
                   "--slo", "e2e=250ms", "--lo", "1", "--hi", "25", "--requests", "30", "--target", "0.8",
                   "--tolerance", "0.05", timeout=600)
    if not j:
        return
    d = j["detail"]
    res = d["result"]
    mu = 1 / (4e9 / 25e9)
    print("search: sustainable %r, bracket [%r, %r], analytic %.3f" % (res.get("sustainable"), res["bracket_low"],
                                                                     res["bracket_high"], mu))
    check(res["bracketed"], "the range brackets the answer")
    s = res.get("sustainable")
    check(s is not None and abs(s - mu) <= 0.1 * mu, "sustainable rate %r within 10%% of %.3f" % (s, mu))
    check(res["bracket_low"] <= (s or 0) <= res["bracket_high"] and (res["bracket_high"] - res["bracket_low"])
          <= 0.05 * res["bracket_low"] + 1e-9, "the bracket is within the tolerance (%r)" % res)
    check(res.get("attainment_low", 2) <= res.get("attainment", -1) <= res.get("attainment_high", -1)
          and res["attainment_low"] >= 0.8, "the attainment comes with its interval, lower bound >= target (%r)" % res)
    probes = d["probes"]
    top = probes[0]
    check(top["load"] == 25 and top["over_saturated"] and not top["pass"],
          "the top probe (4x capacity) is over-saturated (%r)" % top)
    check(res["over_saturated_probes"] >= 1, "the over-saturation stop fired")
    # the stop ended the level early: requests of that probe were never sent
    (stopped,), = rows("SELECT count(*) FROM bench_requests WHERE run = ? AND level = 1 AND error = 'stopped'",
                       j["run"])
    check(stopped > 0, "the over-saturated probe's later requests were not sent (%d)" % stopped)
    # every passing probe is below every failing one (monotone), and the knee is a probed load
    passing = [p["load"] for p in probes if p["pass"]]
    failing = [p["load"] for p in probes if not p["pass"]]
    check(max(passing) < min(failing), "passes below fails (%r, %r)" % (passing, failing))
    check("knee" not in res or res["knee"]["load"] in [p["load"] for p in probes], "knee is a probed load")
    # the stored levels carry the SLO with Wilson bounds
    st = rows("SELECT json_extract(summary_json, '$.search.result.sustainable') FROM runs WHERE id = ?", j["run"])
    check(st[0][0] == s, "the result is stored with the run (%r)" % st)


def case_search_concurrency():
    """The same one-slot device in closed loop: with C streams each request waits for the C - 1
    others, so e2e = C x 160 ms; under e2e <= 560 ms the highest concurrency is 3 (480 ms; 4 would
    take 640 ms). The closed loop cannot over-saturate: no probe is stopped."""
    cfg = write("slot1.json", json.dumps(SLOT1))
    srv = Sim(cfg, "--straggler-wait", "off")
    j = bench_once(srv, "search", "--mode", "concurrency", "--max-tokens", "1", "--warmup", "0",
                   "--slo", "e2e=560ms", "--lo", "1", "--hi", "8", "--requests", "30", "--target", "0.8",
                   timeout=600)
    if not j:
        return
    res = j["detail"]["result"]
    check(res["bracketed"] and res.get("sustainable") == 3 and res["bracket_high"] == 4,
          "concurrency search finds 3 streams, bracket [3, 4] (%r)" % res)
    check(res["over_saturated_probes"] == 0, "closed loop: no over-saturation stop")


def case_metrics():
    """--metrics scrapes sixi-server's /metrics before and after each level: the deltas match what
    the client itself stored (requests, completion tokens), and under speculative decoding (the
    tiny real model, --spec ngram, greedy) each level carries the acceptance rate, which is the
    ratio of the accepted and drafted counters' deltas."""
    tiny = os.path.join(TMP, "tiny.gguf")
    if not os.access(SERVER, os.X_OK):
        print("SKIP: %s not built" % SERVER)
        sys.exit(77)
    subprocess.run([SERVER, "--write-tiny", tiny], check=True, capture_output=True, timeout=60)
    srv = Sim("thor", "--time-scale", "20")
    j = bench_once(srv, "sweep", "--concurrency", "1,3", "--rounds", "2", "--max-tokens", "5",
                   "--warmup", "1", "--metrics")
    for lv in (j or {}).get("levels", []):
        m = lv.get("server_metrics") or {}
        c = m.get("counters", {})
        (ct,), = rows("SELECT sum(completion_tokens) FROM bench_requests WHERE run = ? AND phase = 'measure'"
                      " AND level = ?", j["run"], lv["level"])
        check(c.get("sixi_requests_total") == lv["requests"], "level %d: the server counted the level's %d requests "
              "(%r)" % (lv["level"], lv["requests"], c.get("sixi_requests_total")))
        check(c.get("sixi_completion_tokens_total") == ct, "level %d: and its %d tokens (%r)" %
              (lv["level"], ct, c.get("sixi_completion_tokens_total")))
        check("sixi_active_sequences" in m.get("gauges", {}), "gauges are kept (queue, running)")
        check(c.get("sixi_spec_drafted_total") == 0 and "spec_acceptance" not in m,
              "no speculation, no acceptance rate (%r)" % m.get("spec_acceptance"))
    pf = os.path.join(TMP, "tport")
    proc = subprocess.Popen([SERVER, "--model", tiny, "--spec", "ngram", "--host", "127.0.0.1", "--port", "0",
                             "--port-file", pf, "--threads", "1"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        url = wait_port(proc, pf, "sixi-server --model tiny")
        j = bench_json("sweep", "--url", url, "--concurrency", "1,2", "--rounds", "2", "--max-tokens", "64",
                       "--temperature", "0", "--warmup", "1", "--metrics")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    for lv in (j or {}).get("levels", []):
        m = lv.get("server_metrics") or {}
        c = m.get("counters", {})
        d, a = c.get("sixi_spec_drafted_total", 0), c.get("sixi_spec_accepted_total", -1)
        check(d > 0 and 0 <= a <= d, "level %d: tokens were drafted and some accepted (%r of %r)" % (lv["level"], a, d))
        check(d > 0 and abs(m.get("spec_acceptance", -1) - a / d) < 1e-12,
              "level %d: acceptance rate per level = accepted / drafted (%r)" % (lv["level"], m.get("spec_acceptance")))
    (st,), = rows("SELECT json_extract(summary_json, '$.levels[0].server_metrics.spec_acceptance') FROM runs"
                  " WHERE id = ?", j["run"]) if j else ((None,),)
    check(st is not None, "the acceptance rate is stored with the level")


# ---- arrivals and traces ----

def intended(run):
    return [r[0] for r in rows("SELECT t_intended FROM bench_requests WHERE run = ? AND phase = 'measure'"
                               " ORDER BY t_intended", run)]


def case_arrivals():
    srv = Fake()
    try:
        j = bench_json("rate", "--url", srv.url, "--rps", "20", "--duration", "1", "--arrival", "constant",
                       "--max-tokens", "4", "--warmup", "0")
        if j:
            t = intended(j["run"])
            check(len(t) == 20, "constant: 20 requests in 1 s at 20 req/s (%d)" % len(t))
            check(all(abs((b - a) - 50_000_000) <= 1 for a, b in zip(t, t[1:])), "constant: gaps of exactly 50 ms")
            (late,), = rows("SELECT count(*) FROM bench_requests WHERE run = ? AND phase = 'measure'"
                            " AND t_send < t_intended", j["run"])
            check(late == 0, "nothing is sent before it is due")
        j = bench_json("rate", "--url", srv.url, "--rps", "40", "--duration", "2", "--arrival", "gamma:0.5",
                       "--max-tokens", "2", "--warmup", "0", "--seed", "11")
        j2 = bench_json("rate", "--url", srv.url, "--rps", "40", "--duration", "2", "--arrival", "gamma:0.5",
                        "--max-tokens", "2", "--warmup", "0", "--seed", "11")
        if j and j2:
            t, t2 = intended(j["run"]), intended(j2["run"])
            g = [(b - a) for a, b in zip(t, t[1:])]
            g2 = [(b - a) for a, b in zip(t2, t2[1:])]
            check(len(t) == len(t2) and all(abs(x - y) <= 1 for x, y in zip(g, g2)), "gamma: seeded, same schedule")
            check(30 <= len(t) <= 130, "gamma: about 80 requests (%d)" % len(t))
        j = bench_json("rate", "--url", srv.url, "--rps", "40", "--duration", "4", "--ramp", "linear:2,3",
                       "--arrival", "constant", "--max-tokens", "2", "--warmup", "0")
        if j:
            t = intended(j["run"])
            check(t[1] - t[0] >= 400_000_000 and t[-1] - t[-2] <= 26_000_000,
                  "ramp: starts at 2 req/s (gap %d ns), ends at 40 (%d ns)" % (t[1] - t[0], t[-1] - t[-2]))
        # a Mooncake trace: due times and lengths from the records, replayed twice as fast
        trace = write("trace.jsonl", "".join(json.dumps({"timestamp": ts, "input_length": il, "output_length": ol}) + "\n"
                                             for ts, il, ol in ((0, 60, 3), (400, 20, 5), (400, 90, 2), (1000, 40, 4))))
        j = bench_json("rate", "--url", srv.url, "--trace", trace, "--trace-speed", "2", "--warmup", "0")
        if j:
            r = rows("SELECT t_intended, requested_tokens, prompt_tokens, t_send FROM bench_requests WHERE run = ?"
                     " AND phase = 'measure' ORDER BY stream", j["run"])
            t0 = r[0][0]
            check([round((x[0] - t0) / 1e6) for x in r] == [0, 200, 200, 500], "trace: due at 0, 200, 200, 500 ms (%r)" %
                  [(x[0] - t0) / 1e6 for x in r])
            check([x[1] for x in r] == [3, 5, 2, 4], "trace: output lengths from the records")
            check(all(abs(x[2] - w) <= 0.25 * w + 3 for x, w in zip(r, (60, 20, 90, 40))),
                  "trace: prompt lengths from the records (%r)" % [x[2] for x in r])
            check(all(x[3] >= x[0] for x in r), "trace: intended and actual send times both stored")
    finally:
        srv.stop()


# ---- prompt sources ----

def case_sources():
    srv = Fake()
    try:
        path = sharegpt_file()
        j = bench_json("sweep", "--url", srv.url, "--prompts", path, "--concurrency", "2", "--rounds", "3",
                       "--max-tokens", "2", "--warmup", "0")
        sent = [r["body"]["prompt"] for r in srv.received() if "question of" in r["body"].get("prompt", "")]
        want = {"You answer briefly.\n\nfirst question of one", "first question of two", "only question of three"}
        check(len(sent) == 6 and set(sent) == want, "ShareGPT: each record's first turn, cycled (%r)" % sent)
        if j:
            check(j["levels"][0]["valid"], "dataset prompts may share prefixes: not invalid")
        jl = write("m.jsonl", json.dumps({"messages": [{"role": "system", "content": "sys text"},
                                                       {"role": "user", "content": "jsonl question"}]}) + "\n" +
                   json.dumps({"prompt": "plain jsonl prompt"}) + "\n")
        bench_json("sweep", "--url", srv.url, "--prompts", jl, "--concurrency", "1", "--rounds", "2", "--chat",
                   "--max-tokens", "2", "--warmup", "0")
        msgs = [r["body"]["messages"] for r in srv.received() if "messages" in r["body"]
                and "jsonl" in json.dumps(r["body"]["messages"])]
        check([{"role": "system", "content": "sys text"}, {"role": "user", "content": "jsonl question"}] in msgs and
              [{"role": "user", "content": "plain jsonl prompt"}] in msgs, "JSONL messages and prompts (%r)" % msgs)
        ds = os.path.join(TMP, "ds")
        os.mkdir(ds)
        write("ds/tasks.jsonl", json.dumps({"id": "t/1", "grader": "exact", "prompt": "dataset folder prompt",
                                            "answer": "x"}) + "\n")
        bench_json("sweep", "--url", srv.url, "--prompts", ds, "--concurrency", "1", "--rounds", "1",
                   "--max-tokens", "2", "--warmup", "0")
        check(any(r["body"].get("prompt") == "dataset folder prompt" for r in srv.received()), "a dataset folder")
        j = bench_json("sweep", "--url", srv.url, "--concurrency", "4", "--rounds", "10", "--warmup", "0",
                       "--input-len", "uniform:20,200", "--output-len", "uniform:3,9", "--seed", "5")
        if j:
            r = rows("SELECT prompt_tokens, requested_tokens, completion_tokens FROM bench_requests WHERE run = ?"
                     " AND phase = 'measure'", j["run"])
            req = [x[1] for x in r]
            check(min(req) >= 3 and max(req) <= 9 and len(set(req)) >= 4, "output lengths drawn in 3..9 (%r)" % req)
            check(all(x[2] == x[1] for x in r), "the server was asked for each drawn length")
            pt = [x[0] for x in r]
            check(min(pt) >= 10 and max(pt) <= 230 and max(pt) - min(pt) > 80, "prompt lengths spread 20..200 (%r)" % pt)
    finally:
        srv.stop()


# ---- repeats and SLO per level ----

T975 = {2: 4.302652729911275, 3: 3.182446305284263}  # Student t 0.975 quantiles (df 2, 3)


def wilson(k, n, z=1.959963984540054):
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h) if k else 0.0, min(1.0, c + h) if k < n else 1.0


def case_repeats_slo():
    srv = Fake("--event-delay-ms", "2")
    j = bench_once(srv, "sweep", "--concurrency", "1,2", "--rounds", "2", "--repeats", "3",
                   "--max-tokens", "8", "--warmup", "0", "--slo", "ttft=60s,e2e=1us")
    if not j:
        return
    lv = j["levels"]
    check(sorted((l["level"], l["repeat"]) for l in lv) == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)],
          "every level run 3 times, each stored with its run number")
    # no request ends within 1 us of its send: attainment 0, Wilson [0, high]
    for l in lv:
        s = l["slo"]
        lo, hi = wilson(0, s["scheduled"])
        check(s["good"] == 0 and s["attainment_low"] == 0 and abs(s["attainment_high"] - hi) < 1e-9,
              "SLO per level with a Wilson interval (%r)" % s)
    acr = j["detail"]["across_runs"]
    check(len(acr) == 2, "one across-runs summary per level")
    for a in acr:
        m = a["metrics"]["aggregate_tok_s"]
        v = m["values"]
        n = len(v)
        mean = sum(v) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
        check(n == 3 and abs(m["mean"] - mean) < 1e-9 * mean, "mean of the 3 runs (%r)" % m)
        check(abs(m["high"] - (mean + T975[2] * sd / math.sqrt(3))) < 1e-6 * mean and
              abs(m["low"] - (mean - T975[2] * sd / math.sqrt(3))) < 1e-6 * mean, "Student t interval, df 2 (%r)" % m)
        check(m["unstable"] == (sd / mean > 0.2), "CV > 20 %% flagged exactly then (%r)" % m)
        p99 = a["metrics"]["ttft_p99_ms"]["values"]
        runs = sorted((l for l in lv if l["level"] == a["level"]), key=lambda l: l["repeat"])
        check(p99 == [l["ttft_p99_ms"] for l in runs], "p99 across runs is each run's own p99, never pooled")
        check("slo_attainment" in a["metrics"], "attainment is compared across runs too")


# ---- bad input: FILE:LINE, before any request ----

def case_bad_input():
    srv = Fake()
    try:
        bad_sg = write("bad.json", '[\n  {"conversations": [{"from": "human", "value": "ok"}]},\n'
                                   '  {"conversations": [\n    {"from": "human"}]}\n]\n')
        bad_trace = write("bad.jsonl", '{"timestamp": 0}\n{"timestamp": 500}\n{"timestamp": 499}\n')
        bad_csv = write("bad.csv", "Timestamp,Model,Request tokens,Response tokens\n1,m,10,10\n2,m,10,10\n1.5,m,1,1\n")
        cases = (
            (["sweep", "--prompts", bad_sg], bad_sg + ":3: conversations[0] has no string \"value\"",
             "expected {\"conversations\": [{\"from\""),
            (["replay", "--prompts", bad_sg], bad_sg + ":3:", "expected"),
            (["rate", "--trace", bad_trace], bad_trace + ":3: timestamp 0.499 s is before the previous record's 0.500 s",
             "sorted by time"),
            (["rate", "--trace", bad_csv], bad_csv + ":4: timestamp", "non-decreasing"),
            (["sweep", "--slo", "ttft=500ms,e2e=10"], "--slo: term 2 'e2e=10' has no unit", "us, ms or s"),
            (["search", "--slo", "ttft=500", "--lo", "1", "--hi", "2"], "term 1 'ttft=500' has no unit", "e.g. --slo"),
            (["sweep", "--input-len", "gauss:3"], "--input-len: 'gauss:3'", "lognormal:MEDIAN,SIGMA"),
            (["rate", "--rps", "1", "--duration", "1", "--arrival", "gamma"], "--arrival: 'gamma'", "gamma:B"),
            (["search", "--lo", "1", "--hi", "2"], "search needs --slo", ""),
            (["replay"], "replay needs --prompts", ""),
        )
        for args, needle, expect in cases:
            rc, out, err = bench(args[0], "--url", srv.url, *args[1:])
            first = err.split("\n")[0]
            check(rc == 2 and needle in first and expect in first and err.count("sixi-bench:") == 1,
                  "%s -> one message with %r (rc=%d, %r)" % (args, needle, rc, err))
        check(srv.received() == [], "no request was sent for any bad input (%d)" % len(srv.received()))
        check(not os.path.exists(DB) or rows("SELECT count(*) FROM runs")[0][0] == 0, "and no run was recorded")
    finally:
        srv.stop()


def case_agents_unmeasured():
    """Every request after the readiness probe and the calibration answered 500: the agents workload has no wait to
    report, so its level is invalid and says why (the count of failed requests)."""
    srv = Fake("--fail", "500", "--fail-after", "2")
    j = bench_once(srv, "agents", "--agents", "2", "--doc-tokens", "64", "--followups", "1",
                   "--answer-tokens", "2", "--stagger", "0", "--warmup", "0")
    if not j:
        return
    L, d = j["levels"][0], j["detail"]
    check(d["errors"] >= 4 and "doc_ttft_median_s" not in d, "every request failed, no document TTFT (%r)" % d)
    check(not d["valid"] and not L["valid"], "the level is invalid (%r)" % L)
    check("no first token measured for any document" in L["invalid_reason"] and "requests failed" in L["invalid_reason"],
          "and says why: %r" % L["invalid_reason"])


CASES = {
    "multiturn_received": case_multiturn_received, "multiturn_cache": case_multiturn_cache,
    "prefix_cache": case_prefix_cache, "search": case_search, "search_concurrency": case_search_concurrency, "metrics": case_metrics, "arrivals": case_arrivals,
    "sources": case_sources, "repeats_slo": case_repeats_slo, "bad_input": case_bad_input,
    "agents_unmeasured": case_agents_unmeasured,
}

if __name__ == "__main__":
    CASES[CASE]()
    print("%s: %s" % (CASE, "FAILED: " + "; ".join(FAILS) if FAILS else "ok"))
    sys.exit(1 if FAILS else 0)
