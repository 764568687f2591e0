#!/usr/bin/env bash
# The GPU acceptance kit: one command that proves every GPU path of preflight on a lent GPU and
# leaves a record that can be read later (docs/benchmarks.md, docs/testing.md).
#
#   scripts/gpu-acceptance.sh [--out DIR] [--build-dir DIR] [--steps LIST] [--bundle DIR]
#   scripts/gpu-acceptance.sh --plan          # the steps and their time boxes; runs nothing
#
# It builds for the GPU it finds (or uses --build-dir, a build made elsewhere and carried), then
# runs each step inside its own time box: the machine, the gpu-labelled tests, the quick profile
# timed and repeated (every finding other than pass is a false alarm), every fault kind aimed at
# GPU 0, the benchmarks against their references, the standard profile's hbm pattern test. A step
# that fails or runs out of time is recorded as such and the kit goes on.
# scripts/acceptance/acceptance.py judges the records and writes summary.md and summary.json
# into --out; scripts/acceptance/build.sh holds the build step.
#
# Exit status: 0 every step accepted; 1 something failed (summary.md says what); 2 bad usage;
# 77 no GPU found (the plan is printed, nothing is written).
set -uo pipefail  # not -e: a failed step is a finding, the kit goes on to the next

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
readonly SRC
readonly JUDGE=$SRC/scripts/acceptance/acceptance.py
readonly LIMIT_S=540  # one H100, building included (issue 13)

# The plan: step, time box in seconds, what it does. The boxes add up to at most LIMIT_S; the few
# seconds left cover the summary and the kill grace of a step that overruns.
readonly STEPS=(build machine gpu-tests quick faults bench hbm)
declare -A BOX=([build]=120 [machine]=10 [gpu-tests]=130 [quick]=100 [faults]=75 [bench]=65
  [hbm]=30)
declare -A TITLE=(
  [build]="configure and build preflight, gpu_tests and the benchmarks for the GPU found (none with --build-dir)"
  [machine]="the machine: GPU name, memory, driver, CUDA version, preflight --version"
  [gpu-tests]="every gpu-labelled test, each in its own process (a skipped test is a failure)"
  [quick]="the quick profile timed end to end, then as many more runs as fit (at least 5): any finding but pass is a false alarm"
  [faults]="every fault kind that can be aimed at GPU 0, one run each: the expected code on the expected entity, marked injected"
  [bench]="preflight-bench-gemm (bf16, fp64), -bandwidth and -nccl against their plainest references"
  [hbm]="the standard profile's hbm check (pattern test over most of the memory), timed"
)
readonly KILL_GRACE_S=5
readonly MAX_EXTRA_QUICK_RUNS=20

usage() {
  cat <<EOF
usage: scripts/gpu-acceptance.sh [--out DIR] [--build-dir DIR] [--steps LIST] [--bundle DIR]
       scripts/gpu-acceptance.sh --plan
  --out DIR        where the records, verdicts and summary go (default: acceptance-out/ in the
                   source tree; a previous kit folder there is replaced)
  --build-dir DIR  use this build (made elsewhere and carried) instead of building here
  --steps LIST     run only these steps, comma-separated (${STEPS[*]}); machine
                   always runs, and without build the binary comes from build-acceptance/
  --bundle DIR     also copy summary.md, summary.json and acceptance-out.tar.gz (everything) to
                   DIR, e.g. \$OUT under the device tool
  --rehearse       run the steps without a GPU, against whatever the binary sees (the fake NVML in
                   the tests); the summary says it is a rehearsal, not a measurement
  --plan           print the steps and their time boxes, run nothing
Exit status: 0 accepted, 1 a step failed, 2 bad usage, 77 no GPU found (nothing written).
EOF
}

die_usage() {
  printf 'gpu-acceptance: %s\n' "$*" >&2
  exit 2
}

out_dir=$SRC/acceptance-out
build_dir=""
bundle_dir=""
selected=""
plan_only=0
rehearse=0
while (($#)); do
  case $1 in
    --out | --build-dir | --steps | --bundle)
      if (($# < 2)) || [[ -z $2 ]]; then die_usage "$1 needs a value"; fi
      case $1 in
        --out) out_dir=$2 ;;
        --build-dir) build_dir=$2 ;;
        --steps) selected=$2 ;;
        --bundle) bundle_dir=$2 ;;
      esac
      shift 2
      ;;
    --plan) plan_only=1 && shift ;;
    --rehearse) rehearse=1 && shift ;;
    -h | --help) usage && exit 0 ;;
    *) die_usage "unknown argument '$1' (see --help)" ;;
  esac
