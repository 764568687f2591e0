# shellcheck shell=bash disable=SC2034  # T_SYSTEM_PATH, T_PROBES, ...: read by the tests
# Helpers for the Slurm hook tests (test_prolog.sh, test_healthcheck.sh): a scratch directory per
# test, stand-ins for scontrol, logger and preflight that record what they were given, a way to
# run a hook as slurmd would (empty environment, no GPU visible), and assertions. The hooks run
# as copies in $T/hooks with test-harness.sh beside them (the only way the stand-ins can come
# before the hooks' fixed PATH); $T_SRC_HOOKS are the originals. Sourced.
set -euo pipefail
export LC_ALL=C

T_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source=tests/slurm/hooks_under_test.sh
source "$T_SRC/tests/slurm/hooks_under_test.sh"
T_SRC_HOOKS=$T_SRC/scripts/slurm
T_HOOKS=""
T_NODE=node01
T=""
# The hooks' fixed search path (scripts/slurm/common.sh), and a user id no account has: the
# unprivileged user of the attacker cases, which need root to act as it (setpriv).
readonly T_SYSTEM_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
readonly T_USER=54321

t_fail() {
  printf 'FAIL: %s\n' "$*" >&2
  if [[ -n $T ]]; then
    local f
    for f in "$T"/hook.err "$T"/scontrol.calls "$T"/logger.calls; do
      [[ -e $f ]] && { printf -- '--- %s\n' "${f##*/}" >&2; cat "$f" >&2; }
    done
  fi
  exit 1
}

t_cleanup() {
  local pid
  if [[ -n $T && -d $T ]]; then
    # A stand-in preflight that outlived its hook would be a bug the test reports; never leave it.
    if [[ -f $T/fake.pid ]]; then
      while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$T/fake.pid"
    fi
    rm -rf -- "$T"
  fi
}

