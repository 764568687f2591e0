#!/usr/bin/env bash
# Slurm HealthCheckProgram: run `preflight run` periodically and act on the verdict, since slurmd
# leaves any action to the program. Unhealthy: drain the node with Reason="preflight: <reason>"
# (or, for a verdict whose action is reboot with PREFLIGHT_REBOOT_ON_ACTION=yes, ask Slurm to
# reboot it, drained until then, and resume it after).
# Healthy: resume the node, but only if it is drained with a reason starting "preflight:", or
# with Slurm's "Prolog error" from a failure our prolog recorded (prolog-failures.tsv), and this
# run covered the checks that prolog failed; a node drained by anyone else stays drained. See
# docs/slurm.md.
#
# Exit codes: 0 the health check did its job (node healthy, drained, resumed, left alone, or the
# run skipped); 1 a Slurm command it needed failed (the node's state could not be read or
# changed); 2 configuration error. An unhealthy node is not an error here: some Slurm versions
# run the health check at slurmd start until it exits 0 before the node registers.
set -euo pipefail

PF_HOOK=healthcheck
# No command is looked up on the PATH slurmd gives (none) before common.sh's pf_init fixes it.
PF_SELF=$(PATH=/usr/bin:/bin readlink -f -- "${BASH_SOURCE[0]}")
# shellcheck source=scripts/slurm/common.sh
source "${PF_SELF%/*}/common.sh"
PF_SIGNAL_EXIT=0  # stopped before preflight ran: nothing was judged or changed, a skipped run

readonly OUR_PREFIX="preflight:"
# A "Prolog error" drain taken over keeps saying it came from the prolog: resuming it still
# needs a run that covers the checks the prolog failed.
readonly PROLOG_PREFIX="preflight: prolog: "
readonly SLURM_PROLOG_REASON="Prolog error"
# How many runs in a row found the lock taken (and since when): "COUNT EPOCH", in the state
# directory; removed by a run that gets the lock.
readonly LOCK_SKIPS_FILE=healthcheck-lock-skips

