#!/bin/sh
# For the lead on a GPU machine: the span, kernel sum, measured ceilings and floors of RGAT on
# fb15k237, warm and with --flush-l2. Prints only; asserts nothing on timings.
# Usage: RGNN_DATA=../shared/datasets sh tests/gpu_span_check.sh
set -e
: "${RGNN_DATA:?set RGNN_DATA to the datasets folder}"
for extra in "" "--flush-l2"; do
    echo "== explore run --model rgat --dataset fb15k237 --metrics $extra"
    ./build/explore run --model rgat --dataset fb15k237 --data-dir "$RGNN_DATA" --metrics $extra |
        grep -E '^(status|total|span|ceilings|floor|gather|achieved|analytic)'
done
