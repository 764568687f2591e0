# shellcheck shell=bash
# Functions shared by the Slurm hooks prolog.sh and healthcheck.sh (docs/slurm.md). Sourced, never
# run; the callers run under `set -euo pipefail` and set PF_HOOK (prolog|healthcheck) first.
# Functions return results in PF_* globals that only the callers read:
# shellcheck disable=SC2034

# Fixed timings. preflight gets --timeout PF_MARGIN seconds before the outer deadline, so that it
# normally writes its own verdict (it ends within ~1 s of its deadline, its supervisor at +3 s).
# The outer deadline sends SIGTERM (preflight then writes a partial verdict within ~2 s) and
# SIGKILL PF_KILL_AFTER seconds later. Slurm commands and logger get PF_CMD_TIMEOUT seconds.
readonly PF_MARGIN=5 PF_KILL_AFTER=5 PF_CMD_TIMEOUT=5
# What a prolog may need after preflight's outer deadline, at worst: the wait for a process
# that ignores SIGTERM (PF_KILL_AFTER + 3), then reading the verdict and logging (a bounded
# command each). Slurm 22.05 sends SIGTERM at PrologEpilogTimeout and SIGKILL about 10 ms later,
# so the prolog's deadline is cut to end this long before it (docs/slurm.md, Time budgets).
readonly PF_SLURM_MARGIN=$((PF_KILL_AFTER + 3 + 2 * PF_CMD_TIMEOUT))
# The prolog's records of the failures it caused (docs/slurm.md, Drains that come back): one
# tab-separated line each, newest last, at most PF_FAILURES_KEEP; and the marker of a prolog
# that has started and not yet ended, which a prolog killed by slurmd leaves behind.
readonly PF_FAILURES=prolog-failures.tsv PF_FAILURES_KEEP=20 PF_RUNNING=prolog.running
# How far a drain's time stamp (slurmctld's clock) may lie from the failure the prolog recorded
# (the node's clock) for the two to be the same event: the drain follows the prolog's exit
# within a second, and this leaves room for clocks that disagree.
readonly PF_DRAIN_BEFORE=120 PF_DRAIN_AFTER=300
# How long a PrologEpilogTimeout read from `scontrol show config` is reused from the state
# directory before it is read again: every node's prolog asking slurmctld at every job start
# would load slurmctld on a large allocation.
readonly PF_SLURM_CONFIG_MAX_AGE=3600
readonly PF_DEFAULT_CONFIG=/etc/default/preflight
# The default state directory. PREFLIGHT_TEST_DEFAULT_STATE_DIR replaces it for the tests only
# (tests/slurm/lib.sh): a hook whose configuration is broken records there, and a test must
# never write into the machine's /var/lib.
readonly PF_DEFAULT_STATE_DIR=${PREFLIGHT_TEST_DEFAULT_STATE_DIR:-/var/lib/preflight}
# The reason after "preflight: " is at most this long, like preflight's own reason.
readonly PF_REASON_MAX=200

# Every variable the environment file may set (scripts/slurm/preflight.default documents them).
readonly PF_VARS=(PREFLIGHT_BIN PREFLIGHT_STATE_DIR PREFLIGHT_HISTORY PREFLIGHT_SYSLOG_TAG
  PREFLIGHT_NODENAME PREFLIGHT_SCONTROL PREFLIGHT_PROM PREFLIGHT_TIMEOUT PREFLIGHT_LOCK_WAIT
  PREFLIGHT_PROLOG_ARGS PREFLIGHT_PROLOG_ON_TOOL_ERROR PREFLIGHT_HEALTHCHECK_TIMEOUT
  PREFLIGHT_HEALTHCHECK_LOCK_WAIT PREFLIGHT_HEALTHCHECK_ARGS PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR
  PREFLIGHT_HEALTHCHECK_SKIP_BUSY PREFLIGHT_SLURM_PROLOG_TIMEOUT)

PF_TAG=preflight   # syslog tag; replaced by PREFLIGHT_SYSLOG_TAG once that is validated
PF_RUN_DIR=""      # per-run scratch directory inside the state directory, removed on exit
PF_CHILD=""        # pid of the `timeout` wrapping preflight while it runs
PF_WAITING=""      # pid of the flock waiting for the lock
PF_RAN=0           # 1 once preflight has run
PF_SIGNAL=""       # the signal that interrupted the hook, if any
PF_SIGNAL_EXIT=1   # the hook's exit code when a signal stops it before preflight ran

