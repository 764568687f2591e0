#!/usr/bin/env bash
# Slurm Prolog (slurm.conf: Prolog=, PrologFlags=Alloc): vet this node with `preflight run` before
# a job starts on it. Exit 0 lets the job start; any other exit makes slurmd drain the node
# (reason "Prolog error") and requeue the batch job, which is how a prolog reports a bad node.
# See docs/slurm.md.
#
# Exit codes: 0 healthy (or a tool or configuration error with PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass);
# 1 unhealthy; 2 configuration error (environment file, variables); 3 tool error, failing
# closed: preflight exited 2 or 3, wrote no verdict, did not finish within its deadline, could
# not be found, or the lock, the state directory or Slurm's prolog time limit left it no room;
# or slurmd's signal stopped the prolog before preflight ran.
#
# Every non-zero exit is recorded in the state directory (prolog-failures.tsv: time, job, node,
# exit, kind, failed checks or "-", reason), so that the health check can tell the "Prolog error" drain
# it causes from anyone else's and resume the node once it is healthy again.
#
# With PREFLIGHT_REBOOT_ON_ACTION=yes, an unhealthy verdict whose action is reboot also asks Slurm
# to reboot the node once idle (scontrol reboot ASAP nextstate=RESUME).
#
# Settings come from the environment file (PREFLIGHT_CONFIG, default /etc/default/preflight;
# scripts/slurm/preflight.default lists them). One line goes to syslog per run.
set -euo pipefail

PF_HOOK=prolog
# No command is looked up on the PATH slurmd gives (none: bash's default ends in ".") before
# common.sh's pf_init fixes it.
PF_SELF=$(PATH=/usr/bin:/bin readlink -f -- "${BASH_SOURCE[0]}")
# shellcheck source=scripts/slurm/common.sh
source "${PF_SELF%/*}/common.sh"
PF_SIGNAL_EXIT=3  # stopped by slurmd before preflight ran: the node was not vetted

# What the failure record of this run says; set before each failing exit (pf_hook_exit writes it).
FAIL_KIND=""    # fault (preflight's verdict), tool, config; empty: interrupted by a signal
FAIL_CHECKS=""  # the checks a fault verdict failed, comma-separated
FAIL_REASON=""
MARKER=""       # this run's prolog.running.PID, removed when it ends

where() {
  printf 'node=%s job=%s' "$(node_name)" "$(job_id)"
}

# The node's name, also while the configuration that may set it is unreadable.
node_name() {
  local name=${PREFLIGHT_NODENAME:-${SLURMD_NODENAME:-}}
  if [[ -z $name ]]; then name=$(hostname -s 2>/dev/null || echo unknown); fi
  pf_sanitize "$name" 255
}

job_id() {
  local id=${SLURM_JOB_ID:--}
  [[ $id =~ ^[0-9_+]{1,32}$ ]] || id=-
  printf '%s' "$id"
}

