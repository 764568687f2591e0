#!/usr/bin/env bash
# scripts/gpu-acceptance.sh run as a developer runs it on a machine without a GPU:
#   test_kit.sh CASE SOURCE_DIR BUILD_DIR [FAKE_NVML]
# Cases: plan, no_gpu, bad_invocations, rehearsal, interrupt. Exit 0 pass, 1 fail, 77 skipped.
set -euo pipefail
export LC_ALL=C
case_name=$1
src=$2
build=$3
fake_nvml=${4:-}
kit=$src/scripts/gpu-acceptance.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/preflight-acceptance.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  printf 'FAIL: %s\n' "$*" >&2
  for f in "$work"/out.txt "$work"/err.txt; do
    [[ -s $f ]] && { printf -- '--- %s\n' "${f##*/}" >&2; cat "$f" >&2; }
  done
  exit 1
}

# run_kit ARGS...: the kit with no GPU visible; sets status, output in out.txt and err.txt.
run_kit() {
  status=0
  NVIDIA_SMI=${NVIDIA_SMI:-/nonexistent} "$kit" "$@" >"$work/out.txt" 2>"$work/err.txt" ||
    status=$?
}

# The plan printed by --plan and before the no-GPU line: the build and six steps whose boxes add
# up to what the header says, at most 540 s.
check_plan() {
  local header total=0 rows=0 steps=()
  header=$(head -n 1 "$work/out.txt")
  [[ $header =~ ^GPU\ acceptance\ kit:\ the\ build\ and\ 6\ steps\;\ time\ boxes\ add\ up\ to\ ([0-9]+)\ s ]] ||
    fail "plan header: '$header'"
  local claimed=${BASH_REMATCH[1]}
  while read -r index name box unit _; do
    [[ $index =~ ^[0-9]+$ && $unit == s ]] || continue
    [[ $index -eq $rows ]] || fail "step numbers run 0, 1, 2, ...: got $index for $name"
    steps+=("$name")
    total=$((total + box))
    rows=$((rows + 1))
  done < <(tail -n +2 "$work/out.txt")
  [[ "${steps[*]}" == "build machine gpu-tests quick faults bench hbm" ]] ||
    fail "the steps: ${steps[*]}"
  ((total == claimed)) || fail "the boxes add up to $total, the header says $claimed"
  ((total <= 540)) || fail "the boxes add up to $total s, more than 540 s"
}

case $case_name in
  plan)
    run_kit --plan --out "$work/acc"
    [[ $status -eq 0 ]] || fail "--plan must exit 0, got $status"
    check_plan
    [[ $(wc -l <"$work/out.txt") -eq 8 ]] || fail "--plan prints the header and 7 rows only"
    [[ ! -e $work/acc ]] || fail "--plan wrote $work/acc"
    [[ ! -s $work/err.txt ]] || fail "--plan wrote on stderr"
    ;;

  no_gpu)
    # No nvidia-smi at all, then one that lists no GPU (as on a node whose driver lost them).
    run_kit --out "$work/acc"
    [[ $status -eq 77 ]] || fail "without a GPU the kit must exit 77, got $status"
    check_plan
    [[ $(tail -n 1 "$work/out.txt") == "gpu-acceptance: no GPU found (/nonexistent is not installed); nothing was run" ]] ||
      fail "the last line says there is no GPU: '$(tail -n 1 "$work/out.txt")'"
    [[ $(wc -l <"$work/out.txt") -eq 9 ]] || fail "the plan and one line, nothing else"
    [[ ! -s $work/err.txt ]] || fail "nothing on stderr"
    [[ ! -e $work/acc ]] || fail "a run without a GPU wrote $work/acc"
    printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$work/nvidia-smi"
    chmod +x "$work/nvidia-smi"
    NVIDIA_SMI=$work/nvidia-smi run_kit --out "$work/acc" --bundle "$work"
    [[ $status -eq 77 ]] || fail "nvidia-smi without GPUs: exit 77, got $status"
    grep -q "no GPU found ($work/nvidia-smi -L lists none)" "$work/out.txt" || fail "the no-GPU line"
    [[ ! -e $work/acc && ! -e $work/summary.md ]] || fail "nothing written"
    ;;

  bad_invocations)
    expect_usage() {  # MESSAGE ARGS...: exit 2, one line on stderr naming the problem
      local message=$1
      shift
      run_kit "$@"
      [[ $status -eq 2 ]] || fail "'$*' must exit 2, got $status"
      [[ $(wc -l <"$work/err.txt") -eq 1 ]] || fail "'$*': one line on stderr"
      grep -qF "gpu-acceptance: $message" "$work/err.txt" || fail "'$*': expected '$message'"
    }
    expect_usage "unknown argument '--bogus'" --bogus
    expect_usage "--out needs a value" --out
    expect_usage "--steps: unknown step 'warp'" --steps quick,warp
    expect_usage "--build-dir '$work/none' is not a folder" --build-dir "$work/none"
    expect_usage "--bundle '$work/none' is not a writable folder" --bundle "$work/none"
    mkdir -p "$work/precious" && echo keep >"$work/precious/notes.txt"
    expect_usage "--out '$work/precious' exists and is not a previous kit folder" \
      --rehearse --out "$work/precious" --build-dir "$build"
    [[ $(cat "$work/precious/notes.txt") == keep ]] || fail "a foreign --out folder was touched"
    ;;

  rehearsal)
    # Every step but the build and the GPU tests, end to end on the fake NVML: the records, the
    # judgement, the bundle. The fake GPU is one CUDA cannot use, so the GPU paths fail; the
    # inventory drills, which replace NVML readings, are found.
    [[ -n $fake_nvml ]] || { echo "skipped: the fake NVML needs a CUDA build"; exit 77; }
    mkdir -p "$work/bundle"
    status=0
    PREFLIGHT_NVML_LIBRARY=$fake_nvml CUDA_VISIBLE_DEVICES='' NVIDIA_VISIBLE_DEVICES=none \
      NVIDIA_SMI=/nonexistent "$kit" --rehearse --build-dir "$build" --out "$work/acc" \
      --steps quick,faults,bench,hbm --bundle "$work/bundle" >"$work/out.txt" 2>"$work/err.txt" ||
      status=$?
    [[ $status -eq 1 ]] || fail "a rehearsal on a fake GPU is not accepted: exit 1, got $status"
    for f in summary.md summary.json acceptance-out.tar.gz; do
      [[ -s $work/bundle/$f ]] || fail "--bundle lacks $f"
    done
    tar -tzf "$work/bundle/acceptance-out.tar.gz" >"$work/bundle.list"
    grep -qx 'acc/faults/mig-on.json' "$work/bundle.list" || fail "the bundle holds every verdict"
    python3 - "$work/acc/summary.json" <<'EOF' || fail "summary.json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["rehearsal"] is True and doc["ok"] is False, doc["failures"]