# Slurm starts hooks without a search path and in whatever locale slurmd has: give them a PATH
# (the caller's entries first, so tests can put stand-ins there) and the C locale, which makes
# the character classes in pf_sanitize mean ASCII bytes.
pf_init() {
  export PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  export LC_ALL=C
  umask 022
  trap pf_cleanup EXIT
  trap 'pf_forward_signal TERM' TERM
  trap 'pf_forward_signal INT' INT
  trap 'pf_forward_signal HUP' HUP
}

pf_cleanup() {
  local rc=$?
  # The hook's own last words (the prolog's failure record), whatever way it exits.
  if declare -F pf_hook_exit >/dev/null; then pf_hook_exit "$rc" || true; fi
  if [[ -n $PF_RUN_DIR ]]; then rm -rf -- "$PF_RUN_DIR"; fi
}

# slurmd signals a hook that overruns. While preflight runs, pass the signal on (through
# `timeout`, which forwards it), so preflight writes its partial verdict; the hook then reports
# it as usual, within seconds. Before that (waiting for the lock), stop at once. After it, the
# hook is only writing its results: let it finish.
pf_forward_signal() {
  PF_SIGNAL=$1
  if [[ -n $PF_CHILD ]]; then
    kill -TERM "$PF_CHILD" 2>/dev/null || true
  elif ((PF_RAN == 0)); then
    if [[ -n $PF_WAITING ]]; then kill -TERM "$PF_WAITING" 2>/dev/null || true; fi
    pf_log warning "node=${PREFLIGHT_NODENAME:-unknown} interrupted by SIG$1 before preflight ran; exit $PF_SIGNAL_EXIT"
    exit "$PF_SIGNAL_EXIT"
  fi
}

