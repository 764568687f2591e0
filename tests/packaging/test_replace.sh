#!/usr/bin/env bash
# preflight-cuda12, preflight-cuda13 and preflight-nocuda install the same files, so only one can
# be installed: each provides "preflight" and conflicts with and replaces the others. Checked
# with dpkg in an empty root (the host's dpkg database is not touched), against this build's
# package and a copy of it as the other CUDA major's package (preflight-cuda13 for a CUDA 12
# build, else preflight-cuda12: the name, and its name swapped out of Conflicts and Replaces, is
# all that dpkg sees of the difference): installing one removes the other (dpkg -i, no apt), the
# admin's /etc/default/preflight survives the swap, and a package that depends on
# "preflight (>= version)" is satisfied by either; purging the removed one leaves the file.
# Usage: test_replace.sh CPACK BUILD_DIR VERSION DPKG_DEB
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
cpack=$1 build=$2 version=$3 dpkg_deb=${4:-}
require_dpkg "$dpkg_deb"
make_tmp "$build"
build_deb "$cpack" "$build" "$version"

# The other package: the same files under another name (its copyright file moves with the name).
other=preflight-cuda12
[[ "$pkg" != "$other" ]] || other=preflight-cuda13
"$dpkg_deb" -R "$deb" "$tmp/other"
sed -i -e "s/^Package: .*/Package: $other/" \
  -e "/^\(Conflicts\|Replaces\):/s/\b$other\b/$pkg/" "$tmp/other/DEBIAN/control"
mv "$tmp/other/usr/share/doc/$pkg" "$tmp/other/usr/share/doc/$other"
sed -i "s| usr/share/doc/$pkg/| usr/share/doc/$other/|" "$tmp/other/DEBIAN/md5sums"
"${run[@]}" "$dpkg_deb" --root-owner-group -b "$tmp/other" "$tmp/$other.deb" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; die "dpkg-deb -b of the renamed copy failed"; }
# A package that needs any preflight of this version or newer.
mkdir -p "$tmp/needs/DEBIAN"
cat >"$tmp/needs/DEBIAN/control" <<CONTROL
Package: needs-preflight
Version: 1
Architecture: all
Maintainer: preflight tests <tests@localhost>
Depends: preflight (>= $version)
Description: test package that depends on the virtual package preflight
CONTROL
"${run[@]}" "$dpkg_deb" --root-owner-group -b "$tmp/needs" "$tmp/needs.deb" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; die "dpkg-deb -b of the test package failed"; }

root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: >"$root/var/lib/dpkg/status"
# The empty root has none of the Depends (libc6, ...), hence --force-depends where preflight is
# installed; needs-preflight is installed without it, so that its dependency is really checked.
dpkg_root() {
  "${run[@]}" dpkg --root="$root" --log=/dev/null --force-not-root "$@" \
    >>"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; die "dpkg $* failed"; }
}
state() { dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${db:Status-Status}' "$1" 2>/dev/null || echo not-installed; }
conf=$root/etc/default/preflight

dpkg_root --force-depends -i "$deb"
[[ "$(state "$pkg")" == installed ]] || die "$pkg did not install"
dpkg_root -i "$tmp/needs.deb"
[[ "$(state needs-preflight)" == installed ]] || fail "Depends: preflight (>= $version) not met by $pkg"
echo "# edited by the admin" >>"$conf"

# The swap: installing the other package removes this one (Conflicts + Replaces), in one step.
dpkg_root --force-depends -i "$tmp/$other.deb"
[[ "$(state "$other")" == installed ]] || fail "$other is '$(state "$other")' after installing it"
[[ "$(state "$pkg")" != installed ]] || fail "$pkg and $other are both installed (no Conflicts?)"
[[ -x "$root/usr/bin/preflight" ]] || fail "/usr/bin/preflight missing after the swap to $other"
[[ -f "$root/usr/share/doc/$other/copyright" ]] || fail "$other's copyright file missing"
grep -q '^# edited by the admin$' "$conf" || fail "the swap to $other lost the admin's /etc/default/preflight"
[[ "$(state needs-preflight)" == installed ]] || fail "needs-preflight was removed by the swap"
# Purging what is left of the removed package must not take the conffile the other one now owns.
dpkg_root --purge "$pkg"
grep -q '^# edited by the admin$' "$conf" || fail "purging $pkg after the swap removed /etc/default/preflight"

# And back.
dpkg_root --force-depends -i "$deb"
[[ "$(state "$pkg")" == installed ]] || fail "$pkg is '$(state "$pkg")' after swapping back"
[[ "$(state "$other")" != installed ]] || fail "$other still installed after swapping back"
[[ -x "$root/usr/bin/preflight" ]] || fail "/usr/bin/preflight missing after swapping back"
grep -q '^# edited by the admin$' "$conf" || fail "swapping back lost the admin's /etc/default/preflight"
finish
