#!/usr/bin/env bash
# The .deb into an empty root with dpkg --root (the host's dpkg database is not touched): an
# admin's edit of /etc/default/preflight survives reinstalling (upgrading) the package, removing
# it keeps the file, purging removes it.
# Usage: test_conffile.sh CPACK BUILD_DIR VERSION DPKG_DEB
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
cpack=$1 build=$2 version=$3 dpkg_deb=${4:-}
require_dpkg "$dpkg_deb"
make_tmp "$build"

build_deb "$cpack" "$build" "$version"

root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: >"$root/var/lib/dpkg/status"
# The empty root has none of the Depends, hence --force-depends; nothing else is forced.
dpkg_root() {
  "${run[@]}" dpkg --root="$root" --log=/dev/null --force-not-root --force-depends "$@" \
    >>"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; die "dpkg $* failed"; }
}
conf=$root/etc/default/preflight

dpkg_root -i "$deb"
[[ -f "$conf" ]] || die "/etc/default/preflight not installed"
[[ -x "$root/usr/bin/preflight" ]] || fail "/usr/bin/preflight not installed"
echo "# edited by the admin" >>"$conf"
dpkg_root -i "$deb"
grep -q '^# edited by the admin$' "$conf" ||
  fail "reinstalling the package replaced the admin's /etc/default/preflight"

dpkg_root -r "$pkg"
[[ ! -e "$root/usr/bin/preflight" ]] || fail "dpkg -r left /usr/bin/preflight"
[[ -f "$conf" ]] || fail "dpkg -r removed the conffile (only --purge should)"
dpkg_root --purge "$pkg"
[[ ! -e "$conf" ]] || fail "dpkg --purge left /etc/default/preflight"
finish
