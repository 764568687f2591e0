#!/usr/bin/env bash
# Tests of PREFLIGHT_REBOOT_ON_ACTION in scripts/slurm/ (docs/slurm.md, Reboot on action):
# bash test_reboot.sh CASE BINARY. An unhealthy verdict whose top-level action is "reboot" makes
# a hook ask Slurm for `scontrol reboot ASAP nextstate=RESUME reason=... NODE` only where the
# setting is yes, at most once a day; every other verdict only drains. The stand-in scontrol
# records the calls (tests/slurm/lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SHOW=""

# The arguments that make this binary's verdict ask for a reboot: no GPU visible where one is
# expected (NO_GPU_VISIBLE).
readonly REBOOT_ARGS="--checks inventory --expect-gpus 1"

# reason_of VERDICT: REASON, the verdict's reason, once its action is checked to be "reboot".
reason_of() {
  [[ $(t_field "$1" action) == reboot ]] || t_fail "$1 does not ask for a reboot: $(t_field "$1" action)"
  REASON=$(t_field "$1" reason)
  [[ $REASON == "inventory: "*NO_GPU_VISIBLE* ]] || t_fail "unexpected reason '$REASON'"
}

# $T/template.json: a real verdict of this binary that asks for a reboot; REASON its reason.
real_reboot_verdict() {
  # shellcheck disable=SC2086  # REBOOT_ARGS: separate words
  env PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES= NVIDIA_VISIBLE_DEVICES=none \
    "$T_BIN" run $REBOOT_ARGS --json "$T/template.json" >/dev/null 2>&1 || true
  reason_of "$T/template.json"
}

# craft ACTION: $T/crafted.json, the template with its top-level action replaced (the findings'
# own actions stay "reboot"); "-" removes the key, as in a verdict of a version before it.
craft() {
  if [[ $1 == - ]]; then
    grep -v '^  "action": ' "$T/template.json" >"$T/crafted.json"
  else
    sed "s/^  \"action\": \".*\",\$/  \"action\": \"$1\",/" "$T/template.json" >"$T/crafted.json"
  fi
  grep -q '^    .*"action": "reboot"' "$T/crafted.json" || t_fail "crafted verdict lost its findings"
}

reboot_call() {
  t_argv reboot ASAP nextstate=RESUME "reason=preflight: $REASON" "$T_NODE"
}

drain_call() {
  t_argv update "NodeName=$T_NODE" State=DRAIN "Reason=preflight: $REASON"
}

# (a) The setting off (the default, and `no`): a verdict that asks for a reboot only drains.
case_off_only_drains() {
  local setting
  for setting in "" PREFLIGHT_REBOOT_ON_ACTION=no; do
    t_reset_records
    t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="$REBOOT_ARGS" ${setting:+"$setting"}
    t_expect_rc 0
    reason_of "$T/state/healthcheck.json"
    t_expect_scontrol "$SHOW" "$SHOW" "$(drain_call)"
    t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=drain reason=preflight: $REASON"
    t_reset_records
    t_hook prolog PREFLIGHT_PROLOG_ARGS="$REBOOT_ARGS" ${setting:+"$setting"}
    t_expect_rc 1
    reason_of "$T/state/prolog.json"
    t_expect_no_scontrol
    t_expect_syslog "prolog: node=node01 job=4242 verdict=fail exit=1 *; slurmd drains the node and requeues the job"
  done
  t_expect_no_file "$T/state/reboot-requested"
}

