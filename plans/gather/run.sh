#!/bin/sh
# Session 17 (issue 18): each problem's stored best configs (plans/gather/list.txt: model, task,
# dataset, space file), measured at one commit with the gather floor (docs/floor.md) into one store.
# Usage: [LIST=plans/scalars/list.txt] plans/gather/run.sh DB [DATASET_PATTERN] [extra explore options...]
db=${1:?usage: plans/gather/run.sh DB [DATASET_PATTERN] [options]}; pat=${2:-.}; shift; [ $# -gt 0 ] && shift
grep -v "^#" "${LIST:-plans/gather/list.txt}" | while read -r model task dataset space; do
    echo "$dataset" | grep -Eq "$pat" || continue
    ./build/explore --model "$model" --task "$task" --dataset "$dataset" --space "$space" --exhaustive \
        --no-cost-model --db "$db" --no-progress "$@" || echo "explore failed: $model $task $dataset $space"
done
