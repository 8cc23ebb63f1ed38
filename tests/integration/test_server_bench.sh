#!/bin/sh
# test_server_bench.sh — sixi-bench against a real sixi-server process on the
# simulated Thor preset (run faster than real time with --time-scale; every
# simulated cost and scheduler clamp scales, so ratios hold):
#   1. sweep 16,32 with the straggler wait on: aggregate at 32 >= 1.25 x at 16;
#   2. sweep 32 with it off (the client's own arrival jitter): /metrics shows
#      split passes and the aggregate drops below 0.9 x the wait-on figure;
#   3. agents (16 x 17.8k-token documents x 2 follow-ups, agents starting 8
#      simulated seconds apart): median follow-up wait under 3 simulated seconds
#      with interleaving, and at least 10 x longer without it.
# Servers listen on 127.0.0.1 with a free port and are stopped by PID; every
# client run is bounded by timeout(1).
set -u
B="${SIXI_BUILD_ROOT:-build}"
SERVER="$B/src/sixi-server"
BENCH="$B/src/sixi-bench"
PY=/usr/bin/python3
[ -x "$SERVER" ] || { echo "SKIP: $SERVER not built"; exit 77; }
[ -x "$BENCH" ] || { echo "SKIP: $BENCH not built"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: $PY (Debian python3) absent"; exit 77; }
. "$(dirname "$0")/server_lib.sh"
server_scratch sixi-server-bench
fail=0

start() { # args...
	rm -f "$T/port"
	"$SERVER" --simulate thor --host 127.0.0.1 --port 0 --port-file "$T/port" --pid-file "$T/pid" "$@" \
		2>"$T/server.log" &
	PID=$!
	i=0
	while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	[ -s "$T/port" ] || { echo "server did not start"; cat "$T/server.log"; exit 1; }
	PORT=$(cat "$T/port")
}
stop() {
	kill -TERM "$PID"
	wait "$PID"
	rc=$?
	PID=""
	[ $rc -eq 0 ] || { echo "server exit status $rc"; fail=1; }
}
metric() { # name -> value
	http_get "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}
bench() { # out.json command args...
	out=$1
	shift
	timeout 120 "$BENCH" "$@" --url "http://127.0.0.1:$PORT" --model sim-thor --db "$T/bench.db" --no-plots \
		--json --quiet >"$out" 2>"$T/bench.err" || { echo "sixi-bench failed:"; cat "$T/bench.err"; fail=1; }
}
jget() { # file python-expression over d
	"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}
# Finds a key anywhere in the document.
jfind() { # file key
	"$PY" -c "
import json, sys
def walk(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k == sys.argv[2]: print(v); sys.exit(0)
            walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(json.load(open(sys.argv[1])))" "$1" "$2"
}
check() { # description python-boolean
	if "$PY" -c "import sys; sys.exit(0 if ($2) else 1)"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}

# 1-2: concurrency scaling and the straggler wait.
start --time-scale 10
bench "$T/on.json" sweep --concurrency 16,32 --max-tokens 32 --rounds 3 --warmup 1
a16=$(jget "$T/on.json" "[L['aggregate_tok_s'] for L in d['levels'] if L['level'] == 16][0]")
a32=$(jget "$T/on.json" "[L['aggregate_tok_s'] for L in d['levels'] if L['level'] == 32][0]")
split_on=$(metric sixi_split_passes_total)
passes_on=$(metric sixi_passes_total)
stop
echo "straggler wait on: 16 streams $(jget "$T/on.json" "$a16 / 10"), 32 streams $(jget "$T/on.json" "$a32 / 10")" \
	"simulated tok/s; split passes $split_on of $passes_on"
check "32 streams >= 1.25 x 16 streams" "$a32 >= 1.25 * $a16"

start --time-scale 10 --straggler-wait off
bench "$T/off.json" sweep --concurrency 32 --max-tokens 32 --rounds 3 --warmup 1
off32=$(jget "$T/off.json" "d['levels'][0]['aggregate_tok_s']")
split_off=$(metric sixi_split_passes_total)
passes_off=$(metric sixi_passes_total)
stop
echo "straggler wait off: 32 streams $(jget "$T/off.json" "$off32 / 10") simulated tok/s;" \
	"split passes $split_off of $passes_off"
check "split passes without the wait" "$split_off > 0.2 * $passes_off"
check "aggregate drops without the wait" "$off32 < 0.9 * $a32"

# 3: agents, interleaved prefill against the old FIFO prefill; agents start 8 simulated
#    seconds apart so that follow-ups of early agents meet the documents of later ones.
start --time-scale 100
bench "$T/ag_on.json" agents --agents 16 --doc-tokens 17800 --followups 2 --warmup 0 --stagger 0.08
med_on=$(jfind "$T/ag_on.json" followup_wait_median_s)
max_on=$(jfind "$T/ag_on.json" followup_wait_max_s)
stop
start --time-scale 100 --no-interleave
bench "$T/ag_off.json" agents --agents 16 --doc-tokens 17800 --followups 2 --warmup 0 --stagger 0.08
med_off=$(jfind "$T/ag_off.json" followup_wait_median_s)
max_off=$(jfind "$T/ag_off.json" followup_wait_max_s)
stop
echo "agents, simulated seconds: interleaved median $(jget "$T/ag_on.json" "$med_on * 100") worst $(jget "$T/ag_on.json" "$max_on * 100");" \
	"FIFO prefill median $(jget "$T/ag_off.json" "$med_off * 100") worst $(jget "$T/ag_off.json" "$max_off * 100")"
check "median follow-up wait < 3 simulated s with interleaving" "$med_on * 100 < 3"
check "median follow-up wait >= 10 x longer without interleaving" "$med_off >= 10 * $med_on"
exit $fail
