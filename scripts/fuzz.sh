#!/usr/bin/env bash
# Fuzzes every parser of outside input (tests/fuzz/README.md): configures and builds the libFuzzer
# targets with clang, ASan and UBSan in a build folder of their own (host only), then runs each
# target for N seconds on a copy of its seed corpus. The checked-in corpus is never written to.
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [--build-dir DIR] [TARGET...]
#
# --seconds N      fuzzing time per target (default 20)
# --jobs J         targets fuzzed at the same time, each on one core (default: the cores here)
# --build-dir DIR  the clang build folder, relative to the checkout (default build-fuzz)
# TARGET...        only these targets (default: all; names as in tests/fuzz/CMakeLists.txt)
#
# Exit 0 when no target crashed, 1 naming each one that did (its crash inputs are kept under
# DIR/fuzz-out/TARGET/crashes/), 2 for a bad invocation or a missing tool. A failed build fails
# the script too.
set -euo pipefail

readonly EXIT_USAGE=2
# Per input: a parser that needs more than this is a finding of its own (libFuzzer's "timeout").
readonly INPUT_TIMEOUT_S=10
readonly RSS_LIMIT_MB=2048

# usage [STATUS]: the synopsis above; on stdout for --help (0), else on stderr.
usage() {
  local status=${1:-$EXIT_USAGE}
  if ((status == 0)); then
    sed -n '6,15p' "$0" | sed 's/^# \{0,1\}//'
  else
    sed -n '6,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  fi
  exit "$status"
}

