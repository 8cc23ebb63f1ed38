#!/bin/sh
# cuda_vs_llama.sh — decode tokens/s of sixi's CUDA engine against llama.cpp's CUDA backend on
# the same GGUF files, on one GPU: random models of Qwen3.5-0.8B's, 9B's and 35B-A3B's shapes and
# moe-small (35B-A3B's widths, 8 layers) (tests/perf/shapes.h, the real 248320-token vocabulary)
# written by perf_model --write-shape, BF16, Q8_0 and Q4_K_M matrices (q4_k_m: llama-quantize's
# mixture of Q4_K and Q6_K as perf_model --type q4_k_m writes it, model/tiny.h; llama.cpp reads the
# same file). Disk: 35b-a3b takes ~37 GB as Q8_0 and ~69 GB as BF16 (more than a 64 GB disk
# holds: run it with TYPES q8_0); moe-small ~8 and ~15 GB.
#
#   LLAMA_BIN=/path/to/llama.cpp/build/bin tests/perf/cuda_vs_llama.sh [SHAPES] [TYPES]
#
# SHAPES: comma-separated 0.8b, 9b, 35b-a3b, moe-small (default 0.8b,9b); TYPES: bf16, q8_0,
# q4_k_m (default bf16,q8_0,q4_k_m).
# LLAMA_BIN holds llama-bench and llama-batched-bench built with CUDA outside the project from
# llama.cpp's public source (any commit with the qwen35 architecture), e.g.
#   cmake -B b -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build b --target llama-bench llama-batched-bench
# This script never builds it. Environment: STREAMS (default 1,8,32), STEPS (decode steps a run,
# default 64), MODEL_DIR (where the GGUFs go; kept and reused when given, else a temporary
# folder removed at the end), SIXI_BUILD_ROOT (default build). Skips (77) without LLAMA_BIN
# or without the CUDA build.
#
# What is compared, per file and stream count S (every stream a 16-token prompt, then STEPS
# decode steps of one token each, every token's logits copied to the host on both sides):
#   sixi:  perf_cuda_engine gguf FILE STREAMS STEPS — the engine interface the server's
#          scheduler calls (no HTTP, no sampling), aggregate tok/s of the decode passes;
#   llama: llama-batched-bench -npp 16 -ntg STEPS -npl STREAMS, S_TG (aggregate decode tok/s);
#          at one stream also llama-bench -p 0 -n STEPS (tg from an empty context).
# Ratio = sixi / llama.cpp (batched-bench at the same S). llama.cpp keeps its KV cache in F16,
# sixi in F32; both run flash attention or its equivalent as they choose by default.
set -u
B="${SIXI_BUILD_ROOT:-build}"
SHAPES=$(echo "${1:-0.8b,9b}" | tr ',' ' ')
TYPES=$(echo "${2:-bf16,q8_0,q4_k_m}" | tr ',' ' ')
STREAMS="${STREAMS:-1,8,32}"
STEPS="${STEPS:-64}"
[ -n "${LLAMA_BIN:-}" ] && [ -x "$LLAMA_BIN/llama-bench" ] && [ -x "$LLAMA_BIN/llama-batched-bench" ] ||
	{ echo "SKIP: set LLAMA_BIN to a folder with llama-bench and llama-batched-bench (built with CUDA)"; exit 77; }
[ -x "$B/src/cuda/perf_cuda_engine" ] && [ -x "$B/tests/perf_model" ] ||
	{ echo "SKIP: $B/src/cuda/perf_cuda_engine (a CUDA build) or $B/tests/perf_model not built"; exit 77; }
for s in $SHAPES; do case "$s" in 0.8b|9b|35b-a3b|moe-small) ;; *) echo "cuda_vs_llama.sh: unknown shape '$s' (0.8b, 9b, 35b-a3b or moe-small)"; exit 2 ;; esac; done
for t in $TYPES; do case "$t" in bf16|q8_0|q4_k_m) ;; *) echo "cuda_vs_llama.sh: unknown type '$t' (bf16, q8_0 or q4_k_m)"; exit 2 ;; esac; done
case "$STREAMS" in *[!0-9,]*|'') echo "cuda_vs_llama.sh: STREAMS is a comma-separated list of counts"; exit 2 ;; esac
if [ -n "${MODEL_DIR:-}" ]; then
	D="$MODEL_DIR"
	mkdir -p "$D" || exit 1
else
	D=$(mktemp -d "${TMPDIR:-/tmp}/sixi-cvl-XXXXXX") || exit 1
	trap 'rm -rf "$D"' EXIT
fi
MAXS=$(echo "$STREAMS" | tr ',' '\n' | sort -n | tail -1)
CTX=$((MAXS * (16 + STEPS) + 256))
echo "streams $STREAMS, 16-token prompts, $STEPS decode steps a run"
echo "sixi:  perf_cuda_engine gguf FILE $STREAMS $STEPS"
echo "llama: llama-bench -m FILE -ngl 99 -p 0 -n $STEPS -r 3 -o csv"
echo "       llama-batched-bench -m FILE -ngl 99 -c $CTX -b 2048 -ub 512 -npp 16 -ntg $STEPS -npl $STREAMS --output-format jsonl"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
echo
echo "| model | streams | sixi tok/s | llama.cpp tok/s (batched-bench S_TG) | ratio | llama-bench tg$STEPS |"
echo "|---|---:|---:|---:|---:|---:|"
fail=0
for s in $SHAPES; do
	for t in $TYPES; do
		F="$D/$s-$t.gguf"
		if [ ! -s "$F" ]; then
			"$B/tests/perf_model" --write-shape "$s" "$F" --type "$t" >/dev/null || { echo "could not write $F"; exit 1; }
		fi
		SX=$("$B/src/cuda/perf_cuda_engine" gguf "$F" "$STREAMS" "$STEPS") || { echo "| $s $t | sixi failed |"; fail=1; continue; }
		LB=$("$LLAMA_BIN/llama-bench" -m "$F" -ngl 99 -p 0 -n "$STEPS" -r 3 -o csv 2>/dev/null |
			awk -F'"?,"?' 'NR == 1 {for (k = 1; k <= NF; k++) if ($k == "avg_ts") c = k} NR == 2 {gsub(/"/, "", $c); print $c}')
		LJ=$("$LLAMA_BIN/llama-batched-bench" -m "$F" -ngl 99 -c "$CTX" -b 2048 -ub 512 -npp 16 -ntg "$STEPS" \
			-npl "$STREAMS" --output-format jsonl 2>/dev/null)
		for S in $(echo "$STREAMS" | tr ',' ' '); do
			X=$(echo "$SX" | sed -n "s/^gguf streams=$S ms_per_pass=[0-9.]* tok_s=\([0-9.]*\)$/\1/p")
			L=$(echo "$LJ" | sed -n "s/.*\"pl\": *$S,.*\"speed_tg\": *\([0-9.]*\),.*/\1/p" | head -1)
			[ -n "$X" ] && [ -n "$L" ] || { echo "| $s $t | $S | a run gave no figure (sixi '$X', llama '$L') |"; fail=1; continue; }
			R=$(awk -v a="$X" -v b="$L" 'BEGIN {printf "%.2f", a / b}')
			T1=""
			[ "$S" = 1 ] && T1="${LB:-?}"
			echo "| $s $t | $S | $X | $L | ${R}x | $T1 |"
		done
	done
done
exit $fail
