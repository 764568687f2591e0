#!/usr/bin/env bash
# Sanitizer builds of the host-only configuration, built with Debian's clang and tested (issue 17;
# docs/testing.md, "Sanitizers"):
#   address  ASan + UBSan (every finding fatal) in $BUILD_DIR (default build-asan): the unit,
#            integration, mpi and report tests; with PREFLIGHT_SANITIZE_FUZZERS=1 the fuzz
#            targets too, and their corpus replays (label fuzz). CI fuzzes in a folder of its
#            own instead (scripts/fuzz.sh), which replays every corpus input before fuzzing.
#   thread   TSan in $BUILD_DIR (default build-tsan): only the unit tests are built and run.
#   all      both, address first (the default).
# A run passes only with zero reports: every sanitizer writes its reports to files under
# BUILD_DIR/sanitizer-reports/, including those of the preflight processes the tests spawn (whose
# exit codes a test may not look at), and any file there fails the run and is printed.
# Deliberate leaks (resources abandoned to a hung device or peer) are listed, one line each with
# its reason, in tests/sanitizers/lsan.supp; nothing else is suppressed.
# PREFLIGHT_SANITIZE_STEP=build configures and builds only, =test runs the tests of a tree built
# so (scripts/test.sh builds the ASan tree while other tests run beside it), =all (the default)
# does both. =unit and =rest split =test in two: the unit tests (CPU-bound, many at a time; what
# scripts/test.sh runs as the CPU hog of its loaded run) and the other labels (one at a time:
# they time daemons and deadlines). Each part checks its own reports. The build uses as many
# compile jobs as there are cores.
# Extra arguments go to ctest. Usage: sanitize.sh [address|thread|all] [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

mode=all
if (($#)); then
  case $1 in
    address | thread | all) mode=$1; shift ;;
    -*) ;;
    *) echo "sanitize: unknown mode '$1' (known: address, thread, all)" >&2; exit 2 ;;
  esac
fi
with_fuzzers=${PREFLIGHT_SANITIZE_FUZZERS:-0}
case "$with_fuzzers" in
  0 | 1) ;;
  *) echo "sanitize: PREFLIGHT_SANITIZE_FUZZERS must be 0 or 1, not '$with_fuzzers'" >&2; exit 2 ;;
esac
step=${PREFLIGHT_SANITIZE_STEP:-all}
case "$step" in
  build | unit | rest | test | all) ;;
  *) echo "sanitize: PREFLIGHT_SANITIZE_STEP must be build, unit, rest, test or all, not '$step'" >&2
     exit 2 ;;
esac
for tool in clang clang++ cmake ctest; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "sanitize: $tool not found (scripts/setup-deps.sh --test installs it)" >&2; exit 2; }
done

# The unit tests run this many at a time (the cores here); the other labels one at a time.
jobs=$(nproc)
# The presets name Ninja; without it, Make.
generator=()
command -v ninja >/dev/null 2>&1 || generator=(-G "Unix Makefiles")

# configure DIR PRESET: a fresh host-only clang build from CMakePresets.json (asan, asan-fuzz,
# tsan), which holds the flags. There the tests' timeouts are tripled (a sanitizer's slowness must
# not pass for a hang), the exhaustive sweeps of pure logic are shorter
# (tests/support/sweeps.hpp), and the benchmarks, which no test runs, are not built.
configure() {
  local dir=$1 preset=$2
  rm -rf "$dir"
  cmake --preset "$preset" -B "$dir" "${generator[@]}"
}

# reports_clean DIR: 0 when the sanitizers wrote no report under DIR, else prints them all.
reports_clean() {
  local dir=$1 found
  found=$(find "$dir" -type f 2>/dev/null | sort)
  [[ -z "$found" ]] && return 0
  echo "sanitize: $(wc -l <<<"$found") sanitizer report(s):" >&2
  while IFS= read -r report; do
    echo "--- $report" >&2
    head -n 80 "$report" >&2
  done <<<"$found"
  return 1
}

# present_targets DIR NAME...: those of the NAMEs that the tree in DIR lists among its targets
# (mpi_tests needs MPI, fake_ibverbs libibverbs), one per line.
present_targets() {
  local dir=$1 name listing
  shift
  listing=$(cmake --build "$dir" --target help)
  for name in "$@"; do
    grep -qE "(^|[[:space:]])$name(:|[[:space:]]|$)" <<<"$listing" && echo "$name"
  done
  return 0
}

