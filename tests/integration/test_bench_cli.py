#!/usr/bin/env python3
"""Integration tests of sixi-bench against real server processes on 127.0.0.1.

Each case starts tests/integration/fake_openai.py (a real HTTP server process)
in a scripted mode, runs the real sixi-bench binary, and checks its output and
the rows it stored in a fresh SQLite file. Servers are stopped by PID; every
run is bounded by a timeout.

  test_bench_cli.py SIXI_BENCH CASE
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import fake_base

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = sys.argv[1]
CASE = sys.argv[2]
TMP = tempfile.mkdtemp(prefix="sixi-bench-it-")
DB = os.path.join(TMP, "sixi.db")
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)


class Server:
    def __init__(self, *args):
        pf = os.path.join(TMP, "port-%d" % time.monotonic_ns())
        self.proc, self.url = fake_base.start_fake(fake_base.FAKE_OPENAI, pf, "--lifetime", "120", *args,
                                                   timeout_s=10, stderr=subprocess.DEVNULL)

    def stop(self):
        fake_base.stop(self.proc)


def bench(*args, timeout=60):
    p = subprocess.run([BENCH, args[0], "--db", DB, "--no-plots", *args[1:]], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def rows(sql, *params):
    con = sqlite3.connect(DB)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def sweep_json(srv, *extra):
    rc, out, err = bench("sweep", "--url", srv.url, "--model", "fake", "--json", *extra)
    check(rc == 0, "sweep exits 0 (rc=%d, stderr=%s)" % (rc, err[-300:]))
    return json.loads(out) if rc == 0 else {"levels": []}


def case_tokens_per_event():
    srv = Server("--tokens-per-event", "4")
    try:
        j = sweep_json(srv, "--concurrency", "1,4", "--max-tokens", "64", "--rounds", "2")
    finally:
        srv.stop()
    for lv in j["levels"]:
        check(abs(lv["tokens_per_event"] - 4.0) < 1e-9, "tokens/event reported as 4 (got %r)" % lv["tokens_per_event"])
        check(lv["valid"], "level %d valid" % lv["level"])
    run = j.get("run")
    (ct, ev, n), = rows("SELECT sum(completion_tokens), sum(content_events), count(*) FROM bench_requests"
                        " WHERE run = ? AND phase = 'measure'", run)
    check(n == 10, "10 measured rows stored (got %d)" % n)
    check(ct == 10 * 64, "tokens come from usage: %d == 640" % ct)
    check(ev == 10 * 16, "events counted beside tokens: %d == 160" % ev)
    (w,), = rows("SELECT count(*) FROM bench_requests WHERE run = ? AND phase = 'warmup'", run)
    check(w == 2, "two warm-up rows stored, excluded from levels (got %d)" % w)


def case_missing_usage():
    srv = Server("--no-usage")
    try:
        j = sweep_json(srv, "--concurrency", "2", "--max-tokens", "8")
    finally:
        srv.stop()
    lv = j["levels"][0] if j["levels"] else {}
    check(lv.get("valid") is False, "a level without usage is invalid")
    check("usage" in lv.get("invalid_reason", ""), "the reason names usage: %r" % lv.get("invalid_reason"))
    (n,), = rows("SELECT count(*) FROM bench_requests WHERE phase='measure' AND completion_tokens IS NULL")
    check(n == 4, "rows stored with completion_tokens NULL, never guessed from events (got %d)" % n)


def case_cached_tokens():
    srv = Server("--cached", "5")
    try:
        j = sweep_json(srv, "--concurrency", "2", "--max-tokens", "8")
    finally:
        srv.stop()
    lv = j["levels"][0] if j["levels"] else {}
    check(lv.get("valid") is False, "cached_tokens > 0 on unique prompts invalidates the point")
    check("cached" in lv.get("invalid_reason", ""), "the reason names the cache: %r" % lv.get("invalid_reason"))


def case_readiness():
    srv = Server("--ready-after", "1.5")
    try:
        t0 = time.monotonic()
        j = sweep_json(srv, "--concurrency", "1", "--max-tokens", "8", "--ready-timeout", "20")
        took = time.monotonic() - t0
    finally:
        srv.stop()
    check(took >= 1.4, "sweep waited for a real generation (%.2fs)" % took)
    check(bool(j["levels"]) and j["levels"][0]["valid"], "and then measured a valid point")
    (n,), = rows("SELECT count(*) FROM bench_requests WHERE phase='ready' AND http_status = 503")
    check(n >= 1, "503 answers while loading are stored as readiness rows (got %d)" % n)
    (m,), = rows("SELECT count(*) FROM bench_requests WHERE phase='measure' AND error IS NOT NULL")
    check(m == 0, "no measured request hit the loading server")


def case_fault(mode, cls):
    extra = ["--stall-seconds", "8"] if mode == "stall" else []
    srv = Server("--fail", mode, "--fail-every", "3", *extra)
    try:
        j = sweep_json(srv, "--concurrency", "2", "--rounds", "3", "--max-tokens", "16", "--warmup", "0",
                       "--stall-timeout", "1")
    finally:
        srv.stop()
    lv = j["levels"][0] if j["levels"] else {}
    check(lv.get("errors") == 2, "%s: two error rows (got %r)" % (mode, lv.get("errors")))
    check(lv.get("ok") == 4, "%s: the run went on, four requests ok (got %r)" % (mode, lv.get("ok")))
    got = rows("SELECT DISTINCT error FROM bench_requests WHERE phase='measure' AND error IS NOT NULL")
    check(got == [(cls,)], "%s: error class %s (got %r)" % (mode, cls, got))
    (d,), = rows("SELECT count(*) FROM bench_requests WHERE error IS NOT NULL AND length(error_detail) > 10")
    check(d == 2, "%s: each error row has a message" % mode)


def case_faults():
    for mode, cls in (("reset", "reset"), ("500", "http"), ("malformed", "parse"), ("stall", "stall"),
                      ("error-event", "server"), ("huge-event", "size"), ("non-json", "parse")):
        global DB
        DB = os.path.join(TMP, "sixi-%s.db" % mode)
        case_fault(mode, cls)


def case_bad_input():
    rc, out, err = bench("sweep", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--ready-timeout", "1")
    check(rc != 0 and "not ready" in err and "127.0.0.1:9" in err, "unreachable URL: clear message (%r)" % err[-200:])
    srv = Server()
    try:
        rc, out, err = bench("sweep", "--url", srv.url + "/nope", "--concurrency", "1", "--ready-timeout", "1")
        check(rc != 0 and "404" in err, "wrong path: names the 404 (%r)" % err[-200:])
    finally:
        srv.stop()
    for args, needle in ((["--concurrency", "0"], "out of range"), (["--concurrency", "-4"], "out of range"),
                         (["--concurrency", "4,x"], "not an integer"), (["--frobnicate"], "unknown option"),
                         (["--extra", "[1]"], "not a JSON object"), (["--max-tokens"], "needs a value")):
        rc, out, err = bench("sweep", "--url", "http://127.0.0.1:9", *args)
        check(rc == 2 and needle in err, "%s -> %r in one message (rc=%d, %r)" % (args, needle, rc, err[-200:]))
    rc, out, err = bench("sweep", "--url", "ftp://x")
    check(rc == 2 and "http://" in err, "a non-HTTP URL is refused")
    # nothing measured is lost: rows of the earlier (failed) runs are still there, runs are marked failed
    st = rows("SELECT status FROM runs WHERE kind='bench' AND workload != 'selftest'")
    check(all(s == "failed" for (s,) in st) and len(st) == 2, "failed runs recorded as failed (got %r)" % st)


def case_selftest_1000():
    rc, out, err = bench("selftest", "--streams", "1000", "--events", "64", "--json", timeout=120)
    check(rc == 0, "selftest exits 0 (%s)" % err[-200:])
    j = json.loads(out)
    lv = j["levels"][0]
    check(lv["streams"] == 1000 and lv["errors"] == 0, "1000 concurrent streams with no client error (%r)" % lv)
    check(lv["kib_per_stream"] > 0, "memory per stream reported (%r KiB)" % lv["kib_per_stream"])
    check(j["events_per_s"] > 10000, "a ceiling is measured (%r events/s)" % j["events_per_s"])


def case_workloads():
    srv = Server("--tokens-per-event", "2")
    try:
        rc, out, err = bench("prefill", "--url", srv.url, "--prompt-tokens", "100,400", "--json")
        check(rc == 0, "prefill runs (%s)" % err[-200:])
        j = json.loads(out)
        lens = [lv["prompt_tokens_mean"] for lv in j["levels"]]
        check(len(lens) == 2 and abs(lens[0] - 100) <= 5 and abs(lens[1] - 400) <= 10,
              "prompt lengths calibrated from usage (%r)" % lens)
        rc, out, err = bench("agents", "--url", srv.url, "--agents", "3", "--doc-tokens", "200", "--followups", "2",
                             "--json")
        check(rc == 0, "agents runs (%s)" % err[-200:])
        d = json.loads(out)["detail"]
        check("followup_wait_median_s" in d and "followup_alone_median_s" in d, "agents reports waits (%r)" % d)
        run = json.loads(out)["run"]
        (n,), = rows("SELECT count(*) FROM bench_requests WHERE run=? AND tag='followup' AND phase='measure'", run)
        check(n == 6, "3 agents x 2 follow-ups stored (got %d)" % n)
        rc, out, err = bench("rate", "--url", srv.url, "--rps", "20", "--duration", "1", "--max-tokens", "8", "--json")
        check(rc == 0, "rate runs (%s)" % err[-200:])
        d = json.loads(out)["detail"]
        check(d["scheduled"] > 5 and "latency_from_intended_p50_ms" in d, "open loop scheduled and measured (%r)" % d)
        run = json.loads(out)["run"]
        (n,), = rows("SELECT count(*) FROM bench_requests WHERE run=? AND phase='measure' AND t_intended IS NULL", run)
        check(n == 0, "every open-loop row keeps its intended send time")
    finally:
        srv.stop()


def case_bad_utf8():
    # invalid UTF-8 inside a chunk is the server's text, not a protocol error: counted, stored, no crash
    srv = Server("--fail", "bad-utf8", "--fail-every", "2")
    try:
        j = sweep_json(srv, "--concurrency", "2", "--max-tokens", "8", "--warmup", "0")
    finally:
        srv.stop()
    lv = j["levels"][0] if j["levels"] else {}
    check(lv.get("errors") == 0 and lv.get("ok") == 4, "bad UTF-8 does not break the stream (%r)" % lv)


def case_paused_client():
    # a client stopped mid-run sends late: the level is invalid in the stored row, the table and
    # the footer alike (the pause is 1.5 s, three times the 500 ms send-lag bound)
    srv = Server()
    try:
        p = subprocess.Popen([BENCH, "rate", "--db", DB, "--no-plots", "--url", srv.url, "--rps", "20",
                              "--duration", "3", "--max-tokens", "8"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(0.8)
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(1.5)
        os.kill(p.pid, signal.SIGCONT)
        out, err = p.communicate(timeout=120)
    finally:
        srv.stop()
    check(p.returncode == 0, "rate runs (%s)" % err[-200:])
    footer = "client overloaded: results invalid" in out
    table = "is invalid: the client was overloaded" in out
    (valid,), = rows("SELECT json_extract(summary_json, '$.levels[#-1].valid') FROM runs WHERE workload = 'rate' ORDER BY id DESC LIMIT 1")
    check(footer and table, "the footer and the table both call the level invalid: %r" % out[-800:])
    check(valid == 0, "the stored level is invalid (valid = %r)" % (valid,))


CASES = {
    "paused_client": case_paused_client,
    "bad_utf8": case_bad_utf8,
    "tokens_per_event": case_tokens_per_event, "missing_usage": case_missing_usage,
    "cached_tokens": case_cached_tokens, "readiness": case_readiness, "faults": case_faults,
    "bad_input": case_bad_input, "selftest_1000": case_selftest_1000, "workloads": case_workloads,
}

if __name__ == "__main__":
    CASES[CASE]()
    print("%s: %s" % (CASE, "FAILED: " + "; ".join(FAILS) if FAILS else "ok"))
    sys.exit(1 if FAILS else 0)