seconds=20
jobs=$(nproc)
build_dir=build-fuzz
only=()
while (($# > 0)); do
  case "$1" in
    --seconds)
      (($# >= 2)) || usage
      seconds=$2
      shift 2
      ;;
    --jobs)
      (($# >= 2)) || usage
      jobs=$2
      shift 2
      ;;
    --build-dir)
      (($# >= 2)) || usage
      build_dir=$2
      shift 2
      ;;
    -h | --help) usage 0 ;;
    -*)
      echo "fuzz: unknown option '$1'" >&2
      usage
      ;;
    *)
      only+=("$1")
      shift
      ;;
  esac
done
if [[ ! "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: --seconds takes a whole number of seconds from 1, got '$seconds'" >&2
  exit "$EXIT_USAGE"
fi
if [[ ! "$jobs" =~ ^[1-9][0-9]{0,2}$ ]]; then
  echo "fuzz: --jobs takes a whole number of targets from 1 to 999, got '$jobs'" >&2
  exit "$EXIT_USAGE"
fi
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit "$EXIT_USAGE"
fi

cd "$(dirname "$0")/.."
# Never turn another build folder into a fuzz build: CMake would drop its cache for clang.
if [[ -f "$build_dir/CMakeCache.txt" ]] &&
  ! grep -q '^PREFLIGHT_BUILD_FUZZERS:BOOL=ON$' "$build_dir/CMakeCache.txt"; then
  echo "fuzz: $build_dir is a build folder without PREFLIGHT_BUILD_FUZZERS; give another" \
    "--build-dir" >&2
  exit "$EXIT_USAGE"
fi

# A folder that is a fuzz build already is used with the options it has: scripts/sanitize.sh's
# ASan build with PREFLIGHT_SANITIZE_FUZZERS=1 (CI fuzzes there, saving a second build of the
# libraries). Otherwise: host only, and only what the targets link: no CUDA, no RDMA, no tests or
# benchmarks. The protocol target needs Open MPI; without it that target is left out (CMake says
# so).
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  with_mpi=OFF
  command -v mpicxx >/dev/null 2>&1 && with_mpi=ON
  generator=()  # the preset names Ninja; without it, Make
  command -v ninja >/dev/null 2>&1 || generator=(-G "Unix Makefiles")
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake --preset fuzz -B "$build_dir" "${generator[@]}" "${launcher[@]}" \
    -DPREFLIGHT_WITH_MPI="$with_mpi"
fi
cmake --build "$build_dir" --target fuzz_targets --parallel "$(nproc)"
echo "fuzz: configured and built in ${SECONDS}s"

manifest=$build_dir/tests/fuzz/targets.tsv
[[ -f "$manifest" ]] || {
  echo "fuzz: $manifest missing after the build" >&2
  exit 1
}

for name in "${only[@]}"; do
  if ! cut -f1 "$manifest" | grep -qx -- "$name"; then
    echo "fuzz: no target named '$name' (known: $(cut -f1 "$manifest" | paste -sd ' '))" >&2
    exit "$EXIT_USAGE"
  fi
done

# final_stat NAME LOG: a number from libFuzzer's -print_final_stats lines ("stat::NAME: VALUE").
final_stat() {
  sed -n "s/^stat::$1: *//p" "$2" | tail -n1
}

# fuzz_target NAME EXE DICT MAX_LEN: fuzzes one target on its copied corpus for $seconds; its
# exit status goes to fuzz-out/NAME/rc, its summary line to fuzz-out/NAME/summary. Runs in the
# background, $jobs at a time: libFuzzer uses one core per process.
fuzz_target() {
  local name=$1 exe=$2 dict=$3 max_len=$4 out seeds args rc=0 execs per_s found result
  out=$build_dir/fuzz-out/$name
  seeds=$(find "$out/corpus" -type f | wc -l)
  args=(-max_total_time="$seconds" -timeout="$INPUT_TIMEOUT_S" -rss_limit_mb="$RSS_LIMIT_MB"
    -max_len="$max_len" -artifact_prefix="$out/crashes/" -print_final_stats=1)
  [[ "$dict" != "-" ]] && args+=(-dict="$dict")
  "$exe" "${args[@]}" "$out/corpus" >"$out/log" 2>&1 || rc=$?
  execs=$(final_stat number_of_executed_units "$out/log")
  per_s=$(final_stat average_exec_per_sec "$out/log")
  found=$(find "$out/corpus" -type f | wc -l)
  result=ok
  ((rc == 0)) || result="CRASH (exit $rc)"
  printf '%-12s %8s execs %7s exec/s  corpus %4s -> %-5s %s\n' \
    "$name" "${execs:-?}" "${per_s:-?}" "$seeds" "$found" "$result" >"$out/summary"
  echo "$rc" >"$out/rc"
}

names=()
running=0
while IFS=$'\t' read -r name exe corpus dict max_len; do
  if ((${#only[@]} > 0)) && [[ " ${only[*]} " != *" $name "* ]]; then
    continue
  fi
  names+=("$name")
  out=$build_dir/fuzz-out/$name
  # A fresh copy each run: libFuzzer adds what it finds to its first corpus folder.
  rm -rf "$out"
  mkdir -p "$out/corpus" "$out/crashes"
  cp -- "$corpus"/* "$out/corpus/"
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz: $name for ${seconds}s (seeds: $(find "$out/corpus" -type f | wc -l)," \
    "-max_len=$max_len)"
  fuzz_target "$name" "$exe" "$dict" "$max_len" </dev/null &
  running=$((running + 1))
done <"$manifest"
wait

failed=()
summary=()
for name in "${names[@]}"; do
  out=$build_dir/fuzz-out/$name
  summary+=("$(cat "$out/summary" 2>/dev/null || echo "$name: no result")")
  if [[ "$(cat "$out/rc" 2>/dev/null)" != 0 ]]; then
    failed+=("$name")
    echo "fuzz: $name crashed; the end of its log ($out/log):" >&2
    tail -n 40 "$out/log" >&2
  fi
done

echo "fuzz: ${seconds}s per target, ${SECONDS}s in all:"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  for name in "${failed[@]}"; do
    echo "fuzz: $name crashed; inputs: $build_dir/fuzz-out/$name/crashes/" >&2
    echo "      reproduce: $build_dir/tests/fuzz/fuzz_$name" \
      "$build_dir/fuzz-out/$name/crashes/<file>" >&2
  done
  echo "fuzz: fix each crash, then copy its input into tests/fuzz/corpus/<target>/ as a" \
    "regression input (tests/fuzz/README.md): ctest -L fuzz replays it from then on" >&2
  exit 1
fi
echo "fuzz: no crash"
