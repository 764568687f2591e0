#!/usr/bin/env bash
# cpack -G DEB from the build tree into a temporary folder, then read the package back with
# dpkg-deb: file name and package name (preflight-cuda<major>), control fields, Depends against
# what the binary really links, the file list (the install layout under /usr plus
# /etc/default/preflight and the copyright file), conffiles, no RUNPATH, and the packaged binary
# runs.
# Usage: test_deb.sh CPACK BUILD_DIR SOURCE_DIR VERSION DPKG_DEB [READELF]
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
cpack=$1 build=$2 src=$3 version=$4 dpkg_deb=${5:-} readelf=${6:-}
if [[ -z "$dpkg_deb" ]]; then
  echo "dpkg-deb not found (Debian's dpkg): skipped"
  exit 77
fi
make_tmp "$build"

build_deb "$cpack" "$build" "$version"
! grep -q 'CMake Warning\|CMake Error' "$tmp/cpack.log" ||
  { cat "$tmp/cpack.log" >&2; fail "cpack warned (above)"; }
arch=$(dpkg --print-architecture)

# --- control fields ---
field() { "$dpkg_deb" -f "$deb" "$1"; }
[[ "$(field Package)" == "$pkg" ]] || fail "Package: '$(field Package)', expected $pkg"
[[ "$(field Version)" == "$version" ]] || fail "Version: '$(field Version)', project $version"
[[ "$(field Architecture)" == "$arch" ]] || fail "Architecture: '$(field Architecture)'"
[[ "$(field Section)" == admin ]] || fail "Section: '$(field Section)'"
[[ -n "$(field Maintainer)" ]] || fail "no Maintainer"
# Read whole, then matched: `field ... | grep -q` under pipefail fails when grep has its match
# and exits before dpkg-deb has written the rest (SIGPIPE); it did once, on a fresh root.
description=$(field Description)
grep -q "from NVIDIA, not from Debian" <<<"$description" ||
  fail "Description does not say that cuBLAS, the driver and NCCL come from NVIDIA"
depends=$(field Depends)
declared=$(cpack_value "$build" CPACK_DEBIAN_PACKAGE_DEPENDS)
[[ -n "$depends" && "$depends" == "$declared" ]] ||
  fail "Depends: '$depends', declared '$declared'"
recommends=$(field Recommends)
grep -qw libibverbs1 <<<"$recommends" || fail "Recommends lacks libibverbs1 (rdma check)"
# cuBLAS and NCCL are loaded at run time and recommended, never depended on: by NVIDIA's
# package names, and Debian's where Debian has one (docs/install.md).
if [[ "$pkg" == preflight-cuda* ]]; then
  major=${pkg#preflight-cuda}
  grep -q "libcublas-$major-0" <<<"$recommends" ||
    fail "Recommends lacks NVIDIA's libcublas-$major-<minor>: '$recommends'"
  if [[ "$major" == 12 ]]; then
    grep -q '\blibcublas12 |' <<<"$recommends" || fail "Recommends lacks Debian's libcublas12"
  fi
  grep -qw libnccl2 <<<"$recommends" || fail "Recommends lacks libnccl2"
fi
! grep -qi 'cublas\|nccl\|cuda\|nvidia' <<<"$depends" ||
  fail "Depends names a CUDA library: '$depends' (they are loaded at run time)"
# One preflight at a time: every build provides "preflight", and conflicts with and replaces
# the others by name (test_replace.sh swaps them with dpkg).
siblings=$(printf '%s\n' preflight-cuda12 preflight-cuda13 preflight-nocuda | grep -vx "$pkg" |
  paste -sd, | sed 's/,/, /g')
[[ "$(field Provides)" == "preflight (= $version)" ]] ||
  fail "Provides: '$(field Provides)', expected 'preflight (= $version)'"
[[ "$(field Conflicts)" == "$siblings" ]] ||
  fail "Conflicts: '$(field Conflicts)', expected '$siblings'"
[[ "$(field Replaces)" == "preflight, $siblings" ]] ||
  fail "Replaces: '$(field Replaces)', expected 'preflight, $siblings'"
with_mpi=$(cache_value "$build" PREFLIGHT_WITH_MPI)
if [[ "$with_mpi" == ON ]]; then
  grep -qw libopenmpi3 <<<"$depends" || fail "built with MPI but Depends lacks libopenmpi3"
  suggests=$(field Suggests)
  grep -qw openmpi-bin <<<"$suggests" || fail "built with MPI but Suggests lacks openmpi-bin"
fi
# Every package named in Depends is a real package (installed here: the build linked them).
dep_names=$(awk -F'[,|]' '{ for (i = 1; i <= NF; i++) { p = $i; sub(/\(.*/, "", p)
  gsub(/[[:space:]]/, "", p); if (p != "") print p } }' <<<"$depends")
