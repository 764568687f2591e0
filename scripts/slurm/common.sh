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
# PREFLIGHT_REBOOT_ON_ACTION=yes: the record of the last reboot a hook asked Slurm for, and how
# long it stops another: a fault that a reboot did not clear must leave the node drained for a
# person, not reboot it in a loop (docs/slurm.md, Reboot on action).
readonly PF_REBOOT_RECORD=reboot-requested PF_REBOOT_INTERVAL=86400
readonly PF_DEFAULT_CONFIG=/etc/default/preflight
# The search path of the hooks and of everything they start, whatever they were given
# (docs/slurm.md, Security): slurmd passes none, bash's default then ends in ".", and the folder
# a hook starts in (slurmd's own for 22.05, wherever a drill is typed) may be a user's.
PF_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
PF_DEFAULT_STATE_DIR=/var/lib/preflight
# The tests run copies of the hooks with tests/slurm/test-harness.sh beside them, which may
# change the two settings above and nothing else. Nothing installs it and the repository's
# scripts/slurm/ has none, so on a node the tests' PREFLIGHT_TEST_* variables do nothing.
if [[ -f ${BASH_SOURCE[0]%/*}/test-harness.sh ]]; then
  # shellcheck source=tests/slurm/test-harness.sh
  source "${BASH_SOURCE[0]%/*}/test-harness.sh"
fi
readonly PF_PATH PF_DEFAULT_STATE_DIR
# shellcheck source=scripts/slurm/trust.sh
source "${BASH_SOURCE[0]%/*}/trust.sh"
# shellcheck source=scripts/slurm/state.sh
source "${BASH_SOURCE[0]%/*}/state.sh"
# The variables through which slurmd hands a prolog the job's share of the node's GPUs (slurmd
# 22.05 for --gres=gpu:1: CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, ROCR_VISIBLE_DEVICES,
# ZE_AFFINITY_MASK; Slurm's MPS and shard GRES add CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and their
# kin. The hooks judge the whole node, so none of them reaches preflight: with one GPU visible
# to CUDA and eight to NVML, a healthy node would fail (GPU_NOT_VISIBLE_TO_CUDA).
readonly PF_JOB_GPU_VARS=(CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES
  HIP_VISIBLE_DEVICES ZE_AFFINITY_MASK NVIDIA_VISIBLE_DEVICES CUDA_DEVICE_ORDER
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE CUDA_MPS_PINNED_DEVICE_MEM_LIMIT SLURM_JOB_GPUS
  SLURM_STEP_GPUS SLURM_GPUS_ON_NODE)
# The reason after "preflight: " is at most this long, like preflight's own reason.
readonly PF_REASON_MAX=200

# Every variable the environment file may set (scripts/slurm/preflight.default documents them).
readonly PF_VARS=(PREFLIGHT_BIN PREFLIGHT_STATE_DIR PREFLIGHT_HISTORY PREFLIGHT_SYSLOG_TAG
  PREFLIGHT_NODENAME PREFLIGHT_SCONTROL PREFLIGHT_PROM PREFLIGHT_TIMEOUT PREFLIGHT_LOCK_WAIT
  PREFLIGHT_PROLOG_ARGS PREFLIGHT_PROLOG_ON_TOOL_ERROR PREFLIGHT_HEALTHCHECK_TIMEOUT
  PREFLIGHT_HEALTHCHECK_LOCK_WAIT PREFLIGHT_HEALTHCHECK_ARGS PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR
  PREFLIGHT_HEALTHCHECK_SKIP_BUSY PREFLIGHT_HEALTHCHECK_LOCK_SKIPS PREFLIGHT_SLURM_PROLOG_TIMEOUT
  PREFLIGHT_DRAIN_GUARD_PERCENT PREFLIGHT_DRAIN_GUARD_WINDOW PREFLIGHT_REBOOT_ON_ACTION
  PREFLIGHT_USE_HISTORY)

PF_TAG=preflight   # syslog tag; replaced by PREFLIGHT_SYSLOG_TAG once that is validated
PF_RUN_DIR=""      # per-run scratch directory inside the state directory, removed on exit
PF_CHILD=""        # pid of the `timeout` wrapping preflight while it runs
PF_WAITING=""      # pid of the flock waiting for the lock
PF_RAN=0           # 1 once preflight has run
PF_SIGNAL=""       # the signal that interrupted the hook, if any
PF_SIGNAL_EXIT=1   # the hook's exit code when a signal stops it before preflight ran

# Before anything else: the fixed search path, the root folder as working directory (the one
# the hook started in may be a user's), the C locale (the character classes in
# pf_sanitize then mean ASCII bytes), files only root can read, and none of the job's GPU
# selection (PF_JOB_GPU_VARS; the environment file may still export one on purpose, as where
# slurmd runs in a container that shows only some GPUs).
pf_init() {
  export PATH=$PF_PATH LC_ALL=C
  cd /
  umask 077
  unset "${PF_JOB_GPU_VARS[@]}"
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
# assignments, refused unless pf_trusted); a variable already set in the environment wins over
# the file, so a drill can override one setting on the command line. PREFLIGHT_CONFIG names the
# file (absolute): the default /etc/default/preflight may be missing, a file named explicitly
# must exist, and an empty PREFLIGHT_CONFIG reads no file.
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
    [[ $_pf_file == /* ]] || pf_config_error "PREFLIGHT_CONFIG=$_pf_file: not an absolute path"
    if [[ -e $_pf_file || -L $_pf_file ]]; then
      pf_trusted "$_pf_file" "environment file" file || pf_config_error "$PF_DETAIL"
      [[ -r $_pf_file ]] || pf_config_error "$_pf_file is not a readable file"
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
  # The file may not move the hooks off their fixed path and folder.
  export PATH=$PF_PATH
  cd /

  : "${PREFLIGHT_SYSLOG_TAG:=preflight}"
  [[ $PREFLIGHT_SYSLOG_TAG =~ ^[A-Za-z0-9._-]{1,32}$ ]] ||
    pf_config_error "PREFLIGHT_SYSLOG_TAG=$PREFLIGHT_SYSLOG_TAG: not 1 to 32 of [A-Za-z0-9._-]"
  PF_TAG=$PREFLIGHT_SYSLOG_TAG
  : "${PREFLIGHT_BIN:=}" "${PREFLIGHT_PROM:=}" "${PREFLIGHT_SCONTROL:=}"
  : "${PREFLIGHT_STATE_DIR:=$PF_DEFAULT_STATE_DIR}" "${PREFLIGHT_HISTORY:=20}"
  : "${PREFLIGHT_TIMEOUT:=120}" "${PREFLIGHT_LOCK_WAIT:=50}" "${PREFLIGHT_PROLOG_ARGS:=}"
  : "${PREFLIGHT_PROLOG_ON_TOOL_ERROR:=fail}"
  : "${PREFLIGHT_HEALTHCHECK_TIMEOUT:=20}" "${PREFLIGHT_HEALTHCHECK_LOCK_WAIT:=5}"
  : "${PREFLIGHT_HEALTHCHECK_ARGS=--checks inventory}" "${PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR:=drain}"
  : "${PREFLIGHT_HEALTHCHECK_SKIP_BUSY:=1}" "${PREFLIGHT_HEALTHCHECK_LOCK_SKIPS:=3}"
  : "${PREFLIGHT_SLURM_PROLOG_TIMEOUT:=auto}"
  : "${PREFLIGHT_DRAIN_GUARD_PERCENT:=20}" "${PREFLIGHT_DRAIN_GUARD_WINDOW:=3600}"
  : "${PREFLIGHT_REBOOT_ON_ACTION:=no}" "${PREFLIGHT_USE_HISTORY:=no}"
  if [[ -z ${PREFLIGHT_NODENAME:-} ]]; then
    PREFLIGHT_NODENAME=${SLURMD_NODENAME:-$(hostname -s 2>/dev/null || true)}
  fi

  local name
  for name in PREFLIGHT_STATE_DIR PREFLIGHT_BIN PREFLIGHT_SCONTROL PREFLIGHT_PROM; do
    [[ -z ${!name} || ${!name} == /* ]] || pf_config_error "$name=${!name}: not an absolute path"
  done
  [[ $PREFLIGHT_NODENAME =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$ ]] ||
    pf_config_error "node name $PREFLIGHT_NODENAME: not a host name (set PREFLIGHT_NODENAME)"
  pf_require_int PREFLIGHT_HISTORY 0 10000
  pf_require_int PREFLIGHT_TIMEOUT $((PF_MARGIN + 1)) 86400
  pf_require_int PREFLIGHT_LOCK_WAIT 0 86400
  pf_require_int PREFLIGHT_HEALTHCHECK_TIMEOUT $((PF_MARGIN + 1)) 86400
  pf_require_int PREFLIGHT_HEALTHCHECK_LOCK_WAIT 0 86400
  pf_require_int PREFLIGHT_HEALTHCHECK_LOCK_SKIPS 0 1000
  pf_require_int PREFLIGHT_DRAIN_GUARD_PERCENT 1 100
  pf_require_int PREFLIGHT_DRAIN_GUARD_WINDOW 60 604800
  pf_require_word PREFLIGHT_PROLOG_ON_TOOL_ERROR fail pass
  pf_require_word PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR drain ignore
  pf_require_word PREFLIGHT_HEALTHCHECK_SKIP_BUSY 1 0
  pf_require_word PREFLIGHT_REBOOT_ON_ACTION no yes
  pf_require_word PREFLIGHT_USE_HISTORY no yes
  if [[ $PREFLIGHT_SLURM_PROLOG_TIMEOUT != auto && $PREFLIGHT_SLURM_PROLOG_TIMEOUT != none ]]; then
    [[ $PREFLIGHT_SLURM_PROLOG_TIMEOUT =~ ^[0-9]{1,9}$ ]] ||
      pf_config_error "PREFLIGHT_SLURM_PROLOG_TIMEOUT=$PREFLIGHT_SLURM_PROLOG_TIMEOUT: not auto, none or a whole number from 1 to 86400"
    pf_require_int PREFLIGHT_SLURM_PROLOG_TIMEOUT 1 86400
  fi
  # preflight writes PREFLIGHT_PROM (and the health check its own file beside it) as root, into
  # a folder of root's that no one else can write. The folders above it are not judged: Debian's
  # node_exporter package gives /var/lib/prometheus to its prometheus user, and every write there
  # goes through a new file (mkstemp, mktemp) and a rename, which follow no link.
  if [[ -n $PREFLIGHT_PROM ]]; then
    pf_trusted "$(pf_folder_of "$PREFLIGHT_PROM")" "metrics folder of PREFLIGHT_PROM" dir 0 ||
      pf_config_error "$PF_DETAIL"
  fi
  pf_find_scontrol
}

# The folder a file path names (the path absolute).
pf_folder_of() {
  local dir=${1%/*}
  printf '%s' "${dir:-/}"
}

# PF_SCONTROL: PREFLIGHT_SCONTROL, or scontrol on the fixed PATH, refused unless
# pf_trusted_program; "scontrol" when there is none (every call then fails, as without Slurm).
pf_find_scontrol() {
  if [[ -n $PREFLIGHT_SCONTROL ]]; then
    PF_SCONTROL=$PREFLIGHT_SCONTROL
    pf_trusted_program "$PF_SCONTROL" PREFLIGHT_SCONTROL || pf_config_error "$PF_DETAIL"
  elif PF_SCONTROL=$(command -v scontrol); then
    pf_trusted_program "$PF_SCONTROL" scontrol || pf_config_error "$PF_DETAIL"
  else
    PF_SCONTROL=scontrol
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

# Which preflight to run: PREFLIGHT_BIN, else preflight on the fixed PATH, else the installed
# layout (<prefix>/libexec/preflight/ next to <prefix>/bin/); never a build tree. Returns 1 if
# none; one that is there but fails pf_trusted_program is a configuration error.
pf_find_bin() {
  local dir=$1 what=PREFLIGHT_BIN
  PF_BIN=$PREFLIGHT_BIN
  if [[ -z $PF_BIN ]]; then
    what="preflight binary"
    PF_BIN=$(command -v preflight) || PF_BIN=$(realpath -m -s -- "$dir/../../bin/preflight")
    if [[ ! -e $PF_BIN ]]; then
      PF_BIN=""
      return 1
    fi
  fi
  pf_trusted_program "$PF_BIN" "$what" || pf_config_error "$PF_DETAIL"
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
  # The node's own earlier verdicts, once the site opts in (docs/baseline.md): figures that
  # dropped and stayed down, counters that rose, a node that keeps failing.
  if [[ $PREFLIGHT_USE_HISTORY == yes ]] && ((PREFLIGHT_HISTORY > 0)) &&
    [[ -d $PREFLIGHT_STATE_DIR/history && " $* " != *" --history"* ]]; then
    cmd+=(--history "$PREFLIGHT_STATE_DIR/history")
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
# Sets PF_V_VERDICT, PF_V_REASON (sanitized), PF_V_DURATION, PF_V_ACTION (the node's recommended
# action, one of the five words; empty from a preflight without it), and PF_V_CHECKS_OK and
# PF_V_CHECKS_FAILED (comma-separated check names; empty from a preflight without them). Returns 1
# if the file is missing or is not a node verdict.
pf_read_verdict() {
  local file=$1 tsv key value
  PF_V_VERDICT="" PF_V_REASON="" PF_V_DURATION="" PF_V_ACTION="" PF_V_CHECKS_OK=""
  PF_V_CHECKS_FAILED=""
  [[ -s $file ]] || return 1
  tsv=$(timeout "$PF_CMD_TIMEOUT" "$PF_BIN" report --format tsv "$file" 2>/dev/null) || return 1
  local kind=""
  while IFS=$'\t' read -r key value; do
    case $key in
      kind) kind=$value ;;
      verdict) PF_V_VERDICT=$value ;;
      reason) PF_V_REASON=$(pf_sanitize "$value" "$PF_REASON_MAX") ;;
      duration_s) PF_V_DURATION=$value ;;
      action) [[ $value =~ ^(none|restart_job|reset_gpu|reboot|service)$ ]] && PF_V_ACTION=$value ;;
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

# An unhealthy verdict whose action is reboot, with PREFLIGHT_REBOOT_ON_ACTION=yes: ask Slurm to
# reboot the node once it is idle and to resume it after (`scontrol reboot ASAP
# nextstate=RESUME`, whose ASAP drains it meanwhile with REASON), instead of leaving it drained
# until a person reboots it. Not when a reboot is already pending (STATE, where the caller read
# it, holds REBOOT), nor within PF_REBOOT_INTERVAL of the last one a hook asked for. Returns 0 when
# Slurm took the request; otherwise 1, the caller drains, and PF_DETAIL says why not (empty when
# no reboot was called for).
pf_request_reboot() {
  local reason=$1 state=${2:-} file="$PREFLIGHT_STATE_DIR/$PF_REBOOT_RECORD" last="" now
  PF_DETAIL=""
  # Only for preflight's own unhealthy verdict: a tool error says nothing of the node.
  [[ $PREFLIGHT_REBOOT_ON_ACTION == yes && ${PF_OUTCOME:-} == unhealthy &&
    ${PF_V_ACTION:-} == reboot ]] || return 1
  if [[ $state == *REBOOT* ]]; then
    PF_DETAIL="no reboot asked: one is pending already (State=$state)"
    return 1
  fi
  now=$(date +%s)
  read -r last <"$file" 2>/dev/null || true
  if [[ $last =~ ^[0-9]{1,12}$ ]] && ((now - last >= 0 && now - last < PF_REBOOT_INTERVAL)); then
    PF_DETAIL="no reboot asked: a hook asked for one at $(date -u -d "@$last" +%Y-%m-%dT%H:%M:%SZ), less than $((PF_REBOOT_INTERVAL / 3600)) h ago, and the fault is back"
    return 1
  fi
  if ! timeout "$PF_CMD_TIMEOUT" "$PF_SCONTROL" reboot ASAP nextstate=RESUME "reason=$reason" \
    "$PREFLIGHT_NODENAME" >/dev/null 2>&1; then
    PF_DETAIL="scontrol reboot ASAP nextstate=RESUME failed"
    return 1
  fi
  pf_write_into "$file" "$now" || true
}
