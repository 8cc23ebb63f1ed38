#!/bin/sh
# The demo behind `./sixi demo`: starts sixi-server on its embedded tiny model on
# 127.0.0.1, sweeps it with sixi-bench at 1, 4, 16 and 32 streams, runs a short
# eval of the bundled demo task set at two temperatures (3 repeats each), and
# renders both reports from the stored rows. Without a built sixi-server it falls
# back to the scripted OpenAI-compatible test server and skips the eval.
set -eu
BUILD=${1:?usage: demo.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DB="$ROOT/results/sixi.db"
TMP=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM
mkdir -p "$ROOT/results" "$ROOT/reports"

if [ -x "$BUILD/src/sixi-server" ] && "$BUILD/src/sixi-server" --help 2>&1 | grep -q -- '--write-tiny'; then
	"$BUILD/src/sixi-server" --write-tiny "$TMP/tiny.gguf" >/dev/null
	"$BUILD/src/sixi-server" --model "$TMP/tiny.gguf" --host 127.0.0.1 --port 0 --port-file "$TMP/port" \
		2>"$TMP/server.log" &
	SPID=$!
	MODEL=tiny
	echo "server: sixi-server on the embedded tiny model (pid $SPID)"
else
	python3 "$ROOT/tests/integration/fake_openai.py" --port 0 --port-file "$TMP/port" --tokens-per-event 1 \
		--event-delay-ms 1 --lifetime 600 2>"$TMP/server.log" &
	SPID=$!
	MODEL=fake
	echo "server: scripted OpenAI-compatible test server (pid $SPID)"
fi
i=0
while [ ! -s "$TMP/port" ]; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 "$SPID" 2>/dev/null; then
		echo "demo: the server did not start:" >&2
		cat "$TMP/server.log" >&2
		exit 1
	fi
	sleep 0.1
done
URL="http://127.0.0.1:$(cat "$TMP/port")"
echo "endpoint: $URL"
echo
"$BUILD/src/sixi-bench" sweep --url "$URL" --model "$MODEL" --concurrency 1,4,16,32 --max-tokens 64 \
	--prompt-tokens 32 --db "$DB" --ready-timeout 120 | tee "$TMP/sweep.txt"
RUN=$(sed -n 's/^run \([0-9]*\) .*/\1/p' "$TMP/sweep.txt" | head -1)
echo
"$BUILD/src/sixi-report" bench --db "$DB" "$RUN" --out "$ROOT/reports/demo-bench"
echo "report: reports/demo-bench.md and reports/demo-bench.html"
[ "$MODEL" = tiny ] || exit 0

echo
echo "eval: datasets/demo, 3 repeats at temperature 0.7 and at 1.0, the model's own template"
for T in 0.7 1.0; do
	"$BUILD/src/sixi-eval" run --url "$URL" --model tiny --dataset "$ROOT/datasets/demo" --repeats 3 \
		--temperature "$T" --max-tokens 96 --template "$TMP/tiny.gguf" --name "demo-t$T" --db "$DB" \
		>/dev/null
	sqlite3 "$DB" "SELECT max(id) FROM runs WHERE kind = 'eval'" >"$TMP/run-$T"
	"$BUILD/src/sixi-eval" summary "$(cat "$TMP/run-$T")" --db "$DB"
done
echo
"$BUILD/src/sixi-report" compare --db "$DB" "$(cat "$TMP/run-0.7")" "$(cat "$TMP/run-1.0")" \
	--out "$ROOT/reports/demo-eval" --allow-config-diff
echo "report: reports/demo-eval.md and reports/demo-eval.html"
