#!/bin/bash
# long_run.sh — runs every libFuzzer target of a build for SECONDS each and
# reports, per target: wall seconds, CPU seconds, executions, size of the merged
# corpus and crashes found.
#
#   tests/fuzz/long_run.sh SECONDS [JOBS] [OUT]
#
# SECONDS  fuzzing time per target (e.g. 1800 for half an hour)
# JOBS     parallel fuzzing processes per target (libFuzzer -fork; default 1)
# OUT      output folder (default fuzz-long-<date>): OUT/<target>/work holds the inputs
#          found, OUT/<target>/corpus the seeds and those inputs merged (minimised),
#          OUT/<target>/crashes the reproducers, OUT/<target>/log the fuzzer's output,
#          OUT/summary.tsv the table. The committed seeds (tests/fuzz/corpus) are only read.
# BUILD    environment: the build folder (default build); its tests/fuzz_<name> programs
#          are the targets (built when clang is found; `ninja -C build` first).
# TARGETS  environment: a space-separated subset (default: every target built).
set -u
if [ $# -lt 1 ] || ! [ "$1" -gt 0 ] 2>/dev/null; then
	echo "usage: $0 SECONDS [JOBS] [OUT]   (e.g. $0 1800 2)" >&2
	exit 2
fi
secs=$1
jobs=${2:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
out=${3:-fuzz-long-$(date -u +%Y%m%dT%H%M%SZ)}
if ! [ "$jobs" -ge 1 ] 2>/dev/null; then
	echo "$0: JOBS must be a positive integer (got '$jobs')" >&2
	exit 2
fi
if [ -z "${TARGETS:-}" ]; then
	TARGETS=$(cd "$build/tests" 2>/dev/null && ls fuzz_* 2>/dev/null | grep -v -e '_replay$' -e '\.' | sed 's/^fuzz_//' | tr '\n' ' ')
fi
if [ -z "$TARGETS" ]; then
	echo "$0: no libFuzzer targets in $build/tests; configure with clang installed and run ninja -C $build" >&2
	exit 1
fi
mkdir -p "$out"
printf 'target\twall_s\tcpu_s\texecs\tcorpus\tcrashes\n' > "$out/summary.tsv"
printf '%-10s %8s %8s %12s %8s %8s\n' target wall_s cpu_s execs corpus crashes
status=0
for t in $TARGETS; do
	exe=$build/tests/fuzz_$t
	seeds=$root/tests/fuzz/corpus/$t
	if [ ! -x "$exe" ]; then
		echo "$0: $exe is not built; skipped" >&2
		status=1
		continue
	fi
	d=$out/$t
	mkdir -p "$d/work" "$d/corpus" "$d/crashes"
	[ -d "$seeds" ] || seeds=
	mode=()
	[ "$jobs" -gt 1 ] && mode=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
	start=$(date +%s.%N)
	# the fuzzer in a child shell so that `times` gives its CPU time (user + system)
	cpu=$(bash -c '"$@" > "'"$d/log"'" 2>&1; times' _ "$exe" "${mode[@]}" -max_total_time="$secs" -rss_limit_mb=2048 \
		-artifact_prefix="$d/crashes/" -print_final_stats=1 "$d/work" $seeds |
		awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.1f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
	end=$(date +%s.%N)
	wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	# executions: the last "#N" progress line (plain and fork mode), or the final stats
	execs=$(grep -o -E '^#[0-9]+' "$d/log" | tail -n 1 | tr -d '#')
	fin=$(grep -o -E 'stat::number_of_executed_units: [0-9]+' "$d/log" | awk '{ n += $2 } END { if (NR) print n }')
	[ -n "$fin" ] && [ "$jobs" -eq 1 ] && execs=$fin
	"$exe" -merge=1 "$d/corpus" $seeds "$d/work" > "$d/merge.log" 2>&1
	corpus=$(find "$d/corpus" -type f | wc -l)
	crashes=$(find "$d/crashes" -type f | wc -l)
	[ "$crashes" -gt 0 ] && status=1
	printf '%-10s %8s %8s %12s %8s %8s\n' "$t" "$wall" "$cpu" "${execs:-?}" "$corpus" "$crashes"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$wall" "$cpu" "${execs:-?}" "$corpus" "$crashes" >> "$out/summary.tsv"
done
echo "long_run: results in $out (summary.tsv; reproducers in <target>/crashes)"
exit $status