# t_setup REAL_PREFLIGHT [PROBES]: scratch directory $T (also the hooks' working directory), the
# hooks under test in $T/hooks, stand-ins in $T/stubs (first on the hooks' PATH, through the
# harness), a config file $T/preflight.conf naming the real binary and a state directory in $T,
# and node $T_NODE idle in the stand-in scontrol. PROBES: the folder of the test programs of
# tests/slurm/CMakeLists.txt (library search paths, the fake NVML).
t_setup() {
  T_BIN=$1
  T_PROBES=${2:-}
  [[ -x $T_BIN ]] || t_fail "preflight binary '$T_BIN' is not executable"
  # The hooks refuse folders that group or others can write: whatever the caller's umask.
  umask 022
  T=$(mktemp -d "${TMPDIR:-/tmp}/preflight-slurm.XXXXXX")
  trap t_cleanup EXIT
  mkdir -p "$T/stubs" "$T/state"
  T_HOOKS=$T/hooks
  t_hooks_under_test "$T_SRC_HOOKS" "$T_HOOKS" || t_fail "cannot copy the hooks"
  # The binary and the test programs from $T, as the hooks accept them (hooks_under_test.sh).
  T_BIN=$(t_trusted_binary "$T_BIN" "$T/bin") || t_fail "cannot link the binary into $T"
  if [[ -n $T_PROBES ]]; then
    cp -r "$T_PROBES" "$T/probes"
    T_PROBES=$T/probes
  fi
  local qt
  qt=$(printf '%q' "$T")

  # scontrol: one line per call, "argc=N" and each argument %q-quoted; `-o show node NAME`
  # prints $T/node.line (exit 1 without it); `update` exits with $T/update.rc (default 0), and
  # `reboot` with $T/reboot.rc; `show config` prints $T/config.out (exit 1 without it, as with
  # slurmctld down).
  cat >"$T/stubs/scontrol" <<EOF
#!/bin/bash
T=$qt
# Every node (the drain guard): \$T/nodes.out, exit 1 without it; counted apart, in list.calls,
# so that the cases about one node's updates see only those.
if [[ \$# -eq 3 && \$1 == -o && \$2 == show && \$3 == node ]]; then
  echo x >>"\$T/list.calls"
  [[ -f \$T/nodes.out ]] || { echo "slurm_load_node error: Unable to contact slurm controller" >&2; exit 1; }
  cat "\$T/nodes.out"
  exit 0
fi
{ printf 'argc=%d' "\$#"; printf ' %q' "\$@"; printf '\n'; } >>"\$T/scontrol.calls"
if [[ \$# -eq 4 && \$1 == -o && \$2 == show && \$3 == node ]]; then
  [[ -f \$T/node.line && \$4 == $T_NODE ]] || { echo "Node \$4 not found" >&2; exit 1; }
  cat "\$T/node.line"
  exit 0
fi
if [[ \$1 == update ]]; then exit "\$(cat "\$T/update.rc" 2>/dev/null || echo 0)"; fi
if [[ \$1 == reboot ]]; then exit "\$(cat "\$T/reboot.rc" 2>/dev/null || echo 0)"; fi
if [[ \$# -eq 2 && \$1 == show && \$2 == config ]]; then
  [[ -f \$T/config.out ]] || { echo "slurm_load_ctl_conf error: Unable to contact slurm controller" >&2; exit 1; }
  cat "\$T/config.out"
  exit 0
fi
echo "stand-in scontrol: unexpected call" >&2
exit 1
EOF
  # logger: its argv (%q) to logger.calls, the message (last argument) raw to syslog.
  cat >"$T/stubs/logger" <<EOF
#!/bin/bash
T=$qt
{ printf 'argc=%d' "\$#"; printf ' %q' "\$@"; printf '\n'; } >>"\$T/logger.calls"
printf '%s\n' "\${@: -1}" >>"\$T/syslog"
EOF
  # A preflight stand-in whose behaviour is $T/fake.mode; `report` goes to the real binary. Mode
  # record writes down what it was given (environment, working directory), then runs the real one
  # with the machine's own GPUs hidden from it.
  cat >"$T/fake-preflight" <<EOF
#!/bin/bash
T=$qt
REAL=$(printf '%q' "$T_BIN")
echo "\$*" >>"\$T/fake.calls"
if [[ \$1 == report ]]; then
  if [[ \$(cat "\$T/fake.mode") == raw-tsv ]]; then cat "\$T/raw.tsv"; exit 0; fi
  exec "\$REAL" "\$@"
fi
if [[ \$(cat "\$T/fake.mode") == record ]]; then
  /usr/bin/env -0 >"\$T/preflight.env"
  /bin/pwd -P >"\$T/preflight.cwd"
  exec /usr/bin/env CUDA_VISIBLE_DEVICES= NVIDIA_VISIBLE_DEVICES=none "\$REAL" "\$@"
fi
json=""
while [[ \$# -gt 0 ]]; do [[ \$1 == --json ]] && json=\$2; shift; done
case \$(cat "\$T/fake.mode") in
  stuck)  # ignores SIGTERM, as a process stuck in the driver would; only SIGKILL ends it
    trap '' TERM
    echo \$\$ >>"\$T/fake.pid"
    while :; do sleep 1; done ;;
  exit2) echo "preflight: --expect-gpus: bad value" >&2; exit 2 ;;
  exit3) echo "preflight: internal error: \"boom\" \\\`x\\\`" >&2; exit 3 ;;
  exit0-no-verdict) exit 0 ;;
  verdict1|raw-tsv) cp "\$T/crafted.json" "\$json"; exit 1 ;;
  verdict0) cp "\$T/crafted.json" "\$json"; exit 0 ;;
esac
exit 99
EOF
  # timeout: the real one, except in mode "unkillable", where the `timeout` wrapping preflight
  # itself never ends (as a process stuck in the kernel survives SIGKILL).
  cat >"$T/stubs/timeout" <<EOF
#!/bin/bash
T=$qt
if [[ \$(cat "\$T/fake.mode" 2>/dev/null) == unkillable && " \$* " == *" \$T/fake-preflight run "* ]]; then
  trap '' TERM INT HUP
  echo \$\$ >>"\$T/fake.pid"
  while :; do sleep 1; done
fi
exec $(printf '%q' "$(PATH=/usr/bin:/bin command -v timeout)") "\$@"
EOF
  chmod +x "$T/stubs/scontrol" "$T/stubs/logger" "$T/stubs/timeout" "$T/fake-preflight"
  t_config "PREFLIGHT_BIN=$(printf '%q' "$T_BIN")" "PREFLIGHT_STATE_DIR=$(printf '%q' "$T/state")" \
    'PREFLIGHT_PROLOG_ARGS="--expect-gpus 0"' 'PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 0"' \
    'PREFLIGHT_SLURM_PROLOG_TIMEOUT=none'
  t_node "State=IDLE"
}

# t_config LINE...: write the environment file the hooks read (replacing it). It hides a GPU
# machine's own GPUs from preflight (the environment file is where an admin exports such
# variables on purpose; the hooks clear those the job gives).
t_config() {
  printf '%s\n' "# written by tests/slurm/lib.sh" \
    "export CUDA_VISIBLE_DEVICES= NVIDIA_VISIBLE_DEVICES=none" "$@" >"$T/preflight.conf"
}

# t_node FIELDS: what `scontrol -o show node node01` prints, in Slurm's one-line layout.
t_node() {
  printf 'NodeName=%s Arch=x86_64 CoresPerSocket=8 CPUAlloc=0 CPUEfctv=16 CPUTot=16 CPULoad=0.10 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:8 NodeAddr=%s NodeHostName=%s Version=24.05.1 OS=Linux 6.1.0 RealMemory=1000 AllocMem=0 FreeMem=900 Sockets=2 Boards=1 %s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu BootTime=2026-01-01T00:00:00 SlurmdStartTime=2026-01-01T00:00:00 LastBusyTime=2026-01-01T00:00:00 ResumeAfterTime=None CfgTRES=cpu=16 AllocTRES= CurrentWatts=0 AveWatts=0\n' \
    "$T_NODE" "$T_NODE" "$T_NODE" "$1" >"$T/node.line"
}

# T_ENV: the environment a hook gets, as slurmd gives it (no PATH, the job's id), plus this
# test's: the config file, the harness's variables (test-harness.sh), the stand-in scontrol, and
# no NVML for preflight (no GPU visible, with the config file's variables).
t_env() {
  T_ENV=(env -i PREFLIGHT_CONFIG="$T/preflight.conf" PREFLIGHT_TEST_STUBS="$T/stubs"
    PREFLIGHT_TEST_DEFAULT_STATE_DIR="$T/default-state" PREFLIGHT_SCONTROL="$T/stubs/scontrol"
    SLURMD_NODENAME="$T_NODE" SLURM_JOB_ID=4242 PREFLIGHT_NVML_LIBRARY=/nonexistent)
}

# t_hook prolog|healthcheck [VAR=value...]: run the hook as slurmd would, from $T (T_CWD to
# start it elsewhere), with T_ENV plus the given variables. Sets T_RC, T_SECONDS.
t_hook() {
  local hook=$1 start
  shift
  start=$(date +%s%N)
  T_RC=0
  t_env
  # The hook does not inherit a lock this test holds (t_hold_lock): the lock's users it names
  # are then this test's shell alone, the same at every run.
  (if [[ -n ${T_LOCK_FD:-} ]]; then exec {T_LOCK_FD}>&-; fi
    cd "${T_CWD:-$T}" && "${T_ENV[@]}" "$@" /bin/bash "$T_HOOKS/$hook.sh" \
      >"$T/hook.out" 2>"$T/hook.err") || T_RC=$?
  T_SECONDS=$((($(date +%s%N) - start) / 1000000000))
}

t_fake() {  # t_fake MODE: the next hook runs the stand-in preflight in that mode
  printf '%s\n' "$1" >"$T/fake.mode"
  sed -i "s|^PREFLIGHT_BIN=.*|PREFLIGHT_BIN=$(printf '%q' "$T/fake-preflight")|" "$T/preflight.conf"
}

t_reset_records() {
  rm -f "$T/scontrol.calls" "$T/logger.calls" "$T/syslog" "$T/fake.calls"
}

t_expect_rc() {
  [[ $T_RC == "$1" ]] || t_fail "exit code $T_RC, expected $1"
}

# Seconds a busy machine (both cores taken by other work) may add to a hook's run in the time
# limits below: starting bash, the stand-ins, preflight and its report, each slower. A limit is
# the hook's own bound plus this, so that a hook that hangs or waits for the wrong timer still
# fails.
# shellcheck disable=SC2034  # read by the tests that source this file
T_SLACK=3

t_expect_max_seconds() {
  ((T_SECONDS <= $1)) || t_fail "took $T_SECONDS s, expected at most $1 s"
}

# t_expect_scontrol [ARGV_LINE...]: the stand-in scontrol was called exactly with these argument
# vectors, in order (each given as one string of %q-quoted words, as t_argv prints).
t_expect_scontrol() {
  local expected="" actual=""
  if (($#)); then expected=$(printf '%s\n' "$@"); fi
  if [[ -f $T/scontrol.calls ]]; then actual=$(cat "$T/scontrol.calls"); fi
  [[ $actual == "$expected" ]] ||
    t_fail "scontrol calls differ"$'\n'"expected:"$'\n'"$expected"$'\n'"actual:"$'\n'"$actual"
}

t_expect_no_scontrol() {
  [[ ! -s $T/scontrol.calls ]] || t_fail "scontrol was called: $(cat "$T/scontrol.calls")"
}

t_argv() {  # t_argv ARG...: the line the stand-ins record for this argument vector
  printf 'argc=%d' "$#"
  printf ' %q' "$@"
}

t_show() { t_argv -o show node "$T_NODE"; }

# t_expect_syslog PATTERN: exactly one syslog line, matching the bash pattern.
t_expect_syslog() {
  [[ -f $T/syslog ]] || t_fail "nothing was logged"
  local n
  n=$(wc -l <"$T/syslog")
  ((n == 1)) || t_fail "$n syslog lines, expected 1"
  # shellcheck disable=SC2053
  [[ $(cat "$T/syslog") == $1 ]] || t_fail "syslog line does not match '$1': $(cat "$T/syslog")"
}

# t_expect_gone PID: the process has ended. A zombie counts as ended: where PID 1 does not reap
# orphans (some containers), the killed process stays a zombie.
t_expect_gone() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  [[ ${stat%% *} == Z ]] || t_fail "process $1 is still running (state ${stat%% *})"
}

# t_wait_preflight_running: waits until this test's hook runs the real preflight and that has
# blocked SIGTERM and SIGINT (its supervisor handles them from then on); prints its pid. Polled
# every 0.05 s for up to 30 s: a busy machine is slow to start the hook and the binary, and a
# signal sent before that would find no preflight to pass it to, or kill it outright.
t_wait_preflight_running() {
  local deadline=$((SECONDS + 30)) pid blocked
  local -a args
  while ((SECONDS < deadline)); do
    for pid in $(pgrep -f -- "$T/state/" || true); do
      { mapfile -d '' -t args <"/proc/$pid/cmdline"; } 2>/dev/null || continue
      [[ ${args[0]:-} == "$T_BIN" && ${args[1]:-} == run ]] || continue
      blocked=$(sed -n 's/^SigBlk:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null) || continue
      # SIGINT is signal 2, SIGTERM 15: bits 1 and 14 of the mask.
      if [[ $blocked =~ ^[0-9a-f]+$ ]] && (((16#$blocked & 0x4002) == 0x4002)); then
        echo "$pid"
        return 0
      fi
    done
    sleep 0.05
  done
  t_fail "preflight did not start within 30 s"
}

# t_wait_fake_running: waits until the stand-in preflight has written its pid to $T/fake.pid
# (polled every 0.05 s, up to 30 s). Before that a killed hook would leave it starting up,
# unknown to t_cleanup, to write into $T while it is removed.
t_wait_fake_running() {
  local deadline=$((SECONDS + 30))
  until [[ -s $T/fake.pid ]]; do
    ((SECONDS < deadline)) || t_fail "the stand-in preflight did not start within 30 s"
    sleep 0.05
  done
}

# t_wait_child PID NAME: waits until process PID has a child named NAME (polled every 0.05 s, up
# to 30 s).
t_wait_child() {
  local deadline=$((SECONDS + 30))
  until pgrep -P "$1" -x "$2" >/dev/null; do
    ((SECONDS < deadline)) || t_fail "process $1 started no $2 within 30 s"
    sleep 0.05
  done
}

t_expect_file() { [[ -f $1 ]] || t_fail "missing file $1"; }
t_expect_no_file() { [[ ! -e $1 ]] || t_fail "unexpected file $1"; }

# t_craft_hostile_verdict: $T/crafted.json, a real fail verdict whose reason has been edited to
# carry quotes, a backquote and a $(...) command, `;`, a backslash, a non-ASCII letter, a
# newline, a tab, a control character and a leading "-". T_HOSTILE_CLEAN is what must come out.
# shellcheck disable=SC2016,SC2034
T_HOSTILE_CLEAN='-x dq sq touch pwn1 $(touch pwn2); touch pwn3 line2 TAB end'
t_craft_hostile_verdict() {
  local hostile line
  IFS= read -r -d '' hostile <<'END_OF_LINE' || true
  "reason": "-x \"dq\" 'sq' `touch pwn1` $(touch pwn2); touch pwn3 \\ \u00e9\nline2\tTAB\u0007end",
END_OF_LINE
  hostile=${hostile%$'\n'}
  env PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES= "$T_BIN" run --checks inventory \
    --expect-gpus 1 --json "$T/template.json" >/dev/null 2>&1 || true
  grep -q '^  "reason": "inventory: ' "$T/template.json" || t_fail "no template verdict"
  while IFS= read -r line; do
    if [[ $line == '  "reason": '* ]]; then line=$hostile; fi
    printf '%s\n' "$line"
  done <"$T/template.json" >"$T/crafted.json"
  # shellcheck disable=SC2016
  [[ $(t_field "$T/crafted.json" reason) == *'$(touch pwn2)'* ]] || t_fail "crafted verdict unreadable"
}

# t_field FILE KEY: a field of a verdict, through the real binary.
t_field() {
  "$T_BIN" report --format tsv "$1" | awk -F '\t' -v k="$2" '$1 == k { sub(/^[^\t]*\t/, ""); print }'
}

# t_dispatch "$@": run case_<name> given as the first argument (the rest are its arguments).
t_dispatch() {
  local name=$1
  shift
  declare -F "case_$name" >/dev/null || t_fail "no test case '$name'"
  "case_$name" "$@"
  printf 'ok: %s\n' "$name"
}

# t_now_stamp [SECONDS_AGO]: a time stamp as Slurm appends it to a reason ("2026-11-26T04:12:36",
# local time), now or that many seconds ago.
t_now_stamp() {
  date -d "@$(($(date +%s) - ${1:-0}))" +%Y-%m-%dT%H:%M:%S
}

# t_failure_record KIND CHECKS REASON [SECONDS_AGO]: a line of the prolog's failure records in
# the state directory, as prolog.sh writes it (node01, job 4241, exit by kind; no checks: "-").
t_failure_record() {
  local rc=3
  case $1 in fault) rc=1 ;; config) rc=2 ;; killed) rc=- ;; esac
  printf '%s\t4241\t%s\t%s\t%s\t%s\t%s\n' "$(($(date +%s) - ${4:-0}))" "$T_NODE" "$rc" "$1" \
    "${2:--}" "$3" >>"$T/state/prolog-failures.tsv"
}

# t_require_root: the attacker cases act as an unprivileged user (T_USER, through setpriv), which
# needs root; elsewhere they are skipped (77).
t_require_root() {
  if ((EUID != 0)) || ! command -v setpriv >/dev/null 2>&1; then
    echo "skipped: needs root and setpriv (util-linux) to act as an unprivileged user"
    exit 77
  fi
}

# t_as_user CMD...: runs CMD as the unprivileged user T_USER, without supplementary groups.
t_as_user() {
  setpriv --reuid="$T_USER" --regid="$T_USER" --clear-groups -- "$@"
}

# t_user_dir DIR: a folder that belongs to T_USER (its working directory, say), made by that
# user below $T (which is opened to it for the purpose).
t_user_dir() {
  chmod 0711 "$T"
  mkdir -p "$1"
  chown "$T_USER:$T_USER" "$1"
}

# t_recorded NAME: the value of NAME in the environment the stand-in preflight (mode record) was
# given; returns 1 if NAME was not set.
t_recorded() {
  [[ -f $T/preflight.env ]] || t_fail "the stand-in preflight did not run"
  t_env_value "$T/preflight.env" "$1"
}

# t_hold_lock: this shell takes the state directory's lock (made 0600 as the hooks make it, else
# they would replace it), as a running hook would, on the descriptor T_LOCK_FD; t_release_lock
# lets it go.
t_hold_lock() {
  (umask 077 && : >>"$T/state/lock")
  exec {T_LOCK_FD}>>"$T/state/lock"
  flock "$T_LOCK_FD"
}

t_release_lock() {
  exec {T_LOCK_FD}>&-
  T_LOCK_FD=""
}

# t_mode PATH: octal mode and owner, as "700 0".
t_mode() { stat -c '%a %u' -- "$1"; }
