#!/bin/sh
# agents_sim.sh — the release notes' agents scenario on the simulated Thor: 16 agents, each
# loading a 17.8k-token document (starts 8 simulated seconds apart) and asking 2 follow-ups;
# document TTFT ("cold load") and follow-up waits in simulated seconds, for the default
# prefill rule, the old FIFO prefill (--no-interleave) and any server given in BASE (a
# sixi-server binary of another commit, e.g. before time-sized chunks).
#
#   tests/perf/agents_sim.sh [RUNS] [TIME_SCALE]     (defaults 3, 20)
#
# Every simulated cost scales with TIME_SCALE, so the figures are in simulated seconds; a
# larger scale runs faster and leaves more to the host's timer. ENGINE replaces the
# simulated device by other server arguments (then give TIME_SCALE 1), e.g. the GPU engine:
#   ENGINE="--model M.gguf --device cuda --parallel 32 --context 20480" STAGGER=0.5 \
#     tests/perf/agents_sim.sh 2 1
# (STAGGER: real seconds between agents, default 8 simulated seconds; AGENTS and DOC
# override 16 and 17800). MODE=sweep runs
# `sixi-bench sweep --concurrency 32 --max-tokens 64 --rounds 3` instead (aggregate tok/s
# at 32 decode streams, times TIME_SCALE), to show throughput unchanged by the prefill rule. Servers listen on
# 127.0.0.1, are stopped by PID, and every client run is bounded by timeout(1).
# Prints a Markdown table, one row per server and run.
set -u
B="${SIXI_BUILD_ROOT:-build}"
RUNS="${1:-3}"
SCALE="${2:-20}"
BENCH="$B/src/sixi-bench"
PY=/usr/bin/python3
for p in "$B/src/sixi-server" "$BENCH"; do [ -x "$p" ] || { echo "SKIP: $p not built"; exit 77; }; done
. "$(dirname "$0")/../integration/server_lib.sh"
server_scratch sixi-agents
STAGGER="${STAGGER:-$("$PY" -c "print(8 / $SCALE)")}"
ENGINE="${ENGINE:---simulate thor --time-scale $SCALE}"
AGENTS="${AGENTS:-16}"
DOC="${DOC:-17800}"

one() { # label server args...
	label=$1
	srv=$2
	shift 2
	rm -f "$T/port"
	# shellcheck disable=SC2086 # ENGINE is a list of arguments
	"$srv" $ENGINE --host 127.0.0.1 --port 0 --port-file "$T/port" "$@" \
		2>"$T/server.log" &
	PID=$!
	i=0
	while [ ! -s "$T/port" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
	[ -s "$T/port" ] || { echo "server did not start"; cat "$T/server.log"; exit 1; }
	if [ "${MODE:-agents}" = sweep ]; then
		timeout 900 "$BENCH" sweep --url "http://127.0.0.1:$(cat "$T/port")" --model m --concurrency 32 \
			--max-tokens 64 --rounds 3 --warmup 1 --db "$T/bench.db" --no-plots --json --quiet >"$T/out.json" \
			2>"$T/bench.err" || { echo "sixi-bench failed:"; cat "$T/bench.err"; exit 1; }
		kill -TERM "$PID"
		wait "$PID" 2>/dev/null
		PID=""
		"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); L=d['levels'][0]; print('| %s | %.1f | %s |' % (sys.argv[2], L['aggregate_tok_s'] / float(sys.argv[3]), L['valid']))" \
			"$T/out.json" "$label" "$SCALE"
		return
	fi
	timeout 900 "$BENCH" agents --url "http://127.0.0.1:$(cat "$T/port")" --model m --agents "$AGENTS" \
		--doc-tokens "$DOC" --followups 2 --warmup 0 --stagger "$STAGGER" --db "$T/bench.db" --no-plots \
		--json --quiet >"$T/out.json" 2>"$T/bench.err" || { echo "sixi-bench failed:"; cat "$T/bench.err"; exit 1; }
	kill -TERM "$PID"
	wait "$PID" 2>/dev/null
	PID=""
	"$PY" - "$T/out.json" "$label" "$SCALE" <<'PY'
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
d, s = json.load(open(sys.argv[1])), float(sys.argv[3])
f = [find(d, k) for k in ("doc_ttft_median_s", "followup_wait_median_s", "followup_wait_max_s")]
if None in f:  # sixi-bench marked the level invalid and says why
    print("| %s | %s | | | False |" % (sys.argv[2], find(d, "invalid_reason")))
    sys.exit(1)
print("| %s | %.1f | %.2f | %.2f | %s |" % (sys.argv[2], f[0] * s, f[1] * s, f[2] * s, find(d, "valid")))
PY
	[ $? = 0 ] || { echo "server log (last lines):"; tail -5 "$T/server.log"; }
}

if [ "${MODE:-agents}" = sweep ]; then
	echo "sixi-bench sweep --concurrency 32 --max-tokens 64 --rounds 3 --warmup 1 against sixi-server $ENGINE;" \
		"tok/s / $SCALE; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
	echo
	echo "| server | aggregate tok/s at 32 streams | valid |"
	echo "|---|---:|---|"
else
	echo "sixi-bench agents --agents $AGENTS --doc-tokens $DOC --followups 2 --stagger $STAGGER against" \
		"sixi-server $ENGINE; seconds x $SCALE; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
	echo
	echo "| server | document TTFT median | follow-up wait median | follow-up wait max | valid |"
	echo "|---|---:|---:|---:|---|"
fi
r=0
while [ $r -lt "$RUNS" ]; do
	one "time-sized chunks (default)" "$B/src/sixi-server"
	[ "${MODE:-agents}" = sweep ] || one "--no-interleave" "$B/src/sixi-server" --no-interleave
	[ -n "${BASE:-}" ] && one "BASE (default)" "$BASE"
	r=$((r + 1))
done
