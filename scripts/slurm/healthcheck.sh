#!/usr/bin/env bash
# Slurm HealthCheckProgram: run `preflight run` periodically and act on the verdict, since slurmd
# leaves any action to the program. Unhealthy: drain the node with Reason="preflight: <reason>".
# Healthy: resume the node, but only if it is drained with a reason starting "preflight:", so a
# node drained by anyone else stays drained. See docs/slurm.md.
#
# Exit codes: 0 the health check did its job (node healthy, drained, resumed, left alone, or the
# run skipped); 1 a Slurm command it needed failed (the node's state could not be read or
# changed); 2 configuration error. An unhealthy node is not an error here: some Slurm versions
# run the health check at slurmd start until it exits 0 before the node registers.
set -euo pipefail

PF_HOOK=healthcheck
PF_SELF=$(readlink -f -- "${BASH_SOURCE[0]}")
# shellcheck source=scripts/slurm/common.sh
source "${PF_SELF%/*}/common.sh"
PF_SIGNAL_EXIT=0  # stopped before preflight ran: nothing was judged or changed, a skipped run

readonly OUR_PREFIX="preflight:"

# scontrol with an argument vector, bounded in time. Its output goes to stdout.
scontrol_run() {
  timeout "$PF_CMD_TIMEOUT" "$PREFLIGHT_SCONTROL" "$@"
}

# Read this node's state and reason from `scontrol -o show node NAME` into NODE_STATE (e.g.
# IDLE+DRAIN) and NODE_REASON (the text after "Reason=", which Slurm follows with " [user@time]"
# and possibly further fields). Returns 1 if scontrol fails or prints no line for the node.
node_info() {
  local out line
  NODE_STATE="" NODE_REASON=""
  out=$(scontrol_run -o show node "$PREFLIGHT_NODENAME" 2>/dev/null) || return 1
  while IFS= read -r line; do
    if [[ $line == "NodeName=$PREFLIGHT_NODENAME "* ]]; then
      [[ $line =~ (^|[[:space:]])State=([^[:space:]]+) ]] || return 1
      NODE_STATE=${BASH_REMATCH[2]}
      if [[ $line == *" Reason="* ]]; then NODE_REASON=${line#* Reason=}; fi
      return 0
    fi
  done <<<"$out"
  return 1
}

is_drained() { [[ $NODE_STATE == *DRAIN* ]]; }
is_ours() { [[ $NODE_REASON == "$OUR_PREFIX"* ]]; }
# A job runs (or is being cleaned up) on the node: GPU checks now would disturb it.
is_busy() { [[ $NODE_STATE == *ALLOC* || $NODE_STATE == *MIX* || $NODE_STATE == *COMPLETING* ]]; }

# The node currently carries exactly REASON (Slurm appends " [user@time]" to what was set).
has_reason() {
  [[ $NODE_REASON == "$1" || $NODE_REASON == "$1 ["*@*"]"* ]]
}

# Healthy verdict: resume the node if, and only if, it is drained for a reason of ours. The
# state is read now, after the run, so a drain by someone else during the run is respected.
act_healthy() {
  local what=$1
  if ! node_info; then
    pf_log err "node=$PREFLIGHT_NODENAME $what action=none: cannot read the node's state with scontrol"
    exit 1
  fi
  if ! is_drained; then
    pf_log info "node=$PREFLIGHT_NODENAME $what action=none"
  elif ! is_ours; then
    pf_log info "node=$PREFLIGHT_NODENAME $what action=none: drained by someone else, left drained (reason: $NODE_REASON)"
  elif scontrol_run update "NodeName=$PREFLIGHT_NODENAME" State=RESUME >/dev/null; then
    pf_log notice "node=$PREFLIGHT_NODENAME $what action=resume (was: $NODE_REASON)"
  else
    pf_log err "node=$PREFLIGHT_NODENAME $what action=resume failed: scontrol update NodeName=$PREFLIGHT_NODENAME State=RESUME"
    exit 1
  fi
  exit 0
}

# Unhealthy verdict or tool error: drain with "preflight: WHY". Left alone: a node that already
# has a reason that is not ours (an admin's drain keeps its reason) and one already drained
# with this very reason (so the reason's time stamp keeps saying when it started). If the
# state cannot be read, drain anyway: a bad node must not take jobs.
act_drain() {
  local what=$1 reason
  reason="$OUR_PREFIX $(pf_sanitize "$2" "$PF_REASON_MAX")"
  local -a cmd=(update "NodeName=$PREFLIGHT_NODENAME" State=DRAIN "Reason=$reason")
  if node_info; then
    if [[ -n $NODE_REASON ]] && ! is_ours; then
      pf_log warning "node=$PREFLIGHT_NODENAME $what action=none: already has a reason that is not ours, kept (reason: $NODE_REASON); would drain with: $reason"
      exit 0
    fi
    if is_drained && has_reason "$reason"; then
      pf_log warning "node=$PREFLIGHT_NODENAME $what action=none: already drained with this reason: $reason"
      exit 0
    fi
  fi
  if scontrol_run "${cmd[@]}" >/dev/null; then
    pf_log err "node=$PREFLIGHT_NODENAME $what action=drain reason=$reason"
    exit 0
  fi
  pf_log err "node=$PREFLIGHT_NODENAME $what action=drain failed: scontrol update could not drain the node; reason=$reason"
  exit 1
}

main() {
  pf_init
  pf_load_config
  pf_split_args PREFLIGHT_HEALTHCHECK_ARGS
  local -a args=("${PF_ARGS[@]}")
  local deadline=$PREFLIGHT_HEALTHCHECK_TIMEOUT

  if ((PREFLIGHT_HEALTHCHECK_SKIP_BUSY)) && node_info && is_busy; then
    pf_log info "node=$PREFLIGHT_NODENAME action=skip: node is busy (State=$NODE_STATE), no checks run"
    exit 0
  fi
  if ! pf_find_bin "${PF_SELF%/*}"; then
    tool_problem "tool error: preflight binary not found (set PREFLIGHT_BIN, or put it on PATH)"
  fi
  pf_prepare_state_dir || tool_problem "tool error: $PF_DETAIL"
  if ! pf_lock "$PREFLIGHT_HEALTHCHECK_LOCK_WAIT"; then
    # A prolog is vetting the node right now; it fails the job itself if the node is bad.
    pf_log info "node=$PREFLIGHT_NODENAME action=skip: $PF_DETAIL"
    exit 0
  fi

  pf_run_preflight "$deadline" "${args[@]}"
  pf_classify "$deadline"
  local saved=""
  if ((PF_HAVE_VERDICT)); then
    pf_save_verdict healthcheck "$PF_V_VERDICT"
    if [[ -n $PF_SAVE_ERROR ]]; then saved=" ($PF_SAVE_ERROR)"; fi
  fi
  case $PF_OUTCOME in
    healthy) act_healthy "verdict=$PF_V_VERDICT exit=0$saved" ;;
    unhealthy) act_drain "verdict=$PF_V_VERDICT exit=1$saved" "$PF_REASON" ;;
    *) tool_problem "$PF_REASON" ;;
  esac
}

# preflight could not judge the node (see pf_classify). By default the node is drained so that
# the problem is seen in `sinfo -R`; PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=ignore only logs it.
tool_problem() {
  if [[ $PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR == ignore ]]; then
    pf_log warning "node=$PREFLIGHT_NODENAME verdict=none action=none (PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=ignore): $1"
    exit 0
  fi
  act_drain "verdict=none" "$1"
}

main "$@"
