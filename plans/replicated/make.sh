#!/bin/sh
# Session 19 (issue 18): writes plans/replicated/*.space and list.txt: each RGAT and HGT space of
# plans/gather with the three values of scalars (group, lane, replicated) for every traversal that
# has statements a lane can take, forward and backward apart (since session 19 the backward chains'
# gradients are such statements too). Run from the project's root after `make`; measure with
#     LIST=plans/replicated/list.txt plans/gather/run.sh DB [DATASET_PATTERN] [options]
set -eu
out=plans/replicated; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "# Session 19 (issue 18): plans/gather's RGAT and HGT spaces with scalars per traversal (plans/replicated/make.sh)" > $out/list.txt
grep -E "^(rgat|hgt) " plans/gather/list.txt | while read -r model task dataset space; do
    base=$(basename "$space" .space)
    # the space's first value of each key, with scalars=lane, names the traversals the key changes
    config=$(grep -v '^#' "$space" | awk -F': ' 'NF == 2 {split($2, v, " "); printf "%s%s=%s", (n++ ? "," : ""), $1, v[1]}')
    rm -rf "$tmp/gen"
    ./build/explore gen --model "$model" --task "$task" --config "$config,scalars=lane" --out "$tmp/gen" > /dev/null
    kernels=$(grep -l "scalars=lane: [0-9]* statement" "$tmp"/gen/trav_*.cu | xargs -n1 basename | sed 's/\.cu$//' | sort | tr '\n' ' ')
    { echo "# Session 19 (issue 18): $space with the three values of scalars for each traversal that has statements a lane can take: $kernels"
      grep -v '^#' "$space" | grep -v '^scalars:'
      for k in $kernels; do echo "$k.scalars: group lane replicated"; done; } > "$out/$base.space"
    echo "$model $task $dataset $out/$base.space" >> $out/list.txt
done
