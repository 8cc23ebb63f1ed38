#!/bin/sh
# perf_client — sixi-bench's client ceiling against a Python asyncio + aiohttp
# client (tests/perf/aiohttp_client.py) that parses the same stream the same way.
# Same emitter process (sixi-bench emitter, pinned to CPU 0), same run, same core
# budget (each client pinned to CPU 1, one thread), alternating A B A B.
# Prints each pair and the median ratio of events/s.
#
#   tests/perf/perf_client.sh [BUILD_DIR] [PAIRS]
set -eu
BUILD=${1:-build}
PAIRS=${2:-5}
BENCH="$BUILD/src/sixi-bench"
PY=${PYTHON:-/usr/bin/python3}
HERE=$(dirname "$0")
TMP=$(mktemp -d)
trap 'kill "$EPID" 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
taskset -c 0 "$BENCH" emitter --port-file "$TMP/port" --events 256 --lifetime 600 2>"$TMP/emitter.log" &
EPID=$!
i=0
while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$TMP/port")"
STREAMS=64
ROUNDS=20
echo "emitter $URL (CPU 0); clients on CPU 1; $STREAMS streams x $ROUNDS requests x 256 events"
echo "pair  sixi events/s  aiohttp events/s  ratio"
n=0
while [ $n -lt "$PAIRS" ]; do
	n=$((n + 1))
	a=$(taskset -c 1 "$BENCH" selftest --url "$URL" --streams $STREAMS --rounds $ROUNDS --threads 1 \
		--db "$TMP/perf.db" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["events_per_s"])')
	b=$(taskset -c 1 "$PY" "$HERE/aiohttp_client.py" --url "$URL" --streams $STREAMS --rounds $ROUNDS |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["events_per_s"])')
	r=$("$PY" -c "print(round($a / $b, 2))")
	printf '%4d %14.0f %17.0f %6s\n' "$n" "$a" "$b" "$r"
	echo "$r" >>"$TMP/ratios"
done
"$PY" -c "import statistics; r=[float(x) for x in open('$TMP/ratios')]; print('median ratio (sixi / aiohttp): %.1fx over %d pairs' % (statistics.median(r), len(r)))"
