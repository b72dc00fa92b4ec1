#!/bin/sh
# Runs every cmocka test binary given, sums their verdicts and prints one closing line
# "N passed, N failed, N skipped" (after a line naming the five slowest binaries and their
# seconds). Exits non-zero if any test failed or a binary crashed.
passed=0; failed=0; skipped=0; crashed=""; times=""
for t in "$@"; do
    t0=$(date +%s)
    out=$(CMOCKA_MESSAGE_OUTPUT=STDOUT "$t" 2>&1); rc=$?
    times="$times$(( $(date +%s) - t0 )) $(basename "$t")
"
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
    if [ -z "$p$f$s" ] || { [ "$rc" -ne 0 ] && [ -z "$f" ]; }; then
        crashed="$crashed $(basename "$t")(rc=$rc)"; failed=$((failed + 1))
    fi
done
[ -n "$crashed" ] && echo "test binaries that crashed or reported nothing:$crashed"
# where the suite's wall time goes (CI aims at 20 minutes): the five slowest binaries
printf '%s' "$times" | sort -rn | head -n 5 | awk '{printf "%s%s %ss", (NR > 1 ? ", " : "slowest: "), $2, $1} END {print ""}'
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