# scontrol with an argument vector, bounded in time. Its output goes to stdout.
scontrol_run() {
  timeout "$PF_CMD_TIMEOUT" "$PF_SCONTROL" "$@"
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

# The epoch seconds of the time stamp Slurm appends to a reason ("[user@2026-11-26T04:12:36]",
# slurmctld's local time); returns 1 without one.
reason_epoch() {
  [[ $NODE_REASON =~ \[[^]@]*@([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\] ]] ||
    return 1
  date -d "${BASH_REMATCH[1]}" +%s 2>/dev/null
}

# Markers of prologs that are gone without ending (slurmd's SIGKILL at its time limit) become
# failure records of kind "killed". A marker whose prolog still runs is left alone.
record_killed_prologs() {
  local file epoch job node pid
  for file in "$PREFLIGHT_STATE_DIR/$PF_RUNNING".*; do
    [[ -f $file ]] || continue
    epoch="" job="" node="" pid=""
    IFS=$'\t' read -r epoch job node pid <"$file" 2>/dev/null || true
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
      grep -q prolog "/proc/$pid/cmdline" 2>/dev/null; then
      continue
    fi
    if [[ $epoch =~ ^[0-9]{1,12}$ ]]; then
      pf_append_failure "$PREFLIGHT_STATE_DIR" "$(printf '%s\t%s\t%s\t-\tkilled\t-\t%s' "$epoch" \
        "$(pf_sanitize "$job" 32)" "$(pf_sanitize "$node" 255)" \
        "the prolog was killed before it ended (by slurmd at PrologEpilogTimeout?)")" || true
    fi
    rm -f -- "$file"
  done
}

# PROLOG_*: the failure our prolog recorded that explains this node's drain: for Slurm's "Prolog
# error", the newest record within PF_DRAIN_BEFORE/PF_DRAIN_AFTER of the drain's time stamp (a
# killed prolog's drain comes at Slurm's limit, up to a day after its start); for a reason we
# took over ("preflight: prolog: ..."), the newest record. Returns 1 if none: then the drain
# is not ours. Records of another node name are skipped.
prolog_failure() {
  local drained epoch job node rc kind checks reason after mode=window file
  PROLOG_FOUND=0 PROLOG_JOB="" PROLOG_RC="" PROLOG_KIND="" PROLOG_CHECKS="" PROLOG_REASON=""
  is_drained || return 1
  if [[ $NODE_REASON == "$PROLOG_PREFIX"* ]]; then
    mode=newest
  elif ! has_reason "$SLURM_PROLOG_REASON"; then
    return 1
  fi
  drained=$(reason_epoch) || return 1
  # Also the default state directory: a prolog whose environment file broke before it named
  # another one recorded its failure there.
  local -a files=("$PREFLIGHT_STATE_DIR/$PF_FAILURES")
  if [[ $PREFLIGHT_STATE_DIR != "$PF_DEFAULT_STATE_DIR" ]]; then
    files+=("$PF_DEFAULT_STATE_DIR/$PF_FAILURES")
  fi
  while IFS=$'\t' read -r epoch job node rc kind checks reason; do
    [[ $epoch =~ ^[0-9]{1,12}$ && $node == "$PREFLIGHT_NODENAME" ]] || continue
    after=$PF_DRAIN_AFTER
    if [[ $kind == killed ]]; then after=86400; fi
    if [[ $mode == newest ]]; then
      ((epoch <= drained + PF_DRAIN_BEFORE)) || continue
    elif ((drained < epoch - PF_DRAIN_BEFORE || drained > epoch + after)); then
      continue
    fi
    # Empty fields are written as "-": bash's read joins adjacent tabs.
    if [[ $checks == - ]]; then checks=""; fi
    PROLOG_FOUND=1 PROLOG_JOB=$job PROLOG_RC=$rc PROLOG_KIND=$kind PROLOG_CHECKS=$checks
    PROLOG_REASON=$(pf_sanitize "$reason" "$PF_REASON_MAX")
  done < <(for file in "${files[@]}"; do
    if [[ -f $file ]]; then tail -n "$PF_FAILURES_KEEP" -- "$file" 2>/dev/null; fi
  done | sort -n -k1,1)
  ((PROLOG_FOUND))
}

# Whether this healthy run vouches for what the prolog found: a tool or configuration error, or
# a killed prolog, says nothing against the node; a fault does only for the checks it failed,
# and only if this run passed each of them (PF_V_CHECKS_OK).
prolog_failure_covered() {
  local check
  [[ $PROLOG_KIND == fault ]] || return 0
  [[ -n $PROLOG_CHECKS ]] || return 1
  for check in ${PROLOG_CHECKS//,/ }; do
    [[ ",$PF_V_CHECKS_OK," == *",$check,"* ]] || return 1
  done
}

prolog_summary() {
  printf 'job=%s exit=%s %s%s: %s' "$PROLOG_JOB" "$PROLOG_RC" "$PROLOG_KIND" \
    "${PROLOG_CHECKS:+ ($PROLOG_CHECKS)}" "$PROLOG_REASON"
}

# Healthy verdict: resume the node if, and only if, it is drained for a reason of ours: one that
# starts with "preflight:", or a prolog failure this run covers. The state is read now, after the
# run, so a drain by someone else during the run is respected.
act_healthy() {
  local what=$1
  if ! node_info; then
    pf_log err "node=$PREFLIGHT_NODENAME $what action=none: cannot read the node's state with scontrol"
    exit 1
  fi
  if ! is_drained; then
    pf_log info "node=$PREFLIGHT_NODENAME $what action=none"
  elif prolog_failure; then
    act_prolog_drain "$what"
  elif ! is_ours; then
    pf_log info "node=$PREFLIGHT_NODENAME $what action=none: drained by someone else, left drained (reason: $NODE_REASON)"
  else
    resume "$what" "$NODE_REASON"
  fi
  exit 0
}

# Resume the node, logging WHAT and what it was drained for (WAS); a failed scontrol is exit 1.
resume() {
  if scontrol_run update "NodeName=$PREFLIGHT_NODENAME" State=RESUME >/dev/null; then
    pf_log notice "node=$PREFLIGHT_NODENAME $1 action=resume (was: $2)"
    return 0
  fi
  pf_log err "node=$PREFLIGHT_NODENAME $1 action=resume failed: scontrol update NodeName=$PREFLIGHT_NODENAME State=RESUME"
  exit 1
}

# A drain our prolog caused, on a healthy run: resume it when this run covers what the prolog
# found; otherwise make its reason ours ("preflight: prolog: ..."), visible in `sinfo -R`, and
# keep it drained until a run that covers it (PREFLIGHT_HEALTHCHECK_ARGS with those checks).
act_prolog_drain() {
  local what=$1 reason
  if prolog_failure_covered; then
    resume "$what" "$NODE_REASON; prolog failure: $(prolog_summary)"
    return 0
  fi
  local why="the prolog failed ${PROLOG_CHECKS:-checks it did not name}; this run passed only ${PF_V_CHECKS_OK:-no check}"
  if [[ $NODE_REASON == "$PROLOG_PREFIX"* ]]; then
    pf_log info "node=$PREFLIGHT_NODENAME $what action=none: $why, left drained (reason: $NODE_REASON)"
    return 0
  fi
  reason="$PROLOG_PREFIX$(pf_sanitize "$PROLOG_REASON" "$((PF_REASON_MAX - ${#PROLOG_PREFIX} + ${#OUR_PREFIX} + 1))")"
  if scontrol_run update "NodeName=$PREFLIGHT_NODENAME" State=DRAIN "Reason=$reason" >/dev/null; then
    pf_log warning "node=$PREFLIGHT_NODENAME $what action=takeover: $why, left drained with reason=$reason (was: $NODE_REASON)"
    return 0
  fi
  pf_log err "node=$PREFLIGHT_NODENAME $what action=takeover failed: scontrol update could not set reason=$reason"
  exit 1
}

# The drain guard (docs/slurm.md#the-drain-guard): exits 0 without draining, with an err line
# that says "systemic", when this node would make more than PREFLIGHT_DRAIN_GUARD_PERCENT of the
# cluster's nodes (and at least PF_DRAIN_GUARD_MIN_NODES) drained by preflight within
# PREFLIGHT_DRAIN_GUARD_WINDOW s: a cause common to them is likelier than that many bad nodes.
# Counted from `scontrol -o show node` (every node): drained, with a reason starting "preflight:"
# or Slurm's "Prolog error", time-stamped within the window. Where the nodes cannot be listed it
# returns, and the node drains: a bad node must not take jobs.
readonly PF_DRAIN_GUARD_MIN_NODES=3
drain_guard() {
  local what=$1 reason=$2 out line name state why stamp total=0 drained=0 now
  ((PREFLIGHT_DRAIN_GUARD_PERCENT < 100)) || return 0
  out=$(scontrol_run -o show node 2>/dev/null) || return 0
  now=$(date +%s)
  while IFS= read -r line; do
    [[ $line =~ ^NodeName=([^[:space:]]+) ]] || continue
    name=${BASH_REMATCH[1]}
    total=$((total + 1))
    [[ $name != "$PREFLIGHT_NODENAME" ]] || continue
    [[ $line =~ (^|[[:space:]])State=([^[:space:]]+) ]] || continue
    state=${BASH_REMATCH[2]}
    [[ $state == *DRAIN* && $line == *" Reason="* ]] || continue
    why=${line#* Reason=}
    [[ $why == "$OUR_PREFIX"* || $why == "$SLURM_PROLOG_REASON"* ]] || continue
    [[ $why =~ \[[^]@]*@([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\] ]] || continue
    stamp=$(date -d "${BASH_REMATCH[1]}" +%s 2>/dev/null) || continue
    ((now - stamp <= PREFLIGHT_DRAIN_GUARD_WINDOW)) || continue
    drained=$((drained + 1))
  done <<<"$out"
  local would=$((drained + 1))
  if ((total > 0 && would >= PF_DRAIN_GUARD_MIN_NODES &&
    would * 100 > PREFLIGHT_DRAIN_GUARD_PERCENT * total)); then
    pf_log err "node=$PREFLIGHT_NODENAME $what action=none: systemic: with this node $would of $total nodes would be drained by preflight within $PREFLIGHT_DRAIN_GUARD_WINDOW s, more than PREFLIGHT_DRAIN_GUARD_PERCENT=$PREFLIGHT_DRAIN_GUARD_PERCENT%; not draining, look for a common cause; would drain with: $reason"
    exit 0
  fi
}

# Unhealthy verdict or tool error: drain with "preflight: WHY", or, for a verdict whose action is
# reboot with PREFLIGHT_REBOOT_ON_ACTION=yes, ask Slurm to reboot the node (which drains it with
# the same reason until then: pf_request_reboot). Left alone: a node that already has a reason
# that is not ours (an admin's drain keeps its reason) and one already drained with this very
# reason (so the reason's time stamp keeps saying when it started). If the state cannot be read,
# drain anyway: a bad node must not take jobs.
act_drain() {
  local what=$1 reason note=""
  reason="$OUR_PREFIX $(pf_sanitize "$2" "$PF_REASON_MAX")"
  local -a cmd=(update "NodeName=$PREFLIGHT_NODENAME" State=DRAIN "Reason=$reason")
  if node_info; then
    if [[ -n $NODE_REASON ]] && ! is_ours && ! prolog_failure; then
      pf_log warning "node=$PREFLIGHT_NODENAME $what action=none: already has a reason that is not ours, kept (reason: $NODE_REASON); would drain with: $reason"
      exit 0
    fi
    if is_drained && has_reason "$reason"; then
      pf_log warning "node=$PREFLIGHT_NODENAME $what action=none: already drained with this reason: $reason"
      exit 0
    fi
  fi
  drain_guard "$what" "$reason"
  if pf_request_reboot "$reason" "$NODE_STATE"; then
    pf_log err "node=$PREFLIGHT_NODENAME $what action=reboot reason=$reason (scontrol reboot ASAP nextstate=RESUME: PREFLIGHT_REBOOT_ON_ACTION=yes)"
    exit 0
  fi
  if [[ -n $PF_DETAIL ]]; then note=" ($PF_DETAIL)"; fi
  if scontrol_run "${cmd[@]}" >/dev/null; then
    pf_log err "node=$PREFLIGHT_NODENAME $what action=drain reason=$reason$note"
    exit 0
  fi
  pf_log err "node=$PREFLIGHT_NODENAME $what action=drain failed: scontrol update could not drain the node; reason=$reason"
  exit 1
}

# The health check's own metrics file beside preflight's (PREFLIGHT_PROM with "-healthcheck"
# before ".prom"), written at every run: preflight_healthcheck_config_ok is 0 while the
# environment file cannot be used. A broken file pushed to every node must show on a dashboard,
# not only in each node's syslog. Only where PREFLIGHT_PROM is known (set before the error), and
# only into a folder that passes pf_trusted (refusing one that does not may be the error).
hook_metrics() {
  local ok=$1 file dir tmp
  [[ ${PREFLIGHT_PROM:-} == /*.prom ]] || return 0
  file="${PREFLIGHT_PROM%.prom}-healthcheck.prom"
  dir=$(pf_folder_of "$file")
  pf_trusted "$dir" "metrics folder" dir 0 || return 0
  # A new file of its own (mktemp), not *.prom: node_exporter never reads it half-written.
  tmp=$(mktemp -- "$dir/.preflight-healthcheck.XXXXXX" 2>/dev/null) || return 0
  if printf '%s\n' \
    "# HELP preflight_healthcheck_config_ok 1 when the health check could use its environment file, 0 when not (docs/slurm.md)" \
    "# TYPE preflight_healthcheck_config_ok gauge" \
    "preflight_healthcheck_config_ok $ok" \
    "# HELP preflight_healthcheck_last_run_timestamp_seconds When the health check last ran" \
    "# TYPE preflight_healthcheck_last_run_timestamp_seconds gauge" \
    "preflight_healthcheck_last_run_timestamp_seconds $(date +%s)" >"$tmp" 2>/dev/null &&
    chmod 0644 -- "$tmp" && mv -f -- "$tmp" "$file" 2>/dev/null; then
    return 0
  fi
  rm -f -- "$tmp"
}

# The lock was taken for the whole wait: by a prolog vetting the node now (it fails the job itself
# if the node is bad), or by a preflight still stuck since an earlier run, or by anything else.
# A warning each time; PREFLIGHT_HEALTHCHECK_LOCK_SKIPS runs in a row drain the node (0: never),
# so that a lock never released cannot keep the health check away from a faulty node for good.
lock_skipped() {
  local file="$PREFLIGHT_STATE_DIR/$LOCK_SKIPS_FILE" count="" since="" limit=$PREFLIGHT_HEALTHCHECK_LOCK_SKIPS
  read -r count since <"$file" 2>/dev/null || true
  [[ $count =~ ^[0-9]{1,6}$ ]] || count=0
  [[ $since =~ ^[0-9]{1,12}$ ]] || since=$(date +%s)
  count=$((count + 1))
  pf_write_into "$file" "$count $since" || true
  if ((limit > 0 && count >= limit)); then
    act_drain "verdict=none" \
      "health check skipped $limit times in a row since $(date -u -d "@$since" +%Y-%m-%dT%H:%M:%SZ): $PF_DETAIL"
  fi
  local drains=""
  if ((limit > 0)); then drains="; drained at $limit"; fi
  pf_log warning "node=$PREFLIGHT_NODENAME action=skip ($count in a row$drains): $PF_DETAIL"
  exit 0
}

# A configuration error (common.sh logs it and exits 2 after this): not a node fault, so the
# node is left as it is, but said loudly.
pf_hook_config_error() {
  hook_metrics 0
}

main() {
  pf_init
  pf_load_config
  hook_metrics 1
  pf_split_args PREFLIGHT_HEALTHCHECK_ARGS
  local -a args=("${PF_ARGS[@]}")
  local deadline=$PREFLIGHT_HEALTHCHECK_TIMEOUT

  if ((PREFLIGHT_HEALTHCHECK_SKIP_BUSY)) && node_info && is_busy; then
    pf_log info "node=$PREFLIGHT_NODENAME action=skip: node is busy (State=$NODE_STATE), no checks run"
    exit 0
  fi
  if ! pf_find_bin "${PF_SELF%/*}"; then
    tool_problem "tool error: preflight binary not found (set PREFLIGHT_BIN, or install it in /usr/local/bin or /usr/bin)"
  fi
  local rc=0
  pf_prepare_state_dir || rc=$?
  if ((rc == 2)); then pf_config_error "$PF_DETAIL"; fi
  ((rc == 0)) || tool_problem "tool error: $PF_DETAIL"
  pf_lock "$PREFLIGHT_HEALTHCHECK_LOCK_WAIT" || lock_skipped
  rm -f -- "$PREFLIGHT_STATE_DIR/$LOCK_SKIPS_FILE"

  record_killed_prologs
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