steps = {s["name"]: s for s in doc["steps"]}
assert steps["build"]["state"] == "skipped" and steps["gpu-tests"]["state"] == "skipped"
assert steps["machine"]["ok"], steps["machine"]
quick = steps["quick"]
assert quick["figures"]["runs"] >= 6, quick["figures"]
assert any(g["code"] == "CUDA_UNAVAILABLE" for g in quick["false_alarm_groups"])
drills = {d["kind"]: d for d in steps["faults"]["items"]}
for kind in ("mig-on", "ecc-uncorrectable", "temperature", "gpu-missing", "throttle"):
    assert drills[kind]["state"] == "found", drills[kind]
assert drills["gpu-missing"]["entity"] == "node"
assert drills["nvlink-slow"]["state"] == "n/a", drills["nvlink-slow"]
assert drills["hbm-corrupt"]["state"] == "missed", drills["hbm-corrupt"]
assert [b["name"] for b in steps["bench"]["items"]] == ["gemm-bf16", "gemm-fp64", "bandwidth",
                                                        "nccl"]
assert steps["hbm"]["items"][0]["status"] == "skip"
assert doc["machine"]["gpu_count"] == "1" and doc["machine"]["preflight_version"]
EOF
    head -n 1 "$work/bundle/summary.md" | grep -q 'REHEARSAL without a GPU' ||
      fail "a rehearsal says so at the top of summary.md"
    # A second run replaces the first's folder.
    touch "$work/acc/stale"
    PREFLIGHT_NVML_LIBRARY=$fake_nvml CUDA_VISIBLE_DEVICES='' NVIDIA_VISIBLE_DEVICES=none \
      NVIDIA_SMI=/nonexistent "$kit" --rehearse --build-dir "$build" --out "$work/acc" \
      --steps hbm >/dev/null 2>&1 || true
    [[ -f $work/acc/summary.json && ! -e $work/acc/stale ]] || fail "the kit's folder is replaced"
    ;;

  interrupt)
    # SIGTERM while a step's command hangs: the command's process group is ended at once, the kit
    # writes the summary of what ran and exits 1. The binary is a stand-in that hangs in `run`.
    mkdir -p "$work/stub"
    cat >"$work/stub/preflight" <<'EOF'
#!/usr/bin/env bash
case $1 in
  --version) echo "preflight stand-in" ;;
  run) echo "$$" >>"$STUB_PIDS" && exec sleep 1000 ;;
  *) echo '{}' ;;
esac
EOF
    chmod +x "$work/stub/preflight"
    STUB_PIDS=$work/pids NVIDIA_SMI=/nonexistent "$kit" --rehearse --build-dir "$work/stub" \
      --out "$work/acc" --steps quick >"$work/out.txt" 2>"$work/err.txt" &
    kit_pid=$!
    deadline=$((SECONDS + 30))
    until [[ -s $work/pids ]]; do
      ((SECONDS < deadline)) || fail "the stand-in never started"
      sleep 0.1
    done
    kill -TERM "$kit_pid"
    deadline=$((SECONDS + 10))  # the machine step's box is 15 s: the kit must not wait for it
    while kill -0 "$kit_pid" 2>/dev/null; do
      ((SECONDS < deadline)) || { kill -KILL "$kit_pid"; fail "the kit did not stop on SIGTERM"; }
      sleep 0.1
    done
    status=0
    wait "$kit_pid" || status=$?
    [[ $status -eq 1 ]] || fail "a stopped kit exits 1, got $status"
    while read -r pid; do
      ! kill -0 "$pid" 2>/dev/null || { kill -KILL "$pid"; fail "the hung command outlived the kit"; }
    done <"$work/pids"
    python3 - "$work/acc/summary.json" <<'EOF' || fail "summary.json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert "the kit was stopped by a signal before its last step" in doc["failures"], doc["failures"]
steps = {s["name"]: s for s in doc["steps"]}
assert steps["quick"]["state"] == "not reached", steps["quick"]
EOF
    ;;

  *)
    fail "unknown case '$case_name'"
    ;;
esac
echo "ok: $case_name"
