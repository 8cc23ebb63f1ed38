#!/bin/sh
# Submit N shards of one sixi-eval run and the merge that waits for all of them.
#   submit.sh N SHARD_DIR -- SIXI-EVAL-RUN-ARGS...
# Extra sbatch options (partition, account, time) go in SIXI_SBATCH_OPTS.
set -eu
usage() { echo "usage: submit.sh N SHARD_DIR -- sixi-eval run arguments..." >&2; exit 2; }
[ $# -ge 4 ] || usage
n=$1 dir=$2
[ "$3" = "--" ] || usage
shift 3
case $n in ''|*[!0-9]*) echo "submit.sh: N must be a positive integer, got '$n'" >&2; exit 2;; esac
[ "$n" -ge 1 ] || { echo "submit.sh: N must be at least 1" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
SIXI_SHARD_DIR=$dir SIXI_SHARDS=$n SIXI_EVAL_ARGS="$*"
export SIXI_SHARD_DIR SIXI_SHARDS SIXI_EVAL_ARGS
# shellcheck disable=SC2086
array=$(sbatch --parsable --export=ALL ${SIXI_SBATCH_OPTS:-} --array=0-$((n - 1)) \
	--output="$dir/shard-%a.log" "$here/shard.sbatch")
array=${array%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable --export=ALL ${SIXI_SBATCH_OPTS:-} --dependency=afterok:"$array" \
	--output="$dir/merge.log" "$here/merge.sbatch")
merge=${merge%%;*}
echo "array $array merge $merge"
