#!/bin/sh
# test_server_cuda.sh — sixi-bench against sixi-server --device cuda on the tiny model: a sweep
# at 1, 8 and 32 streams (plain, then with n-gram speculation and rollback by log on the GPU)
# must store one row per request with no error, completion_tokens equal to max_tokens for
# every row that ended by length, and as many tokens in the DB as the server's own
# sixi_completion_tokens_total counted for the sweep's requests. Exits 77 without a GPU.
# The server listens on 127.0.0.1 with a free port and is stopped by PID.
set -u
B="${SIXI_BUILD_ROOT:-build}"
SERVER="$B/src/sixi-server"
BENCH="$B/src/sixi-bench"
PY=python3
[ -x "$SERVER" ] || { echo "SKIP: $SERVER not built"; exit 77; }
[ -x "$BENCH" ] || { echo "SKIP: $BENCH not built"; exit 77; }
. "$(dirname "$0")/server_lib.sh"
server_scratch sixi-server-cuda
fail=0
"$SERVER" --write-tiny "$T/tiny.gguf" 2>/dev/null || { echo "cannot write the tiny model"; exit 1; }
metric() { # name -> value
	"$PY" -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" \
		"http://127.0.0.1:$PORT/metrics" 2>/dev/null | awk -v n="$1" '$1 == n { print $2 }'
}
run() { # label, server options...
	label=$1
	shift
	rm -f "$T/port"
	"$SERVER" --model "$T/tiny.gguf" --device "${SIXI_TEST_DEVICE:-cuda}" --parallel 32 --context 2048 --host 127.0.0.1 --port 0 \
		--port-file "$T/port" "$@" 2>"$T/server.log" &
	PID=$!
	i=0
	while [ ! -s "$T/port" ] && [ $i -lt 600 ] && kill -0 "$PID" 2>/dev/null; do sleep 0.05; i=$((i + 1)); done
	if [ ! -s "$T/port" ]; then
		wait "$PID"
		PID=""
		if grep -q "no CUDA device" "$T/server.log"; then
			echo "SKIP: $(tail -n 1 "$T/server.log")"
			exit 77
		fi
		echo "server did not start:"
		cat "$T/server.log"
		exit 1
	fi
	PORT=$(cat "$T/port")
	before=$(metric sixi_completion_tokens_total)
	rm -f "$T/bench.db"
	timeout 300 "$BENCH" sweep --url "http://127.0.0.1:$PORT" --model tiny.gguf --db "$T/bench.db" --no-plots \
		--concurrency 1,8,32 --max-tokens 32 --rounds 2 --warmup 1 --json --quiet >"$T/out.json" 2>"$T/bench.err" ||
		{ echo "sixi-bench failed:"; cat "$T/bench.err"; fail=1; }
	after=$(metric sixi_completion_tokens_total)
	kill -TERM "$PID"
	wait "$PID" || { echo "$label: server exit status $?"; fail=1; }
	PID=""
	"$PY" - "$T/bench.db" "$label" "$before" "$after" "$T/out.json" <<'PYEOF' || fail=1
import json, sqlite3, sys
db, label, before, after = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
run = json.load(open(sys.argv[5]))["run"]
c = sqlite3.connect(db)
rows = c.execute("SELECT level, completion_tokens, finish_reason, error, requested_tokens, phase FROM bench_requests "
                 "WHERE run = ?", (run,)).fetchall()
meas = [r for r in rows if r[5] == "measure"]
errors = [r for r in rows if r[3] is not None]
wrong = [r for r in meas if r[1] is None or (r[2] == "length" and r[1] != 32) or r[1] > 32]
total = sum(r[1] or 0 for r in rows)
levels = sorted(set(r[0] for r in meas))
print(f"{label}: run {run}: {len(meas)} measured rows at levels {levels} ({sum(r[1] or 0 for r in meas)} tokens), "
      f"{len(rows)} rows in all, {len(errors)} errors; {total} completion tokens stored, the server counted "
      f"{after - before:.0f}; measured rows with a wrong count: {len(wrong)}")
ok = len(meas) == 2 * (1 + 8 + 32) and not errors and not wrong and levels == [1, 8, 32] and after - before == total
if not ok:
    print(f"{label}: FAILED", errors[:3], wrong[:3])
sys.exit(0 if ok else 1)
PYEOF
}
run plain
run spec --spec ngram --draft-max 6
[ $fail -eq 0 ] && echo "ok" || echo "FAILED"
exit $fail