done
if [[ -n $selected ]]; then
  IFS=, read -r -a wanted <<<"$selected"
  for s in "${wanted[@]}"; do
    [[ -n ${BOX[$s]:-} ]] || die_usage "--steps: unknown step '$s' (known: ${STEPS[*]})"
  done
fi
if [[ -n $build_dir ]]; then
  [[ -d $build_dir ]] || die_usage "--build-dir '$build_dir' is not a folder"
  build_dir=$(cd "$build_dir" && pwd -P)
fi
if [[ -n $bundle_dir ]]; then
  [[ -d $bundle_dir && -w $bundle_dir ]] || die_usage "--bundle '$bundle_dir' is not a writable folder"
fi

# The machine step always runs: the others need what it reads (GPU count, fault kinds, limits).
selected_step() {
  [[ -z $selected || $1 == machine ]] && return 0
  [[ ",$selected," == *",$1,"* ]]
}

print_plan() {
  local total=0 i=0 s
  for s in "${STEPS[@]}"; do total=$((total + BOX[$s])); done
  printf 'GPU acceptance kit: the build and %d steps; time boxes add up to %d s (limit %d s, building included)\n' \
    "$((${#STEPS[@]} - 1))" "$total" "$LIMIT_S"
  for s in "${STEPS[@]}"; do
    printf '  %d  %-10s %4d s  %s\n' "$i" "$s" "${BOX[$s]}" "${TITLE[$s]}"
    i=$((i + 1))
  done
}

print_plan
((plan_only)) && exit 0

# No GPU: say so in one line and write nothing. NVIDIA_SMI names another nvidia-smi (tests).
smi=${NVIDIA_SMI:-nvidia-smi}
gpu_lines=""
if command -v "$smi" >/dev/null 2>&1; then
  gpu_lines=$(timeout -k 2 20 "$smi" -L 2>/dev/null | grep -c '^GPU [0-9]')
fi
if ((!rehearse)) && [[ ${gpu_lines:-0} -lt 1 ]]; then
  if command -v "$smi" >/dev/null 2>&1; then
    echo "gpu-acceptance: no GPU found ($smi -L lists none); nothing was run"
  else
    echo "gpu-acceptance: no GPU found ($smi is not installed); nothing was run"
  fi
  exit 77
fi
command -v python3 >/dev/null 2>&1 || die_usage "python3 is needed to judge the records"

# The output folder: new, or a previous kit's (it holds plan.tsv), which is replaced.
if [[ -e $out_dir ]]; then
  if [[ -f $out_dir/plan.tsv ]]; then
    rm -rf -- "$out_dir"
  elif [[ -d $out_dir && -z $(ls -A "$out_dir") ]]; then
    rmdir -- "$out_dir"
  else
    die_usage "--out '$out_dir' exists and is not a previous kit folder"
  fi
fi
mkdir -p "$out_dir" || die_usage "cannot create --out '$out_dir'"
out_dir=$(cd "$out_dir" && pwd -P)

# ---------------------------------------------------------------------------------------------
# Records (formats in scripts/acceptance/acceptance.py)

now_ms() { date +%s%3N; }
secs() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
tsv() {
  local IFS=$'\t'
  printf '%s\n' "$*" | tr -d '\r'
}
record_run() { tsv "$@" >>"$out_dir/runs.tsv"; }
record_step() { tsv "$@" >>"$out_dir/steps.tsv"; }
machine_key() { printf '%s=%s\n' "$1" "$2" | head -n 1 >>"$out_dir/machine.txt"; }
kit_key() { printf '%s=%s\n' "$1" "$2" >>"$out_dir/kit.txt"; }

for s in "${STEPS[@]}"; do tsv "$s" "${BOX[$s]}" "${TITLE[$s]}" >>"$out_dir/plan.tsv"; done
: >"$out_dir/runs.tsv"
: >"$out_dir/steps.tsv"
kit_key started_at "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
kit_key rehearsal "$rehearse"
kit_key source "$(git -C "$SRC" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)"
kit_key steps "${selected:-all}"
[[ -n $build_dir ]] && kit_key build "carried: $build_dir"

