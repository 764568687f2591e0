#!/usr/bin/env bash
# Tests of scripts/slurm/healthcheck.sh (docs/slurm.md): bash test_healthcheck.sh CASE BINARY.
# Each case runs the health check as slurmd would, against a stand-in scontrol that answers
# `scontrol -o show node node01` from $T/node.line and records every argument vector, and
# checks the exact calls, the exit code and the one syslog line.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SHOW=""
DRAINED_BY_US="State=IDLE+DRAIN Reason=preflight: inventory: gpu3 ECC_UNCORRECTABLE_VOLATILE 2 errors [root@2026-01-02T03:04:05]"

# Healthy and not drained: the state is read (before the run, to skip a busy node, and after
# it), nothing is changed.
case_healthy_idle() {
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "healthcheck: node=node01 verdict=pass exit=0 action=none"
  t_expect_file "$T/state/healthcheck.json"
  cmp -s "$T/state/healthcheck.json" "$T/state/last.json" || t_fail "last.json not updated"
  t_expect_file "$T/state/history/"healthcheck-*-pass.json
}

# Healthy and drained by preflight: resumed.
case_resume_own_drain() {
  t_node "$DRAINED_BY_US"
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
  t_expect_syslog "healthcheck: node=node01 verdict=pass exit=0 action=resume (was: preflight: inventory: gpu3 *)"
  # Draining (a job still on it) counts as drained as well.
  t_reset_records
  t_node "State=MIXED+DRAIN Reason=preflight: did not finish within 30 s [root@2026-01-02T03:04:05]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_SKIP_BUSY=0
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
}

# Healthy, but drained by someone else (or by Slurm): never resumed, whatever the reason's
# resemblance to ours.
case_never_resume_foreign_drain() {
  local -a reasons=(
    "maintenance: replace PSU [admin@2026-01-02T03:04:05]"
    "Prolog error [root@2026-01-02T03:04:05]"
    "preflight [root@2026-01-02T03:04:05]"
    "PREFLIGHT: upper case [root@2026-01-02T03:04:05]"
    "preflight- something [root@2026-01-02T03:04:05]"
    "ticket 42 preflight: quoted [admin@2026-01-02T03:04:05]"
  )
  local r
  for r in "${reasons[@]}"; do
    t_reset_records
    t_node "State=IDLE+DRAIN Reason=$r Comment=Reason=preflight: fake"
    t_hook healthcheck
    t_expect_rc 0
    t_expect_scontrol "$SHOW" "$SHOW"
    t_expect_syslog "healthcheck: node=node01 verdict=pass exit=0 action=none: drained by someone else, left drained (reason: ${r%% \[*}*"
  done
  # No Reason field at all (a drain without reason is not ours either).
  t_reset_records
  t_node "State=IDLE+DRAIN"
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW"
}

# Unhealthy: drained with "preflight: <the verdict's reason>" as one argument.
case_drain_unhealthy() {
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_rc 0
  local reason
  reason=$(t_field "$T/state/healthcheck.json" reason)
  [[ $reason == "inventory: "* ]] || t_fail "unexpected verdict reason '$reason'"
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: $reason")"
  t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=drain reason=preflight: $reason"
  grep -q -- '-p daemon.err' "$T/logger.calls" || t_fail "drain not logged as an error"
}

# Unhealthy, but the node already has a reason: someone else's is kept, ours is not repeated,
# an older one of ours is replaced.
case_drain_respects_existing_reason() {
  t_node "State=IDLE+DRAIN Reason=hardware ticket 1234 [admin@2026-01-02T03:04:05]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "* action=none: already has a reason that is not ours, kept (reason: hardware ticket 1234 *"
  local reason
  reason=$(t_field "$T/state/healthcheck.json" reason)
  t_reset_records
  t_node "State=IDLE+DRAIN Reason=preflight: $reason [root@2026-01-02T03:04:05]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "* action=none: already drained with this reason: preflight: $reason"
  t_reset_records
  t_node "$DRAINED_BY_US"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: $reason")"
}

# preflight does not end (ignores SIGTERM): the health check still ends in bounded time and
# drains the node saying so; the stuck process is gone.
case_outer_deadline() {
  t_fake stuck
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_TIMEOUT=6
  t_expect_rc 0
  # SIGTERM at 6 s, SIGKILL at 11 s; the hook gives up waiting at 14 s.
  t_expect_max_seconds $((6 + 5 + 3 + T_SLACK))
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: did not finish within 6 s")"
  t_expect_syslog "healthcheck: node=node01 verdict=none action=drain reason=preflight: did not finish within 6 s"
  t_expect_gone "$(cat "$T/fake.pid")"
}

# preflight exit 3 and 2: drained as a tool error (default), or only logged (ignore).
case_tool_errors() {
  t_fake exit3
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=DRAIN \
    "Reason=preflight: tool error: exit 3 (internal error): preflight: internal error: boom x")"
  t_reset_records
  t_fake exit2
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=DRAIN \
    "Reason=preflight: tool error: exit 2 (invalid invocation or configuration): preflight: --expect-gpus: bad value")"
  t_reset_records
  t_fake exit3
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=ignore
  t_expect_rc 0
  t_expect_scontrol "$SHOW"
  t_expect_syslog "healthcheck: node=node01 verdict=none action=none (PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=ignore): tool error: exit 3 *"
}

