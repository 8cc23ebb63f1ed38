#!/bin/sh
# kl_vs_llama.sh — teacher-forced next-token distributions of sixi's forward pass against
# llama.cpp's on the same GGUF: mean and largest KL(llama || sixi) per position, and how
# often the two argmaxes agree. For random models, whose near-uniform logits make greedy
# text fragile (one near-tie flips it), this is the check that a quantized file decodes
# alike: the acceptance line is mean KL < 1e-3 over >= 256 positions.
#
#   LLAMA_SERVER=/path/to/llama-server tests/perf/kl_vs_llama.sh FILE.gguf [POSITIONS] [THREADS]
#
# sixi: `perf_model --model FILE --logits POSITIONS OUT` (one pass over POSITIONS fixed ids,
# (37 i + 11) mod n_vocab, every row's logits). llama.cpp: llama-server on 127.0.0.1 (stopped
# by PID), one /completion request per prefix ids[0..i] with n_predict 1, samplers [] and
# n_probs = n_vocab, whose top_logprobs are then the whole distribution (the script checks
# that all n_vocab came back). llama-server is built outside the project from llama.cpp's
# public source. Skips (77) without LLAMA_SERVER. About a minute for 256 positions of the
# ~100M model on 2 cores.
set -u
B="${SIXI_BUILD_ROOT:-build}"
FILE="${1:-}"
N="${2:-256}"
THREADS="${3:-2}"
[ -n "${LLAMA_SERVER:-}" ] && [ -x "$LLAMA_SERVER" ] || { echo "SKIP: set LLAMA_SERVER to a llama-server binary"; exit 77; }
[ -x "$B/tests/perf_model" ] || { echo "SKIP: $B/tests/perf_model not built"; exit 77; }
[ -f "$FILE" ] || { echo "usage: kl_vs_llama.sh FILE.gguf [POSITIONS] [THREADS]"; exit 2; }
PY=/usr/bin/python3
. "$(dirname "$0")/../integration/server_lib.sh"
server_scratch sixi-kl
"$B/tests/perf_model" --threads "$THREADS" --model "$FILE" --logits "$N" "$T/sixi.f32" >"$T/ids" ||
	{ echo "perf_model could not run $FILE"; exit 1; }
# The token llama-server samples must be valid UTF-8 on its own (else it answers 500):
# forbid the byte tokens through logit_bias, which acts in the sampler; the probabilities
# reported (post_sampling_probs off) are the raw logits' softmax.
[ -x "$B/src/sixi-server" ] || { echo "SKIP: $B/src/sixi-server not built"; exit 77; }
"$PY" "$(dirname "$0")/byte_bias.py" "$B/src/sixi-server" "$FILE" >"$T/bias.json"
P=$("$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
"$LLAMA_SERVER" -m "$FILE" --host 127.0.0.1 --port "$P" -np 1 -c $((N + 64)) -t "$THREADS" >"$T/llama.log" 2>&1 &
PID=$!
"$PY" - "$P" "$T/ids" "$T/sixi.f32" "$FILE" "$T/bias.json" <<'PY'
import json, math, struct, sys, time, urllib.request
port, ids = sys.argv[1], [int(x) for x in open(sys.argv[2]).read().split()]
bias = json.load(open(sys.argv[5]))
raw = open(sys.argv[3], "rb").read()
n = len(ids)
V = len(raw) // 4 // n
for _ in range(600):
    try:
        if b'"ok"' in urllib.request.urlopen("http://127.0.0.1:%s/health" % port, timeout=5).read():
            break
    except Exception:
        pass
    time.sleep(0.1)
else:
    sys.exit("llama-server did not become ready")
kls, agree = [], 0
for i in range(n):
    body = {"prompt": ids[: i + 1], "n_predict": 1, "n_probs": V, "samplers": [], "cache_prompt": True,
            "logit_bias": bias, "post_sampling_probs": False}
    req = urllib.request.Request("http://127.0.0.1:%s/completion" % port, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=300))
    if "completion_probabilities" not in r:
        sys.exit("llama-server answered without probabilities: %s" % json.dumps(r)[:400])
    top = r["completion_probabilities"][0]["top_logprobs"]
    if len(top) != V:
        sys.exit("llama-server returned %d of %d probabilities" % (len(top), V))
    lp = [0.0] * V
    for t in top:
        lp[t["id"]] = t["logprob"]
    row = struct.unpack_from("<%df" % V, raw, 4 * V * i)
    m = max(row)
    lse = m + math.log(sum(math.exp(x - m) for x in row))
    lq = [x - lse for x in row]
    kls.append(sum(math.exp(a) * (a - b) for a, b in zip(lp, lq)))
    agree += max(range(V), key=lambda k: lp[k]) == max(range(V), key=lambda k: lq[k])
kls.sort()
print("%s: %d positions, n_vocab %d: mean KL(llama || sixi) %.3g, p99 %.3g, max %.3g; same argmax at %d of %d"
      % (sys.argv[4].split("/")[-1], n, V, sum(kls) / n, kls[min(n - 1, int(0.99 * n))], kls[-1], agree, n))
PY
