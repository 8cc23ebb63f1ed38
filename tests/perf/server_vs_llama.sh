#!/bin/sh
# server_vs_llama.sh — sixi-bench sweep against sixi-server and against
# llama.cpp's llama-server on the same GGUF, the same threads and the same slots:
# aggregate tok/s at 1, 4, 16 and 32 streams, and their ratios.
#
#   LLAMA_SERVER=/path/to/llama-server tests/perf/server_vs_llama.sh [tiny|100m|FILE.gguf] [THREADS]
#
# FILE.gguf: any qwen35 GGUF instead of the project's own models (e.g. the ~100M one
# quantized by llama.cpp's llama-quantize in a preset). SWEEP=0 skips the speed sweeps and
# compares only the greedy text (a quick check that a file loads and decodes alike).
#
# llama-server is built outside the project from llama.cpp's public source (any
# commit with the qwen35 architecture), e.g.
#   cmake -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
#     -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF && \
#   cmake --build build --target llama-server
# The model is the project's own: the embedded tiny model (sixi-server --write-tiny)
# or the ~100M-parameter random one (perf_model --write-100m). Both servers listen on
# 127.0.0.1, are stopped by PID, and every client run is bounded by timeout(1).
# Prints a Markdown table (the report in reports/perf/ is this output). Skips (77)
# without LLAMA_SERVER.
set -u
B="${SIXI_BUILD_ROOT:-build}"
WHICH="${1:-100m}"
THREADS="${2:-2}"
LEVELS="${LEVELS:-1,4,16,32}"
MAX_TOKENS="${MAX_TOKENS:-64}"
. "$(dirname "$0")/llama_peer.sh"
SLOTS=32
CTX=1024
# A random model emits byte tokens that are not UTF-8 on their own; llama-server
# answers those with a 500 ("does not match the expected Content-only format").
# Both servers get the same logit_bias forbidding them (sixi-server applies it too).
"$PY" "$(dirname "$0")/byte_bias.py" "$B/src/sixi-server" "$MODEL" logit_bias >"$T/extra.json"

free_port() { "$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }
wait_ready() { # port
	i=0
	while [ $i -lt 600 ]; do
		http_get "http://127.0.0.1:$1/health" | grep -q '"ok"' && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
SWEEP="${SWEEP:-1}"
sweep() { # name out.json port
	[ "$SWEEP" = 0 ] && return 0
	timeout 900 "$B/src/sixi-bench" sweep --url "http://127.0.0.1:$3" --model "$1" --concurrency "$LEVELS" \
		--max-tokens "$MAX_TOKENS" --rounds 2 --warmup 2 --extra "$(cat "$T/extra.json")" --db "$T/bench.db" \
		--no-plots --json --quiet >"$2" \
		2>"$T/bench.err" || { echo "sixi-bench against $1 failed:"; cat "$T/bench.err"; exit 1; }
}
stop() { kill -TERM "$PID"; wait "$PID" 2>/dev/null; PID=""; }
# Greedy text at temperature 0 (40 tokens, end of text ignored, the same logit_bias) for
# two prompts, one line each, so that the two servers' outputs can be compared.
greedy() { # port out
	"$PY" - "$1" "$T/extra.json" >"$2" <<'PY' || { echo "greedy request failed"; exit 1; }
import json, sys, urllib.request
bias = json.load(open(sys.argv[2]))["logit_bias"]
for prompt in ("The cat sat on the", "Once upon a time"):
    body = {"model": "m", "prompt": prompt, "max_tokens": 40, "temperature": 0, "ignore_eos": True,
            "logit_bias": bias}
    req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % sys.argv[1], json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=300))
    print(json.dumps({"prompt": prompt, "text": r["choices"][0]["text"],
                      "completion_tokens": r["usage"]["completion_tokens"]}))
PY
}

P=$(free_port)
SIXI_CMD="sixi-server --model MODEL --host 127.0.0.1 --port $P --parallel $SLOTS --context $CTX --threads $THREADS"
"$B/src/sixi-server" --model "$MODEL" --host 127.0.0.1 --port "$P" --parallel $SLOTS --context $CTX \
	--threads "$THREADS" 2>"$T/sixi.log" &
PID=$!
wait_ready "$P" || { echo "sixi-server did not become ready"; cat "$T/sixi.log"; exit 1; }
sweep sixi "$T/sixi.json" "$P"
greedy "$P" "$T/sixi.greedy"
stop

P=$(free_port)
LLAMA_CMD="llama-server -m MODEL --host 127.0.0.1 --port $P -np $SLOTS -c $((SLOTS * CTX)) -t $THREADS"
"$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$P" -np $SLOTS -c $((SLOTS * CTX)) -t "$THREADS" \
	>"$T/llama.log" 2>&1 &
PID=$!
wait_ready "$P" || { echo "llama-server did not become ready"; tail -20 "$T/llama.log"; exit 1; }
sweep llama "$T/llama.json" "$P"
greedy "$P" "$T/llama.greedy"
stop

echo "model: $WHICH ($(stat -L -c %s "$MODEL") bytes), threads $THREADS, $SLOTS slots x $CTX context, max_tokens $MAX_TOKENS, $(nproc) CPUs"
echo "sixi:  $SIXI_CMD"
echo "llama: $LLAMA_CMD"
echo "bench: sixi-bench sweep --concurrency $LEVELS --max-tokens $MAX_TOKENS --rounds 2 --warmup 2 --extra '{\"logit_bias\": {...}}'" \
	"($("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['logit_bias']))" "$T/extra.json") byte tokens forbidden)"
echo
[ "$SWEEP" = 0 ] || "$PY" - "$T/sixi.json" "$T/llama.json" <<'PY'
import json, sys
s = {L["level"]: L for L in json.load(open(sys.argv[1]))["levels"]}
l = {L["level"]: L for L in json.load(open(sys.argv[2]))["levels"]}
print("| streams | sixi-server tok/s | llama-server tok/s | ratio | valid (sixi, llama) |")
print("|---:|---:|---:|---:|---|")
for k in sorted(s):
    a, b = s[k]["aggregate_tok_s"], l[k]["aggregate_tok_s"]
    print(f"| {k} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {s[k]['valid']}, {l[k]['valid']} |")
PY
echo
"$PY" - "$T/sixi.greedy" "$T/llama.greedy" <<'PY'
import json, sys
a = [json.loads(x) for x in open(sys.argv[1])]
b = [json.loads(x) for x in open(sys.argv[2])]
for x, y in zip(a, b):
    same = x["text"] == y["text"]
    print("greedy, T=0, %d/%d tokens, %r: %s" % (x["completion_tokens"], y["completion_tokens"], x["prompt"],
                                                  "identical text" if same else "DIFFERENT"))
    if not same:
        print("  sixi:  %r\n  llama: %r" % (x["text"], y["text"]))
PY