# boxed DEADLINE_MS OUT ERR CMD...: runs CMD until the step's deadline (then SIGTERM, SIGKILL
# KILL_GRACE_S later, to its whole process group); sets RC and RUN_MS. RC is '-' when the box was
# already spent.
# The command runs in the background so that a signal to the kit is handled at once: SIGINT or
# SIGTERM ends the running command's process group (timeout leads one), the kit stops after the
# step and writes the summary of what ran.
RC=""
RUN_MS=0
CHILD=0
interrupted=0
# shellcheck disable=SC2317  # called by the trap
on_signal() {
  interrupted=1
  if ((CHILD)); then kill -TERM -- "-$CHILD" "$CHILD" 2>/dev/null; fi
}
trap on_signal INT TERM
boxed() {
  local deadline=$1 out=$2 err=$3
  shift 3
  local left=$(((deadline - $(now_ms)) / 1000))
  RUN_MS=0
  if ((left < 1 || interrupted)); then
    RC="-"
    return 0
  fi
  local start
  start=$(now_ms)
  timeout -k "$KILL_GRACE_S" "$left" "$@" </dev/null >"$out" 2>"$err" &
  CHILD=$!
  wait "$CHILD"
  RC=$?
  while kill -0 "$CHILD" 2>/dev/null; do  # wait returned early for a trapped signal
    wait "$CHILD"
    RC=$?
  done
  CHILD=0
  RUN_MS=$(($(now_ms) - start))
}

# summarize [quiet]: judge what has been recorded so far; with --bundle, copy the summary there. It
# runs after every step, so a kit killed from outside still leaves the summary of its last step.
summarize() {
  local status=0
  if [[ -n ${1:-} ]]; then
    python3 "$JUDGE" summary "$out_dir" >/dev/null 2>&1 || status=$?
  else
    python3 "$JUDGE" summary "$out_dir" || status=$?
  fi
  if [[ -n $bundle_dir ]]; then
    cp "$out_dir/summary.md" "$out_dir/summary.json" "$bundle_dir/" 2>/dev/null
  fi
  return "$status"
}

# The toolkit, the libraries the build and the binary need, and the build step.
# shellcheck source=scripts/acceptance/build.sh
source "$SRC/scripts/acceptance/build.sh"

# ---------------------------------------------------------------------------------------------
# Steps. Each gets its deadline in ms and records itself with record_step.

bin=""
gpus=0
expect=()

# The binary the later steps use; a step without it records why.
find_binary() {
  [[ -z $build_dir ]] && build_dir=$SRC/build-acceptance
  if [[ -x $build_dir/preflight ]]; then
    bin=$build_dir/preflight
  else
    bin=""
  fi
}

no_binary() {
  record_step "$1" "${BOX[$1]}" 0 failed "no preflight binary in $build_dir (see the build step)"
}

step_machine() {
  local deadline=$1 start=$2 line name mem driver cap bus
  if command -v "$smi" >/dev/null 2>&1; then
    line=$(timeout 5 "$smi" --query-gpu=name,memory.total,driver_version,compute_cap,pci.bus_id \
      --format=csv,noheader,nounits 2>/dev/null | head -n 1)
    IFS=, read -r name mem driver cap bus <<<"$line"
    machine_key gpu_name "$(echo "$name" | xargs)"
    machine_key gpu_memory_mib "$(echo "$mem" | xargs)"
    machine_key driver "$(echo "$driver" | xargs)"
    machine_key compute_capability "$(echo "$cap" | xargs)"
    machine_key pci_bus_id "$(echo "$bus" | xargs)"
    machine_key gpu_count "$gpu_lines"
    machine_key cuda_driver "$(timeout 5 "$smi" 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' |
      head -n 1 | cut -d' ' -f3)"
  else
    machine_key nvidia_smi "not installed"
  fi
  machine_key nvcc "$([[ -n $cuda_home ]] && "$cuda_home/bin/nvcc" --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)"
  machine_key cuda_home "${cuda_home:-not found}"
  machine_key kernel "$(uname -r)"
  machine_key cpus "$(nproc)"
  find_binary
  if [[ -z $bin ]]; then
    no_binary machine
    return
  fi
  locate_runtime_libraries "$bin" "$build_dir"/bench/preflight-bench-{gemm,bandwidth,nccl} \
    "$build_dir/tests/gpu_tests"
  machine_key cublas_library "$cublas_note"
  machine_key nccl_library "$nccl_note"
  machine_key libraries "${runtime_note:-every linked library found}"
  machine_key preflight_version "$("$bin" --version 2>&1 | head -n 1)"
  mkdir -p "$out_dir/machine"
  boxed "$deadline" "$out_dir/list.json" "$out_dir/machine/list.err" "$bin" list --json
  boxed "$deadline" "$out_dir/thresholds.json" "$out_dir/machine/thresholds.err" "$bin" thresholds
  boxed "$deadline" "$out_dir/machine/inventory.txt" "$out_dir/machine/inventory.err" \
    "$bin" run --checks inventory --json "$out_dir/machine/inventory.json"
  record_run machine inventory "$RC" "$(secs "$RUN_MS")" machine/inventory.json
  gpus=$(python3 "$JUDGE" gpus "$out_dir/machine/inventory.json" 2>/dev/null)
  [[ $gpus =~ ^[0-9]+$ ]] || gpus=0
  machine_key gpus_discovered "$gpus"
  ((gpus > 0)) && expect=(--expect-gpus "$gpus")
  local state="done" note="$gpus GPU(s) discovered"
  if [[ $RC == 124 || $RC == 137 ]]; then
    state=timed-out
  elif ((gpus == 0 && !rehearse)); then
    state=failed
    note="preflight discovered no GPU where $smi lists $gpu_lines (see machine/inventory.txt)"
  fi
  record_step machine "${BOX[machine]}" "$(secs $(($(now_ms) - start)))" "$state" "$note"
}

