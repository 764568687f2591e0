#!/usr/bin/env bash
# Installs dependencies, builds from scratch in build-test/ (or $BUILD_DIR) and runs the whole
# test suite. GPU tests (label gpu) report "skipped" where no GPU is visible.
# Then the same again with CUDA 12 (issue 19: the nodes clusters run have drivers older than
# CUDA 13 needs, so the CUDA 12 package must build and pass too): scripts/setup-deps.sh --cuda 12
# puts the toolkit in .deps/cuda-12, and a second tree, build-test-cuda12/ ($BUILD_DIR-cuda12),
# is built with it and tested whole. PREFLIGHT_TEST_CUDA12=0 skips that second build (for quick
# local runs; CI runs both). Extra arguments go to both ctest runs.
# Then, hardening (issue 17; docs/testing.md): the timing-sensitive labels of the first build
# again while a CPU hog keeps every core busy (scripts/test-under-load.sh); the ASan+UBSan and
# TSan builds (scripts/sanitize.sh), which pass only with zero sanitizer reports; and every fuzz
# target for PREFLIGHT_TEST_FUZZ_SECONDS (default 15) each (scripts/fuzz.sh, in the ASan build).
# PREFLIGHT_TEST_HARDENING=0 skips those three.
set -euo pipefail
cd "$(dirname "$0")/.."

with_cuda12=${PREFLIGHT_TEST_CUDA12:-1}
case "$with_cuda12" in
  0 | 1) ;;
  *) echo "test: PREFLIGHT_TEST_CUDA12 must be 0 or 1, not '$with_cuda12'" >&2; exit 2 ;;
esac
with_hardening=${PREFLIGHT_TEST_HARDENING:-1}
case "$with_hardening" in
  0 | 1) ;;
  *) echo "test: PREFLIGHT_TEST_HARDENING must be 0 or 1, not '$with_hardening'" >&2; exit 2 ;;
esac
fuzz_seconds=${PREFLIGHT_TEST_FUZZ_SECONDS:-15}
if [[ ! "$fuzz_seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "test: PREFLIGHT_TEST_FUZZ_SECONDS must be a whole number from 1, not '$fuzz_seconds'" >&2
  exit 2
fi
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

# run_step NAME COMMAND...: a hardening step; its outcome and time go to the summary.
run_step() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "test: === $name ==="
  "$@" || rc=$?
  if ((rc)); then
    summary+=("$name: FAILED (exit $rc), $((SECONDS - start)) s")
    failed=1
  else
    summary+=("$name: passed, $((SECONDS - start)) s")
  fi
}

ctest_args=("$@")
run_suite "default toolkit" "$build_dir"
if ((with_hardening)); then
  run_step "under load ($build_dir: gate, slurm, mpi, integration)" \
    scripts/test-under-load.sh "$build_dir"
fi
if ((with_cuda12)); then
  run_suite "CUDA 12" "$build_dir-cuda12" CUDA_HOME=.deps/cuda-12
else
  summary+=("CUDA 12: skipped (PREFLIGHT_TEST_CUDA12=0)")
fi
if ((with_hardening)); then
  # The ASan build holds the fuzz targets too (they replay their corpora as ctest label fuzz),
  # and the fuzzing runs there: one sanitized build of the libraries instead of two.
  run_step "sanitizers (ASan+UBSan, with the fuzz targets)" \
    env PREFLIGHT_SANITIZE_FUZZERS=1 BUILD_DIR=build-asan scripts/sanitize.sh address
  run_step "sanitizers (TSan)" env BUILD_DIR=build-tsan scripts/sanitize.sh thread
  run_step "fuzz (${fuzz_seconds} s per target)" \
    scripts/fuzz.sh --seconds "$fuzz_seconds" --build-dir build-asan
else
  summary+=("hardening: skipped (PREFLIGHT_TEST_HARDENING=0)")
fi

echo "test: === summary ==="
printf 'test: %s\n' "${summary[@]}"
exit "$failed"
