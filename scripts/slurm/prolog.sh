#!/usr/bin/env bash
# Slurm Prolog (slurm.conf: Prolog=, PrologFlags=Alloc): vet this node with `preflight run` before
# a job starts on it. Exit 0 lets the job start; any other exit makes slurmd drain the node and
# requeue the batch job, which is how a prolog reports a bad node (it does not call scontrol).
# See docs/slurm.md.
#
# Exit codes: 0 healthy (or a tool error with PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass); 1 unhealthy;
# 2 configuration error (environment file, variables); 3 tool error, failing closed: preflight
# exited 2 or 3, wrote no verdict, did not finish within PREFLIGHT_TIMEOUT, could not be found,
# or the lock or state directory was unavailable; or slurmd's signal stopped the prolog before
# preflight ran.
#
# Settings come from the environment file (PREFLIGHT_CONFIG, default /etc/default/preflight;
# scripts/slurm/preflight.default lists them). One line goes to syslog per run.
set -euo pipefail

PF_HOOK=prolog
PF_SELF=$(readlink -f -- "${BASH_SOURCE[0]}")
# shellcheck source=scripts/slurm/common.sh
source "${PF_SELF%/*}/common.sh"
PF_SIGNAL_EXIT=3  # stopped by slurmd before preflight ran: the node was not vetted

# A problem with the tool rather than the node. Failing closed (the default) drains the node,
# which is safe but costs a node; failing open lets the job start on an unvetted node. Either
# way the syslog line says which happened.
tool_error() {
  local why=$1
  if [[ $PREFLIGHT_PROLOG_ON_TOOL_ERROR == pass ]]; then
    pf_log warning "$(where) verdict=none exit=0 reason=$why; job allowed to start (PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass)"
    exit 0
  fi
  pf_log err "$(where) verdict=none exit=3 reason=$why; prolog fails, slurmd drains the node and requeues the job (PREFLIGHT_PROLOG_ON_TOOL_ERROR=fail)"
  exit 3
}

where() {
  printf 'node=%s job=%s' "$PREFLIGHT_NODENAME" "${SLURM_JOB_ID:--}"
}

main() {
  pf_init
  pf_load_config
  pf_split_args PREFLIGHT_PROLOG_ARGS
  local -a args=("${PF_ARGS[@]}")
  pf_find_bin "${PF_SELF%/*}" ||
    tool_error "tool error: preflight binary not found (set PREFLIGHT_BIN, or put it on PATH)"
  pf_prepare_state_dir || tool_error "tool error: $PF_DETAIL"
  pf_lock "$PREFLIGHT_LOCK_WAIT" || tool_error "tool error: $PF_DETAIL"

  pf_run_preflight "$PREFLIGHT_TIMEOUT" "${args[@]}"
  pf_classify "$PREFLIGHT_TIMEOUT"
  local saved=""
  if ((PF_HAVE_VERDICT)); then
    pf_save_verdict prolog "$PF_V_VERDICT"
    if [[ -n $PF_SAVE_ERROR ]]; then saved=" ($PF_SAVE_ERROR)"; fi
  fi
  local interrupted=""
  if [[ -n $PF_SIGNAL ]]; then interrupted=" (prolog interrupted by SIG$PF_SIGNAL)"; fi

  case $PF_OUTCOME in
    healthy)
      local prio=info
      if [[ $PF_V_VERDICT == warn ]]; then prio=warning; fi
      pf_log "$prio" "$(where) verdict=$PF_V_VERDICT exit=0 duration=${PF_V_DURATION}s${PF_REASON:+ reason=$PF_REASON}$saved$interrupted"
      exit 0
      ;;
    unhealthy)
      pf_log err "$(where) verdict=$PF_V_VERDICT exit=1 duration=${PF_V_DURATION}s reason=$PF_REASON$saved$interrupted; slurmd drains the node and requeues the job"
      exit 1
      ;;
    *)
      tool_error "$PF_REASON$saved$interrupted"
      ;;
  esac
}

main "$@"
