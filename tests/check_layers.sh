#!/bin/sh
# Fails when a layer includes a layer below it. Usage, from the repository root:
# check_layers.sh DIR... with the layers in order, lowest first (docs/architecture.md's table).
[ $# -gt 0 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
bad=0 rank=0 order=""
for d in "$@"; do order="$order $d"; done
rank_of() { i=0; for d in $order; do [ "$d" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo -1; }
for d in "$@"; do
    mine=$(rank_of "$d")
    for f in "$d"/*.c "$d"/*.h; do
        [ -f "$f" ] || continue
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*/\1/p' "$f" | sort -u); do
            r=$(rank_of "$inc")
            if [ "$r" -gt "$mine" ]; then echo "check_layers: $f (layer $d) includes $inc/, a layer above it"; bad=1; fi
        done
    done
done
[ $bad = 0 ] && echo "check_layers: $# layers, every include goes to its own layer or one below"
exit $bad
