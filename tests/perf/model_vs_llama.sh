#!/bin/sh
# model_vs_llama.sh — decode tokens/s of sixi's forward pass (perf_model) against
# llama.cpp on the same GGUF and the same pinned cores, measured as alternating pairs
# (sixi, llama.cpp, sixi, llama.cpp, ...) so that a change in the machine's load hits
# both sides of a pair alike. Prints each pair's ratios, their medians, and the load
# average at the start.
#
#   LLAMA_BIN=/path/to/llama.cpp/build/bin tests/perf/model_vs_llama.sh [tiny|100m|both|FILE.gguf] [THREADS] [PAIRS]
#
# FILE.gguf: any qwen35 GGUF (e.g. the ~100M model quantized by llama-quantize to Q4_K_M).
#
# Single stream: perf_model's one-sequence decode against `llama-bench -p 0 -n STEPS`
# (tg). 32 sequences: perf_model's 32 slots, one row each per pass, after a 32-token
# prompt, against `llama-batched-bench -npp 32 -ntg STEPS -npl 32` (S_TG at B=32).
# LLAMA_BIN holds llama-bench and llama-batched-bench, built outside the project from
# llama.cpp's public source (any commit with the qwen35 architecture), e.g.
#   cmake --build build --target llama-bench llama-batched-bench
# The models are the project's own, written here: the embedded tiny one and the ~100M
# F32 random one (perf_model --write-tiny / --write-100m). Environment: CPUS (taskset
# list, default 0..THREADS-1), STEPS (decode steps a run, default 32), SIXI_BUILD_ROOT
# (default build). Skips (77) without LLAMA_BIN. About 1 minute a model at 3 pairs on a
# quiet 2-core machine.
set -u
B="${SIXI_BUILD_ROOT:-build}"
WHICH="${1:-both}"
THREADS="${2:-2}"
PAIRS="${3:-3}"
STEPS="${STEPS:-32}"
CPUS="${CPUS:-0-$((THREADS - 1))}"
[ -n "${LLAMA_BIN:-}" ] && [ -x "$LLAMA_BIN/llama-bench" ] && [ -x "$LLAMA_BIN/llama-batched-bench" ] ||
	{ echo "SKIP: set LLAMA_BIN to a folder with llama-bench and llama-batched-bench"; exit 77; }
[ -x "$B/tests/perf_model" ] || { echo "SKIP: $B/tests/perf_model not built"; exit 77; }
case "$WHICH" in tiny) MODELS=tiny ;; 100m) MODELS=100m ;; both) MODELS="tiny 100m" ;;
*) [ -f "$WHICH" ] || { echo "model_vs_llama.sh: unknown model '$WHICH' (tiny, 100m, both or a .gguf file)"; exit 2; }
	MODELS=file ;; esac
T=$(mktemp -d /tmp/sixi-mvl-XXXXXX)
trap 'rm -rf "$T"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "threads $THREADS on CPUs $CPUS, $STEPS decode steps a run, $PAIRS pairs"
echo "sixi:  taskset -c $CPUS perf_model --threads $THREADS --steps $STEPS --model MODEL --json"
echo "llama: taskset -c $CPUS llama-bench -m MODEL -t $THREADS -p 0 -n $STEPS -r 1 -o csv"
echo "       taskset -c $CPUS llama-batched-bench -m MODEL -c 4096 -b 2048 -ub 512 -npp 32 -ntg $STEPS -npl 32 -t $THREADS --output-format jsonl"
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for M in $MODELS; do
	F="$T/$M.gguf"
	if [ "$M" = file ]; then ln -s "$(realpath "$WHICH")" "$F"; M=$(basename "$WHICH")
	elif [ "$M" = tiny ]; then "$B/tests/perf_model" --write-tiny "$F" >/dev/null; else "$B/tests/perf_model" --write-100m "$F" >/dev/null; fi
	[ -s "$F" ] || { echo "could not write the $M model"; exit 1; }
	echo
	echo "## $M ($(wc -c <"$F") bytes)"
	echo
	echo "| pair | sixi single | llama tg$STEPS | ratio | sixi 32 seq | llama B=32 S_TG | ratio |"
	echo "|---:|---:|---:|---:|---:|---:|---:|"
	: >"$T/r1"
	: >"$T/r32"
	i=1
	while [ "$i" -le "$PAIRS" ]; do
		J=$(taskset -c "$CPUS" "$B/tests/perf_model" --threads "$THREADS" --steps "$STEPS" --model "$F" --json)
		S1=$(echo "$J" | sed -n 's/.*"single_tok_s":\([0-9.]*\).*/\1/p')
		S32=$(echo "$J" | sed -n 's/.*"batch32_tok_s":\([0-9.]*\).*/\1/p')
		L1=$(taskset -c "$CPUS" "$LLAMA_BIN/llama-bench" -m "$F" -t "$THREADS" -p 0 -n "$STEPS" -r 1 -o csv 2>/dev/null |
			awk -F'"?,"?' 'NR == 1 {for (k = 1; k <= NF; k++) if ($k == "avg_ts") c = k} NR == 2 {gsub(/"/, "", $c); print $c}')
		L32=$(taskset -c "$CPUS" "$LLAMA_BIN/llama-batched-bench" -m "$F" -c 4096 -b 2048 -ub 512 -npp 32 -ntg "$STEPS" \
			-npl 32 -t "$THREADS" --output-format jsonl 2>/dev/null | sed -n 's/.*"speed_tg": *\([0-9.]*\).*/\1/p')
		[ -n "$S1" ] && [ -n "$S32" ] && [ -n "$L1" ] && [ -n "$L32" ] || { echo "pair $i: a run gave no figure"; exit 1; }
		R1=$(awk -v a="$S1" -v b="$L1" 'BEGIN {printf "%.2f", a / b}')
		R32=$(awk -v a="$S32" -v b="$L32" 'BEGIN {printf "%.2f", a / b}')
		echo "$R1" >>"$T/r1"
		echo "$R32" >>"$T/r32"
		printf '| %d | %.1f | %.1f | %sx | %.1f | %.1f | %sx |\n' "$i" "$S1" "$L1" "$R1" "$S32" "$L32" "$R32"
		i=$((i + 1))
	done
	echo
	echo "$M median ratios: single stream $(median <"$T/r1")x, 32 sequences $(median <"$T/r32")x (load now $(cut -d' ' -f1 /proc/loadavg))"
done
