# shellcheck shell=bash disable=SC2034  # NODE_*, JOB_*, T_SECONDS, T_SLACK: read by the tests
# Harness for the tests against a real one-node Slurm (test_slurm_real.sh, docs/slurm.md): per
# test a scratch folder with its own munged, slurmctld and slurmd on free ports, a slurm.conf
# whose preflight lines are the ones docs/slurm.md tells admins to add, and an environment file
# for the hooks. Everything started here is stopped by its pid on exit, and the test fails if
# any process it started outlives that. Sourced.
set -euo pipefail
export LC_ALL=C

T_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source=tests/slurm/hooks_under_test.sh
source "$T_SRC/tests/slurm/hooks_under_test.sh"
# The hooks under test: this checkout's, or PREFLIGHT_TEST_HOOKS (an installed libexec/preflight/,
# or an older copy to see a test fail without a fix).
T_HOOKS=${PREFLIGHT_TEST_HOOKS:-$T_SRC/scripts/slurm}
T_NODE=$(hostname -s)
T=""
T_BIN=""
T_RC=0
T_SECONDS=0
T_FAILED=0
T_DAEMONS=()  # "name pid" of munged, slurmctld, slurmd, in start order
# Seconds a busy machine (both cores taken by other work) may add to a bound below: starting the
# daemons, bash, preflight. A limit is what the code under test promises plus this.
T_SLACK=3
# How long the daemons get to come up and the node to register idle: munged and slurmctld start
# in about a second, slurmd registers within a few more; a loaded machine takes longer.
readonly T_START_DEADLINE=30
readonly T_TOOLS=(munged slurmctld slurmd srun sbatch scontrol sinfo squeue scancel)

t_log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

t_tail() {  # t_tail FILE: the last lines of a log, for a failure
  [[ -s $1 ]] || return 0
  printf -- '--- tail of %s\n' "${1#"$T"/}" >&2
  tail -n 40 "$1" >&2 || true
}

t_diagnose() {
  [[ -n $T && -d $T ]] || return 0
  t_tail "$T/log/slurmctld.log"
  t_tail "$T/log/slurmd.log"
  t_tail "$T/syslog"
  t_tail "$T/log/munged.log"
}

