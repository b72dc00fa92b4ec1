#!/bin/sh
# Fails when two modules include each other, directly or through others (the include graph of
# modules must be acyclic). Usage, from the repository root: check_includes.sh DIR...
#
# A module is a .c/.h pair of one name, joined with every .c that defines a function its header
# declares (found with gcc -aux-info under $CHECK_CFLAGS), so a header implemented under another
# name (parse.h by elab.c) or by several files (loaders.h) is one module with its implementers.
# Module A depends on module B when a file of A includes a header of B.
[ $# -gt 0 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
files=$(find "$@" -maxdepth 1 \( -name '*.c' -o -name '*.h' \) | sort)
[ -n "$files" ] || { echo "check_includes: no .c or .h file in $*" >&2; exit 2; }

# "join NAME NAME": a .c (by name without extension) and a header that declares what it defines
for c in $(printf '%s\n' "$files" | grep '\.c$'); do
    # shellcheck disable=SC2086
    gcc $CHECK_CFLAGS -fsyntax-only -aux-info "$tmp/aux" "$c" 2>"$tmp/err" ||
        { echo "check_includes: cannot compile $c:"; cat "$tmp/err"; exit 2; }
    awk -v c="$c" '
        function fname(line) { sub(/^\/\*[^*]*\*\/ /, "", line); match(line, /[A-Za-z_][A-Za-z0-9_]* \(/);
                               return substr(line, RSTART, RLENGTH - 2) }
        { split($2, loc, ":"); f = loc[1]; sub(/^\.\//, "", f) }
        loc[3] ~ /F/ && f == c { def[fname($0)] = 1 }
        loc[3] ~ /C/ && f ~ /\.h$/ { decl[fname($0)] = decl[fname($0)] " " f }
        END { for (n in def) { k = split(decl[n], hs, " ")
                               for (i = 1; i <= k; i++) { sub(/\.h$/, "", hs[i]); print "join", substr(c, 1, length(c) - 2), hs[i] } } }
    ' "$tmp/aux" >>"$tmp/facts"
done
# "inc NAME NAME": a file (by name without extension) includes a header of these dirs
for f in $files; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)\.h".*/\1/p' "$f" |
        while read -r h; do [ -f "$h.h" ] && echo "inc ${f%.*} $h"; done
done >>"$tmp/facts"

# modules (union of joined names) and the edges between them, as "module module" lines
awk '
    function find(x) { while (up[x] != "" && up[x] != x) x = up[x]; return x }
    function unite(a, b) { a = find(a); b = find(b); if (a != b) up[a < b ? b : a] = a < b ? a : b }
    { if (up[$2] == "") up[$2] = $2; if (up[$3] == "") up[$3] = $3 }
    $1 == "join" { unite($2, $3) }
    $1 == "inc" { n++; from[n] = $2; to[n] = $3 }
    END {
        for (x in up) { r = find(x); members[r] = members[r] (members[r] == "" ? "" : "+") x }
        for (i = 1; i <= n; i++) { a = find(from[i]); b = find(to[i]); if (a != b) print members[a], members[b] }
    }' "$tmp/facts" | sort -u >"$tmp/edges"
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loop"; then
    echo "check_includes: modules that include each other (each circle lists its modules):"
    sed 's/^tsort: .*input contains a loop:$/  circle:/; s/^tsort: /    /' "$tmp/loop"
    exit 1
fi
echo "check_includes: $(printf '%s\n' "$files" | wc -l) files, $(wc -l <"$tmp/edges") module dependencies, no circle"
