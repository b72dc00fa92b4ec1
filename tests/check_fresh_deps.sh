#!/bin/sh
# Checks the README's first step on a simulated fresh machine: `make deps all`, in one make, on a copy
# of the tree where pkg-config knows no package until the deps step (a fake apt-get) "installs" them.
# Also checks that a missing package stops the build with a line naming it, not a compiler error.
# Usage: sh tests/check_fresh_deps.sh   (CC is passed on, e.g. CC="ccache gcc"; builds in a temp dir)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
real_pc=$(command -v pkg-config) || { echo "check_fresh_deps: needs pkg-config and the packages (make deps)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rgnn-fresh.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
mkdir "$tmp/bin" "$tmp/tree"

# pkg-config finds nothing until $tmp/installed exists; apt-get install creates it; sudo just runs.
cat >"$tmp/bin/pkg-config" <<EOF
#!/bin/sh
[ -e "$tmp/installed" ] || exit 1
exec "$real_pc" "\$@"
EOF
cat >"$tmp/bin/apt-get" <<EOF
#!/bin/sh
if [ "\$1" = install ] || [ "\$2" = install ]; then touch "$tmp/installed"; fi
EOF
printf '#!/bin/sh\nexec "$@"\n' >"$tmp/bin/sudo"
chmod +x "$tmp/bin/pkg-config" "$tmp/bin/apt-get" "$tmp/bin/sudo"

# The working tree as git sees it (tracked and new files), without build outputs or data.
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar cf -) | (cd "$tmp/tree" && tar xf -)

fail() { echo "check_fresh_deps: FAILED: $1" >&2; exit 1; }
mk() { PATH="$tmp/bin:$PATH" make -C "$tmp/tree" ${CC:+CC="$CC"} "$@" >"$tmp/log" 2>&1; }

# 1. no package yet: the build stops at once, naming them
if mk all; then fail "make all succeeded with no packages"; fi
grep -q 'missing packages: gsl (Debian: libgsl-dev) serd-0' "$tmp/log" || { cat "$tmp/log"; fail "no 'missing packages' line"; }
[ ! -e "$tmp/tree/build/obj" ] || fail "make all compiled something with no packages"

# 2. the README's command: deps installs them, the same make then builds everything
if ! mk -j2 deps all; then tail -n 30 "$tmp/log"; fail "make deps all failed"; fi
[ -e "$tmp/installed" ] || fail "make deps did not run apt-get install"
"$tmp/tree/build/explore" --help >/dev/null 2>&1 || fail "the built explore does not run"
echo "check_fresh_deps: make deps all builds in one make on a fresh machine; a missing package is named"
