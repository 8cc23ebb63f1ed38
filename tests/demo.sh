#!/bin/sh
# The demo behind `./sixi demo`: starts a server on 127.0.0.1, sweeps it with
# sixi-bench at 1, 4, 16 and 32 streams, and renders the report from the stored
# rows. The server is the bundled sixi-server on its embedded tiny model when it
# is built; otherwise the scripted OpenAI-compatible test server.
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
