#!/bin/sh
# soak.sh — sixi-server (simulated Thor) under sixi-bench at STREAMS concurrent
# streams for SECONDS on 127.0.0.1, the server's RSS and open descriptors
# sampled every second into OUT.csv (t_s, rss_kib, fds, bench_rounds).
#
#   soak.sh [SECONDS [STREAMS [OUT.csv]]]      (defaults 600, 1000, soak.csv)
#
# Passes when every sixi-bench round exits 0 with no failed request, and after
# warm-up (the first half: the allocator's pools fill for ~2 minutes) neither
# RSS nor descriptors grow: the maximum of the last quarter is at most the
# second quarter's maximum + 5 % (RSS) and + 16 (descriptors), and the server
# has the same descriptors at the end as when idle before the load. The server is stopped by PID; each bench round is
# bounded by timeout(1) and the whole soak by SECONDS + 120 s.
set -u
SECONDS_TOTAL=${1:-600}
STREAMS=${2:-1000}
OUT=${3:-soak.csv}
B="${SIXI_BUILD_ROOT:-build}"
SERVER="$B/src/sixi-server"
BENCH="$B/src/sixi-bench"
[ -x "$SERVER" ] || { echo "SKIP: $SERVER not built"; exit 77; }
[ -x "$BENCH" ] || { echo "SKIP: $BENCH not built"; exit 77; }
T=$(mktemp -d /tmp/sixi-soak-XXXXXX)
PID=""
LOOP=""
cleanup() {
	[ -n "$LOOP" ] && kill "$LOOP" 2>/dev/null
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

# 1000 client streams and their server connections need descriptors
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
"$SERVER" --simulate thor --time-scale 50 --host 127.0.0.1 --port 0 --port-file "$T/port" \
	--pid-file "$T/pid" 2>"$T/server.log" &
PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$T/port" ] || { echo "server did not start"; cat "$T/server.log"; exit 1; }
URL="http://127.0.0.1:$(cat "$T/port")"
fds() { ls "/proc/$PID/fd" 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status" 2>/dev/null; }
sleep 0.5
FDS_IDLE=$(fds)

# the load: back-to-back sweep rounds at STREAMS, each bounded
end=$(( $(date +%s) + SECONDS_TOTAL ))
(
	n=0
	while [ "$(date +%s)" -lt "$end" ]; do
		n=$((n + 1))
		if ! timeout 300 "$BENCH" sweep --url "$URL" --model sim-thor --db "$T/bench.db" --no-plots --json --quiet \
			--concurrency "$STREAMS" --max-tokens 32 --rounds 1 --ready-timeout 30 >"$T/round.json" 2>"$T/round.err"; then
			echo "round $n: sixi-bench failed: $(tail -3 "$T/round.err")" >>"$T/errors"
		elif ! grep -q '"errors":[[:space:]]*0' "$T/round.json"; then
			echo "round $n: failed requests: $(head -c 400 "$T/round.json")" >>"$T/errors"
		fi
		echo "$n" >"$T/rounds"
	done
) &
LOOP=$!

echo "t_s,rss_kib,fds,bench_rounds" >"$OUT"
t=0
while kill -0 "$LOOP" 2>/dev/null && [ $t -lt $((SECONDS_TOTAL + 120)) ]; do
	echo "$t,$(rss),$(fds),$(cat "$T/rounds" 2>/dev/null || echo 0)" >>"$OUT"
	sleep 1
	t=$((t + 1))
done
kill "$LOOP" 2>/dev/null
wait "$LOOP" 2>/dev/null
LOOP=""
sleep 1
FDS_END=$(fds)
ROUNDS=$(cat "$T/rounds" 2>/dev/null || echo 0)

fail=0
if [ -s "$T/errors" ]; then
	echo "errors:"; head -5 "$T/errors"; fail=1
fi
[ "$ROUNDS" -ge 1 ] || { echo "no bench round completed"; fail=1; }
kill -0 "$PID" 2>/dev/null || { echo "the server died"; tail -5 "$T/server.log"; fail=1; }
/usr/bin/python3 - "$OUT" "$FDS_IDLE" "$FDS_END" "$ROUNDS" <<'PY' || fail=1
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["rss_kib"]]
idle, end, rounds = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
q = max(1, len(rows) // 4)
first, last = rows[q:2 * q], rows[-q:]
rss1, rss4 = max(int(r["rss_kib"]) for r in first), max(int(r["rss_kib"]) for r in last)
fd1, fd4 = max(int(r["fds"]) for r in first), max(int(r["fds"]) for r in last)
peak = max(int(r["rss_kib"]) for r in rows)
print("samples %d, rounds %d; RSS max second quarter %d KiB, last quarter %d KiB, peak %d KiB; "
      "fds max second quarter %d, last quarter %d, idle %d -> end %d" % (len(rows), rounds, rss1, rss4, peak, fd1, fd4, idle, end))
ok = True
if rss4 > rss1 * 1.05:
    print("RSS grew after warm-up"); ok = False
if fd4 > fd1 + 16:
    print("descriptors grew after warm-up"); ok = False
if end > idle:
    print("descriptors left open after the load (%d idle, %d at the end)" % (idle, end)); ok = False
sys.exit(0 if ok else 1)
PY
exit $fail
