#!/usr/bin/env bash
# Runs the timing-sensitive tests while a CPU hog keeps every core busy, as a loaded CI machine
# does (issue 17): the labels gate, slurm, mpi and integration under `stress-ng --cpu <nproc>`.
#
#   scripts/test-under-load.sh [--hog-after PID] [BUILD_DIR] [CTEST-ARGS...]
#   scripts/test-under-load.sh --labels    prints the label regex, for callers that run the
#                                          other labels themselves (scripts/test.sh)
#
# --hog-after PID: process PID (a build with as many compile jobs as cores, started by the
# caller) is the hog while it runs, and stress-ng takes over when it ends, if the tests still run.
# scripts/test.sh builds the ASan tree so, instead of burning the cores for nothing. PID itself
# is never signalled: the caller waits for it.
#
# BUILD_DIR (default: build, relative to the checkout) must hold a configured and built tree.
# Extra arguments go to ctest, after the label filter (e.g. --repeat until-fail:3, -R mpirun).
# Exits with ctest's status; 2 when stress-ng or the build folder is missing. The hog is
# bounded (TEST_LOAD_SECONDS, default 3600 s) and stopped when ctest ends, whatever ends it.
set -euo pipefail

readonly LABELS='gate|slurm|mpi|integration'
hog_seconds=${TEST_LOAD_SECONDS:-3600}

die() {
  printf 'test-under-load: %s\n' "$*" >&2
  exit 2
}

if [[ ${1:-} == --labels ]]; then
  printf '%s\n' "$LABELS"
  exit 0
fi
cd "$(dirname "$0")/.."
hog_after=""
if [[ ${1:-} == --hog-after ]]; then
  [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--hog-after needs a process id, not '${2:-}'"
  hog_after=$2
  shift 2
fi
build_dir=build
if (($# > 0)) && [[ $1 != -* ]]; then
  build_dir=$1
  shift
fi
[[ $hog_seconds =~ ^[1-9][0-9]{0,5}$ ]] ||
  die "TEST_LOAD_SECONDS needs a whole number of seconds from 1 to 999999, not '$hog_seconds'"
[[ -f $build_dir/CTestTestfile.cmake ]] ||
  die "no ctest tree in '$build_dir' (build it first: BUILD_DIR=$build_dir scripts/build.sh)"
command -v ctest >/dev/null 2>&1 || die "ctest not found (it comes with cmake)"
command -v stress-ng >/dev/null 2>&1 ||
  die "stress-ng is not installed (Debian: apt-get install stress-ng; scripts/setup-deps.sh --test)"

cores=$(nproc)
hog_pid="" hog_log="" ctest_pid=""
# stop_group PID: ends the process group that PID leads (set -m below gives the hog and ctest a
# group of their own, so nothing else is in it): SIGTERM, then SIGKILL to what is left after 5 s
# (polled every 0.1 s), and reaps PID. The whole group: stress-ng's parent, signalled alone,
# leaves its workers spinning.
stop_group() {
  local i
  kill -TERM -- "-$1" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 -- "-$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
# On every exit: the tests first (a signal ends this script while they run), then the hog.
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [[ -n $ctest_pid ]]; then stop_group "$ctest_pid"; fi
  if [[ -n $hog_pid ]]; then stop_group "$hog_pid"; fi
  ctest_pid="" hog_pid=""
  if [[ -n $hog_log ]]; then rm -f -- "$hog_log"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Its messages go to a file, shown only when it fails to start: stopped early it warns that it
# "finished prematurely", which is the point here.
hog_log=$(mktemp "${TMPDIR:-/tmp}/test-under-load.XXXXXX")
if [[ -n $hog_after ]]; then
  kill -0 "$hog_after" 2>/dev/null || die "--hog-after $hog_after: no such process"
  printf 'test-under-load: process %s is the CPU hog while it runs, then stress-ng --cpu %d; ctest -L %s in %s\n' \
    "$hog_after" "$cores" "$LABELS" "$build_dir" >&2
  set -m # the waiting shell, then stress-ng, lead a process group of their own
  # shellcheck disable=SC2016  # expanded by the inner shell
  bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
           exec stress-ng --cpu "$2" --timeout "$3s" --quiet' _ "$hog_after" "$cores" \
    "$hog_seconds" </dev/null >/dev/null 2>"$hog_log" &
  hog_pid=$!
  set +m
else
  printf 'test-under-load: stress-ng --cpu %d for at most %d s; ctest -L %s in %s\n' \
    "$cores" "$hog_seconds" "$LABELS" "$build_dir" >&2
  set -m # job control for this one job: the hog leads a process group of its own
  stress-ng --cpu "$cores" --timeout "${hog_seconds}s" --quiet </dev/null >/dev/null 2>"$hog_log" &
  hog_pid=$!
  set +m
  # The hog is at work once its workers run (polled, up to 10 s): the group holds more than the
  # stress-ng parent. One that ended at once (stress-ng failing) would make this run meaningless.
  for ((i = 0; ; i++)); do
    kill -0 "$hog_pid" 2>/dev/null || die "stress-ng ended at once: $(<"$hog_log")"
    (($(pgrep -g "$hog_pid" | wc -l) <= 1)) || break
    ((i < 100)) || die "stress-ng started no workers within 10 s"
    sleep 0.1
  done
fi

# In the background, in a group of its own, so that a signal to this script is handled at once
# (bash runs traps during `wait`, not during a foreground command) and ends the tests too.
status=0
set -m
(cd "$build_dir" && exec ctest --output-on-failure -L "$LABELS" "$@") &
ctest_pid=$!
set +m
wait "$ctest_pid" || status=$?
ctest_pid=""
stop_group "$hog_pid"
hog_pid=""
if [[ -n $hog_after ]] && kill -0 "$hog_after" 2>/dev/null; then
  printf 'test-under-load: ctest exit %d with process %s still hogging the %d cores\n' \
    "$status" "$hog_after" "$cores" >&2
else
  printf 'test-under-load: ctest exit %d under a %d-core CPU hog\n' "$status" "$cores" >&2
fi
exit "$status"
