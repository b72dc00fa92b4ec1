#!/bin/bash
# Session 28 (issue 18): the three-stage search of one problem (plans/small/README.md), on a machine with a GPU.
# Stage 1 sweeps the structures under one uniform schedule, stage 2 the GEMMs' and then the traversals' schedule
# keys around the per-kernel best of stage 1, and the per-kernel combination of everything measured
# (explore perkernel) is measured last, twice, beside its launch as one CUDA graph (launch=graph, dag) and a
# reference configuration, in the same invocation order.
#
#   plans/small/search.sh MODEL TASK DATASET [options]
#     --db FILE        the store the stages write (default results/search-MODEL-TASK.db); the combined config
#                      and the reference go to FILE with -final before .db
#     --data-dir DIR   dataset directory (passed to explore)
#     --wide           stage 1 from plans/small/MODEL-TASK-s1w.space and the traversal axes from
#                      trav-[MODEL-]TASK-w.axes (reordering, softmax and tensor cores free; nchunk 16 too)
#     --ref FILE       the reference configuration (default plans/small/MODEL-TASK-ref.cfg; none if absent)
#     --label L        the commit label recorded with every row (default: git rev-parse --short HEAD)
#     --spaces DIR     where the generated stage-2 spaces go (default a temporary directory)
#     --explore BIN    the explore binary (default build/explore)
set -u
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
[ $# -ge 3 ] || usage
M=$1 T=$2 D=$3; shift 3
DB=results/search-$M-$T.db DATA_DIR="" WIDE="" REF=plans/small/$M-$T-ref.cfg LABEL="" SPACES="" EXPLORE=build/explore
while [ $# -gt 0 ]; do
  case $1 in
    --db) DB=$2; shift 2 ;;
    --data-dir) DATA_DIR=$2; shift 2 ;;
    --wide) WIDE=-w; shift ;;
    --ref) REF=$2; shift 2 ;;
    --label) LABEL=$2; shift 2 ;;
    --spaces) SPACES=$2; shift 2 ;;
    --explore) EXPLORE=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "search.sh: unknown option $1" >&2; usage ;;
  esac
done
HERE=$(dirname "$0")
S1=$HERE/$M-$T-s1${WIDE:+w}.space
[ -f "$S1" ] || { echo "search.sh: no stage-1 space $S1 for $M $T" >&2; exit 2; }
AX=$HERE/trav-$M-$T$WIDE.axes
[ -f "$AX" ] || AX=$HERE/trav-$T$WIDE.axes
[ -f "$AX" ] || { echo "search.sh: no traversal axes for $M $T ($AX)" >&2; exit 2; }
[ -x "$EXPLORE" ] || { echo "search.sh: $EXPLORE is not built (make all)" >&2; exit 2; }
[ -n "$LABEL" ] || LABEL=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$SPACES" ] || SPACES=$(mktemp -d)
mkdir -p "$SPACES"
FINAL_DB=${DB%.db}-final.db
DD=(); [ -n "$DATA_DIR" ] && DD=(--data-dir "$DATA_DIR")
SP=$SPACES/$M-$T-$D

say() { echo "search.sh: $*" >&2; }
sweep() {   # db space [extra explore options]: a failing sweep is reported, never fatal
  local db=$1 space=$2; shift 2
  "$EXPLORE" --model "$M" --task "$T" --dataset "$D" --space "$space" "${DD[@]}" --exhaustive --no-cost-model \
      --commit "$LABEL" --no-progress "$@" --db "$db" > "$SPACES/$(basename "$space").log" 2>&1 ||
      say "explore exited $? on $space (see $SPACES/$(basename "$space").log)"
}
combined() { "$EXPLORE" perkernel --db "$DB" --model "$M" --task "$T" --dataset "$D" "${DD[@]}" --emit-config 2>/dev/null | tail -1; }
# "k=v,..." [axes]: a space of the config's keys, overrides dropped and the axes' keys replaced by the axes
cfg2space() {
  local swept=""; [ -n "${2:-}" ] && swept=$(grep -v '^#' "$2" | cut -d: -f1 | tr '\n' ' ')
  echo "$1" | tr ',' '\n' | while IFS== read -r k v; do
    case "$k" in *.*) [ -z "${2:-}" ] && echo "$k: $v"; continue ;; esac
    case " $swept " in *" $k "*) ;; *) echo "$k: $v" ;; esac
  done
  [ -n "${2:-}" ] && grep -v '^#' "$2"
  return 0
}

say "stage 1: $S1"
sweep "$DB" "$S1"
C1=$(combined)
[ -n "$C1" ] || { say "stage 1 left nothing to combine"; exit 1; }
cfg2space "$C1" "$HERE/gemm.axes" > "$SP-s2g.space"
cfg2space "$C1" "$AX" > "$SP-s2t.space"
say "stage 2: the GEMMs' schedules ($SP-s2g.space)"
sweep "$DB" "$SP-s2g.space"
say "stage 2: the traversals' schedules ($SP-s2t.space)"
sweep "$DB" "$SP-s2t.space"
C2=$(combined)
[ -n "$C2" ] || { say "stage 2 left nothing to combine"; exit 1; }
"$EXPLORE" perkernel --db "$DB" --model "$M" --task "$T" --dataset "$D" "${DD[@]}" > "$SP-perkernel.txt" 2>&1
cfg2space "$C2" > "$SP-final.space"
# the same kernels launched as one CUDA graph, in plan order and as the plan's dependency DAG (launch)
{ cfg2space "$C2" | grep -v '^launch:'; echo "launch: graph dag"; } > "$SP-launch.space"
[ -f "$REF" ] && cfg2space "$(cat "$REF")" > "$SP-ref.space"
for r in 1 2; do
  say "combined config, measurement $r of 2"
  sweep "$FINAL_DB" "$SP-final.space" --no-resume --repeats 30
  sweep "$FINAL_DB" "$SP-launch.space" --no-resume --repeats 30 --rank span   # its log ranks graph and dag by the span
  [ -f "$REF" ] && sweep "$FINAL_DB" "$SP-ref.space" --no-resume --repeats 30
done
echo "$C2"
