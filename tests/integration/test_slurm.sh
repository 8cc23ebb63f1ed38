#!/bin/sh
# test_slurm.sh — harness/slurm on a real single-node Slurm: munged with a key made here,
# slurmctld and slurmd on 127.0.0.1 (free ports, state in a temp dir, no cgroups), both in
# the foreground and stopped by PID. A 4-shard eval against a real sixi-server (tiny model,
# temperature 0.9 with seeded sampling: --sample-seed) is submitted with harness/slurm/submit.sh; the merged DB's per-task pass counts
# must equal an unsharded run's. Skips (77) with the reason where Slurm cannot start.
set -eu
SRC=${SIXI_SOURCE_ROOT:-.}
B=${SIXI_BUILD_ROOT:-build}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to run slurmd and munged"
for p in slurmctld slurmd munged sbatch squeue sqlite3; do
	command -v "$p" >/dev/null 2>&1 || skip "$p is missing (apt-get install slurm-wlm munge sqlite3)"
done
"$B/src/sixi-eval" run --help 2>&1 | grep -q -- '--shard' || skip "this sixi-eval has no --shard"
"$B/src/sixi-eval" merge --help >/dev/null 2>&1 || skip "this sixi-eval has no merge command"
T=$(mktemp -d /tmp/sixi-slurm-XXXXXX)
chmod 755 "$T"
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/server_lib.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
logs() { for f in "$T"/*.log; do echo "== $f"; tail -20 "$f"; done; }

# munge with its own key and socket
mkdir -p "$T/munge" "$T/spool" "$T/state" "$T/shards"
dd if=/dev/urandom of="$T/munge/key" bs=1024 count=1 2>/dev/null
chmod 700 "$T/munge"; chmod 400 "$T/munge/key"
SOCK="$T/munge/sock"
munged -F --key-file="$T/munge/key" --socket="$SOCK" --pid-file="$T/munge/pid" \
	--seed-file="$T/munge/seed" --log-file="$T/munged.log" --force 2>>"$T/munged.log" &
PIDS="$PIDS $!"
i=0; until [ -S "$SOCK" ]; do i=$((i + 1)); [ $i -lt 100 ] || { logs; skip "munged did not start"; }; sleep 0.1; done

CPORT=$(free_port); DPORT=$(free_port)
NODE=$(hostname -s)
CPUS=$(nproc)
cat >"$T/slurm.conf" <<CONF
ClusterName=sixitest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CPORT
SlurmdPort=$DPORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$T/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" -L "$T/slurmctld.log" >>"$T/slurmctld.log" 2>&1 &
PIDS="$PIDS $!"
slurmd -D -f "$SLURM_CONF" -N "$NODE" -L "$T/slurmd.log" >>"$T/slurmd.log" 2>&1 &
PIDS="$PIDS $!"
i=0
until sinfo -h -o %T 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; do
	i=$((i + 1)); [ $i -lt 300 ] || { logs; skip "slurmctld/slurmd did not bring the node up"; }; sleep 0.2
done

# a real sixi-server with the tiny model
"$B/src/sixi-server" --write-tiny "$T/tiny.gguf"
"$B/src/sixi-server" --model "$T/tiny.gguf" --parallel 8 --context 1024 --threads 1 --host 127.0.0.1 \
	--port 0 --port-file "$T/port" 2>"$T/server.log" &
PIDS="$PIDS $!"
i=0
until http_get "http://127.0.0.1:$(cat "$T/port" 2>/dev/null || echo 1)/health" | grep -q '"ok"'; do
	i=$((i + 1)); [ $i -lt 300 ] || { logs; exit 1; }; sleep 0.1
done
URL="http://127.0.0.1:$(cat "$T/port")"
EVAL=$(cd "$B/src" && pwd)/sixi-eval
ARGS="--url $URL --model tiny --dataset $(cd "$SRC/datasets/demo" && pwd) --repeats 2 --temperature 0.9 --sample-seed 11 --max-tokens 64 --no-preflight"

# shellcheck disable=SC2086
timeout 300 "$EVAL" run $ARGS --db "$T/whole.db" >"$T/whole.log" 2>&1 || { logs; exit 1; }
out=$(SIXI_EVAL=$EVAL "$SRC/harness/slurm/submit.sh" 4 "$T/shards" -- $ARGS) || { logs; exit 1; }
merge=${out##* }
i=0
while squeue -h -j "$merge" 2>/dev/null | grep -q .; do
	i=$((i + 1)); [ $i -lt 1200 ] || { logs; echo "FAIL: merge job $merge not done in 240 s"; exit 1; }; sleep 0.2
done
[ -f "$T/shards/merged.db" ] || { logs; echo "FAIL: no merged DB"; exit 1; }
q='SELECT task_id, SUM(pass) FROM eval_rows GROUP BY task_id ORDER BY task_id;'
sqlite3 "$T/whole.db" "$q" >"$T/whole.txt"
sqlite3 "$T/shards/merged.db" "$q" >"$T/merged.txt"
[ -s "$T/whole.txt" ] || { echo "FAIL: the unsharded run has no rows"; exit 1; }
if ! cmp -s "$T/whole.txt" "$T/merged.txt"; then
	echo "FAIL: per-task pass counts differ (unsharded < > merged)"; diff "$T/whole.txt" "$T/merged.txt" || true; exit 1
fi
# seeded sampling: every reply is the unsharded run's, and the merged run is complete
r='SELECT repeat_index, task_id, attempt, raw_sha256 FROM eval_rows ORDER BY 1, 2, 3;'
[ "$(sqlite3 "$T/whole.db" "$r")" = "$(sqlite3 "$T/shards/merged.db" "$r")" ] ||
	{ echo "FAIL: the merged replies differ from the unsharded run's"; exit 1; }
[ "$(sqlite3 "$T/shards/merged.db" 'SELECT status FROM runs WHERE id = 1;')" = done ] ||
	{ echo "FAIL: the merged run is not marked done"; exit 1; }
echo "ok: $(wc -l <"$T/whole.txt") tasks, merged pass counts equal the unsharded run's"