# A hostile reason in the verdict arrives as exactly one argument "Reason=preflight: ...",
# sanitized to one printable line, and nothing in it runs.
case_hostile_reason() {
  t_craft_hostile_verdict
  t_fake verdict1
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: $T_HOSTILE_CLEAN")"
  grep -q '^argc=4 update ' "$T/scontrol.calls" || t_fail "update was not 4 arguments"
  t_expect_no_file "$T/pwn1"
  t_expect_no_file "$T/pwn2"
  t_expect_no_file "$T/pwn3"
  t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=drain reason=preflight: $T_HOSTILE_CLEAN"
}

# A report that is not drain-safe (a raw newline, a 600-character reason): one line, capped so
# that "preflight: " plus the reason is at most 211 characters.
case_long_reason_capped() {
  local long="" i
  for ((i = 0; i < 60; i++)); do long+="word$i \"x\" "; done
  printf 'kind\tnode\nverdict\tfail\nexit_code\t1\nreason\t%s\nnext line\n' "$long" >"$T/raw.tsv"
  t_craft_hostile_verdict
  t_fake raw-tsv
  t_hook healthcheck
  t_expect_rc 0
  local want
  want=$(printf '%s' "${long//\"x\"/x}")
  want=${want:0:197}
  want="Reason=preflight: ${want% }..."
  ((${#want} == 218 || ${#want} == 217)) || t_fail "test bug: want is ${#want} long"
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=DRAIN "$want")"
}

# A job on the node: the health check leaves the GPUs alone.
case_skip_busy_node() {
  local state
  for state in ALLOCATED MIXED "ALLOCATED+DRAIN" "IDLE+COMPLETING"; do
    t_reset_records
    t_node "State=$state"
    t_fake exit3
    t_hook healthcheck
    t_expect_rc 0
    t_expect_scontrol "$SHOW"
    t_expect_no_file "$T/fake.calls"
    t_expect_syslog "healthcheck: node=node01 action=skip: node is busy (State=$state), no checks run"
  done
}

# A prolog holds the lock: skipped, nothing changed.
case_lock_busy_skips() {
  local fd
  exec {fd}>>"$T/state/lock"
  flock "$fd"
  t_node "$DRAINED_BY_US"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_LOCK_WAIT=1
  exec {fd}>&-
  t_expect_rc 0
  t_expect_scontrol "$SHOW"
  t_expect_syslog "healthcheck: node=node01 action=skip: another preflight run held the lock * for 1 s"
}

# Invalid configuration: exit 2 and nothing touched.
case_config_error() {
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_TIMEOUT=0
  t_expect_rc 2
  t_expect_no_scontrol
  t_expect_syslog "healthcheck: configuration error: PREFLIGHT_HEALTHCHECK_TIMEOUT=0: not *"
  t_reset_records
  t_hook healthcheck PREFLIGHT_CONFIG="$T/nope.conf"
  t_expect_rc 2
  t_expect_no_scontrol
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=resume
  t_expect_rc 2
  t_expect_no_scontrol
}

# scontrol failing: exit 1 and the failure logged.
case_scontrol_failure() {
  echo 1 >"$T/update.rc"
  t_node "$DRAINED_BY_US"
  t_hook healthcheck
  t_expect_rc 1
  t_expect_syslog "* action=resume failed: *"
  # The state cannot be read at all: an unhealthy node is drained anyway.
  t_reset_records
  echo 0 >"$T/update.rc"
  rm "$T/node.line"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_rc 0
  grep -q '^argc=4 update NodeName=node01 State=DRAIN Reason=preflight:\\ inventory:' \
    "$T/scontrol.calls" || t_fail "not drained"
}

# The drill of docs/slurm.md: an injected fault drains the node with a reason that says it was
# injected; the next healthy run resumes it.
case_drill() {
  # 10 s: preflight's --timeout 5 holds the floor of a node without GPUs (4 s, docs/plan.md).
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_TIMEOUT=10 \
    PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 0 --inject-fault hang@check=inventory"
  t_expect_rc 0
  t_expect_max_seconds 16
  local drain
  drain=$(sed -n 3p "$T/scontrol.calls")
  [[ $drain == "argc=4 update NodeName=node01 State=DRAIN Reason=preflight:\\ injected\\ fault:\\ "* ]] ||
    t_fail "not drained for the injected fault: $drain"
  local reason
  reason=$(t_field "$T/state/healthcheck.json" reason)
  t_node "State=IDLE+DRAIN Reason=preflight: $reason [root@2026-01-02T03:04:05]"
  t_reset_records
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
}

t_setup "$2"
SHOW=$(t_show)
t_dispatch "$1"
