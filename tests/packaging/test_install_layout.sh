#!/usr/bin/env bash
# cmake --install into a temporary prefix: the exact agreed layout (LICENSE included), executables
# executable, the installed binary runs and has no RUNPATH.
# Usage: test_install_layout.sh CMAKE BUILD_DIR BUILT_BINARY SOURCE_DIR [READELF]
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
cmake=$1 build=$2 built=$3 src=$4 readelf=${5:-}
make_tmp "$build"
prefix=$tmp/prefix

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; die "cmake --install $build --prefix $prefix failed"; }

for s in "${required_scripts[@]}" "$env_example"; do
  [[ -f "$src/$s" ]] || fail "$s is missing from the source tree (agreed with the scripts' authors)"
done
compare_layout "installed tree" "$(expected_layout "$src")" "$(installed_layout "$prefix")"

# Programs executable (the binary, every script with a #! line), everything else not (common.sh
# is only sourced; the docs). Every script parses.
[[ -x "$prefix/bin/preflight" ]] || fail "bin/preflight is not executable"
while IFS= read -r f; do
  if is_program "$f"; then
    [[ -x "$f" ]] || fail "${f#"$prefix"/} starts with #! but is not executable"
  else
    [[ ! -x "$f" ]] || fail "${f#"$prefix"/} has no #! line but is executable"
  fi
  bash -n "$f" || fail "${f#"$prefix"/} does not parse"
done < <(find "$prefix/libexec" -type f)
while IFS= read -r f; do
  [[ ! -x "$f" ]] || fail "${f#"$prefix"/} is executable"
done < <(find "$prefix/share" -type f)
if [[ -f "$src/$env_example" ]]; then
  cmp -s "$src/$env_example" "$prefix/share/doc/preflight/examples/preflight.default" ||
    fail "examples/preflight.default differs from $env_example"
fi
cmp -s "$src/README.md" "$prefix/share/doc/preflight/README.md" || fail "README.md differs"

# The installed binary runs, without the environment of the build, and is the same version.
# The first line only: the lines after it say where the libraries loaded at run time were
# found, which differs between the build tree and an install.
want=$("$built" --version | head -n1) || die "$built --version failed"
got=$(env -i PATH=/usr/bin:/bin "$prefix/bin/preflight" --version) ||
  fail "installed bin/preflight --version failed"
got=$(head -n1 <<<"$got")
[[ "$got" == "$want" ]] || fail "installed --version says '$got', the build '$want'"
check_no_runpath "$readelf" "$prefix/bin/preflight" "installed bin/preflight"
cmp -s "$src/LICENSE" "$prefix/share/doc/preflight/LICENSE" || fail "share/doc/preflight/LICENSE differs from LICENSE"

finish
