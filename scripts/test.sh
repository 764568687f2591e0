#!/usr/bin/env bash
# Installs dependencies, builds from scratch in build-test/ (or $BUILD_DIR) and runs the whole
# test suite. GPU tests (label gpu) report "skipped" where no GPU is visible.
# Then the same again with CUDA 12 (issue 19: the nodes clusters run have drivers older than
# CUDA 13 needs, so the CUDA 12 package must build and pass too): scripts/setup-deps.sh --cuda 12
# puts the toolkit in .deps/cuda-12, and a second tree, build-test-cuda12/ ($BUILD_DIR-cuda12),
# is built with it and tested whole. PREFLIGHT_TEST_CUDA12=0 skips that second build (for quick
# local runs; CI runs both). Extra arguments go to both ctest runs.
set -euo pipefail
cd "$(dirname "$0")/.."

with_cuda12=${PREFLIGHT_TEST_CUDA12:-1}
case "$with_cuda12" in
  0 | 1) ;;
  *) echo "test: PREFLIGHT_TEST_CUDA12 must be 0 or 1, not '$with_cuda12'" >&2; exit 2 ;;
esac
setup_args=(--test)
((with_cuda12)) && setup_args+=(--cuda 12)
scripts/setup-deps.sh "${setup_args[@]}"

build_dir=${BUILD_DIR:-build-test}
summary=()
failed=0

# run_suite NAME BUILD_DIR [ENV...]: builds from scratch, runs ctest, records the outcome. A
# failed build or test run does not stop the other suite, so one CI run reports both.
run_suite() {
  local name=$1 dir=$2 log start rc=0 warnings toolkit
  shift 2
  log=$(mktemp)
  start=$SECONDS
  rm -rf "$dir"
  echo "test: === $name: building $dir ==="
  # The build's output is shown as it comes and kept to count the compiler's warnings (the
  # build reports them, -Wall -Wextra ..., without failing on them).
  if env "$@" BUILD_DIR="$dir" scripts/build.sh -DPREFLIGHT_BUILD_TESTS=ON 2>&1 | tee "$log"; then
    warnings=$(grep -cE 'warning(:| #)|CMake Warning' "$log" || true)
    toolkit=$(sed -n 's/^build: .* uses \(CUDA .*\)$/\1/p' "$log" | head -n1)
    echo "test: === $name: ${toolkit:-no CUDA}; $warnings compiler warning(s); running ctest ==="
    (cd "$dir" && ctest --output-on-failure --timeout 300 "${ctest_args[@]}") || rc=$?
    if ((rc)); then
      summary+=("$name ($dir, ${toolkit:-no CUDA}): tests FAILED, $warnings warning(s), $((SECONDS - start)) s")
    else
      summary+=("$name ($dir, ${toolkit:-no CUDA}): passed, $warnings warning(s), $((SECONDS - start)) s")
    fi
  else
    rc=1
    summary+=("$name ($dir): build FAILED, $((SECONDS - start)) s")
  fi
  rm -f "$log"
  ((rc == 0)) || failed=1
}

ctest_args=("$@")
run_suite "default toolkit" "$build_dir"
if ((with_cuda12)); then
  run_suite "CUDA 12" "$build_dir-cuda12" CUDA_HOME=.deps/cuda-12
else
  summary+=("CUDA 12: skipped (PREFLIGHT_TEST_CUDA12=0)")
fi

echo "test: === summary ==="
printf 'test: %s\n' "${summary[@]}"
exit "$failed"
