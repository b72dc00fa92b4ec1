#!/bin/bash
# Session 33 (issue 18): what the running maximum is for. With the input features drawn from U(-S, S) the attention
# logits grow with S (RGAT's linearly, HGT's as S^2) while the float64 reference stays finite; where exp(logit)
# passes float32's range (logits above 88), the float32 aggregation of rmax=off overflows and rmax=on does not.
# Each line validates one variant on aifb (explore run --validate-only; dims 32 x heads, 2 or 4 heads, so that the
# merge of split destinations rescales per head); the outcomes go to $OUT/rmax-demo.txt.
# Run after plans/h100/device.sh has built (GPU machine, .dev carried).
set -u
. .dev/device/use-debs.sh
N="compact=direct,reorder=on,tile=64,coarsen=4,trav=node,softmax=single,lanes=8,nchunk=4,epi=on"
F32="acc=reg32,scalars=lane,farith=f32"
F64="acc=reg,scalars=lane,farith=f64"
while read -r model scale arith heads; do
    for rmax in off on; do
        cfg="$N,${!arith},rmax=$rmax"
        out=$(build/explore run --model "$model" --dataset aifb --data-dir .dev/datasets --dims "$((32 * heads))" --heads "$heads" \
              --input-scale "$scale" --config "$cfg" --validate-only 2>&1)
        line=$(echo "$out" | grep -A1 '^status:' | tr '\n' ' ' | cut -c1-300)
        echo "$model heads=$heads S=$scale $arith rmax=$rmax: ${line:-$(echo "$out" | tail -1)}" | tee -a "$OUT/rmax-demo.txt"
    done
done <<'LIST'
rgat 1 F32 2
rgat 100 F32 2
rgat 100 F64 2
rgat 1 F32 4
hgt 1 F32 2
hgt 10 F32 2
hgt 10 F64 2
hgt 1 F32 4
LIST
