#!/usr/bin/env bash
# Adding a check is its folder, one registration line, its page and its tests
# (docs/architecture.md, "Adding a check"). In a copy of the source tree, scripts/new-check.py
# adds the check "probe" from its template; the copy must keep the layout rules, build (target
# new_check_tests: the copy's new and changed sources against the libraries already built) and
# pass the probe's tests with the catalogue's and the thresholds', which check the copy's
# sources, pages and indexes against the registered checks.
#   test_new_check.sh SOURCE_DIR BUILD_DIR CMAKE TESTS_BINARY
set -euo pipefail
src=$1 build=$2 cmake=$3 tests=$4
work=$build/new-check
tree=$work/tree
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rm -rf "$work"
mkdir -p "$tree"

# The tree as it is now: tracked files and new ones, not what git ignores (build folders, the
# CUDA 12 toolkit). Without git (a tarball), everything but those.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf -) | tar -C "$tree" -xf -
else
  tar -C "$src" --exclude='./build*' --exclude=./.deps --exclude=./.git -cf - . |
    tar -C "$tree" -xf -
fi

python3 "$tree/scripts/new-check.py" probe --root "$tree"
# What the script may touch: the check's folder, its tests, its page, one line in
# builtin_checks.cpp and one in each index. Anything else would be a shared edit.
changed=$(cd "$tree" && for f in src/checks/builtin_checks.cpp docs/findings.md docs/thresholds.md; do
  diff -q "$src/$f" "$f" >/dev/null || echo "$f"; done)
[[ $(echo "$changed" | wc -l) == 3 ]] ||
  { echo "FAIL: expected builtin_checks.cpp and the two indexes changed, got: $changed" >&2; exit 1; }
for f in src/checks/builtin_checks.cpp docs/findings.md docs/thresholds.md; do
  added=$(diff "$src/$f" "$tree/$f" | grep -c '^>' || true)
  removed=$(diff "$src/$f" "$tree/$f" | grep -c '^<' || true)
  limit=1
  [[ $f == src/checks/builtin_checks.cpp ]] && limit=2  # its include and its registry.add line
  ((added == limit && removed == 0)) ||
    { echo "FAIL: $f: $added lines added, $removed removed; expected $limit added" >&2; exit 1; }
done
echo "ok: new-check.py added the folder, the page, the tests and one line in each shared file"

python3 "$tree/tests/layout/check_layout.py" "$tree"
echo "ok: the copy keeps the layout rules"

"$cmake" --build "$build" --target new_check_tests >"$out" 2>&1 ||
  { cat "$out"; echo "FAIL: the copy with the new check did not build" >&2; exit 1; }
echo "ok: built $(basename "$tests") from the copy"

"$tests" "probe check:*" >"$out" 2>&1 ||
  { cat "$out"; echo "FAIL: the new check's tests" >&2; exit 1; }
grep -q "in 3 test cases" "$out" ||
  { cat "$out"; echo "FAIL: expected the template's 3 test cases" >&2; exit 1; }
echo "ok: $(tail -n 2 "$out" | head -n 1)"
"$tests" "catalogue:*,thresholds:*" >"$out" 2>&1 ||
  { cat "$out"; echo "FAIL: the catalogue's or the thresholds' tests, with the new check" >&2; exit 1; }
echo "ok: catalogue and thresholds with the new check: $(tail -n 2 "$out" | head -n 1)"
rm -rf "$work"
