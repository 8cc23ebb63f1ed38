#!/bin/sh
# The demo behind `./sixi demo`: starts sixi-server on the trained default model
# (sixi-small, src/model/trained/, written to GGUF by `sixi-server --write-tiny --from`) on
# 127.0.0.1, sweeps it with sixi-bench at 1, 4, 16 and 32 streams, evaluates the demo task
# set plus eight sixi-math tasks under three conditions (greedy, temperature 0.7, and
# temperature 0.7 with a 24-token budget; 3 repeats each), compares greedy with 0.7 and the
# large budget with the small one, counts the loop class, and renders the reports from the
# stored rows. Without a
# built sixi-server it falls back to the scripted OpenAI-compatible test server and skips
# the eval.
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
	"$BUILD/src/sixi-server" --write-tiny "$TMP/small.gguf" --from "$ROOT/src/model/trained/sixi-small" 2>/dev/null
	"$BUILD/src/sixi-server" --model "$TMP/small.gguf" --host 127.0.0.1 --port 0 --port-file "$TMP/port" \
		2>"$TMP/server.log" &
	SPID=$!
	MODEL=sixi-small
	echo "server: sixi-server on the trained default model sixi-small (pid $SPID)"
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
[ "$MODEL" = sixi-small ] || exit 0

echo
SET="$TMP/demo-set.jsonl"
{
	cat "$ROOT/datasets/demo/tasks.jsonl"
	grep -E '"id": "sixi-math/(bakery-trays|handshakes|lcm-buses|sequence-term|average-score|hexagon-diagonals|trapezoid-area|consecutive-sum)"' \
		"$ROOT/datasets/sixi-math/tasks.jsonl"
} >"$SET"
echo "eval: datasets/demo (6 tasks) and 8 easy tasks of datasets/sixi-math, 3 repeats, the model's own template"
echo "(the model saw the demo's tasks and 4 of the 8 math tasks in training: src/model/trained/README.md)"
PRE=""
for C in "greedy 0 160" "t0.7 0.7 160" "t0.7-short 0.7 24"; do
	set -- $C
	echo
	echo "condition $1: temperature $2, max_tokens $3"
	"$BUILD/src/sixi-eval" run --url "$URL" --model sixi-small --dataset "$SET" --repeats 3 --temperature "$2" \
		--max-tokens "$3" --seed 1 --concurrency 4 --template "$TMP/small.gguf" --name "demo-$1" --db "$DB" \
		$PRE >/dev/null
	PRE=--no-preflight
	sqlite3 "$DB" "SELECT max(id) FROM runs WHERE kind = 'eval'" >"$TMP/run-$1"
	"$BUILD/src/sixi-eval" summary "$(cat "$TMP/run-$1")" --db "$DB" | sed -n '2,4p'
done
# One line per comparison, from the numbers the compare report stored (its .sixi.json traces
# each one to its query on the DB).
explain() {
	python3 - "$1" "$2" <<'PY'
import json, sys
n = {x["id"]: x["value"] for x in json.load(open(sys.argv[1]))["numbers"]}
f = lambda k: n["fisher/Fisher/" + k]
p = float(f("p two-sided"))
verdict = "a real difference (p < 0.05)" if p < 0.05 else "no difference shown (p >= 0.05)"
print("%s: %s vs %s passes of %d attempts, Fisher p = %s, McNemar p = %s, repeat sd %s vs %s points: %s" % (
    sys.argv[2], f("A pass"), f("B pass"), int(f("A pass")) + int(f("A fail")), f("p two-sided"),
    n["mcnemar/McNemar/p two-sided"], n["repeats/sd/A rate %"], n["repeats/sd/B rate %"], verdict))
PY
}
echo
"$BUILD/src/sixi-report" compare --db "$DB" "$(cat "$TMP/run-greedy")" "$(cat "$TMP/run-t0.7")" \
	--out "$ROOT/reports/demo-eval-temperature" --allow-config-diff >/dev/null
"$BUILD/src/sixi-report" compare --db "$DB" "$(cat "$TMP/run-t0.7")" "$(cat "$TMP/run-t0.7-short")" \
	--out "$ROOT/reports/demo-eval-budget" --allow-config-diff >/dev/null
explain "$ROOT/reports/demo-eval-temperature.sixi.json" "greedy vs temperature 0.7"
echo "  (sampling at 0.7 rarely moves this model off the answers it has learnt, so 42 attempts show no change)"
explain "$ROOT/reports/demo-eval-budget.sixi.json" "max_tokens 160 vs 24"
echo "  (24 tokens cut most replies before their final answer: the class 'truncated' above, not 'wrong')"
# The loop class from the same stored rows: this model ends its replies, so the detector has
# nothing to fire on (tests/perf/loop_search.py: src/model/trained/README.md, "Does it loop?").
for C in greedy t0.7 t0.7-short; do
	"$BUILD/src/sixi-eval" summary "$(cat "$TMP/run-$C")" --json --db "$DB"
done | python3 -c '
import json, sys
dec, text, rows = json.JSONDecoder(), sys.stdin.read(), []
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    o, i = dec.raw_decode(text, i)
    rows.append(o.get("eval", o))
loop, graded = sum(r["classes"]["loop"] for r in rows), sum(r["graded"] for r in rows)
print("loop class: %d of %d graded attempts in the three conditions" % (loop, graded))'
echo "  (sixi-small ends every reply with its end token; no prompt tried made it repeat until max_tokens)"
echo "reports: reports/demo-eval-temperature.md and reports/demo-eval-budget.md (and .html)"
