#!/usr/bin/env bash
# Invalid invocations of the CI gate: each ends with exit 2, one line on stderr, nothing on
# stdout, before anything is launched (the launcher is a stub that leaves a mark if called).
#   test_invocation.sh GATE PREFLIGHT
set -euo pipefail
GATE=${1:?usage: test_invocation.sh GATE PREFLIGHT}
PREFLIGHT=${2:?usage: test_invocation.sh GATE PREFLIGHT}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=gate_lib.sh
source "$here/gate_lib.sh"

export STUB_DIR=$GATE_TMP
stub=$here/fake_launcher.sh
isolate_path
ok=(--preflight "$PREFLIGHT" --launcher mpirun --launcher-bin "$stub" --json "$GATE_TMP/v.json")

run_gate --help
check_eq "$rc" 0 "exit status of --help"
check_contains "$out" "usage: ci-gate.sh" "--help text"
check_contains "$out" "Exit: 0 gate passed; 1 gate failed; 2 invalid invocation; 3" "--help text"

# Flags.
expect_usage_error "${ok[@]}" --nodes n1 --bogus
expect_usage_error "${ok[@]}" --nodes n1 --expect-gpus 8
expect_usage_error "${ok[@]}" --nodes
expect_usage_error "${ok[@]}" --nodes n1 --launcher pbs
expect_usage_error "${ok[@]}" --nodes n1 --min-healthy two
expect_usage_error "${ok[@]}" --nodes n1 --min-healthy -1
expect_usage_error "${ok[@]}" --nodes n1 --min-healthy 99999999999999999999
expect_usage_error "${ok[@]}" --nodes n1 --deadline 0
expect_usage_error "${ok[@]}" --nodes n1 --deadline 1.5
expect_usage_error "${ok[@]}" --nodes n1 --grace soon
expect_usage_error "${ok[@]}" --nodes n1 -- --expect-gpus 8 --json other.json
expect_usage_error "${ok[@]}" --nodes n1 -- --json=other.json

# Nodes.
expect_usage_error "${ok[@]}"
check_contains "$err" "no nodes" "message without nodes"
expect_usage_error "${ok[@]}" --nodes ''
expect_usage_error "${ok[@]}" --nodes 'gpu[001-'
check_contains "$err" "unmatched '['" "message for an invalid list"
expect_usage_error "${ok[@]}" --nodes 'gpu[3-1]'
expect_usage_error "${ok[@]}" --nodes n1,n2 --hostfile "$GATE_TMP/hosts"
expect_usage_error "${ok[@]}" --nodes n1 --hostfile=
expect_usage_error "${ok[@]}" --hostfile "$GATE_TMP/no-such-file"
printf 'n1\nn2 slots=2 cpus=4\n' >"$GATE_TMP/bad-hosts"
expect_usage_error "${ok[@]}" --hostfile "$GATE_TMP/bad-hosts"
check_contains "$err" "bad-hosts:2" "message for a bad host file line"
expect_usage_error "${ok[@]}" --nodes 'n[1-3],n2'
check_contains "$err" "host 'n2' is listed twice" "message for a duplicate"
printf 'n1\nn1\n' >"$GATE_TMP/dup-hosts"
expect_usage_error "${ok[@]}" --hostfile "$GATE_TMP/dup-hosts"
expect_usage_error "${ok[@]}" --nodes 'n[1-3]' --min-healthy 4
check_contains "$err" "more than the 3 nodes" "message for --min-healthy above the count"
# Duplicates are for mpirun's several ranks per host; srun runs one task per node.
expect_usage_error "${ok[@]}" --launcher srun --nodes n1,n1 --allow-duplicate-hosts

# Programs and paths.
expect_usage_error "${ok[@]}" --nodes n1 --preflight "$GATE_TMP/no-preflight"
expect_usage_error --nodes n1 --launcher mpirun --launcher-bin "$GATE_TMP/no-mpirun" \
  --preflight "$PREFLIGHT"
expect_usage_error --nodes n1 --launcher srun --preflight "$PREFLIGHT"
check_contains "$err" "srun not found" "message without srun"
expect_usage_error --nodes n1 --launcher mpirun --launcher-bin no-such-mpirun --preflight "$PREFLIGHT"
expect_usage_error "${ok[@]}" --nodes n1 --json "$GATE_TMP/no-dir/v.json"
expect_usage_error "${ok[@]}" --nodes n1 --json "$GATE_TMP"
# The launch runs in a session of its own: no setsid, no launch.
setsid_path=$(readlink "$GATE_TMP/bin/setsid")
rm "$GATE_TMP/bin/setsid"
expect_usage_error "${ok[@]}" --nodes n1
check_contains "$err" "setsid not found" "message without setsid"
ln -s "$setsid_path" "$GATE_TMP/bin/setsid"

# Nothing was left behind next to the verdict path.
leftover=$(find "$GATE_TMP" -name '.ci-gate.*')
check_eq "$leftover" "" "work folders left behind"
echo "PASS"
