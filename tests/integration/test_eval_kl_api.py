#!/usr/bin/env python3
"""test_eval_kl_api.py — sixi-eval kl through two endpoints (--reference-url, --url) and the
server side it reads: sixi-server's /v1/completions "prompt_logprobs" (vLLM's extension) with
"prompt_token_ids".

The tiny qwen35moe model in F32, Q8_0 and Q4_0 (sixi-server --write-tiny --moe --type T), each
served by its own sixi-server on 127.0.0.1 (port 0, stopped by PID). Checks:
 - the server: prompt_logprobs N gives, per prompt position after the first, the top N (rank 1..N,
   descending) and the prompt's own token with its rank; with N = the vocabulary the probabilities
   sum to 1; prompt_token_ids are the prompt's ids; bad requests are 400s naming the field;
 - exact form (--top = the vocabulary, one chunk): mean KL, top-1 and the perplexity ratio equal
   the file form's (sixi-eval kl --reference F32.gguf --model T.gguf --ctx 2048) within 0.1 %, and
   every stored row equals KL recomputed here from the two servers' answers (1e-9);
 - estimate (--top 20): every row equals the documented rule recomputed here (union of the listed
   ids, an unlisted id at its side's 20th log-probability, one bucket for the rest);
 - KL grows from Q8_0 to Q4_0 in both forms; sixi-report kl reads the API runs;
 - bad input: exit 2 (options) or 1 (an endpoint), a message naming it, nothing stored.
usage: test_eval_kl_api.py BUILD_ROOT"""
import json, math, os, sqlite3, subprocess, sys, tempfile, urllib.error, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kl_files import write_models, write_text, close  # noqa: E402
from server_proc import Server  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SIXI_BUILD_ROOT", "build")
src = os.environ.get("SIXI_SOURCE_ROOT", ".")
server, ev, rep = (os.path.join(build, "src", p) for p in ("sixi-server", "sixi-eval", "sixi-report"))
fails = 0
VOCAB = 512  # the tiny models' vocabulary


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print("FAIL: " + what)
    return ok


def post(url, body):
    req = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def entries(pos):
    return {int(k): (v["logprob"], v["rank"]) for k, v in pos.items()}


def kl_rule(r, c, top):
    """The estimate sixi-eval kl documents (exact when every id is listed)."""
    def floor(side):
        return min(lp for lp, rank in side.values() if rank <= top)
    fr, fc = floor(r), floor(c)
    kl = pr = qr = 0.0
    for i in set(r) | set(c):
        lp = r[i][0] if i in r else fr
        lq = c[i][0] if i in c else fc
        kl += math.exp(lp) * (lp - lq)
        pr += math.exp(lp)
        qr += math.exp(lq)
    p_rest, q_rest = 1 - pr, 1 - qr
    if p_rest > 1e-4:
        kl += p_rest * (math.log(p_rest) - math.log(max(q_rest, 1e-12)))
    return kl


def kl_run(*args):
    return subprocess.run([ev, "kl", *args], capture_output=True, text=True, timeout=600)


