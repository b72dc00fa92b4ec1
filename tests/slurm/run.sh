#!/bin/sh
# Runs the nightly sweep under a real Slurm: starts a one-node slurmctld + slurmd on localhost
# (configuration, state and logs in a temp dir), submits `explore sweep --plan` twice as a job
# array (the simulated backend, two "nights"), merges the shard stores, runs `explore compare`
# and checks the counts against the same plan swept without Slurm. The daemons stop at exit.
# Usage: sh tests/slurm/run.sh   (as root; `make deps-slurm` installs Slurm; needs build/explore)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
explore="$root/build/explore"
tasks=3                  # array tasks = shards; the plan below has 3 jobs, one per shard
limit=${SLURM_TEST_TIMEOUT:-120}    # seconds for the daemons to come up and for each array

say() { echo "slurm test: $*"; }
die() { echo "slurm test: FAILED: $*" >&2; exit 1; }
[ -x "$explore" ] || { echo "slurm test: $explore is missing: run make first" >&2; exit 2; }
for c in slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
    command -v "$c" >/dev/null || { echo "slurm test: $c not found: run make deps-slurm" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "slurm test: slurmd must run as root" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rgnn-slurm.XXXXXX")
ctld=""; slurmd=""
stop() {
    [ -n "$ctld" ] && scancel --quiet --user=root 2>/dev/null || true
    for p in $slurmd $ctld; do kill "$p" 2>/dev/null || true; done
    for p in $slurmd $ctld; do wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------ the cluster ----
host=$(hostname -s)
port=$((20000 + $$ % 20000))   # this run's ports, so that two runs do not meet
mkdir -p "$tmp/state" "$tmp/spool"
export SLURM_CONF="$tmp/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=rgnntest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
# no systemd, no cgroups in a container: track job processes through /proc
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.out" 2>&1 & ctld=$!
slurmd -D -f "$SLURM_CONF" -N "$host" >"$tmp/slurmd.out" 2>&1 & slurmd=$!

logs() { for f in "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/*.out; do [ -f "$f" ] && { echo "== $f"; tail -n 20 "$f"; }; done; }
# Waits until the command succeeds, up to $limit seconds.
wait_for() {
    t=0
    until "$@" >/dev/null 2>&1; do
        t=$((t + 1)); [ "$t" -le "$limit" ] || return 1; sleep 1
    done
}
node_idle() { [ "$(sinfo -h -n "$host" -o %t 2>/dev/null)" = idle ]; }
wait_for node_idle || { logs; die "node $host not idle after ${limit}s"; }
say "slurmctld and slurmd up on $host (ports $port, $((port + 1)))"

# ------------------------------------------------------------ the nightly ----
cat >"$tmp/plan.txt" <<EOF
models: rgcn, rgat, hgt
datasets: synth:aifb
tasks: infer
EOF
# The README's nightly script, with the simulated backend instead of a GPU. A real night's shards
# share the default group (plan and night); the test's two "nights" run minutes apart, so each
# names its group (sbatch passes the environment to the tasks).
cat >"$tmp/nightly.sbatch" <<EOF
#!/bin/sh
#SBATCH --array=0-$((tasks - 1))
#SBATCH --output=slurm-%A_%a.out
"$explore" sweep --plan "$tmp/plan.txt" --backend sim --no-progress \${NIGHT_GROUP:+--group "\$NIGHT_GROUP"}
EOF
array_done() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }
night() {
    mkdir -p "$tmp/$1"
    job=$(cd "$tmp/$1" && NIGHT_GROUP=$1 sbatch --parsable "$tmp/nightly.sbatch") || { logs; die "sbatch refused the array"; }
    wait_for array_done "$job" || { squeue; logs; die "array $job not done after ${limit}s"; }
    for i in $(seq 0 $((tasks - 1))); do
        state=$(scontrol -o show job "${job}_$i" | sed -n 's/.*JobState=\([A-Z_]*\).*ExitCode=\([0-9:]*\).*/\1 \2/p')
        [ "$state" = "COMPLETED 0:0" ] || { cat "$tmp/$1"/slurm-*; die "task ${job}_$i: '$state'"; }
        grep -q "shard $i/$tasks from SLURM_ARRAY_TASK_ID" "$tmp/$1/slurm-${job}_$i.out" ||
            die "task ${job}_$i did not take its shard from Slurm"
        [ -f "$tmp/$1/results/results.shard-$i-of-$tasks.db" ] || die "task ${job}_$i wrote no shard store"
    done
    say "$1: array $job, $tasks tasks completed"
}
night night1
night night2
"$explore" merge --into "$tmp/merged.db" "$tmp"/night1/results/results.shard-*.db \
    "$tmp"/night2/results/results.shard-*.db >"$tmp/merge.out" || { cat "$tmp/merge.out"; die "merge failed"; }

# ------------------------------------------------------------ the checks ----
# The same plan swept without Slurm, to know how many rows to expect.
(cd "$tmp" && "$explore" sweep --plan plan.txt --backend sim --no-progress --db "$tmp/alone.db" >/dev/null 2>&1) ||
    die "the sweep without Slurm failed"
rows() { "$explore" export --db "$1" --format csv | awk 'NR > 1 && $0 ~ /(^|,)ok(,|$)/' | wc -l; }
runs() { grep -o '[0-9]* runs added' "$tmp/merge.out" | awk '{ n += $1 } END { print n }'; }
alone=$(rows "$tmp/alone.db"); merged=$(rows "$tmp/merged.db")
[ "$alone" -gt 0 ] || die "the plan measured nothing"
[ "$merged" -eq $((2 * alone)) ] || die "merged store has $merged ok rows, want 2 x $alone"
[ "$(runs)" -eq $((2 * tasks)) ] || die "merge added $(runs) runs, want $((2 * tasks))"
say "merged store: $((2 * tasks)) runs, $merged ok measurements (2 x $alone, as without Slurm)"

rc=0
"$explore" compare --db "$tmp/merged.db" >"$tmp/compare.out" 2>&1 || rc=$?
sed 's/^/    /' "$tmp/compare.out"
[ "$rc" -eq 0 ] || die "explore compare exited $rc"
grep -q '^0 regressions, 0 failed, 0 improvements, [1-9][0-9]* unchanged, 0 missing in head, 0 new in head' \
    "$tmp/compare.out" || die "compare did not find night 2 unchanged against night 1 on every problem"
say "passed"
