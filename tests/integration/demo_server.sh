#!/bin/sh
# demo_server.sh BUILD_DIR — the sixi-server part of `./sixi demo`: writes the
# embedded tiny model, serves it on 127.0.0.1 (free port), sweeps it with
# sixi-bench at 1, 4, 16 and 32 streams, then does the same on the simulated
# Thor device (10x faster than real time) and prints the straggler and split-pass
# counters. Servers are stopped by PID; every client run is bounded by timeout(1).
set -eu
B="${1:-build}"
. "$(dirname "$0")/server_lib.sh"
server_scratch sixi-demo-server

serve() { # args...
	rm -f "$T/port"
	"$B/src/sixi-server" --host 127.0.0.1 --port 0 --port-file "$T/port" "$@" 2>"$T/server.log" &
	PID=$!
	i=0
	until http_get "http://127.0.0.1:$(cat "$T/port" 2>/dev/null || echo 1)/health" | grep -q '"ok"'; do
		i=$((i + 1))
		[ $i -lt 300 ] || { cat "$T/server.log"; exit 1; }
		sleep 0.1
	done
	PORT=$(cat "$T/port")
	head -1 "$T/server.log"
}
stop() { kill -TERM "$PID"; wait "$PID" || true; PID=""; }

"$B/src/sixi-server" --write-tiny "$T/tiny.gguf"
serve --model "$T/tiny.gguf" --parallel 32 --context 1024 --threads 2
timeout 300 "$B/src/sixi-bench" sweep --url "http://127.0.0.1:$PORT" --model tiny --concurrency 1,4,16,32 \
	--max-tokens 64 --db "$T/demo.db" --no-plots
http_get "http://127.0.0.1:$PORT/metrics" | grep -E '^sixi_(passes|rows|state_copies)_total'
stop

serve --simulate thor --time-scale 10
timeout 300 "$B/src/sixi-bench" sweep --url "http://127.0.0.1:$PORT" --model sim-thor --concurrency 1,4,16,32 \
	--max-tokens 32 --db "$T/demo.db" --no-plots
echo "(simulated Thor at --time-scale 10: divide tok/s by 10 for the device's own figures)"
http_get "http://127.0.0.1:$PORT/metrics" | grep -E '^sixi_(passes|split_passes|straggler_waits|state_copies)_total'
stop