# Catch2 reads commas and brackets in a name as syntax: escape them as ctest's discovery does.
catch_name() {
  printf '%s' "$1" | sed 's/[][\\,]/\\&/g'
}

step_gpu_tests() {
  local deadline=$1 start=$2 tests=$build_dir/tests/gpu_tests
  if [[ ! -x $tests ]]; then
    record_step gpu-tests "${BOX[gpu-tests]}" 0 failed "no $tests (see the build step)"
    return
  fi
  mkdir -p "$out_dir/tests"
  local names=() name i=0 state="done"
  mapfile -t names < <(timeout 30 "$tests" --list-test-names-only 2>/dev/null | grep .)
  for name in "${names[@]}"; do
    i=$((i + 1))
    local log
    log=tests/$(printf '%02d' "$i").log
    boxed "$deadline" "$out_dir/$log" "$out_dir/$log.err" env PREFLIGHT_TEST_BINARY="$bin" \
      PREFLIGHT_TEST_NCCL_BENCH="$build_dir/bench/preflight-bench-nccl" \
      "$tests" --warn NoTests "$(catch_name "$name")"
    [[ -s $out_dir/$log.err ]] && cat "$out_dir/$log.err" >>"$out_dir/$log"
    rm -f "$out_dir/$log.err"
    record_run gpu-tests "$name" "$RC" "$(secs "$RUN_MS")" "$log"
    [[ $RC == 124 || $RC == 137 || $RC == - ]] && state=timed-out
  done
  record_step gpu-tests "${BOX[gpu-tests]}" "$(secs $(($(now_ms) - start)))" "$state" \
    "${#names[@]} tests listed"
}

# One preflight run, its verdict, table and stderr in the step's folder; recorded under NAME.
preflight_run() {
  local deadline=$1 step=$2 name=$3
  shift 3
  local base=$step/$name
  boxed "$deadline" "$out_dir/$base.txt" "$out_dir/$base.err" \
    "$bin" run "$@" --json "$out_dir/$base.json"
  record_run "$step" "$name" "$RC" "$(secs "$RUN_MS")" "$base.json"
}

step_quick() {
  local deadline=$1 start=$2 n=1 state="done"
  mkdir -p "$out_dir/quick"
  # The time model's plan for this node, next to what the runs measure (docs/plan.md).
  boxed "$deadline" "$out_dir/quick/plan.txt" "$out_dir/quick/plan.err" \
    "$bin" plan --json "$out_dir/quick/plan.json"
  preflight_run "$deadline" quick run-01 "${expect[@]}"
  local last=$RUN_MS
  while ((n <= MAX_EXTRA_QUICK_RUNS)) && [[ $RC != - ]]; do
    # Start another run only where one as long as the last still fits, with a margin.
    (($(now_ms) + last * 6 / 5 + 1000 < deadline)) || break
    n=$((n + 1))
    preflight_run "$deadline" quick "$(printf 'run-%02d' "$n")" "${expect[@]}"
    ((RUN_MS > last)) && last=$RUN_MS
  done
  [[ $RC == 124 || $RC == 137 ]] && state=timed-out
  record_step quick "${BOX[quick]}" "$(secs $(($(now_ms) - start)))" "$state" "$n runs"
}