# Where the records go: the state directory, or the default one while the configuration that
# names it is unreadable (the health check reads both); never one that pf_own_dir refuses.
# shellcheck disable=SC2317  # called from pf_hook_exit
records_dir() {
  local dir=${PREFLIGHT_STATE_DIR:-}
  [[ $dir == /* ]] || dir=$PF_DEFAULT_STATE_DIR
  pf_own_dir "$dir" || return 1
  printf '%s' "$dir"
}

# A problem with the tool rather than the node. Failing closed (the default) drains the node,
# which is safe but costs a node until the health check resumes it; failing open lets the job
# start on an unvetted node. Either way the syslog line says which happened.
tool_error() {
  local why=$1
  if [[ $PREFLIGHT_PROLOG_ON_TOOL_ERROR == pass ]]; then
    pf_log warning "$(where) verdict=none exit=0 reason=$why; job allowed to start (PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass)"
    exit 0
  fi
  FAIL_KIND=tool FAIL_REASON=$why
  pf_log err "$(where) verdict=none exit=3 reason=$why; prolog fails, slurmd drains the node and requeues the job (PREFLIGHT_PROLOG_ON_TOOL_ERROR=fail)"
  exit 3
}

# A configuration error (common.sh calls this before its exit 2). The policy for tool errors
# applies where the file got as far as setting it: a broken file pushed to every node must not
# drain them all where the admin chose to let jobs run.
pf_hook_config_error() {
  local why="configuration error: $1"
  if [[ ${PREFLIGHT_PROLOG_ON_TOOL_ERROR:-} == pass ]]; then
    pf_log warning "$(where) verdict=none exit=0 reason=$why; job allowed to start (PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass)"
    exit 0
  fi
  FAIL_KIND=config FAIL_REASON=$why
  pf_log err "$(where) verdict=none exit=2 reason=$why; prolog fails, slurmd drains the node and requeues the job"
  exit 2
}

# On every exit (common.sh's EXIT trap): a non-zero exit is recorded, and the marker removed.
# A prolog killed with SIGKILL runs no trap; its marker is what the health check finds.
# shellcheck disable=SC2317  # called by common.sh's EXIT trap
pf_hook_exit() {
  local rc=$1 dir reason
  if ((rc != 0)) && dir=$(records_dir); then
    reason=${FAIL_REASON:-prolog stopped by SIG${PF_SIGNAL:-?} before it ended}
    pf_append_failure "$dir" "$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$(date +%s)" "$(job_id)" \
      "$(node_name)" "$rc" "${FAIL_KIND:-interrupted}" "${FAIL_CHECKS:--}" \
      "$(pf_sanitize "$reason" "$PF_REASON_MAX")")" || true
  fi
  if [[ -n $MARKER ]]; then rm -f -- "$MARKER"; fi
}

# Leave a marker while this prolog runs: slurmd kills a prolog that overruns its limit with
# SIGKILL, which no trap sees, and the marker then stays for the health check to record.
mark_running() {
  local file="$PREFLIGHT_STATE_DIR/$PF_RUNNING.$$"
  if printf '%s\t%s\t%s\t%s\n' "$(date +%s)" "$(job_id)" "$PREFLIGHT_NODENAME" "$$" \
    >"$file" 2>/dev/null; then
    MARKER=$file
  fi
}

# SLURM_LIMIT: slurm.conf's limit on this prolog in seconds (PrologTimeout where the Slurm has
# one, else PrologEpilogTimeout), empty when it has none or it cannot be read; SLURM_LIMIT_FROM
# says where it came from. PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto reads `scontrol show config`,
# keeping the answer in the state directory for PF_SLURM_CONFIG_MAX_AGE seconds.
read_slurm_limit() {
  SLURM_LIMIT="" SLURM_LIMIT_FROM=""
  case $PREFLIGHT_SLURM_PROLOG_TIMEOUT in
    none) return 0 ;;
    auto) ;;
    *)
      SLURM_LIMIT=$PREFLIGHT_SLURM_PROLOG_TIMEOUT SLURM_LIMIT_FROM=PREFLIGHT_SLURM_PROLOG_TIMEOUT
      return 0
      ;;
  esac
  local cache="$PREFLIGHT_STATE_DIR/slurm-prolog-timeout" value="" age out line both="" own=""
  if [[ -f $cache ]]; then
    age=$(($(date +%s) - $(stat -c %Y -- "$cache" 2>/dev/null || echo 0)))
    if ((age >= 0 && age < PF_SLURM_CONFIG_MAX_AGE)); then
      read -r value <"$cache" 2>/dev/null || true
      if [[ $value =~ ^([0-9]{1,9}|none)$ ]]; then
        if [[ $value != none ]]; then SLURM_LIMIT=$value; fi
        SLURM_LIMIT_FROM="scontrol show config, read within the hour"
        return 0
      fi
    fi
  fi
  # Unreadable (no scontrol, slurmctld down): the prolog keeps PREFLIGHT_TIMEOUT alone.
  out=$(timeout "$PF_CMD_TIMEOUT" "$PF_SCONTROL" show config 2>/dev/null) || return 0
  while IFS= read -r line; do
    if [[ $line =~ ^PrologEpilogTimeout[[:space:]]*=[[:space:]]*([^[:space:]]*) ]]; then
      both=${BASH_REMATCH[1]}
    elif [[ $line =~ ^PrologTimeout[[:space:]]*=[[:space:]]*([^[:space:]]*) ]]; then
      own=${BASH_REMATCH[1]}
    fi
  done <<<"$out"
  # 65534 (NO_VAL16) and 65535 (INFINITE16) are "no limit" in scontrol's output, as is 0.
  value=none
  for line in "$both" "$own"; do
    if [[ $line =~ ^[0-9]{1,9}$ ]] && ((10#$line > 0 && 10#$line < 65534)); then
      value=$((10#$line))
    fi
  done
  if [[ $value != none ]]; then SLURM_LIMIT=$value; fi
  SLURM_LIMIT_FROM="scontrol show config"
  pf_write_into "$cache" "$value" || true
}

main() {
  local start=$SECONDS
  pf_init
  pf_load_config
  pf_split_args PREFLIGHT_PROLOG_ARGS
  local -a args=("${PF_ARGS[@]}")
  pf_find_bin "${PF_SELF%/*}" ||
    tool_error "tool error: preflight binary not found (set PREFLIGHT_BIN, or install it in /usr/local/bin or /usr/bin)"
  local rc=0
  pf_prepare_state_dir || rc=$?
  if ((rc == 2)); then pf_config_error "$PF_DETAIL"; fi
  ((rc == 0)) || tool_error "tool error: $PF_DETAIL"
  mark_running

  # The whole prolog must end before Slurm's limit: slurmd 22.05 sends SIGTERM and, about 10 ms
  # later, SIGKILL, after which nothing is saved. So the lock wait and preflight's deadline are
  # cut to end PF_SLURM_MARGIN seconds before it.
  local deadline=$PREFLIGHT_TIMEOUT lock_wait=$PREFLIGHT_LOCK_WAIT room cut=""
  read_slurm_limit
  if [[ -n $SLURM_LIMIT ]]; then
    if ((PREFLIGHT_LOCK_WAIT + PREFLIGHT_TIMEOUT + PF_SLURM_MARGIN > SLURM_LIMIT)); then
      pf_log warning "$(where) PREFLIGHT_LOCK_WAIT + PREFLIGHT_TIMEOUT + $PF_SLURM_MARGIN = $((PREFLIGHT_LOCK_WAIT + PREFLIGHT_TIMEOUT + PF_SLURM_MARGIN)) s is more than the Slurm prolog limit of $SLURM_LIMIT s ($SLURM_LIMIT_FROM): the deadline is cut to fit; raise PrologEpilogTimeout or lower PREFLIGHT_TIMEOUT"
    fi
    room=$((SLURM_LIMIT - (SECONDS - start) - PF_SLURM_MARGIN - PF_MARGIN - 1))
    ((lock_wait <= room)) || lock_wait=$((room > 0 ? room : 0))
  fi
  pf_lock "$lock_wait" || tool_error "tool error: $PF_DETAIL"
  if [[ -n $SLURM_LIMIT ]]; then
    room=$((SLURM_LIMIT - (SECONDS - start) - PF_SLURM_MARGIN))
    if ((room < PF_MARGIN + 1)); then
      tool_error "tool error: the Slurm prolog limit of $SLURM_LIMIT s ($SLURM_LIMIT_FROM) leaves $room s for preflight, less than $((PF_MARGIN + 1))"
    fi
    if ((room < deadline)); then
      deadline=$room
      cut=" (deadline cut to $room s by the Slurm prolog limit of $SLURM_LIMIT s)"
    fi
  fi

  pf_run_preflight "$deadline" "${args[@]}"
  pf_classify "$deadline"
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
      pf_log "$prio" "$(where) verdict=$PF_V_VERDICT exit=0 duration=${PF_V_DURATION}s${PF_REASON:+ reason=$PF_REASON}$saved$interrupted$cut"
      exit 0
      ;;
    unhealthy)
      FAIL_KIND=fault FAIL_CHECKS=$PF_V_CHECKS_FAILED FAIL_REASON=$PF_REASON
      # The drain is slurmd's; a reboot the verdict asks for is ours to request (docs/slurm.md,
      # Reboot on action), before the exit that makes slurmd drain.
      local after=""
      if pf_request_reboot "preflight: $PF_REASON"; then
        after="; Slurm reboots it once idle and resumes it (PREFLIGHT_REBOOT_ON_ACTION=yes)"
      elif [[ -n $PF_DETAIL ]]; then
        after=" ($PF_DETAIL)"
      fi
      pf_log err "$(where) verdict=$PF_V_VERDICT exit=1 duration=${PF_V_DURATION}s reason=$PF_REASON$saved$interrupted$cut; slurmd drains the node and requeues the job$after"
      exit 1
      ;;
    *)
      tool_error "$PF_REASON$saved$interrupted$cut"
      ;;
  esac
}

main "$@"
