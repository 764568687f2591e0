#!/usr/bin/env bash
# The compiler holds the layers (src/CMakeLists.txt, preflight_layer): two probes compiled with
# the model library's view of src/. One includes a model header and must build; the other includes
# run/runner.hpp, a layer above, and must fail for that include, not for anything else.
#   test_compiler_layers.sh CMAKE BUILD_DIR
set -euo pipefail
cmake=$1 build=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT

"$cmake" --build "$build" --target layout_probe_allowed >"$out" 2>&1 ||
  { cat "$out"; echo "FAIL: a model header did not compile with model's view" >&2; exit 1; }
echo "ok: model's view compiles an include of model/stats.hpp"

if "$cmake" --build "$build" --target layout_probe_wrong >"$out" 2>&1; then
  echo "FAIL: model's view compiled an include of run/runner.hpp" >&2
  exit 1
fi
grep -qE "run/runner\.hpp.*(No such file|file not found)" "$out" ||
  { cat "$out"; echo "FAIL: the probe failed, but not for its include of run/runner.hpp" >&2; exit 1; }
echo "ok: model's view refuses run/runner.hpp: $(grep -m1 -E 'run/runner\.hpp' "$out")"
