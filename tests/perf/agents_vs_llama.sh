#!/bin/sh
# agents_vs_llama.sh — the agents workload (long documents meeting short follow-ups) on the
# real CPU engine against llama.cpp's llama-server: the same GGUF, threads, slots and
# logit_bias; document TTFT and follow-up waits (median, max), servers taking turns so
# that the machine's load falls on all of them alike.
#
#   LLAMA_SERVER=/path/to/llama-server tests/perf/agents_vs_llama.sh [RUNS] [tiny|100m|FILE.gguf]
#
# Defaults: 2 runs, the ~100M-parameter random model (perf_model --write-100m), 2 threads,
# 8 slots, `sixi-bench agents --agents 4 --doc-tokens 3000 --followups 2 --answer-tokens 16
# --stagger 5`. Each run has sixi-server with its default prefill rule, then the same with
# `--prefill-chunk 128` (the fixed small chunk it replaces), then llama-server (-np 8), and
# BASE (a sixi-server binary of another commit) when set. SIXI_ARGS replaces the second row's
# arguments (e.g. "--prefill-budget-ms 100"). THREADS, AGENTS, DOC, STAGGER override. llama-server is built outside the project (see server_vs_llama.sh). Servers
# listen on 127.0.0.1, are stopped by PID; every client run is bounded by timeout(1).
# Prints a Markdown table, one row per server and run. Skips (77) without LLAMA_SERVER.
set -u
B="${SIXI_BUILD_ROOT:-build}"
RUNS="${1:-2}"
WHICH="${2:-100m}"
THREADS="${THREADS:-2}"
AGENTS="${AGENTS:-4}"
DOC="${DOC:-3000}"
STAGGER="${STAGGER:-5}"
SLOTS=8
CTX=4096
. "$(dirname "$0")/llama_peer.sh"
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
row() { # label port
	timeout 900 "$B/src/sixi-bench" agents --url "http://127.0.0.1:$2" --model m --agents "$AGENTS" \
		--doc-tokens "$DOC" --followups 2 --answer-tokens 16 --stagger "$STAGGER" --warmup 1 \
		--extra "$(cat "$T/extra.json")" --db "$T/bench.db" --no-plots --json --quiet >"$T/out.json" \
		2>"$T/bench.err" || { echo "sixi-bench against $1 failed:"; cat "$T/bench.err"; return 1; }
	"$PY" - "$T/out.json" "$1" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
def find(x, k):
    if isinstance(x, dict):
        if k in x: return x[k]
        for v in x.values():
            r = find(v, k)
            if r is not None: return r
    if isinstance(x, list):
        for v in x:
            r = find(v, k)
            if r is not None: return r
d = json.load(open(sys.argv[1]))
f = lambda k: "%.2f" % find(d, k) if find(d, k) is not None else "-"
print("| %s | %s | %s | %s | %s | %s | %s |" % (sys.argv[2], f("doc_ttft_median_s"), f("followup_wait_median_s"),
      f("followup_wait_max_s"), f("followup_alone_median_s"), find(d, "valid"), sys.argv[3]))
PY
}
sixi() { # label server args...
	label=$1
	srv=$2
	shift 2
	P=$(free_port)
	"$srv" --model "$MODEL" --host 127.0.0.1 --port "$P" --parallel $SLOTS --context $CTX --threads "$THREADS" \
		"$@" 2>"$T/sixi.log" &
	PID=$!
	wait_ready "$P" || { echo "sixi-server did not become ready"; tail -5 "$T/sixi.log"; exit 1; }
	row "$label" "$P"
	kill -TERM "$PID"
	wait "$PID" 2>/dev/null
	PID=""
}
llama() {
	P=$(free_port)
	"$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$P" -np $SLOTS -c $((SLOTS * CTX)) -t "$THREADS" \
		>"$T/llama.log" 2>&1 &
	PID=$!
	wait_ready "$P" || { echo "llama-server did not become ready"; tail -20 "$T/llama.log"; exit 1; }
	row "llama-server (-np $SLOTS)" "$P"
	kill -TERM "$PID"
	wait "$PID" 2>/dev/null
	PID=""
}

echo "model: $WHICH ($(stat -L -c %s "$MODEL") bytes), threads $THREADS, $SLOTS slots x $CTX context, $(nproc) CPUs"
echo "bench: sixi-bench agents --agents $AGENTS --doc-tokens $DOC --followups 2 --answer-tokens 16 --stagger $STAGGER" \
	"--warmup 1 --extra '{\"logit_bias\": {...}}'"
echo "sixi:  sixi-server --model MODEL --parallel $SLOTS --context $CTX --threads $THREADS [args]"
echo "llama: llama-server -m MODEL -np $SLOTS -c $((SLOTS * CTX)) -t $THREADS"
echo
echo "| server | document TTFT median (s) | follow-up wait median (s) | follow-up wait max (s) | follow-up alone (s) | valid | load |"
echo "|---|---:|---:|---:|---:|---|---:|"
r=0
while [ "$r" -lt "$RUNS" ]; do
	sixi "sixi-server (default)" "$B/src/sixi-server"
	if [ -n "${SIXI_ARGS:-}" ]; then
		# shellcheck disable=SC2086 # SIXI_ARGS is a list of arguments
		sixi "sixi-server $SIXI_ARGS" "$B/src/sixi-server" $SIXI_ARGS
	else
		sixi "sixi-server --prefill-chunk 128" "$B/src/sixi-server" --prefill-chunk 128
	fi
	llama
	[ -n "${BASE:-}" ] && sixi "BASE (default)" "$BASE"
	r=$((r + 1))
done