# Make TEXT safe as a Slurm reason and a syslog line: printable ASCII only, no quotes, backquote
# or backslash (each becomes a space), one line, runs of spaces collapsed, trimmed, and at most
# MAX characters (cut texts end in "..."). The verdict's reason already obeys these rules, but
# the file may have been edited, so it is never trusted.
pf_sanitize() {
  local s=${1:0:4096} max=$2
  s=${s//[^[:print:]]/ }
  s=${s//[\"\'\`\\]/ }
  while [[ $s == *'  '* ]]; do s=${s//'  '/ }; done
  s=${s# }
  s=${s% }
  if ((${#s} > max)); then
    s=${s:0:max-3}
    s="${s% }..."
  fi
  printf '%s' "$s"
}

# One line to syslog (daemon facility) and to stderr. logger may be missing or syslog stuck; the
# hook must not fail or hang because of either.
pf_log() {
  local prio=$1 msg
  msg="$PF_HOOK: $(pf_sanitize "$2" 1000)"
  printf '%s: %s\n' "$PF_TAG" "$msg" >&2
  if command -v logger >/dev/null 2>&1; then
    timeout "$PF_CMD_TIMEOUT" logger -t "$PF_TAG" -p "daemon.$prio" -- "$msg" 2>/dev/null || true
  fi
}

# A configuration that cannot be trusted stops the hook with exit 2 before anything runs. A hook
# may act first (pf_hook_config_error: the prolog's policy and record, the health check's
# metrics file) and exit itself.
pf_config_error() {
  if declare -F pf_hook_config_error >/dev/null; then pf_hook_config_error "$1"; fi
  pf_log err "configuration error: $1"
  exit 2
}

pf_require_int() {  # NAME MIN MAX
  local name=$1 value=${!1}
  if [[ ! $value =~ ^[0-9]{1,9}$ ]] || ((10#$value < $2 || 10#$value > $3)); then
    pf_config_error "$name=$value: not a whole number from $2 to $3"
  fi
  printf -v "$name" '%d' "$((10#$value))"
}

pf_require_word() {  # NAME WORD...
  local name=$1 value=${!1} word
  shift
  for word in "$@"; do [[ $value == "$word" ]] && return 0; done
  pf_config_error "$name=$value: not one of: $*"
}

# Read the environment file and apply defaults. The file is sourced (a root-owned file of shell
# assignments); a variable already set in the environment wins over the file, so a drill can
# override one setting on the command line. PREFLIGHT_CONFIG names the file: the default
# /etc/default/preflight may be missing, a file named explicitly must exist, and an empty
# PREFLIGHT_CONFIG reads no file.
pf_load_config() {
  local _pf_file _pf_explicit=1 _pf_var
  local -A _pf_env=()
  if [[ -z ${PREFLIGHT_CONFIG+set} ]]; then
    _pf_file=$PF_DEFAULT_CONFIG
    _pf_explicit=0
  else
    _pf_file=$PREFLIGHT_CONFIG
  fi
  for _pf_var in "${PF_VARS[@]}"; do
    if [[ -v $_pf_var ]]; then _pf_env[$_pf_var]=${!_pf_var}; fi
  done
  if [[ -n $_pf_file ]]; then
    if [[ -e $_pf_file ]]; then
      [[ -f $_pf_file && -r $_pf_file ]] || pf_config_error "$_pf_file is not a readable file"
      set +u
      # shellcheck source=/dev/null
      if ! source "$_pf_file"; then
        set -u
        pf_config_error "$_pf_file failed (a shell error, or its last command failed)"
      fi
      set -u
    elif ((_pf_explicit)); then
      pf_config_error "PREFLIGHT_CONFIG=$_pf_file does not exist"
    fi
  fi
  for _pf_var in "${!_pf_env[@]}"; do printf -v "$_pf_var" "%s" "${_pf_env[$_pf_var]}"; done

  : "${PREFLIGHT_SYSLOG_TAG:=preflight}"
  [[ $PREFLIGHT_SYSLOG_TAG =~ ^[A-Za-z0-9._-]{1,32}$ ]] ||
    pf_config_error "PREFLIGHT_SYSLOG_TAG=$PREFLIGHT_SYSLOG_TAG: not 1 to 32 of [A-Za-z0-9._-]"
  PF_TAG=$PREFLIGHT_SYSLOG_TAG
  : "${PREFLIGHT_BIN:=}" "${PREFLIGHT_PROM:=}" "${PREFLIGHT_SCONTROL:=scontrol}"
  : "${PREFLIGHT_STATE_DIR:=$PF_DEFAULT_STATE_DIR}" "${PREFLIGHT_HISTORY:=20}"
  : "${PREFLIGHT_TIMEOUT:=120}" "${PREFLIGHT_LOCK_WAIT:=50}" "${PREFLIGHT_PROLOG_ARGS:=}"
  : "${PREFLIGHT_PROLOG_ON_TOOL_ERROR:=fail}"
  : "${PREFLIGHT_HEALTHCHECK_TIMEOUT:=20}" "${PREFLIGHT_HEALTHCHECK_LOCK_WAIT:=5}"
  : "${PREFLIGHT_HEALTHCHECK_ARGS=--checks inventory}" "${PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR:=drain}"
  : "${PREFLIGHT_HEALTHCHECK_SKIP_BUSY:=1}" "${PREFLIGHT_SLURM_PROLOG_TIMEOUT:=auto}"
  if [[ -z ${PREFLIGHT_NODENAME:-} ]]; then
    PREFLIGHT_NODENAME=${SLURMD_NODENAME:-$(hostname -s 2>/dev/null || true)}
  fi

  [[ $PREFLIGHT_STATE_DIR == /* ]] ||
    pf_config_error "PREFLIGHT_STATE_DIR=$PREFLIGHT_STATE_DIR: not an absolute path"
  [[ $PREFLIGHT_NODENAME =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$ ]] ||
    pf_config_error "node name $PREFLIGHT_NODENAME: not a host name (set PREFLIGHT_NODENAME)"
  pf_require_int PREFLIGHT_HISTORY 0 10000
  pf_require_int PREFLIGHT_TIMEOUT $((PF_MARGIN + 1)) 86400
  pf_require_int PREFLIGHT_LOCK_WAIT 0 86400
  pf_require_int PREFLIGHT_HEALTHCHECK_TIMEOUT $((PF_MARGIN + 1)) 86400
  pf_require_int PREFLIGHT_HEALTHCHECK_LOCK_WAIT 0 86400
  pf_require_word PREFLIGHT_PROLOG_ON_TOOL_ERROR fail pass
  pf_require_word PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR drain ignore
  pf_require_word PREFLIGHT_HEALTHCHECK_SKIP_BUSY 1 0
  if [[ $PREFLIGHT_SLURM_PROLOG_TIMEOUT != auto && $PREFLIGHT_SLURM_PROLOG_TIMEOUT != none ]]; then
    [[ $PREFLIGHT_SLURM_PROLOG_TIMEOUT =~ ^[0-9]{1,9}$ ]] ||
      pf_config_error "PREFLIGHT_SLURM_PROLOG_TIMEOUT=$PREFLIGHT_SLURM_PROLOG_TIMEOUT: not auto, none or a whole number from 1 to 86400"
    pf_require_int PREFLIGHT_SLURM_PROLOG_TIMEOUT 1 86400
  fi
}

# Split NAME (PREFLIGHT_PROLOG_ARGS or PREFLIGHT_HEALTHCHECK_ARGS) into PF_ARGS at blanks, without
# quote processing or globbing. The hook owns --json and --timeout, so they are refused here.
pf_split_args() {
  local name=$1 word
  PF_ARGS=()
  IFS=$' \t\n' read -r -d '' -a PF_ARGS <<<"${!name}" || true
  for word in "${PF_ARGS[@]}"; do
    case $word in
      --json | --json=* | --timeout | --timeout=*)
        pf_config_error "$name must not contain $word (the hook sets it)" ;;
    esac
  done
}

# Which preflight to run: PREFLIGHT_BIN (must be executable: a configuration error otherwise),
# else preflight on PATH, else the installed layout (<prefix>/libexec/preflight/ next to
# <prefix>/bin/), else a repository checkout (scripts/slurm/ next to build/). Returns 1 if none.
pf_find_bin() {
  local dir=$1 candidate
  if [[ -n $PREFLIGHT_BIN ]]; then
    [[ -f $PREFLIGHT_BIN && -x $PREFLIGHT_BIN ]] ||
      pf_config_error "PREFLIGHT_BIN=$PREFLIGHT_BIN is not an executable file"
    PF_BIN=$PREFLIGHT_BIN
    return 0
  fi
  if PF_BIN=$(command -v preflight); then return 0; fi
  for candidate in "$dir/../../bin/preflight" "$dir/../../build/preflight"; do
    if [[ -f $candidate && -x $candidate ]]; then
      PF_BIN=$candidate
      return 0
    fi
  done
  PF_BIN=""
  return 1
}

# The state directory holds the lock, the last verdicts and the history. Returns 1 (with
# PF_DETAIL) if it cannot be used. Scratch directories a day old are left over from hooks killed
# with SIGKILL (no hook runs that long) and are removed.
pf_prepare_state_dir() {
  if ! mkdir -p -- "$PREFLIGHT_STATE_DIR/history" 2>/dev/null ||
    ! PF_RUN_DIR=$(mktemp -d "$PREFLIGHT_STATE_DIR/.run.XXXXXX" 2>/dev/null); then
    PF_RUN_DIR=""
    PF_DETAIL="state directory $PREFLIGHT_STATE_DIR is not writable"
    return 1
  fi
  find "$PREFLIGHT_STATE_DIR" -maxdepth 1 -name '.run.*' -mmin +1440 -exec rm -rf -- {} + \
    2>/dev/null || true
}

# Serialize GPU checks: a prolog and a health check must not run preflight over each other. The
# lock is held until the hook exits; preflight inherits it, so a preflight that outlives its
# hook (stuck in the kernel) keeps the next one from piling onto the same GPUs.
pf_lock() {
  local wait=$1 file="$PREFLIGHT_STATE_DIR/lock"
  if ! { exec {PF_LOCK_FD}>>"$file"; } 2>/dev/null; then
    PF_DETAIL="cannot open lock file $file"
    return 1
  fi
  local -a how=(-w "$wait")
  if ((wait == 0)); then how=(-n); fi
  # In the background, so that a signal interrupts the wait (bash runs traps only between
  # commands, but at once during `wait`). The lock belongs to the open file, which stays ours.
  flock "${how[@]}" "$PF_LOCK_FD" &
  PF_WAITING=$!
  if wait "$PF_WAITING"; then
    PF_WAITING=""
    return 0
  fi
  PF_WAITING=""
  PF_DETAIL="another preflight run held the lock $file for ${wait} s"
  return 1
}

# Run `preflight run` under an outer deadline of DEADLINE seconds. Sets PF_RC (preflight's exit
# code; 124 or 128+signal when the deadline hit; 255 when it could not even be killed),
# PF_ELAPSED and PF_VERDICT (the path preflight was told to write). Never waits longer than
# DEADLINE + PF_KILL_AFTER + 3 seconds: a process stuck in the kernel survives SIGKILL, and
# then the hook gives up on it rather than hang with it.
pf_run_preflight() {
  local deadline=$1 inner=$(($1 - PF_MARGIN)) start=$SECONDS give_up
  shift
  PF_VERDICT="$PF_RUN_DIR/verdict.json"
  local -a cmd=("$PF_BIN" run --timeout "$inner" --json "$PF_VERDICT" --no-color)
  if [[ " $* " != *" --profile "* && " $* " != *" --profile="* ]]; then
    cmd+=(--profile quick)
  fi
  if [[ -n $PREFLIGHT_PROM ]]; then cmd+=(--prom "$PREFLIGHT_PROM"); fi
  # The pair rotation's counter lives in the state directory, so consecutive runs on this node
  # cover every NVLink and NIC pair the time of one run does not allow (docs/plan.md).
  if [[ " $* " != *" --rotation"* && " $* " != *" --state-dir"* ]]; then
    cmd+=(--state-dir "$PREFLIGHT_STATE_DIR")
  fi
  cmd+=("$@")
  timeout --signal=TERM --kill-after="$PF_KILL_AFTER" "$deadline" "${cmd[@]}" \
    >"$PF_RUN_DIR/stdout" 2>"$PF_RUN_DIR/stderr" </dev/null &
  PF_CHILD=$!
  give_up=$((start + deadline + PF_KILL_AFTER + 3))
  while kill -0 "$PF_CHILD" 2>/dev/null && ((SECONDS < give_up)); do
    sleep 0.2
  done
  if kill -0 "$PF_CHILD" 2>/dev/null; then
    PF_RC=255
  else
    PF_RC=0
    wait "$PF_CHILD" 2>/dev/null || PF_RC=$?
  fi
  PF_CHILD=""
  PF_RAN=1
  PF_ELAPSED=$((SECONDS - start))
}

# Read a verdict through `preflight report --format tsv` (compute nodes may lack jq and python).
# Sets PF_V_VERDICT, PF_V_REASON (sanitized), PF_V_DURATION, and PF_V_CHECKS_OK and
# PF_V_CHECKS_FAILED (comma-separated check names; empty from a preflight without them). Returns 1
# if the file is missing or is not a node verdict.
pf_read_verdict() {
  local file=$1 tsv key value
  PF_V_VERDICT="" PF_V_REASON="" PF_V_DURATION="" PF_V_CHECKS_OK="" PF_V_CHECKS_FAILED=""
  [[ -s $file ]] || return 1
  tsv=$(timeout "$PF_CMD_TIMEOUT" "$PF_BIN" report --format tsv "$file" 2>/dev/null) || return 1
  local kind=""
  while IFS=$'\t' read -r key value; do
    case $key in
      kind) kind=$value ;;
      verdict) PF_V_VERDICT=$value ;;
      reason) PF_V_REASON=$(pf_sanitize "$value" "$PF_REASON_MAX") ;;
      duration_s) PF_V_DURATION=$value ;;
      checks_ok) [[ $value =~ ^[A-Za-z0-9_.,-]{0,1000}$ ]] && PF_V_CHECKS_OK=$value ;;
      checks_failed) [[ $value =~ ^[A-Za-z0-9_.,-]{0,1000}$ ]] && PF_V_CHECKS_FAILED=$value ;;
    esac
  done <<<"$tsv"
  [[ $kind == node && $PF_V_VERDICT =~ ^(pass|warn|fail)$ ]]
}

# The last non-empty line preflight wrote to stderr, for a tool-error message.
pf_stderr_tail() {
  local line last=""
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -n ${line// /} ]] && last=$line
  done <"$PF_RUN_DIR/stderr"
  pf_sanitize "$last" 120
}

# Turn PF_RC and the verdict into PF_OUTCOME: healthy (exit 0 with a verdict), unhealthy (exit
# 1 with a verdict), or tool (anything else: exit 2/3, no readable verdict, the outer deadline,
# a signal). PF_REASON is the one-line why (without "preflight: "). The exit code decides;
# the verdict only supplies the reason.
pf_classify() {
  local deadline=$1 have_verdict=0 detail
  pf_read_verdict "$PF_VERDICT" && have_verdict=1
  PF_OUTCOME=tool
  if ((PF_RC == 124 || PF_RC == 255 || (PF_RC > 128 && PF_ELAPSED >= deadline))); then
    PF_REASON="did not finish within $deadline s"
  elif ((PF_RC == 0 && have_verdict)); then
    PF_OUTCOME=healthy
    PF_REASON=$PF_V_REASON
  elif ((PF_RC == 1 && have_verdict)); then
    PF_OUTCOME=unhealthy
    PF_REASON=${PF_V_REASON:-verdict $PF_V_VERDICT}
  elif ((PF_RC == 0 || PF_RC == 1)); then
    PF_REASON="tool error: exit $PF_RC without a readable verdict"
  elif ((PF_RC == 126 || PF_RC == 127)); then
    PF_REASON="tool error: cannot execute $PF_BIN"
  elif ((PF_RC > 128)); then
    PF_REASON="tool error: killed by signal $((PF_RC - 128))"
  else
    detail=$(pf_stderr_tail)
    case $PF_RC in
      2) PF_REASON="tool error: exit 2 (invalid invocation or configuration)" ;;
      3) PF_REASON="tool error: exit 3 (internal error)" ;;
      *) PF_REASON="tool error: exit $PF_RC" ;;
    esac
    if [[ -n $detail ]]; then PF_REASON+=": $detail"; fi
  fi
  PF_REASON=$(pf_sanitize "$PF_REASON" "$PF_REASON_MAX")
  PF_HAVE_VERDICT=$have_verdict
}

# Keep the verdict: STATE/HOOK.json and STATE/last.json (the latest of either hook), and a copy
# in STATE/history/ of which the newest PREFLIGHT_HISTORY per hook are kept. Every file appears
# whole: copies are written to a temporary name in the same directory and renamed. Failures
# here are reported in PF_SAVE_ERROR, never fatal: the node's verdict matters more.
pf_save_verdict() {
  local hook=$1 verdict=$2 dir=$PREFLIGHT_STATE_DIR stamp
  PF_SAVE_ERROR=""
  stamp=$(date -u +%Y%m%dT%H%M%S.%NZ)
  if ((PREFLIGHT_HISTORY > 0)); then
    if cp -- "$PF_VERDICT" "$dir/history/.$hook.tmp.$$" &&
      mv -f -- "$dir/history/.$hook.tmp.$$" "$dir/history/$hook-$stamp-$verdict.json"; then
      pf_rotate "$dir/history" "$hook" "$PREFLIGHT_HISTORY"
    else
      PF_SAVE_ERROR="history not written"
    fi
  fi
  if ! { cp -- "$PF_VERDICT" "$dir/.last.tmp.$$" && mv -f -- "$dir/.last.tmp.$$" "$dir/last.json" &&
    mv -f -- "$PF_VERDICT" "$dir/$hook.json"; }; then
    PF_SAVE_ERROR="verdict not saved in $dir"
  fi
  rm -f -- "$dir/history/.$hook.tmp.$$" "$dir/.last.tmp.$$"
}

# Delete all but the newest KEEP history files of HOOK. Names start with the hook and a fixed-
# width UTC time stamp, so glob order (C locale) is age order; other files are left alone.
pf_rotate() {
  local dir=$1 hook=$2 keep=$3
  local -a files=()
  shopt -s nullglob
  files=("$dir/$hook"-[0-9]*Z-*.json)
  shopt -u nullglob
  if ((${#files[@]} > keep)); then
    rm -f -- "${files[@]:0:${#files[@]}-keep}"
  fi
}

# Append LINE to DIR/prolog-failures.tsv, keeping the newest PF_FAILURES_KEEP lines, through a
# new file renamed into place (a reader never sees half a line). Returns 1 if it cannot.
pf_append_failure() {
  local dir=$1 tmp="$1/.$PF_FAILURES.$$"
  if {
    if [[ -f $dir/$PF_FAILURES ]]; then tail -n $((PF_FAILURES_KEEP - 1)) -- "$dir/$PF_FAILURES"; fi
    printf '%s\n' "$2"
  } >"$tmp" 2>/dev/null && mv -f -- "$tmp" "$dir/$PF_FAILURES" 2>/dev/null; then
    return 0
  fi
  rm -f -- "$tmp"
  return 1
}
