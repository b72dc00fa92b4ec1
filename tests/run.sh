#!/bin/sh
# Runs every cmocka test binary given, sums their verdicts and prints one closing line
# "N passed, N failed, N skipped" (after a line naming the five slowest binaries and their
# seconds). Exits non-zero if any test failed or a binary crashed.
#
# RGNN_TEST_JOBS binaries run at once (default: the processors there are); a line on stderr says
# when each finishes, and their outputs follow whole, in the order given, once all are done. Those
# named in RGNN_TEST_SERIAL (default test_sweep, whose workers time out after half a second) run
# afterwards, alone; those named in RGNN_TEST_FIRST (default the two slowest, test_codegen and
# test_templates) start first, so that the others fill the processors around them. Tests side by
# side share only what is safe to share: the graph and cubin caches (each file written under a
# temporary name, then renamed) and stores they only read.

# one binary (tests/run.sh --one BINARY, as xargs runs it): its output, exit status and seconds
# under $RGNN_TEST_OUT/<name>.*
if [ "${1-}" = --one ]; then
    name=$(basename "$2"); t0=$(date +%s)
    CMOCKA_MESSAGE_OUTPUT=STDOUT "$2" > "$RGNN_TEST_OUT/$name.out" 2>&1
    echo $? > "$RGNN_TEST_OUT/$name.rc"
    echo $(( $(date +%s) - t0 )) > "$RGNN_TEST_OUT/$name.sec"
    echo "tests/run.sh: $name done in $(cat "$RGNN_TEST_OUT/$name.sec") s" >&2
    exit 0
fi

jobs=${RGNN_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$jobs" in ''|*[!0-9]*|0) echo "tests/run.sh: RGNN_TEST_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;; esac
serial=" ${RGNN_TEST_SERIAL-test_sweep} "
first=" ${RGNN_TEST_FIRST-test_codegen test_templates} "
RGNN_TEST_OUT=$(mktemp -d) || exit 2
export RGNN_TEST_OUT
trap 'rm -rf "$RGNN_TEST_OUT"' EXIT
trap 'exit 130' INT TERM

# the binaries of one batch, `width` at a time
run_batch() {
    width=$1; shift
    [ $# -gt 0 ] || return 0
    printf '%s\n' "$@" | xargs -P "$width" -n 1 sh "$0" --one
}

early=""; parallel=""; alone=""
for t in "$@"; do
    case "$serial" in *" $(basename "$t") "*) alone="$alone $t"; continue ;; esac
    case "$first" in *" $(basename "$t") "*) early="$early $t" ;; *) parallel="$parallel $t" ;; esac
done
parallel="$early$parallel"
# shellcheck disable=SC2086
run_batch "$jobs" $parallel
# shellcheck disable=SC2086
run_batch 1 $alone

passed=0; failed=0; skipped=0; crashed=""; times=""
for t in "$@"; do
    name=$(basename "$t")
    out=$(cat "$RGNN_TEST_OUT/$name.out" 2>/dev/null); rc=$(cat "$RGNN_TEST_OUT/$name.rc" 2>/dev/null || echo 127)
    times="$times$(cat "$RGNN_TEST_OUT/$name.sec" 2>/dev/null || echo 0) $name
"
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
    if [ -z "$p$f$s" ] || { [ "$rc" -ne 0 ] && [ -z "$f" ]; }; then
        crashed="$crashed $name(rc=$rc)"; failed=$((failed + 1))
    fi
done
[ -n "$crashed" ] && echo "test binaries that crashed or reported nothing:$crashed"
# where the suite's wall time goes (CI aims at 20 minutes): the five slowest binaries
printf '%s' "$times" | sort -rn | head -n 5 | awk '{printf "%s%s %ss", (NR > 1 ? ", " : "slowest: "), $2, $1} END {print ""}'
echo "$passed passed, $failed failed, $skipped skipped ($jobs at a time)"
[ "$failed" -eq 0 ]
