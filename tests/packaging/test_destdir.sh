#!/usr/bin/env bash
# DESTDIR=... cmake --install --prefix /usr, as a distribution build does: every file lands
# under DESTDIR/usr; nothing (in particular /etc/default/preflight, the .deb's conffile) is
# written outside the prefix.
# Usage: test_destdir.sh CMAKE BUILD_DIR SOURCE_DIR
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
cmake=$1 build=$2 src=$3
make_tmp "$build"
root=$tmp/root

DESTDIR=$root "$cmake" --install "$build" --prefix /usr >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; die "DESTDIR=$root cmake --install --prefix /usr failed"; }
top=$(cd "$root" && ls -A)
[[ "$top" == "usr" ]] || fail "DESTDIR holds '$(tr '\n' ' ' <<<"$top")', expected only usr/"
compare_layout "DESTDIR/usr" "$(expected_layout "$src")" "$(installed_layout "$root/usr")"
finish