run_address() {
  local dir=${BUILD_DIR:-build-asan} labels='^(unit|integration|mpi|report)$' rc=0
  local preset=asan
  if ((with_fuzzers)); then
    # The fuzz targets share this build: their libraries need coverage hooks too.
    preset=asan-fuzz
    labels='^(unit|integration|mpi|report|fuzz)$'
  fi
  if [[ $step == build || $step == all ]]; then
    echo "sanitize: === address + undefined: building $dir ==="
    configure "$dir" "$preset" || return
    # Only what those labels run: not the GPU tests (no CUDA here, and no label of theirs runs)
    # nor the corpus writer (label corpus). Issue 31: CI time.
    local targets=(preflight unit_tests integration_tests fake_nvml fake_cuda)
    ((with_fuzzers)) && targets+=(fuzz_targets)
    mapfile -t -O "${#targets[@]}" targets < <(present_targets "$dir" mpi_tests fake_ibverbs)
    cmake --build "$dir" -j "$jobs" --target "${targets[@]}" || return
  fi
  [[ $step != build ]] || return 0
  [[ -f $dir/CTestTestfile.cmake ]] ||
    { echo "sanitize: no built tree in $dir (PREFLIGHT_SANITIZE_STEP=build first)" >&2; return 2; }
  # exitcode 86: a report must never pass for preflight's own exit 1 ("a node is faulty").
  # intercept_tls_get_addr=0: clang 14's runtime takes a thread-local block that malloc placed
  # 16 bytes past a page boundary for glibc 2.19's layout and reads the two words before it as
  # the block's start and size; LeakSanitizer's tracer then faults scanning that garbage at exit
  # ("Tracer caught signal 11", "LeakSanitizer has encountered a fatal error"; fixed in LLVM
  # 17). Where the block lands depends on every earlier small allocation (the host name, the
  # rank count): CI's failures at stops 38 and 40 were this, in fleet ranks (reproduced in
  # docs/testing.md, "Sanitizers"). Turned off, dynamic TLS is not scanned for pointers: that
  # can only add a leak report, never hide one.
  # Each part has a reports folder of its own.
  local part reports asan_options asan_env
  for part in unit rest; do
    [[ $step == "$part" || $step == test || $step == all ]] || continue
    reports=$repo/$dir/sanitizer-reports/$part
    rm -rf "$reports" && mkdir -p "$reports"
    asan_options="log_path=$reports/asan:log_exe_name=1:exitcode=86:intercept_tls_get_addr=0:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1"
    asan_env=(
      ASAN_OPTIONS="$asan_options"
      LSAN_OPTIONS="suppressions=$repo/tests/sanitizers/lsan.supp:print_suppressions=0"
      OMPI_MCA_mca_base_component_disable_dlclose=1
      # The runtimes share one log, ASan's log_path. A log_path here would win and name every
      # report ubsan.*: at stop 40, LeakSanitizer's own failure came as ubsan.preflight.311.
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    if [[ $part == unit ]]; then
      echo "sanitize: === address + undefined: ctest -L '^unit$' ($jobs at a time) ==="
      (cd "$dir" && env "${asan_env[@]}" ctest --output-on-failure --timeout 600 -j "$jobs" \
        -L '^unit$' "$@") || rc=$?
    else
      echo "sanitize: === address + undefined: ctest -L '$labels' -LE '^(unit|mpi)$', then -L mpi (one at a time) ==="
      (cd "$dir" && env "${asan_env[@]}" ctest --output-on-failure --timeout 600 -L "$labels" \
        -LE '^(unit|mpi)$' "$@") || rc=$?
      # fast_unwind_on_malloc=0 where Open MPI runs: its libraries have no frame pointers, and
      # only full stacks name the library a suppression matches. Nowhere else: unwinding every
      # allocation in full made two JSON-heavy unit tests take 50 and 60 s instead of 4 and 6
      # (the unit label 180 s instead of 51, the integration label 85 instead of 51).
      (cd "$dir" && env "${asan_env[@]}" ASAN_OPTIONS="$asan_options:fast_unwind_on_malloc=0" \
        ctest --output-on-failure --timeout 600 -L '^mpi$' "$@") || rc=$?
    fi
    reports_clean "$reports" || rc=1
  done
  return "$rc"
}

run_thread() {
  local dir=${BUILD_DIR:-build-tsan} rc=0
  if [[ $step == build || $step == all ]]; then
    echo "sanitize: === thread: building $dir (unit tests) ==="
    configure "$dir" tsan || return
    cmake --build "$dir" -j "$jobs" --target unit_tests fake_nvml || return
  fi
  # Only unit tests here: =rest has nothing to run.
  [[ $step != build && $step != rest ]] || return 0
  [[ -f $dir/CTestTestfile.cmake ]] ||
    { echo "sanitize: no built tree in $dir (PREFLIGHT_SANITIZE_STEP=build first)" >&2; return 2; }
  local reports=$repo/$dir/sanitizer-reports
  rm -rf "$reports" && mkdir -p "$reports"
  echo "sanitize: === thread: ctest -L unit ==="
  # setarch -R: clang 14's TSan cannot map its shadow under the newer kernels' wider ASLR.
  (cd "$dir" &&
    TSAN_OPTIONS="log_path=$reports/tsan:exitcode=86:halt_on_error=0:second_deadlock_stack=1" \
    setarch "$(uname -m)" -R ctest --output-on-failure --timeout 600 -j "$jobs" -L '^unit$' \
      "$@") || rc=$?
  reports_clean "$reports" || rc=1
  return "$rc"
}

status=0
case $mode in
  address) run_address "$@" || status=$? ;;
  thread) run_thread "$@" || status=$? ;;
  all)
    run_address "$@" || status=$?
    run_thread "$@" || status=1
    ;;
esac
exit "$status"