t_fail() {
  printf 'FAIL: %s\n' "$*" >&2
  T_FAILED=1
  if ((${#T_DAEMONS[@]})); then
    printf -- '--- node: %s\n' "$(timeout 5 scontrol -o show node "$T_NODE" 2>&1 || true)" >&2
    printf -- '--- jobs:\n%s\n' "$(timeout 5 squeue -h -o '%i %T %r' 2>&1 || true)" >&2
    t_diagnose
  fi
  exit 1
}

# Missing Slurm or munge, or not root (SlurmUser=root, SlurmdUser=root: the daemons and the
# prolog run as root, as on a real node): skipped (77), unless CI asked for them
# (PREFLIGHT_TEST_REQUIRE_SLURM=1: then a failure). The test installs nothing itself.
t_require_tools() {
  local tool missing=() why
  for tool in "${T_TOOLS[@]}"; do
    PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  if ((${#missing[@]})); then
    why="${missing[*]} missing; scripts/setup-deps.sh --test installs them"
  elif ((EUID != 0)); then
    why="needs root (the test's slurmd runs the prolog and the jobs as root)"
  elif ! mountpoint -q /sys/fs/cgroup 2>/dev/null; then
    # slurmd 22.05 initialises its cgroup plugin whatever slurm.conf says, and stops without it
    # ("cgroup filesystem not mounted in /sys/fs/cgroup/"): any booted Linux has it mounted, a
    # bare chroot does not.
    why="no cgroup filesystem at /sys/fs/cgroup, which slurmd 22.05 needs (mount it in a chroot)"
  else
    return 0
  fi
  if [[ ${PREFLIGHT_TEST_REQUIRE_SLURM:-0} == 1 ]]; then
    printf 'FAIL: %s (PREFLIGHT_TEST_REQUIRE_SLURM=1)\n' "$why" >&2
    exit 1
  fi
  printf 'skipped: %s\n' "$why"
  exit 77
}

# Pids of live processes this test started, other than this shell: every one carries
# PF_SLURM_REAL_TAG=$T in its environment (exported before anything is started, so it reaches
# the daemons, slurmstepd, the hooks and the job tasks as long as Slurm passes environments on),
# or names $T on its command line (preflight's --json, the daemons' -f). One grep over /proc,
# run without the tag and with its own pid printed first, so it does not find itself.
t_our_pids() {
  local out pid self="" line
  out=$(
    echo "$BASHPID"
    exec env -u PF_SLURM_REAL_TAG grep -lsz -e "^PF_SLURM_REAL_TAG=$T\$" /proc/[0-9]*/environ
  ) || true
  out+=$'\n'$(
    echo "$BASHPID"
    exec env -u PF_SLURM_REAL_TAG grep -lsFz -e "$T" /proc/[0-9]*/cmdline
  ) || true
  local -A seen=()
  local first=1
  while IFS= read -r line; do
    if [[ $line =~ ^[0-9]+$ ]]; then self=$line; continue; fi
    [[ $line =~ ^/proc/([0-9]+)/ ]] || continue
    pid=${BASH_REMATCH[1]}
    [[ $pid == "$self" || $pid == "$$" || -n ${seen[$pid]:-} ]] && continue
    seen[$pid]=1
    t_alive "$pid" || continue
    if ((first)); then first=0; else printf ' '; fi
    printf '%s' "$pid"
  done <<<"$out"
}

# A zombie counts as ended: slurmstepd (slurmd double-forks it) and the hooks' orphans are
# re-parented to PID 1, which in some containers reaps them late or never.
t_alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# t_wait_gone SECONDS PID...: polls every 0.1 s until none of the processes is alive; returns 1
# if some still are at the deadline.
t_wait_gone() {
  local deadline=$((SECONDS + $1)) pid any
  shift
  while :; do
    any=0
    for pid in "$@"; do t_alive "$pid" && any=1; done
    ((any)) || return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

t_describe() {  # t_describe PID...: one line per process, for a report
  local pid
  for pid in "$@"; do
    printf '  %s %s\n' "$pid" "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)" >&2
  done
}

# On exit: cancel the jobs (slurmstepd and the tasks end with them), stop the daemons by the pids
# recorded (SIGTERM, SIGKILL after a bounded wait), then require that nothing this test started
# is left; anything that is gets SIGKILL and fails the test.
t_cleanup() {
  local rc=$? name pid left entry i
  # Bounded (about 50 s at worst); a second SIGTERM must not cut it short and leave daemons.
  trap - EXIT
  trap '' TERM INT
  [[ -n $T && -d $T ]] || exit "$rc"
  if ((${#T_DAEMONS[@]})); then
    timeout 10 scancel --quiet --full --user=root >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 15))
    while [[ -n $(timeout 5 squeue -h -o %i 2>/dev/null) ]] && ((SECONDS < deadline)); do
      sleep 0.2
    done
  fi
  # slurmd first (it may still talk to slurmctld), munged last (everything authenticates).
  local -a order=()
  for ((i = ${#T_DAEMONS[@]} - 1; i >= 0; i--)); do order+=("${T_DAEMONS[i]}"); done
  for entry in "${order[@]}"; do
    read -r name pid <<<"$entry"
    kill -TERM "$pid" 2>/dev/null || continue
    if ! t_wait_gone 10 "$pid"; then
      t_log "$name ($pid) did not end 10 s after SIGTERM: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  # Hooks and steps that end on their own (the daemons' SIGTERM ends them, or they finish).
  # shellcheck disable=SC2046  # a list of pids
  t_wait_gone 10 $(t_our_pids) || true
  left=$(t_our_pids)
  if [[ -n $left ]]; then
    printf 'FAIL: processes this test started are still running after its clean-up:\n' >&2
    # shellcheck disable=SC2086  # a list of pids
    t_describe $left
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null || true
    ((T_FAILED)) || t_diagnose
    rc=1
  fi
  if [[ ${PREFLIGHT_TEST_KEEP:-0} == 1 ]]; then
    t_log "kept $T"
  else
    rm -rf -- "$T"
  fi
  exit "$rc"
}

# Two TCP ports that nothing on this machine uses, in any state (a previous test's daemons may
# hold theirs in TIME_WAIT for a while): random ones below the ephemeral range, checked against
# /proc/net/tcp{,6}.
t_free_ports() {
  local -A used=()
  local line port n=0 tries=0
  while read -r _ line _; do
    [[ $line == *:* ]] || continue
    used[$((16#${line##*:}))]=1
  done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  T_PORTS=()
  while ((n < 2 && tries < 1000)); do
    tries=$((tries + 1))
    port=$((10000 + (RANDOM * 32768 + RANDOM) % 22000))
    [[ -z ${used[$port]:-} ]] || continue
    used[$port]=1
    T_PORTS+=("$port")
    n=$((n + 1))
  done
  ((n == 2)) || t_fail "no free TCP ports found"
}

# The fenced block under "## slurm.conf" in docs/slurm.md, with the install path of the hooks
# replaced by this checkout's scripts/slurm/. The tests run exactly what the docs tell an admin
# to add, so the docs cannot drift from what works.
t_docs_conf() {
  local docs=$T_SRC/docs/slurm.md block
  block=$(awk '
    /^## slurm.conf[[:space:]]*$/ { section = 1; next }
    section && /^## / { exit }
    section && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$docs") || t_fail "cannot read $docs"
  [[ $block == *"Prolog=/usr/local/libexec/preflight/prolog.sh"* &&
    $block == *"HealthCheckProgram=/usr/local/libexec/preflight/healthcheck.sh"* ]] ||
    t_fail "docs/slurm.md: no fenced block with Prolog= and HealthCheckProgram= under '## slurm.conf'"
  printf '%s\n' "${block//\/usr\/local\/libexec\/preflight\//$T_HOOKS/}"
}

# t_env_file LINE...: the environment file the hooks read (PREFLIGHT_CONFIG), replaced whole:
# this test's binary and state folder, no GPU expected, then the given lines (later ones win).
# shellcheck disable=SC2120  # the defaults alone when called without lines
t_env_file() {
  {
    echo "# written by tests/slurm-real/lib.sh"
    printf 'PREFLIGHT_BIN=%q\n' "$T_BIN"
    printf 'PREFLIGHT_STATE_DIR=%q\n' "$T/state-preflight"
    echo 'PREFLIGHT_PROLOG_ARGS="--expect-gpus 0"'
    echo 'PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 0"'
    printf '%s\n' "$@"
  } >"$T/preflight.conf"
}

# t_setup PREFLIGHT: scratch folder $T, the tag, the logger stand-in and the default env file.
t_setup() {
  T_BIN=$1
  # Absolute: the hooks run in another folder (slurmd starts them in the job's, or in /).
  [[ $T_BIN == /* ]] || T_BIN=$PWD/$T_BIN
  [[ -x $T_BIN ]] || { echo "FAIL: preflight binary '$T_BIN' is not executable" >&2; exit 1; }
  t_require_tools
  export PATH="$PATH:/usr/sbin:/sbin"
  # This test decides the cluster and the jobs: a Slurm job around ctest must not leak in.
  local var
  for var in "${!SLURM_@}"; do unset "$var"; done
  T=$(mktemp -d "${TMPDIR:-/tmp}/pf-slurm-real.XXXXXX")
  export PF_SLURM_REAL_TAG=$T
  trap t_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # The hooks refuse folders that group or others can write: whatever the caller's umask.
  umask 022
  # munged wants every folder above its socket searchable; slurmd runs the prolog as root.
  chmod 711 "$T"
  mkdir -p "$T/munge" "$T/log" "$T/state" "$T/spool" "$T/stubs" "$T/state-preflight"
  chmod 711 "$T/munge"
  # Everything here runs the binary from $T, as the hooks accept it (hooks_under_test.sh).
  T_BIN=$(t_trusted_binary "$T_BIN" "$T/bin") || t_fail "cannot link the binary into $T"
  # syslog stand-in: the message (the last argument) to $T/syslog, one line per call.
  cat >"$T/stubs/logger" <<EOF
#!/bin/bash
printf '%s\n' "\${@: -1}" >>$(printf '%q' "$T/syslog")
EOF
  chmod +x "$T/stubs/logger"
  t_wrap_hooks
  t_env_file
}

# slurmd 22.05 does not pass its own environment to the hooks: the prolog gets one made of
# SLURM_* variables (and, for a job with GPUs, CUDA_VISIBLE_DEVICES and its kin), SLURMD_NODENAME
# and SLURM_CONF, the health check only SLURMD_NODENAME, neither a PATH. On a real node the hooks
# then read /etc/default/preflight; a test must not write there, so slurm.conf names these
# wrappers instead. Each writes down what slurmd gave it ($T/HOOK.env, NUL-separated, and
# $T/HOOK.cwd), adds the test's settings and execs the hook under test (through its #! line, as
# slurmd would): a copy of the checkout's hooks (or PREFLIGHT_TEST_HOOKS) in $T/under-test with
# tests/slurm/test-harness.sh beside them, which puts the logger stand-in before the hooks'
# fixed PATH. SLURM_CONF is added for the health check's scontrol: a real node has its
# slurm.conf at the default path, this cluster does not.
t_wrap_hooks() {
  local hook
  mkdir -p "$T/hooks" "$T/under-test"
  for hook in prolog healthcheck; do
    [[ -x $T_HOOKS/$hook.sh ]] || t_fail "$T_HOOKS/$hook.sh is not executable"
  done
  t_hooks_under_test "$T_HOOKS" "$T/under-test" || t_fail "cannot copy the hooks from $T_HOOKS"
  for hook in prolog healthcheck; do
    cat >"$T/hooks/$hook.sh" <<EOF
#!/bin/bash
/usr/bin/env -0 >$(printf '%q' "$T/$hook.env")
/bin/pwd -P >$(printf '%q' "$T/$hook.cwd")
exec /usr/bin/env PREFLIGHT_TEST_STUBS=$(printf '%q' "$T/stubs") \\
  PREFLIGHT_CONFIG=$(printf '%q' "$T/preflight.conf") SLURM_CONF=$(printf '%q' "$T/slurm.conf") \\
  PREFLIGHT_NVML_LIBRARY=/nonexistent PF_SLURM_REAL_TAG=$(printf '%q' "$T") \\
  $(printf '%q' "$T/under-test/$hook.sh") "\$@"
EOF
    chmod +x "$T/hooks/$hook.sh"
  done
}

# t_conf [KEY=VALUE...]: $T/slurm.conf, the one-node cluster plus the docs' preflight lines, with
# single settings replaced (or added) by the arguments. HealthCheckInterval=0 by default: the
# tests run healthcheck.sh themselves, as slurmd would, at moments they choose.
t_conf() {
  local -a lines=(
    "ClusterName=pftest"
    "SlurmctldHost=$T_NODE(127.0.0.1)"
    "SlurmctldPort=${T_PORTS[0]}"
    "SlurmdPort=${T_PORTS[1]}"
    "SlurmUser=root"
    "SlurmdUser=root"
    "AuthType=auth/munge"
    "AuthInfo=socket=$T/munge/sock"
    "CredType=cred/munge"
    "StateSaveLocation=$T/state"
    "SlurmdSpoolDir=$T/spool"
    "SlurmctldPidFile=$T/slurmctld.pid"
    "SlurmdPidFile=$T/slurmd.pid"
    "SlurmctldLogFile=$T/log/slurmctld.log"
    "SlurmdLogFile=$T/log/slurmd.log"
    "SlurmdDebug=debug"
    "ProctrackType=proctrack/linuxproc"
    "TaskPlugin=task/none"
    "SelectType=select/cons_tres"
    "SelectTypeParameters=CR_Core"
    "MpiDefault=none"
    "ReturnToService=2"
    "SlurmdTimeout=30"
    "InactiveLimit=0"
    "KillWait=5"
    "NodeName=$T_NODE NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN"
    "PartitionName=debug Nodes=$T_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE"
  )
  local docs line hook
  docs=$(t_docs_conf)
  while IFS= read -r line; do
    # The docs' hooks, through this test's wrappers (t_wrap_hooks) that exec exactly them.
    for hook in prolog healthcheck; do
      if [[ $line == *=$T_HOOKS/$hook.sh ]]; then line=${line%=*}=$T/hooks/$hook.sh; fi
    done
    lines+=("$line")
  done <<<"$docs"
  local override key i found
  for override in HealthCheckInterval=0 "$@"; do
    key=${override%%=*}
    found=0
    for i in "${!lines[@]}"; do
      if [[ ${lines[i]} == "$key="* ]]; then lines[i]=$override; found=1; fi
    done
    ((found)) || lines+=("$override")
  done
  printf '%s\n' "${lines[@]}" >"$T/slurm.conf"
  export SLURM_CONF=$T/slurm.conf
}

# t_start [KEY=VALUE...]: munged, slurmctld and slurmd for this test (slurm.conf from t_conf
# with the arguments), then waits until the node is idle.
t_start() {
  t_free_ports
  t_conf "$@"
  dd if=/dev/urandom of="$T/munge/key" bs=1024 count=1 status=none
  chmod 400 "$T/munge/key"
  munged -F --force --key-file="$T/munge/key" --socket="$T/munge/sock" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/log/munged.log" \
    --seed-file="$T/munge/seed" >>"$T/log/munged.out" 2>&1 </dev/null &
  T_DAEMONS+=("munged $!")
  t_poll "munged's socket" 10 test -S "$T/munge/sock"
  slurmctld -D -f "$T/slurm.conf" >>"$T/log/slurmctld.out" 2>&1 </dev/null &
  T_DAEMONS+=("slurmctld $!")
  # No GPU for the job steps either (the fleet runs there); the hooks get theirs from t_wrap_hooks.
  PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES='' NVIDIA_VISIBLE_DEVICES=none \
    slurmd -D -f "$T/slurm.conf" >>"$T/log/slurmd.out" 2>&1 </dev/null &
  T_DAEMONS+=("slurmd $!")
  t_poll "node $T_NODE idle" "$T_START_DEADLINE" t_node_is idle
}

# t_poll WHAT SECONDS CMD...: polls CMD every 0.2 s until it succeeds; fails the test at the
# deadline. Also fails at once if a daemon has died (its log says why).
t_poll() {
  local what=$1 limit=$2 deadline=$((SECONDS + $2)) entry name pid
  shift 2
  until "$@"; do
    for entry in "${T_DAEMONS[@]}"; do
      read -r name pid <<<"$entry"
      t_alive "$pid" || t_fail "$name ($pid) ended while waiting for: $what"
    done
    ((SECONDS < deadline)) || t_fail "waited $limit s for: $what"
    sleep 0.2
  done
}

t_node_is() {  # t_node_is STATE: sinfo's compact state of the node, e.g. idle, drain, alloc
  [[ $(timeout 5 sinfo -h -n "$T_NODE" -o %T 2>/dev/null) == "$1" ]]
}

# t_node: NODE_STATE (e.g. IDLE+DRAIN) and NODE_REASON (the text after "Reason=", with Slurm's
# " [user@time]") from `scontrol -o show node`.
t_node() {
  local line
  line=$(timeout 5 scontrol -o show node "$T_NODE") || t_fail "scontrol show node failed"
  [[ $line =~ (^|[[:space:]])State=([^[:space:]]+) ]] || t_fail "no State= in: $line"
  NODE_STATE=${BASH_REMATCH[2]}
  NODE_REASON=""
  if [[ $line == *" Reason="* ]]; then NODE_REASON=${line#* Reason=}; fi
}

# t_job ID: JOB_STATE and JOB_REASON of a job (scontrol -o show job).
t_job() {
  local line
  line=$(timeout 5 scontrol -o show job "$1") || t_fail "scontrol show job $1 failed"
  [[ $line =~ (^|[[:space:]])JobState=([^[:space:]]+) ]] || t_fail "no JobState= in: $line"
  JOB_STATE=${BASH_REMATCH[2]}
  JOB_REASON=""
  [[ $line =~ (^|[[:space:]])Reason=([^[:space:]]+) ]] && JOB_REASON=${BASH_REMATCH[2]}
  JOB_LINE=$line
}

t_job_in() {  # t_job_in ID REGEX: the job's state matches
  t_job "$1"
  [[ $JOB_STATE =~ ^($2)$ ]]
}

# t_sbatch ARGS...: submits a batch job, prints its id.
t_sbatch() {
  local out
  out=$(timeout 10 sbatch --parsable -o "$T/job-%j.out" "$@" 2>&1) || t_fail "sbatch failed: $out"
  [[ $out =~ ^[0-9]+ ]] || t_fail "sbatch printed: $out"
  echo "${BASH_REMATCH[0]}"
}

# t_healthcheck [VAR=value...]: runs healthcheck.sh as slurmd would (the environment slurmd
# gives it, the given variables, through the wrapper). Sets T_RC, T_SECONDS; its output is in
# $T/hook.out and $T/hook.err.
t_healthcheck() {
  local start=$SECONDS
  T_RC=0
  (cd / && env -i SLURMD_NODENAME="$T_NODE" "$@" "$T/hooks/healthcheck.sh" \
    >"$T/hook.out" 2>"$T/hook.err" </dev/null) || T_RC=$?
  T_SECONDS=$((SECONDS - start))
}

# t_run NAME SECONDS CMD...: runs CMD (srun, the gate) bounded by SECONDS, stdout and stderr in
# $T/NAME.out and $T/NAME.err. Sets T_RC, T_SECONDS. In the background with `wait`, so that a
# SIGTERM or SIGINT to the test is handled at once (bash runs traps only after a foreground
# command ends) and the clean-up cancels the job instead of waiting for it.
t_run() {
  local name=$1 limit=$2 start=$SECONDS
  shift 2
  T_RC=0
  timeout "$limit" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
  wait "$!" || T_RC=$?
  T_SECONDS=$((SECONDS - start))
}

t_expect_rc() { [[ $T_RC == "$1" ]] || t_fail "exit code $T_RC, expected $1"; }

t_expect_file() { [[ -f $1 ]] || t_fail "missing file $1"; }

# t_field FILE KEY: a field of a verdict, through the real binary.
t_field() {
  "$T_BIN" report --format tsv "$1" | awk -F '\t' -v k="$2" '$1 == k { sub(/^[^\t]*\t/, ""); print }'
}

t_expect_verdict() {  # t_expect_verdict FILE VERDICT
  t_expect_file "$1"
  local v
  v=$(t_field "$1" verdict)
  [[ $v == "$2" ]] || t_fail "${1##*/}: verdict '$v', expected $2"
}

# t_expect_syslog PATTERN: some syslog line matches the bash pattern.
t_expect_syslog() {
  local line
  if [[ -f $T/syslog ]]; then
    while IFS= read -r line; do
      # shellcheck disable=SC2053
      [[ $line == $1 ]] && return 0
    done <"$T/syslog"
  fi
  t_fail "no syslog line matches '$1'"
}

# t_expect_no_preflight: no preflight process of this test is running (its command line names
# the state folder, as the hooks run it).
t_expect_no_preflight() {
  local pids
  pids=$(pgrep -f -- "$T_BIN .*$T/state-preflight" || true)
  [[ -z $pids ]] || t_fail "preflight still running: $pids"
}

t_dispatch() {  # t_dispatch CASE PREFLIGHT: runs case_<CASE> against a fresh cluster
  local name=${1:?usage: test_slurm_real.sh CASE PREFLIGHT}
  declare -F "case_${name//-/_}" >/dev/null || { echo "FAIL: no test case '$name'" >&2; exit 1; }
  t_setup "${2:?usage: test_slurm_real.sh CASE PREFLIGHT}"
  local start=$SECONDS
  "case_${name//-/_}"
  printf 'ok: %s (%d s)\n' "$name" "$((SECONDS - start))"
}
