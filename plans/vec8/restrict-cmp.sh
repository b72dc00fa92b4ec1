#!/bin/sh
# Session 22 (issue 18): whether dropping __restrict__ from the buffers a traversal writes changed the machine
# code of the stored bests' kernels. Generates each best's traversals at this commit, puts __restrict__ back on
# the written buffers (what the kernels had before 90b5f5d), compiles both with nvcc for sm_90 and compares the
# cubins (no GPU needed). Usage: plans/vec8/restrict-cmp.sh [OUTDIR]
out=${1:-/tmp/restrict-cmp}
rm -rf "$out" && mkdir -p "$out" || exit 1
gen() { ./build/explore gen --model "$1" --task "$2" --config "$3" --out "$out/$4" > /dev/null || echo "gen failed: $4"; }
gen rgat infer compact=direct,reorder=on,tile=64,coarsen=4,trav=node,pagg=on,softmax=single,mma=bf16,lanes=8,tblock=128,relabel=degree,store=bf16,acc=reg,scalars=lane,nchunk=256,epi=on rgat-infer
gen hgt infer compact=direct,reorder=on,tile=64,coarsen=4,trav=edge,pagg=on,softmax=single,mma=bf16,lanes=8,tblock=128,relabel=degree,store=bf16,acc=reg,scalars=replicated,epi=on hgt-infer
gen rgcn infer compact=direct,reorder=on,tile=64,coarsen=4,trav=edge,pagg=on,mma=bf16,lanes=8,tblock=128,relabel=degree,store=bf16,acc=reg rgcn-infer
gen rgat train compact=direct,reorder=on,tile=64,coarsen=4,trav=edge,pagg=on,softmax=single,mma=bf16,tblock=128,relabel=degree,store=bf16,wrun=128,crsum=run,recompute=on,trav_10_bwd.lanes=16,trav_10_bwd.scalars=replicated,trav_4.lanes=8,trav_4.acc=reg,trav_4.scalars=lane,trav_9_bwd.lanes=16 rgat-train
gen hgt train compact=direct,reorder=on,tile=64,coarsen=4,trav=edge,pagg=on,softmax=single,mma=bf16,tblock=128,relabel=degree,store=bf16,wrun=128,crsum=run,recompute=on,trav_11_bwd.vec=4,trav_11_bwd.lanes=16,trav_12_bwd.acc=reg,trav_12_bwd.scalars=replicated,trav_6.lanes=16,trav_6.scalars=lane hgt-train
for f in "$out"/*/trav_*.cu; do
    case "$f" in *.restrict.cu) continue ;; esac
    old="${f%.cu}.restrict.cu"
    sed -E 's/^(    )([a-z_0-9]+)\* (v[0-9]+ \/\*)/\1\2* __restrict__ \3/' "$f" > "$old"
    nvcc -arch=sm_90 -cubin -o "${f%.cu}.cubin" "$f" 2> /dev/null && nvcc -arch=sm_90 -cubin -o "${old%.cu}.cubin" "$old" 2> /dev/null ||
        { echo "$f: nvcc failed"; continue; }
    if cmp -s "${f%.cu}.cubin" "${old%.cu}.cubin"; then echo "identical  $f"; else echo "different  $f"; fi
done
