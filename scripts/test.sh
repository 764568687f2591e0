#!/usr/bin/env bash
# Installs dependencies, builds from scratch in build-test/ (or $BUILD_DIR) and runs the whole
# test suite. GPU tests (label gpu) report "skipped" where no GPU is visible.
# Then the same again with CUDA 12 (issue 19: the nodes clusters run have drivers older than
# CUDA 13 needs, so the CUDA 12 package must build and pass too): scripts/setup-deps.sh --cuda 12
# puts the toolkit in .deps/cuda-12, and a second tree, build-test-cuda12/ ($BUILD_DIR-cuda12),
# is built with it and tested whole. PREFLIGHT_TEST_CUDA12=0 skips that second build (for quick
# local runs; CI runs both). Extra arguments go to every ctest run.
# The unit tests run as many at a time as there are cores; the other labels one at a time.
# Both trees compile through ccache with a cache that starts empty in every run
# ($BUILD_DIR-ccache, removed at the end): the second tree takes the first tree's objects for
# every unit whose preprocessed text, compiler and flags are the same (all but the CUDA code and
# the few that include the tree's generated header), so it compiles only what differs. ci and
# cuda12 are unity builds (CMakePresets.json): a unit is a batch of up to 8 C++ sources of one
# target, compiled again as a whole where one of them differs.
# Then, hardening (issue 17; docs/testing.md): the timing-sensitive labels under a CPU hog
# (scripts/test-under-load.sh): in the CUDA 12 tree they run under the hog instead of idle, so
# each runs once idle (first tree) and once loaded (second tree); without the CUDA 12 tree, the
# first tree's run again under the hog. The sanitizer trees are built in the background at nice
# 19 from the moment the first tree is built, and the ASan tree goes on to its unit tests; at the
# loaded run that job is raised to normal priority and is the hog (stress-ng once it ends), so the
# cores do useful work while they are kept busy (issue 31: CI time; see start_background_builds).
# The ASan+UBSan and TSan builds (scripts/sanitize.sh),
# which pass only with zero sanitizer reports; and every fuzz target for
# PREFLIGHT_TEST_FUZZ_SECONDS (default 10) each (scripts/fuzz.sh, in the ASan build).
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
fuzz_seconds=${PREFLIGHT_TEST_FUZZ_SECONDS:-10}
if [[ ! "$fuzz_seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "test: PREFLIGHT_TEST_FUZZ_SECONDS must be a whole number from 1, not '$fuzz_seconds'" >&2
  exit 2
fi
setup_args=(--test)
# setup-deps --test installs Slurm and munge, so the slurm-real tests must run, not skip.
export PREFLIGHT_TEST_REQUIRE_SLURM=1
((with_cuda12)) && setup_args+=(--cuda 12)
setup_start=$SECONDS
scripts/setup-deps.sh "${setup_args[@]}"
setup_seconds=$((SECONDS - setup_start))

build_dir=${BUILD_DIR:-build-test}
summary=("dependencies (scripts/setup-deps.sh ${setup_args[*]}): $setup_seconds s")
failed=0
jobs=$(nproc)
# The labels scripts/test-under-load.sh runs under its hog: timing-sensitive, so never run beside
# another test.
load_labels=$(scripts/test-under-load.sh --labels)

# Builds started in the background (the sanitizer trees, below), each in a process group of its
# own: an interrupted or failed run stops them with everything they started, instead of leaving
# compilers running.
background_pids=()
ccache_dir=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local pid
  for pid in "${background_pids[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
  done
  [[ -z $ccache_dir ]] || rm -rf "$ccache_dir"
}
trap cleanup EXIT

# The run-scoped compiler cache (see the top). Without ccache each tree compiles everything.
ccache_env=()
if command -v ccache >/dev/null 2>&1; then
  ccache_dir=$PWD/$build_dir-ccache
  rm -rf "$ccache_dir"
  # NOHASHDIR: the trees differ in their folder, which -g would otherwise put into every hash.
  # The price: a reused object's debug information names the first tree as its build folder.
  ccache_env=(CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_DIR="$ccache_dir"
    CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1)
fi

# reused_objects: "HITS of ALL" compiles since the last --zero-stats, from ccache's own counters.
reused_objects() {
  env "${ccache_env[@]}" ccache --print-stats |
    awk -F'\t' '$1 ~ /^(direct|preprocessed)_cache_hit$/ { hit += $2 }
                 $1 == "cache_miss" { miss += $2 }
                 END { printf "%d of %d", hit, hit + miss }'
}

# run_suite NAME BUILD_DIR LOADED [ENV...]: builds from scratch, runs every test, records the
# outcome. The unit tests run $jobs at a time, the rest one at a time; LOADED=1 runs the
# timing-sensitive labels under scripts/test-under-load.sh's CPU hog. A failed build or test run
# does not stop the other suite, so one CI run reports both.
run_suite() {
  local name=$1 dir=$2 loaded=$3 log start rc=0 warnings toolkit how=""
  shift 3
  log=$(mktemp)
  start=$SECONDS
  rm -rf "$dir"
  ((${#ccache_env[@]} == 0)) || env "${ccache_env[@]}" ccache --zero-stats >/dev/null
  echo "test: === $name: building $dir ==="
  # The build's output is shown as it comes and kept to count the compiler's warnings (the
  # build reports them, -Wall -Wextra ..., without failing on them; ccache replays a reused
  # object's warnings).
  if env "${ccache_env[@]}" "$@" BUILD_DIR="$dir" scripts/build.sh -DPREFLIGHT_BUILD_TESTS=ON 2>&1 |
    tee "$log"; then
    warnings=$(grep -cE 'warning(:| #)|CMake Warning' "$log" || true)
    ((${#ccache_env[@]} == 0)) || how="; $(reused_objects) objects from ccache"
    toolkit=$(sed -n 's/^build: .* uses \(CUDA .*\)$/\1/p' "$log" | head -n1)
    start_background_builds
    echo "test: === $name: ${toolkit:-no CUDA}; $warnings compiler warning(s); running ctest ==="
    : >"$log"
    (cd "$dir" && ctest --output-on-failure --timeout 300 -j "$jobs" -L '^unit$' \
      "${ctest_args[@]}") 2>&1 | tee -a "$log" || rc=$?
    (cd "$dir" && ctest --output-on-failure --timeout 300 -LE "^unit\$|$load_labels" \
      "${ctest_args[@]}") 2>&1 | tee -a "$log" || rc=$?
    if ((loaded)); then
      # The hog: the ASan tree's build and unit tests (see start_background_builds), raised from
      # nice 19 to 0 for it (root only: elsewhere stress-ng alone), then stress-ng.
      local hog=()
      if [[ -n $asan_pid ]] && kill -0 "$asan_pid" 2>/dev/null &&
        renice -n 0 -g "$asan_pid" >/dev/null 2>&1; then
        hog=(--hog-after "$asan_pid")
        how+="; $load_labels under a CPU hog (the ASan tree's build and unit tests, then stress-ng)"
      else
        how+="; $load_labels under a CPU hog (stress-ng)"
      fi
      scripts/test-under-load.sh "${hog[@]}" "$dir" --timeout 300 \
        "${ctest_args[@]}" 2>&1 | tee -a "$log" || rc=$?
    else
      # The stand-in Slurm cases two at a time: each is a bash script that mostly waits on a
      # deadline, and their time bounds hold under the loaded run's hog, which is harsher than a
      # second case beside them (49 of 49 passed at -j2 beside a fresh-root test run and a full
      # build, load average 4.8). 125 s idle becomes about 60. The rest one at a time.
      (cd "$dir" && ctest --output-on-failure --timeout 300 -j "$jobs" -L '^slurm$' \
        "${ctest_args[@]}") 2>&1 | tee -a "$log" || rc=$?
      (cd "$dir" && ctest --output-on-failure --timeout 300 -L "$load_labels" -LE '^slurm$' \
        "${ctest_args[@]}") 2>&1 | tee -a "$log" || rc=$?
    fi
    if ((rc)); then
      summary+=("$name ($dir, ${toolkit:-no CUDA}$how): tests FAILED, $warnings warning(s), $((SECONDS - start)) s")
    else
      summary+=("$name ($dir, ${toolkit:-no CUDA}$how): passed, $warnings warning(s), $((SECONDS - start)) s")
    fi
  else
    rc=1
    summary+=("$name ($dir): build FAILED, $((SECONDS - start)) s")
  fi
  note_failed_tests "$name" "$log"
  rm -f "$log"
  ((rc == 0)) || failed=1
}

# start_background LOG COMMAND...: runs COMMAND in the background at the lowest CPU priority
# (nice 19), its output to LOG, in a process group of its own (set -m: cleanup stops it with
# everything it started) but in this script's session. Not setsid: with the kernel's autogroup
# scheduling (sched_autogroup_enabled, on by default in Debian's kernels) a new session is a
# scheduling group of its own, which shares the CPU with this one as an equal whatever its
# nice value. The fresh-root run at 832a363 measured it: the first tree's non-timing labels took
# 111 s beside the TSan build at "nice 19" in a session of its own, the same tests 56 s in the
# second tree; two busy loops at nice 0 beside two at nice 19 in a new session got 2 s of CPU
# each in 6 s, as the niced ones did. Sets REPLY to its process id.
start_background() {
  local log=$1
  shift
  set -m
  # A refused renice must not lose the job: it then runs at the script's own priority.
  (renice -n 19 -p "$BASHPID" >/dev/null || true; exec "$@") >"$log" 2>&1 &
  REPLY=$!
  set +m
  background_pids+=("$REPLY")
}

# The sanitizer trees are built in the background from the moment the first tree is built, at
# the lowest CPU priority: they take the cycles the first tree's tests leave, most of all while
# the timing-sensitive labels run idle (they mostly wait on daemons, MPI ranks and deadlines),
# and yield every cycle those ask for, so that run stays idle. The TSan tree stays there; its
# tests wait for it. The ASan+UBSan tree (when the CUDA 12 tree runs the loaded labels) goes on
# to its unit tests, and is raised to normal priority when the loaded run starts: the rest of its
# build and its unit tests are that run's CPU hog (stress-ng takes over once they end). Its other
# labels, timing-sensitive, run once it has ended, beside what is left of the TSan build.
tsan_pid="" tsan_log="" tsan_epoch=0
asan_pid="" asan_log="" asan_status_dir=""
start_background_builds() {
  ((with_hardening)) && [[ -z $tsan_pid ]] || return 0
  tsan_log=$(mktemp)
  tsan_epoch=$(date +%s)
  start_background "$tsan_log" env PREFLIGHT_SANITIZE_STEP=build BUILD_DIR=build-tsan \
    scripts/sanitize.sh thread
  tsan_pid=$REPLY
  echo "test: === TSan tree: building build-tsan in the background at nice 19 ==="
  ((with_cuda12)) || return 0
  asan_log=$(mktemp)
  asan_status_dir=$(mktemp -d)
  # Each part leaves "EXIT-STATUS SECONDS" in a file of asan_status_dir (build, unit).
  # shellcheck disable=SC2016  # expanded by the inner shell
  start_background "$asan_log" bash -c '
    start=$(date +%s)
    env PREFLIGHT_SANITIZE_STEP=build "${@:2}" scripts/sanitize.sh address
    rc=$?
    echo "$rc $(($(date +%s) - start))" >"$1/build"
    ((rc == 0)) || exit "$rc"
    start=$(date +%s)
    env PREFLIGHT_SANITIZE_STEP=unit "${@:2}" scripts/sanitize.sh address
    rc=$?
    echo "$rc $(($(date +%s) - start))" >"$1/unit"
    exit "$rc"' asan-build-and-unit "$asan_status_dir" "${asan_env[@]}"
  asan_pid=$REPLY
  echo "test: === ASan+UBSan tree: building build-asan in the background at nice 19, then its unit tests ==="
}

# note_failed_tests STEP LOG: the tests ctest listed as failed in LOG (its "The following tests
# FAILED:" block, "<number> - <name> (<why>)"), one summary line each, so that the run's last
# lines, all CI keeps of a long run, name them; then the first failed Catch assertions of the
# log (the "file:line: FAILED:" line and what follows it: the expression, its values and the
# start of its message, where a test puts a short account of what it judged, up to a JSON dump
# or 10 lines), at most 24 lines of 200 characters, so that a failure seen once in CI says
# what failed.
note_failed_tests() {
  local step=$1 line
  while IFS= read -r line; do
    summary+=("  FAILED in $step: $line")
  done < <(awk '/^The following tests FAILED:/ { on = 1; next }
                on && /^[[:space:]]+[0-9]+ - / { sub(/^[[:space:]]+/, ""); print; next }
                { on = 0 }' "$2")
  while IFS= read -r line; do
    summary+=("    $line")
  done < <(awk '/: FAILED:$/ { left = 10 }
                left > 0 && /^ *[{[]$/ { left = 0 }
                left > 0 { print substr($0, 1, 200); left--; if (++n >= 24) exit }' "$2")
  # A sanitizer report from a process whose exit no test checks fails the step with every test
  # passed (sanitize.sh's reports_clean): quote each report's first lines, whatever they say,
  # then the lines that say what and where. CI stop 38 lost them all; at stop 40 only the
  # file names came through, because the runtime's own failure ("Tracer caught signal 11")
  # has none of the words an error report has.
  while IFS= read -r line; do
    summary+=("    $line")
  done < <(awk '/sanitizer report\(s\):$/ { on = 1; next }
                on && /^--- / { head = 4; print substr($0, 1, 200); if (++n >= 24) exit; next }
                on && (head-- > 0 || /ERROR: |runtime error|SUMMARY: |^ *#[0-5] /) {
                  print substr($0, 1, 200); if (++n >= 24) exit }' "$2")
}

# run_step NAME COMMAND...: a hardening step; its outcome and time go to the summary.
run_step() {
  local name=$1 start=$SECONDS rc=0 log
  shift
  log=$(mktemp)
  echo "test: === $name ==="
  "$@" 2>&1 | tee "$log" || rc=$?
  if ((rc)); then
    summary+=("$name: FAILED (exit $rc), $((SECONDS - start)) s")
    failed=1
  else
    summary+=("$name: passed, $((SECONDS - start)) s")
  fi
  note_failed_tests "$name" "$log"
  rm -f "$log"
}

# The ASan+UBSan tree holds the fuzz targets too (they replay their corpora as ctest label fuzz),
# and the fuzzing runs there: one sanitized build of the libraries instead of two.
asan_env=(PREFLIGHT_SANITIZE_FUZZERS=1 BUILD_DIR=build-asan)

ctest_args=("$@")
run_suite "default toolkit" "$build_dir" 0 PREFLIGHT_PRESET=ci
if ((with_cuda12)); then
  run_suite "CUDA 12" "$build_dir-cuda12" "$with_hardening" PREFLIGHT_PRESET=cuda12 \
    CUDA_HOME=.deps/cuda-12
else
  if ((with_hardening)); then
    run_step "under load ($build_dir: $load_labels)" scripts/test-under-load.sh "$build_dir"
  fi
  summary+=("CUDA 12: skipped (PREFLIGHT_TEST_CUDA12=0)")
fi
if ((with_hardening)); then
  if [[ -z $asan_pid ]]; then  # no CUDA 12 tree: nothing was built in the background
    run_step "sanitizers (ASan+UBSan, with the fuzz targets)" \
      env "${asan_env[@]}" scripts/sanitize.sh address
  else
    # The background part (build, unit tests) first; its output is shown once it ends, so that
    # it does not interleave with the other steps'.
    wait_start=$SECONDS
    wait "$asan_pid" || true
    asan_wait_seconds=$((SECONDS - wait_start))
    cat "$asan_log"
    read -r asan_build_rc asan_build_seconds <"$asan_status_dir/build" ||
      asan_build_rc="(none: stopped)" asan_build_seconds="?"
    read -r asan_unit_rc asan_unit_seconds <"$asan_status_dir/unit" ||
      asan_unit_rc="(none)" asan_unit_seconds="?"
    where="in the background from the first tree's tests on, $asan_wait_seconds s waited for"
    if [[ $asan_build_rc != 0 ]]; then
      summary+=("sanitizers (ASan+UBSan, with the fuzz targets): build FAILED (exit $asan_build_rc), $asan_build_seconds s $where")
      failed=1
    else
      if [[ $asan_unit_rc == 0 ]]; then
        summary+=("sanitizers (ASan+UBSan): built in $asan_build_seconds s and unit tests passed in $asan_unit_seconds s, $where")
      else
        summary+=("sanitizers (ASan+UBSan): built in $asan_build_seconds s; unit tests FAILED (exit $asan_unit_rc), $asan_unit_seconds s, $where")
        failed=1
      fi
      note_failed_tests "sanitizers (ASan+UBSan unit tests)" "$asan_log"
      run_step "sanitizers (ASan+UBSan: integration, mpi, report, fuzz replays)" \
        env PREFLIGHT_SANITIZE_STEP=rest "${asan_env[@]}" scripts/sanitize.sh address
    fi
    rm -rf "$asan_log" "$asan_status_dir"
  fi
  # The TSan build may still run at nice 19 beside the ASan tree's other labels, as both builds
  # run beside the first tree's timing labels: at the lowest priority it takes only the cycles
  # those leave. (Once it ran in a session of its own, where "nice 19" was an equal share, and an
  # ASan straggler drill beside it missed its call; see start_background.) Its own time is its
  # log's last write; the wait is what the run spent on it here.
  tsan_rc="" tsan_build_seconds=0 tsan_wait_seconds=0
  if [[ -n $tsan_pid ]]; then
    wait_start=$SECONDS
    tsan_rc=0
    wait "$tsan_pid" || tsan_rc=$?
    tsan_wait_seconds=$((SECONDS - wait_start))
    tsan_build_seconds=$(($(stat -c %Y "$tsan_log") - tsan_epoch))
    cat "$tsan_log"
    rm -f "$tsan_log"
  fi
  if [[ -z $tsan_rc ]]; then  # no tree was built, so no background build started
    run_step "sanitizers (TSan)" env BUILD_DIR=build-tsan scripts/sanitize.sh thread
  elif ((tsan_rc)); then
    summary+=("sanitizers (TSan): build FAILED (exit $tsan_rc), $tsan_build_seconds s")
    failed=1
  else
    run_step "sanitizers (TSan; built at nice 19 in $tsan_build_seconds s beside the other steps, $tsan_wait_seconds s waited for)" \
      env PREFLIGHT_SANITIZE_STEP=test BUILD_DIR=build-tsan scripts/sanitize.sh thread
  fi
  run_step "fuzz (${fuzz_seconds} s per target)" \
    scripts/fuzz.sh --seconds "$fuzz_seconds" --build-dir build-asan
else
  summary+=("hardening: skipped (PREFLIGHT_TEST_HARDENING=0)")
fi

summary+=("in all: $SECONDS s")
echo "test: === summary (time per phase) ==="
printf 'test: %s\n' "${summary[@]}"
exit "$failed"
