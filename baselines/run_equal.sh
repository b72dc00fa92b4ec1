#!/usr/bin/env bash
# The equal-work PyTorch baseline on a GPU machine: for each dataset, model and task, exports the
# graph, dumps the CPU reference's tensors, runs torch_equal.py (check, then timing) and prints the CSV.
#
#   baselines/run_equal.sh [-d "aifb mutag"] [-m "rgcn rgat hgt"] [-t "infer train"] [-D 64] [-H 1]
#                          [-M eager,compile] [-r 10] [-w 3] [-T SECONDS] [-o equal.csv] [-k WORKDIR] [-- DATA_DIR]
#
# -H is the heads of rgat and hgt (rgcn always has one). Run from the repository root after
# `make all`; the CSV (one row per dataset, model, task and mode) loads with `explore import`.
# The reference runs on the CPU in float64 and takes a while on the larger graphs. -T limits each
# torch_equal.py run (both modes of one problem; default 600 s): one that runs over is counted as
# failed and named, and the matrix goes on.
set -euo pipefail

datasets="aifb mutag" models="rgcn rgat hgt" tasks="infer train" dims=64 heads=1
modes=eager,compile repeats=10 warmup=3 out=equal.csv work="" tlimit=600
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while getopts "d:m:t:D:H:M:r:w:T:o:k:h" opt; do
    case $opt in
    d) datasets=$OPTARG ;; m) models=$OPTARG ;; t) tasks=$OPTARG ;; D) dims=$OPTARG ;;
    H) heads=$OPTARG ;; M) modes=$OPTARG ;; r) repeats=$OPTARG ;; w) warmup=$OPTARG ;;
    T) tlimit=$OPTARG ;; o) out=$OPTARG ;; k) work=$OPTARG ;; *) usage ;;
    esac
done
shift $((OPTIND - 1))
data_dir=${1:-${RGNN_DATA:-../shared/datasets}}

explore=build/explore
[ -x "$explore" ] || { echo "run_equal.sh: $explore not found; run make all first" >&2; exit 2; }
python=${PYTHON:-python3}
"$python" -c "import numpy, torch" || { echo "run_equal.sh: $python cannot import numpy and torch" >&2; exit 2; }
if [ -z "$work" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

rm -f "$out"
failed=0
for ds in $datasets; do
    npz=$work/$ds.npz
    "$explore" datasets export "$ds" --format npz --out "$npz" --data-dir "$data_dir" >&2
    for model in $models; do
        h=$heads
        [ "$model" = rgcn ] && h=1
        for task in $tasks; do
            dump=$work/$ds-$model-$task-$dims-$h
            echo "== $ds $model $task dims $dims heads $h" >&2
            # --backend ref: the CPU reference alone, so the dump never depends on the GPU's kernels
            "$explore" run --model "$model" --dataset "$ds" --data-dir "$data_dir" --task "$task" \
                --dims "$dims" --heads "$h" --backend ref --dump "$dump" >&2
            rc=0
            timeout "$tlimit" "$python" baselines/torch_equal.py --npz "$npz" --dump "$dump" --dataset "$ds" \
                --modes "$modes" --repeats "$repeats" --warmup "$warmup" --out "$out" --append || rc=$?
            if [ "$rc" -ne 0 ]; then
                failed=$((failed + 1))
                [ "$rc" -eq 124 ] && echo "run_equal.sh: $ds $model $task: over $tlimit s, stopped" >&2
            fi
            rm -rf "$dump"
        done
    done
done
[ -f "$out" ] && cat "$out"
if [ "$failed" -gt 0 ]; then
    echo "run_equal.sh: $failed problem(s) had a mismatch or a failure (see the status and error columns)" >&2
    exit 3
fi