procs = []
with tempfile.TemporaryDirectory(prefix="sixi-test-klapi-") as d:
    try:
        files, urls = write_models(server, d), {}
        for t in ("F32", "Q8_0", "Q4_0"):
            procs.append(Server(server, ["--model", files[t]], d, t, timeout_s=60))
            urls[t] = procs[-1].url
        text, body = write_text(src, d, 1500)

        # ---- the server side ----
        st, j = post(urls["F32"], {"prompt": body[:200], "max_tokens": 1, "prompt_logprobs": VOCAB,
                                   "return_token_ids": True})
        check(st == 200, "prompt_logprobs %d answered (%d %r)" % (VOCAB, st, str(j)[:300]))
        ch = j["choices"][0]
        ids, lps = ch["prompt_token_ids"], ch["prompt_logprobs"]
        check(len(ids) == len(lps) == j["usage"]["prompt_tokens"] and lps[0] is None,
              "one entry per prompt token, the first null (%d, %d)" % (len(ids), len(lps)))
        for p in range(1, len(ids)):
            e = entries(lps[p])
            ranks = sorted(e.values(), key=lambda x: x[1])
            ok = (len(e) == VOCAB and abs(sum(math.exp(lp) for lp, _ in e.values()) - 1) < 1e-4
                  and all(ranks[i][0] >= ranks[i + 1][0] for i in range(len(ranks) - 1)) and ids[p] in e)
            if not check(ok, "position %d: the whole vocabulary, probabilities summing to 1, ranks descending, "
                         "the prompt's token listed" % p):
                break
        st, j = post(urls["F32"], {"prompt": body[:200], "max_tokens": 1, "prompt_logprobs": 3})
        e = entries(j["choices"][0]["prompt_logprobs"][5])
        own = j["choices"][0]["prompt_token_ids"][5]
        check(len(e) in (3, 4) and own in e and sorted(r for _, r in e.values())[:3] == [1, 2, 3],
              "prompt_logprobs 3: the top 3 plus the prompt's own token (%r)" % e)
        if own not in [i for i, (_, r) in e.items() if r <= 3]:
            full = entries(lps[5]) if ids[5] == own else None
            check(full is None or e[own] == full[own], "the own token's logprob and rank match the full list")
        for bad, field in (({"prompt_logprobs": VOCAB + 1}, "prompt_logprobs"),
                           ({"prompt_logprobs": 2, "stream": True}, "stream"),
                           ({"prompt_logprobs": 2, "n": 2}, "n"),
                           ({"prompt_logprobs": "x"}, "prompt_logprobs")):
            st, j = post(urls["F32"], {"prompt": "Hello there", "max_tokens": 1, **bad})
            check(st == 400 and j["error"]["param"] == field, "%r: 400 naming %s (%d %r)" % (bad, field, st, j))
        req = urllib.request.Request(urls["F32"] + "/v1/chat/completions", json.dumps(
            {"messages": [{"role": "user", "content": "hi"}], "prompt_logprobs": 2}).encode(),
            {"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=60)
            check(False, "chat with prompt_logprobs is refused")
        except urllib.error.HTTPError as e:
            check(e.code == 400 and b"/v1/completions" in e.read(), "chat with prompt_logprobs: 400 naming the route")

        # ---- sixi-eval kl through the endpoints ----
        db = os.path.join(d, "kl.db")
        live = {}
        for t in ("Q8_0", "Q4_0"):
            for top in (VOCAB, 20):
                r = kl_run("--reference-url", urls["F32"], "--url", urls[t], "--text", text, "--top", str(top),
                           "--db", db, "--json")
                check(r.returncode == 0, "sixi-eval kl --url %s --top %d: %s" % (t, top, r.stderr))
                live[(t, top)] = json.loads(r.stdout) if r.returncode == 0 else None
            r = kl_run("--reference", files["F32"], "--model", files[t], "--text", text, "--ctx", "2048", "--db", db,
                       "--json")
            check(r.returncode == 0, "sixi-eval kl files %s: %s" % (t, r.stderr))
            live[(t, "file")] = json.loads(r.stdout)
        for t in ("Q8_0", "Q4_0"):
            a, f = live[(t, VOCAB)], live[(t, "file")]
            print("%s: api kl_mean %.6g top1 %.4f, files kl_mean %.6g top1 %.4f" % (t, a["kl_mean"], a["top1"],
                                                                                   f["kl_mean"], f["top1"]))
            check(a["positions"] == f["positions"], "%s: the same positions (%d, %d)" % (t, a["positions"],
                                                                                        f["positions"]))
            check(close(a["kl_mean"], f["kl_mean"], 1e-3) and abs(a["top1"] - f["top1"]) <= 0.002
                  and close(a["ppl_ratio"], f["ppl_ratio"], 1e-3),
                  "%s: the endpoint form equals the file form (%r, %r)" % (t, a, f))
        for form in (VOCAB, 20, "file"):
            check(0 < live[("Q8_0", form)]["kl_mean"] < live[("Q4_0", form)]["kl_mean"],
                  "KL grows from Q8_0 to Q4_0 (%s)" % form)

        # every stored row against KL recomputed here from the servers' own answers
        con = sqlite3.connect(db)
        for t in ("Q8_0", "Q4_0"):
            answers = {}
            for side in ("F32", t):
                for top in (VOCAB, 20):
                    st, j = post(urls[side], {"prompt": body, "max_tokens": 1, "temperature": 0,
                                              "prompt_logprobs": top, "return_token_ids": True})
                    answers[(side, top)] = j["choices"][0]
            for top in (VOCAB, 20):
                run = live[(t, top)]["run"]
                rows = con.execute("SELECT position, token, kl, top1_same, logp_ref, logp_cand FROM kl_rows "
                                   "WHERE run = ? ORDER BY position", (run,)).fetchall()
                ra, ca = answers[("F32", top)], answers[(t, top)]
                bad, worst = 0, 0.0
                for pos, tok, kl, same, lr, lc in rows:
                    p = pos + 1
                    r, c = entries(ra["prompt_logprobs"][p]), entries(ca["prompt_logprobs"][p])
                    want = kl_rule(r, c, top)
                    worst = max(worst, abs(kl - want) / max(abs(want), 1e-300))
                    top_r = min(r, key=lambda i: r[i][1])
                    top_c = min(c, key=lambda i: c[i][1])
                    if not (tok == ra["prompt_token_ids"][p] and close(kl, want, 1e-9) and same == (top_r == top_c)
                            and lr == r[tok][0] and lc == c[tok][0]):
                        bad += 1
                check(len(rows) == len(ra["prompt_token_ids"]) - 1 and bad == 0,
                      "%s --top %d: %d rows, %d differ from the recomputation (worst relative %.3g)" %
                      (t, top, len(rows), bad, worst))
        r = subprocess.run([rep, "kl", "--db", db, "--json"], capture_output=True, text=True)
        check(r.returncode == 0 and len(json.loads(r.stdout)) == 6, "sixi-report kl reads the runs: " + r.stderr)

        # ---- bad input: nothing stored ----
        bad_db = os.path.join(d, "bad.db")
        for args, rc, want in (
                (["--url", urls["Q8_0"], "--text", text], 2, "needs --reference-url, --url and --text"),
                (["--reference", files["F32"], "--reference-url", urls["F32"], "--url", urls["Q8_0"], "--text", text],
                 2, "--reference is for two files"),
                (["--reference", files["F32"], "--model", files["Q8_0"], "--text", text, "--top", "5"], 2,
                 "are for two endpoints"),
                (["--reference-url", urls["F32"], "--url", "http://127.0.0.1:9", "--text", text], 1,
                 "127.0.0.1:9/v1/completions"),
                (["--reference-url", urls["F32"], "--url", urls["Q8_0"], "--text", os.path.join(d, "none.txt")], 1,
                 "none.txt")):
            p = kl_run(*args, "--db", bad_db)
            n = sqlite3.connect(bad_db).execute("SELECT count(*) FROM runs").fetchone()[0] \
                if os.path.exists(bad_db) else 0
            check(p.returncode == rc and want in p.stderr and n == 0,
                  "%r: exit %d, '%s', nothing stored (got %d, %r, %d runs)" % (args, rc, want, p.returncode,
                                                                             p.stderr, n))
    finally:
        for p in procs:
            p.stop()

print("%d failed" % fails if fails else "ok")
sys.exit(1 if fails else 0)