for p in $dep_names; do
  status=$(dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null) || status=""
  grep -q ' installed$' <<<"$status" ||
    fail "Depends names '$p', which is not an installed Debian package here"
done

# --- files ---
listing=$("$dpkg_deb" -c "$deb")
actual=$(awk '$1 ~ /^[-l]/ { print $6 }' <<<"$listing" | sed 's|^\./||' | LC_ALL=C sort)
expected=$({ expected_layout "$src" | sed 's|^|usr/|'; echo etc/default/preflight
  echo "usr/share/doc/$pkg/copyright"; } | LC_ALL=C sort)
compare_layout ".deb contents" "$expected" "$actual"
# Modes: 755 for the binary and every script with a #! line, 644 for the rest; all root's.
"$dpkg_deb" -x "$deb" "$tmp/root"
while read -r perms owner _ _ _ path _; do
  want=-rw-r--r--
  if [[ $path == ./usr/bin/* ]] || is_program "$tmp/root/$path"; then want=-rwxr-xr-x; fi
  [[ "$perms" == "$want" ]] || fail "$path is $perms, expected $want"
  [[ "$owner" == root/root ]] || fail "$path is owned by $owner"
done < <(awk '$1 ~ /^-/' <<<"$listing")

# --- control archive: conffiles, md5sums ---
"$dpkg_deb" -e "$deb" "$tmp/control"
if [[ -f "$tmp/control/conffiles" ]]; then
  [[ "$(cat "$tmp/control/conffiles")" == /etc/default/preflight ]] ||
    fail "conffiles is '$(cat "$tmp/control/conffiles")', expected /etc/default/preflight"
else
  fail "no conffiles: an admin's /etc/default/preflight would be replaced on upgrade"
fi
grep -q ' usr/bin/preflight$' "$tmp/control/md5sums" || fail "md5sums lacks usr/bin/preflight"

# --- the packaged files ---
got=$(env -i PATH=/usr/bin:/bin "$tmp/root/usr/bin/preflight" --version) ||
  fail "packaged usr/bin/preflight --version failed"
[[ "$got" == "preflight $version"* ]] || fail "packaged --version says '$got'"
if [[ -f "$src/$env_example" ]]; then
  cmp -s "$src/$env_example" "$tmp/root/etc/default/preflight" ||
    fail "/etc/default/preflight differs from $env_example"
fi
check_no_runpath "$readelf" "$tmp/root/usr/bin/preflight" "packaged usr/bin/preflight"

# Depends covers what the binary links: each NEEDED library, as the loader resolves it here,
# belongs to a package named in Depends.
if [[ -n "$readelf" ]]; then
  needed=$("$readelf" -d "$tmp/root/usr/bin/preflight" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
  resolved=$(ldd "$tmp/root/usr/bin/preflight")
  for lib in $needed; do
    path=$(awk -v l="$lib" '$1 == l && $2 == "=>" { print $3 }' <<<"$resolved")
    [[ -z "$path" && "$lib" == ld-linux* ]] &&
      path=$(awk -v l="$lib" 'index($1, l) { print $1 }' <<<"$resolved")
    [[ -n "$path" && -e "$path" ]] || { fail "NEEDED $lib does not resolve here"; continue; }
    owner=$(package_of "$path") ||
      { fail "NEEDED $lib ($path) belongs to no Debian package"; continue; }
    grep -qx "$owner" <<<"$dep_names" || fail "NEEDED $lib is in package $owner, not in Depends"
  done
fi

finish
