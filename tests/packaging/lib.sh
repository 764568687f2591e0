# shellcheck shell=bash disable=SC2034
# Shared by the packaging tests (sourced). Each test makes one temporary folder, removed on
# exit whatever happens, and fails with a message naming what is wrong. (SC2034: the variables
# set here are used by the tests that source this file.)
set -euo pipefail

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
die() { echo "FAIL: $*" >&2; exit 1; }
finish() {
  if ((failures > 0)); then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "ok"
}

# make_tmp BUILD_DIR: the temporary folder, removed on exit. `cmake --install` and cpack write
# install_manifest*.txt into the build tree; the ones there before the test (an admin's record of
# a real install, docs/install.md#uninstalling) are put back on exit, and new ones removed.
# The tests that install the .deb into an empty root: skip (77) without dpkg, or without root and
# fakeroot; sets run=() or run=(fakeroot), the prefix for their dpkg calls.
require_dpkg() {
  if [[ -z "$1" ]] || ! command -v dpkg >/dev/null; then
    echo "dpkg not found: skipped"
    exit 77
  fi
  run=()
  if ((EUID != 0)); then
    command -v fakeroot >/dev/null || { echo "not root and no fakeroot: skipped"; exit 77; }
    run=(fakeroot)
  fi
}

make_tmp() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/preflight-packaging.XXXXXX")
  manifest_build=$1
  mkdir "$tmp/manifests"
  find "$manifest_build" -maxdepth 1 -name 'install_manifest*.txt' -exec cp -p {} "$tmp/manifests/" \;
  trap restore_and_clean EXIT
}
restore_and_clean() {
  find "$manifest_build" -maxdepth 1 -name 'install_manifest*.txt' -delete 2>/dev/null || true
  cp -p "$tmp/manifests/"* "$manifest_build/" 2>/dev/null || true
  rm -rf "$tmp"
}

# cache_value BUILD_DIR NAME: a variable from the build tree's CMakeCache.txt ("" if unset).
cache_value() {
  sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt" | head -n1
}

# cpack_value BUILD_DIR NAME: a variable as CPackConfig.cmake sets it.
cpack_value() {
  sed -n "s/^set($2 \"\\(.*\\)\")\$/\\1/p" "$1/CPackConfig.cmake" | head -n1
}

# Scripts that must be installed (the tests fail until they exist), and those installed only
# when the source tree has them. Paths relative to the source tree -> relative to
# libexec/preflight.
required_scripts=(scripts/slurm/prolog.sh scripts/slurm/healthcheck.sh scripts/ci-gate.sh)
optional_scripts=(scripts/slurm/common.sh scripts/slurm/trust.sh scripts/slurm/state.sh)
env_example=scripts/slurm/preflight.default

# expected_layout SOURCE_DIR: every file a `cmake --install` must put under the prefix, sorted,
# one per line, relative to the prefix (GNUInstallDirs defaults: bin, libexec, share/doc).
expected_layout() {
  local src=$1 s
  {
    echo "bin/preflight"
    for s in "${required_scripts[@]}"; do echo "libexec/preflight/$(basename "$s")"; done
    for s in "${optional_scripts[@]}"; do
      [[ -f "$src/$s" ]] && echo "libexec/preflight/$(basename "$s")"
    done
    if [[ -d "$src/scripts/lib" ]]; then
      (cd "$src/scripts/lib" && find . -type f -name '*.sh') | sed 's|^\./|libexec/preflight/lib/|'
    fi
    echo "share/doc/preflight/README.md"
    echo "share/doc/preflight/LICENSE"
    (cd "$src/docs" && find . -type f) | sed 's|^\./|share/doc/preflight/docs/|'
    echo "share/doc/preflight/examples/preflight.default"
  } | LC_ALL=C sort
}

# installed_layout DIR: every file and symbolic link under DIR, relative, sorted.
installed_layout() {
  (cd "$1" && find . \( -type f -o -type l \)) | sed 's|^\./||' | LC_ALL=C sort
}

# compare_layout WHAT EXPECTED ACTUAL: exact comparison of two sorted lists.
compare_layout() {
  local what=$1 expected=$2 actual=$3 d
  if ! d=$(diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual")); then
    fail "$what differs from the agreed layout (< missing, > unexpected):"
    printf '%s\n' "$d" | grep '^[<>]' >&2 || true
  fi
}

# is_program FILE: the file starts with "#!" (a script meant to be run, not only sourced).
is_program() {
  [[ "$(head -c 2 "$1")" == '#!' ]]
}

# check_no_runpath READELF BINARY WHAT: the binary has no RUNPATH or RPATH. It links no CUDA
# library (cuBLAS and NCCL are loaded with dlopen from a search list of their own,
# docs/install.md), so nothing of the build machine may be baked into it.
check_no_runpath() {
  local readelf=$1 bin=$2 what=$3 rp
  if [[ -z "$readelf" ]]; then
    echo "note: readelf not found, RUNPATH of $what not checked"
    return 0
  fi
  rp=$("$readelf" -d "$bin" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\1 \2/p')
  [[ -z "$rp" ]] || fail "$what has $rp; the installed binary needs none (cmake/Packaging.cmake)"
}

# expected_package BUILD_DIR: the .deb's name for this build: preflight-cuda<major> after the
# CUDA compiler CMake found (its version as CMake recorded it in the build tree, so this holds
# where nvcc is not installed), preflight-nocuda without CUDA.
expected_package() {
  local build=$1 major
  if [[ "$(cache_value "$build" PREFLIGHT_WITH_CUDA)" != ON ]]; then
    echo preflight-nocuda
    return 0
  fi
  major=$(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\([0-9]*\)\..*/\1/p' \
    "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null | head -n1)
  [[ -n "$major" ]] || die "$build: no CUDA compiler version in CMakeFiles/*/CMakeCUDACompiler.cmake"
  echo "preflight-cuda$major"
}

# build_deb CPACK BUILD_DIR VERSION: cpack -G DEB into $tmp/out; sets deb (its path) and pkg
# (the package name this build must have). Fails when cpack fails or makes another file.
build_deb() {
  local cpack=$1 build=$2 version=$3 arch debs
  "$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1 ||
    { cat "$tmp/cpack.log" >&2; die "cpack -G DEB failed"; }
  pkg=$(expected_package "$build")
  arch=$(dpkg --print-architecture)
  deb=$tmp/out/${pkg}_${version}_${arch}.deb
  debs=$(find "$tmp/out" -maxdepth 1 -name '*.deb' -printf '%f\n')
  [[ "$debs" == "$(basename "$deb")" ]] ||
    die "cpack made '$(tr '\n' ' ' <<<"$debs")', expected $(basename "$deb")"
}

# package_of PATH: the Debian package that owns a library, as the loader found it. dpkg knows
# each file by one path, and on a merged-/usr system the loader may name it by another
# (/lib/... for /usr/lib/..., a soname link for the real file), so try each.
package_of() {
  local p=$1 real candidates owner c
  real=$(readlink -f "$p")
  candidates=("$p" "$real" "${p/#\/lib\//\/usr\/lib\/}" "${real/#\/usr\/lib\//\/lib\/}")
  for c in "${candidates[@]}"; do
    if owner=$(dpkg -S "$c" 2>/dev/null); then
      owner=${owner%%: *}
      owner=${owner%%,*}
      echo "${owner%%:*}"
      return 0
    fi
  done
  return 1
}