# (b) The setting on: the health check asks for the reboot instead of the drain (ASAP drains
# meanwhile), the prolog before its exit 1; each records when.
case_on_reboots() {
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="$REBOOT_ARGS" PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 0
  reason_of "$T/state/healthcheck.json"
  t_expect_scontrol "$SHOW" "$SHOW" "$(reboot_call)"
  t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=reboot reason=preflight: $REASON (scontrol reboot ASAP nextstate=RESUME: PREFLIGHT_REBOOT_ON_ACTION=yes)"
  t_expect_file "$T/state/reboot-requested"
  local stamp
  read -r stamp <"$T/state/reboot-requested"
  ((stamp <= $(date +%s) && stamp > $(date +%s) - 120)) || t_fail "reboot-requested holds '$stamp'"

  t_reset_records
  rm -f "$T/state/reboot-requested"
  t_hook prolog PREFLIGHT_PROLOG_ARGS="$REBOOT_ARGS" PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 1
  reason_of "$T/state/prolog.json"
  t_expect_scontrol "$(reboot_call)"
  t_expect_syslog "prolog: node=node01 job=4242 verdict=fail exit=1 *; slurmd drains the node and requeues the job; Slurm reboots it once idle and resumes it (PREFLIGHT_REBOOT_ON_ACTION=yes)"
  t_expect_file "$T/state/reboot-requested"
}

# (c) The setting on, any other action: only the drain, never `scontrol reboot`. The findings
# still say "reboot": the node's top-level action alone decides. Tool errors never reboot.
case_other_actions_never_reboot() {
  real_reboot_verdict
  t_fake verdict1
  local action
  for action in none restart_job reset_gpu service - REBOOT "reboot x" ""; do
    craft "$action"
    t_reset_records
    t_hook healthcheck PREFLIGHT_REBOOT_ON_ACTION=yes
    t_expect_rc 0
    t_expect_scontrol "$SHOW" "$SHOW" "$(drain_call)"
    t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=drain reason=preflight: $REASON"
    t_reset_records
    t_hook prolog PREFLIGHT_REBOOT_ON_ACTION=yes
    t_expect_rc 1
    t_expect_no_scontrol
  done
  # A tool error never reboots: it drains as one.
  t_fake exit3
  t_reset_records
  t_hook healthcheck PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: tool error: exit 3 (internal error): preflight: internal error: boom x")"
  t_reset_records
  t_hook prolog PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 3
  t_expect_no_scontrol
  t_expect_no_file "$T/state/reboot-requested"
}

# At most one reboot a day: a request within 24 h of the last one drains, with a line that says
# why; one older than that reboots again.
case_once_a_day() {
  real_reboot_verdict
  t_fake verdict1
  craft reboot
  printf '%s\n' "$(($(date +%s) - 3600))" >"$T/state/reboot-requested"
  t_hook healthcheck PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(drain_call)"
  t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=drain reason=preflight: $REASON (no reboot asked: a hook asked for one at *Z, less than 24 h ago, and the fault is back)"
  t_reset_records
  t_hook prolog PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 1
  t_expect_no_scontrol
  t_expect_syslog "prolog: * requeues the job (no reboot asked: a hook asked for one at *)"

  t_reset_records
  printf '%s\n' "$(($(date +%s) - 90000))" >"$T/state/reboot-requested"
  t_hook healthcheck PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_scontrol "$SHOW" "$SHOW" "$(reboot_call)"
}

# A reboot already pending (the node's state shows it) is not asked for again, and a failed
# `scontrol reboot` drains; neither is recorded.
case_pending_or_failed() {
  real_reboot_verdict
  t_fake verdict1
  craft reboot
  t_node "State=IDLE+REBOOT_REQUESTED"
  t_hook healthcheck PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(drain_call)"
  t_expect_syslog "healthcheck: * action=drain reason=preflight: $REASON (no reboot asked: one is pending already (State=IDLE+REBOOT_REQUESTED))"

  t_reset_records
  t_node "State=IDLE"
  echo 1 >"$T/reboot.rc"
  t_hook healthcheck PREFLIGHT_REBOOT_ON_ACTION=yes
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(reboot_call)" "$(drain_call)"
  t_expect_syslog "healthcheck: * action=drain reason=preflight: $REASON (scontrol reboot ASAP nextstate=RESUME failed)"
  t_expect_no_file "$T/state/reboot-requested"
}

t_setup "$2" "${3:-}"
SHOW=$(t_show)
t_dispatch "$1"