step_faults() {
  local deadline=$1 start=$2 state="done"
  mkdir -p "$out_dir/faults"
  if ! python3 "$JUDGE" drills "$out_dir/list.json" "$out_dir/thresholds.json" "$gpus" \
    >"$out_dir/faults/plan.tsv" 2>"$out_dir/faults/plan.err"; then
    record_step faults "${BOX[faults]}" 0 failed "no drill plan: $(head -n 1 "$out_dir/faults/plan.err")"
    return
  fi
  local row kind spec args
  while IFS=$'\t' read -r row kind spec _ _ args _; do
    [[ $row == run ]] || continue
    local extra=()
    read -r -a extra <<<"$args"
    preflight_run "$deadline" faults "$kind" "${expect[@]}" "${extra[@]}" --inject-fault "$spec"
    [[ $RC == 124 || $RC == 137 || $RC == - ]] && state=timed-out
  done <"$out_dir/faults/plan.tsv"
  record_step faults "${BOX[faults]}" "$(secs $(($(now_ms) - start)))" "$state" \
    "$(grep -c '^run' "$out_dir/faults/plan.tsv") drills"
}

step_bench() {
  local deadline=$1 start=$2 state="done" b=$build_dir/bench
  mkdir -p "$out_dir/bench"
  local gpu_list=0 i peer=()
  for ((i = 1; i < gpus; i++)); do gpu_list+=",$i"; done
  ((gpus >= 2)) && peer=(--peer 1)
  local -a names=(gemm-bf16 gemm-fp64 bandwidth nccl)
  local -A cmds=(
    [gemm-bf16]="$b/preflight-bench-gemm --gpu 0 --dtype bf16 --size 16384 --seconds 3"
    [gemm-fp64]="$b/preflight-bench-gemm --gpu 0 --dtype fp64 --size 12288 --seconds 3"
    [bandwidth]="$b/preflight-bench-bandwidth --gpu 0 ${peer[*]}"
    [nccl]="$b/preflight-bench-nccl --gpus $gpu_list"
  )
  local name cmd
  for name in "${names[@]}"; do
    read -r -a cmd <<<"${cmds[$name]}"
    boxed "$deadline" "$out_dir/bench/$name.out" "$out_dir/bench/$name.err" "${cmd[@]}"
    cat "$out_dir/bench/$name.err" >>"$out_dir/bench/$name.out" 2>/dev/null
    rm -f "$out_dir/bench/$name.err"
    record_run bench "$name" "$RC" "$(secs "$RUN_MS")" "bench/$name.out"
    [[ $RC == 124 || $RC == 137 || $RC == - ]] && state=timed-out
  done
  record_step bench "${BOX[bench]}" "$(secs $(($(now_ms) - start)))" "$state" ""
}

step_hbm() {
  local deadline=$1 start=$2 state="done"
  mkdir -p "$out_dir/hbm"
  preflight_run "$deadline" hbm standard-hbm --profile standard --checks hbm "${expect[@]}"
  [[ $RC == 124 || $RC == 137 || $RC == - ]] && state=timed-out
  record_step hbm "${BOX[hbm]}" "$(secs $(($(now_ms) - start)))" "$state" ""
}

# ---------------------------------------------------------------------------------------------

for step in "${STEPS[@]}"; do
  if ! selected_step "$step"; then
    record_step "$step" "${BOX[$step]}" 0 skipped "not in --steps"
    [[ $step == build ]] && find_binary
    continue
  fi
  start=$(now_ms)
  deadline=$((start + BOX[$step] * 1000))
  echo "gpu-acceptance: step $step (box ${BOX[$step]} s)" >&2
  if [[ $step != build && $step != machine ]]; then
    find_binary
    if [[ -z $bin ]]; then
      no_binary "$step"
      continue
    fi
  fi
  case $step in
    build) step_build "$deadline" "$start" ;;
    machine) step_machine "$deadline" "$start" ;;
    gpu-tests) step_gpu_tests "$deadline" "$start" ;;
    quick) step_quick "$deadline" "$start" ;;
    faults) step_faults "$deadline" "$start" ;;
    bench) step_bench "$deadline" "$start" ;;
    hbm) step_hbm "$deadline" "$start" ;;
  esac
  if ((interrupted)); then
    kit_key interrupted "1"
    break
  fi
  summarize quiet
done
kit_key finished_at "$(date -u +%Y-%m-%dT%H:%M:%SZ)"

status=0
summarize || status=$?
((status > 1)) && status=1
if [[ -n $bundle_dir ]]; then
  tar -czf "$bundle_dir/acceptance-out.tar.gz" -C "$(dirname "$out_dir")" "$(basename "$out_dir")"
fi
exit "$status"
