#!/usr/bin/env bash
# The CI gate for real: `preflight fleet --transport host` under mpirun, 4 ranks on this
# machine (each rank a "node" named localhost), as docs/fleet.md's own MPI tests run it.
#   test_fleet.sh CASE GATE PREFLIGHT MPIRUN
# CASE: healthy | local-fail | min-healthy | hang | deadline | bad-fleet-options
set -euo pipefail
usage="usage: test_fleet.sh CASE GATE PREFLIGHT MPIRUN"
case_name=${1:?$usage}
GATE=${2:?$usage}
PREFLIGHT=${3:?$usage}
MPIRUN=${4:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=gate_lib.sh
source "$here/gate_lib.sh"

# Shared memory between the ranks of one machine, no network probing in a container, more
# ranks than cores; and no GPU seen, whatever the machine has (docs/testing.md).
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES=
json=$GATE_TMP/fleet.json
# The name the ranks report (preflight's gethostname), which the exclude list carries.
host=$(uname -n)

# gate [GATE-OPTIONS] -- [FLEET-OPTIONS]: 4 ranks on localhost, quick local checks.
gate() {
  local opts=() fleet=()
  while (($# > 0)) && [[ $1 != -- ]]; do opts+=("$1"); shift; done
  (($# == 0)) || { shift; fleet=("$@"); }
  run_gate --nodes localhost,localhost,localhost,localhost --allow-duplicate-hosts \
    --launcher mpirun --launcher-bin "$MPIRUN" --launcher-args --oversubscribe \
    --preflight "$PREFLIGHT" --json "$json" "${opts[@]}" \
    -- --transport host --checks inventory --expect-gpus 0 --slow-factor 0.3 "${fleet[@]}"
  printf 'gate exit %s in %ss, stdout: [%s]\n' "$rc" "$elapsed" "$out"
}

verdict_field() { # KEY: a field of the verdict file, read as the gate reads it
  "$PREFLIGHT" report --format tsv "$json" | sed -n "s/^$1\t//p"
}

case $case_name in
  healthy)
    gate
    check_eq "$rc" 0 "exit status of a healthy fleet"
    check_eq "$out_lines:$out" "1:" "the exclude line of a healthy fleet"
    check_eq "$(verdict_field schema)" preflight.fleet/1 "schema of the verdict file"
    check_eq "$(verdict_field nodes):$(verdict_field healthy)" 4:4 "nodes in the verdict"
    check_contains "$err" "GATE PASSED: all 4 nodes healthy" "summary"
    ;;
  local-fail)
    gate -- --inject-fault local-fail@node=2
    check_eq "$rc" 1 "exit status with a node failing its local checks"
    check_eq "$out_lines:$out" "1:$host" "the exclude line"
    check_eq "$(verdict_field faulty):$(verdict_field injected)" 1:1 "faulty nodes, injected"
    check_contains "$err" "GATE FAILED (exit 1)" "summary"
    ;;
  min-healthy)
    # 3 of 4 healthy: M below and at the count pass, above it fails; the host is excluded in
    # every case.
    for m in 2 3 4; do
      gate --min-healthy "$m" -- --inject-fault local-fail@node=2
      expected=0
      ((m <= 3)) || expected=1
      check_eq "$rc" "$expected" "exit status with --min-healthy $m and 3 healthy"
      check_eq "$out" "$host" "the exclude line with --min-healthy $m"
      check_contains "$err" "3 healthy nodes, at least $m required" "summary"
    done
    ;;
  hang)
    # A rank that never joins its all-gathers: preflight's own timeouts end the run with a
    # verdict that names it.
    gate -- --inject-fault allgather-hang@node=1 --group-timeout 3 --timeout 30 \
      --local-timeout 10
    check_eq "$rc" 1 "exit status with a hanging node"
    check_eq "$out" "$host" "the exclude line"
    check_contains "$err" "deadline 90s" "the deadline derived from --timeout 30"
    # About 10 s idle. preflight's own bound is its --timeout + 10 s (40 s); only the outer
    # deadline (90 s) means its timeouts did not work. 60 s leaves a busy machine room.
    ((elapsed < 60)) || fail "the run took ${elapsed}s, more than its timeouts allow"
    ;;
  deadline)
    # The outer deadline ends a run that would take longer: exit 3, no verdict, the old verdict
    # file untouched, and no rank left behind when the gate returns (run_gate: nothing_left).
    echo old >"$json"
    gate --deadline 4 -- --inject-fault allgather-hang@node=1 --group-timeout 20
    check_eq "$rc" 3 "exit status when the deadline passes"
    check_eq "$out_lines" 0 "stdout lines when the deadline passes"
    check_contains "$err" "the deadline of 4s passed before a verdict was written" "message"
    check_eq "$(<"$json")" old "the verdict file after the deadline"
    # 4 s, then SIGTERM; SIGKILL 15 s later at the latest; ranks left after that get SIGTERM,
    # SIGKILL 5 s later, and 5 s more to go (docs/ci-gate.md#time-budget); 5 s for a busy machine.
    ((elapsed <= 4 + 15 + 10 + 5)) || fail "the gate ended ${elapsed}s after it started"
    ;;
  bad-fleet-options)
    # preflight rejects its options (exit 2 on every rank): the run broke, exit 3.
    gate -- --group-size 1
    check_eq "$rc:$out_lines" "3:0" "exit status when preflight rejects its options"
    check_contains "$err" "preflight exit 2 means it rejected its options" "message"
    check_contains "$err" "--group-size" "preflight's own message"
    [[ ! -e $json ]] || fail "a verdict file was written"
    ;;
  *) fail "unknown case '$case_name'" ;;
esac
check_eq "$(find "$GATE_TMP" -maxdepth 1 -name '.ci-gate.*')" "" "work folders left behind"
echo "PASS"
