#!/usr/bin/env python3
# Session 28 (nchunk 16 -> 8 since session 29, 8 -> 4 since session 32): a space around a combined config where each key at the end of what the stages measured
# also takes the next valid value (plans/small/README.md): `edges.py CONFIG > FILE.space`.
import sys

# key -> {winning value: the next value outward}; keys at a value with no valid next one are left
# alone (lanes 32 is a whole warp; coarsen 1, vec 1 and lanes 4 are the smallest values).
NEXT = {
    "tile": {"32": "16", "128": None},
    "coarsen": {"4": "8"},
    "vec": {"4": "8"},
    "wrun": {"8": "4", "128": "512"},
    "nchunk": {"8": "4", "16": "8", "64": "16", "1024": "4096"},
}

def main():
    cfg = sys.argv[1].strip()
    print("# edges of " + cfg[:200])
    for kv in cfg.split(","):
        k, v = kv.split("=", 1)
        base = k.split(".")[-1]
        nxt = NEXT.get(base, {}).get(v)
        print(f"{k}: {v} {nxt}" if nxt else f"{k}: {v}")

main()
