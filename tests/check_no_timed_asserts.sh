#!/bin/sh
# Fails when a test asserts on a duration or a speed ratio (run by `make test`): such asserts turn
# CI red on a busy machine. Speed targets belong in `make bench-datasets` and docs/perf-notes.md.
# Usage: sh tests/check_no_timed_asserts.sh [FILE.c ...]   (default: tests/*.c tests/*.h)
#
# How: a value is "timed" when it comes from a clock (rg_now(), clock_gettime, gettimeofday,
# clock(), time(NULL)), is assigned from a timed value in the same function, or is returned by a
# function that returns a timed value (any file). An assert_*() statement or the condition of an
# `if (...) fail...` that uses a timed value is reported. Printing a time, or bounding a wait loop
# with one, is fine.
set -eu
cd "$(dirname "$0")/.."

scan() {
    awk '
    function strip(s) {                      # string literals and comments say nothing
        gsub(/\\./, "", s); gsub(/"[^"]*"/, "\"\"", s); gsub(/\/\*.*\*\//, "", s); sub(/\/\/.*/, "", s)
        return s
    }
    function timed(s, f,    n, i, tok) {
        if (s ~ /(^|[^A-Za-z0-9_])(rg_now|clock_gettime|gettimeofday|clock)[ \t]*\(|time[ \t]*\([ \t]*NULL/) return 1
        n = split(s, tok, /[^A-Za-z0-9_]+/)
        for (i = 1; i <= n; i++)
            if (tok[i] != "" && ((f SUBSEP tok[i]) in var || ("" SUBSEP tok[i]) in var || tok[i] in fn)) return 1
        return 0
    }
    function depth(s,    t) { t = s; return gsub(/\(/, "", t) - gsub(/\)/, "", s) }
    FNR == 1 { cur = ""; sig = "" }
    {
        line = strip($0)
        if (line ~ /^[A-Za-z_]/ && line ~ /\(/ && line !~ /;[ \t]*$/) {   # a function signature
            sig = line; sub(/[ \t]*\(.*/, "", sig); sub(/.*[^A-Za-z0-9_]/, "", sig)
        }
        if (line ~ /^\{/) cur = sig
        if (line ~ /^\}/) cur = ""
        n++; L[n] = line; F[n] = cur; W[n] = FILENAME ":" FNR; R[n] = $0; sub(/^[ \t]+/, "", R[n])
    }
    END {
        for (changed = 1; changed; ) {       # taint to a fixed point
            changed = 0
            for (i = 1; i <= n; i++) {
                if (!timed(L[i], F[i])) continue
                s = L[i]
                while (match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*[-+*\/]?=[^=]/)) {
                    v = substr(s, RSTART, RLENGTH); sub(/[ \t]*[-+*\/]?=.*/, "", v)
                    if (!((F[i] SUBSEP v) in var)) { var[F[i], v] = 1; changed = 1 }
                    s = substr(s, RSTART + RLENGTH)
                }
                if (L[i] ~ /(^|[^A-Za-z0-9_])return[^A-Za-z0-9_]/ && F[i] != "" && !(F[i] in fn)) { fn[F[i]] = 1; changed = 1 }
            }
        }
        bad = 0
        for (i = 1; i <= n; i++) {
            stmt = ""
            if (L[i] ~ /(^|[^A-Za-z0-9_])assert_[a-z_]*[ \t]*\(/) {
                stmt = L[i]
                for (j = i + 1; depth(stmt) > 0 && j <= n; j++) stmt = stmt " " L[j]
            } else if (L[i] ~ /(^|[^A-Za-z0-9_])if[ \t]*\(.*(fail_msg|fail)[ \t]*\(/) {
                stmt = L[i]; sub(/(fail_msg|fail)[ \t]*\(.*/, "", stmt)
            }
            if (stmt != "" && timed(stmt, F[i])) { print W[i] ": asserts on a measured time: " R[i]; bad = 1 }
        }
        exit bad
    }' "$@"
}

# The checker must catch a timed assert (else a broken pattern would pass every tree).
sample=$(mktemp "${TMPDIR:-/tmp}/rgnn-timed.XXXXXX")
trap 'rm -f "$sample"' EXIT
cat >"$sample" <<'EOF'
static double took(void)
{
    double t0 = rg_now();
    work();
    return rg_now() - t0;
}

static void test_speed(void **state)
{
    double best = 1e30;
    for (int i = 0; i < 3; i++) {
        double t = took();
        if (t < best) best = t;
    }
    assert_true(
        best < 2);
}
EOF
if scan "$sample" >/dev/null; then
    echo "check_no_timed_asserts: the checker missed the timed assert of its own sample" >&2
    exit 1
fi

[ "$#" -gt 0 ] || set -- tests/*.c tests/*.h
if ! scan "$@"; then
    echo "check_no_timed_asserts: tests must not assert on durations or speed ratios (put them in make bench-datasets)" >&2
    exit 1
fi
echo "check_no_timed_asserts: no test asserts on a duration or a speed ratio ($# files)"
