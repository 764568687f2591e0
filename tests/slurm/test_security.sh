#!/usr/bin/env bash
# Tests of the Slurm hooks as a local user or a job would attack them (docs/slurm.md, Security):
# bash test_security.sh CASE PREFLIGHT_BINARY PROBES. The job's GPU selection, the fixed PATH and
# working directory, planted programs and libraries, library search paths, files and folders
# others can write, the lock, the test harness. Cases that act as an unprivileged user need
# root (setpriv) and are skipped elsewhere.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The job's share of the node's GPUs, which slurmd hands the prolog (CUDA_VISIBLE_DEVICES=0 and
# its kin for a job with --gres=gpu:1: tests/slurm-real measures them), never reaches preflight:
# it judges the whole node, and a healthy node passes. One exported on purpose by the
# environment file does reach it. Likewise in the shared-node setup (docs/slurm.md: inventory
# only). The stand-in records what preflight was given, then runs the real binary.
case_job_gpu_variables() {
  local -a job=(CUDA_VISIBLE_DEVICES=0 GPU_DEVICE_ORDINAL=0 ROCR_VISIBLE_DEVICES=0
    HIP_VISIBLE_DEVICES=0 ZE_AFFINITY_MASK=0 NVIDIA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=PCI_BUS_ID
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G SLURM_JOB_GPUS=0
    SLURM_STEP_GPUS=0 SLURM_GPUS_ON_NODE=1)
  local args var value
  t_fake record
  for args in "--expect-gpus 0" "--checks inventory --expect-gpus 0"; do
    printf '%s\n' "PREFLIGHT_BIN=$T/fake-preflight" "PREFLIGHT_STATE_DIR=$T/state" \
      "PREFLIGHT_PROLOG_ARGS=\"$args\"" PREFLIGHT_SLURM_PROLOG_TIMEOUT=none \
      'export NVIDIA_VISIBLE_DEVICES=all' >"$T/preflight.conf"
    rm -f "$T/preflight.env"
    t_reset_records
    t_hook prolog "${job[@]}"
    t_expect_rc 0
    t_expect_syslog "prolog: node=node01 job=4242 verdict=pass exit=0 *"
    for var in "${job[@]}"; do
      var=${var%%=*}
      [[ $var != NVIDIA_VISIBLE_DEVICES ]] || continue
      if value=$(t_recorded "$var"); then t_fail "preflight was given $var=$value ($args)"; fi
    done
    [[ $(t_recorded NVIDIA_VISIBLE_DEVICES) == all ]] ||
      t_fail "the environment file's export did not reach preflight ($args)"
    [[ $(t_recorded SLURM_JOB_ID) == 4242 ]] || t_fail "the job's id was not passed on"
  done
}

# slurmd gives no PATH (bash's default then ends in "."), and the folder a hook starts in may be
# a user's (slurmd 22.05's own, wherever a drill is typed, the job's for other Slurm versions).
# preflight still gets exactly the fixed PATH and runs in /, and nothing planted in that folder
# runs: a ./preflight (no PREFLIGHT_BIN), a
# ./scontrol (Slurm's limit read with scontrol from the fixed PATH), a ./libnvidia-ml.so.1 (the
# binary's default NVML, which a RUNPATH with an empty entry would find there). Without the
# harness's stand-ins: the hooks' own PATH.
case_fixed_path_and_folder() {
  local work=$T/work name
  if ((EUID == 0)); then t_user_dir "$work"; else mkdir -p "$work"; fi
  for name in preflight scontrol; do
    # shellcheck disable=SC2016  # $0 for the planted script
    printf '#!/bin/sh\necho "$0" >>%q\n' "$T/planted-ran" >"$work/$name"
    chmod 0755 "$work/$name"
  done
  cp "$T_PROBES/libfake-nvml.so" "$work/libnvidia-ml.so.1"
  printf 'gpus=3\ndriver=0.0.0-planted\n' >"$work/planted.conf"
  if ((EUID == 0)); then chown -R "$T_USER:$T_USER" "$work"; fi
  local -a plain=(PREFLIGHT_TEST_STUBS= PREFLIGHT_SCONTROL= PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto
    PREFLIGHT_NVML_LIBRARY= FAKE_NVML_CONFIG="$work/planted.conf")
  local d installed=0
  for d in ${T_SYSTEM_PATH//:/ }; do [[ -x $d/preflight ]] && installed=1; done
  if ((!installed)); then
    T_CWD=$work t_hook prolog "${plain[@]}" PREFLIGHT_BIN=
    t_expect_rc 3
    grep -q "reason=tool error: preflight binary not found" "$T/hook.err" ||
      t_fail "not a missing binary: $(cat "$T/hook.err")"
  fi
  t_fake record
  T_CWD=$work t_hook prolog "${plain[@]}" PREFLIGHT_PROLOG_ARGS="--checks inventory --expect-gpus 0"
  t_expect_rc 0
  [[ $(t_recorded PATH) == "$T_SYSTEM_PATH" ]] || t_fail "preflight's PATH: $(t_recorded PATH)"
  [[ $(cat "$T/preflight.cwd") == / ]] || t_fail "preflight ran in $(cat "$T/preflight.cwd")"
  t_expect_no_file "$T/planted-ran"
  ! grep -q planted "$T/state/prolog.json" || t_fail "preflight loaded the planted libnvidia-ml.so.1"
  t_expect_no_file "$T/syslog"  # the stand-in logger was not on the hooks' PATH
}

# The hooks refuse a program whose library search path names the working directory (an empty
# entry) or a folder relative to it: root would load a user's library from there. $ORIGIN and
# absolute folders pass. trust.sh's reader agrees with readelf, and the build's binary has no
# RUNPATH at all (CMake's build RPATH ended in an empty entry).
case_runpath() {
  [[ -d $T_PROBES ]] || t_fail "no folder of test programs given"
  local kind
  for kind in empty:'/usr/lib:' relative:"/usr/lib:lib" rpath:'/opt/preflight-test::/usr/lib'; do
    t_reset_records
    t_hook prolog PREFLIGHT_BIN="$T_PROBES/runpath_${kind%%:*}"
    t_expect_rc 2
    t_expect_syslog "prolog: * exit=2 reason=configuration error: PREFLIGHT_BIN $T_PROBES/runpath_${kind%%:*}: its library search path ${kind#*:} has *"
  done
  # Accepted: it runs (and, being no preflight, leaves no verdict: a tool error).
  t_reset_records
  t_hook prolog PREFLIGHT_BIN="$T_PROBES/runpath_origin"
  t_expect_rc 3
  t_expect_syslog "* reason=tool error: exit 0 without a readable verdict; *"
  if command -v readelf >/dev/null 2>&1; then
    local f ours theirs
    for f in "$T_BIN" "$T_PROBES"/runpath_*; do
      # shellcheck source=scripts/slurm/trust.sh
      ours=$(source "$T_SRC_HOOKS/trust.sh" && pf_elf_search_paths "$f" && printf '%s\n' "${PF_ELF_PATHS[@]}")
      theirs=$(readelf -d "$f" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
      [[ $ours == "$theirs" ]] || t_fail "${f##*/}: trust.sh read '$ours', readelf '$theirs'"
    done
    local dynamic
    dynamic=$(readelf -d "$T_BIN")
    if grep -qE '\((RUNPATH|RPATH)\)' <<<"$dynamic"; then t_fail "$T_BIN has a RUNPATH"; fi
  fi
}

# Files and folders a user could write are refused (a configuration error, exit 2, nothing run
# or written there), as sshd's StrictModes would: a binary or environment file of a user's, or
# writable by group or others, or reached through a user's symbolic link; a state directory of
# a user's, or writable by others. A sticky folder above (as /tmp is) is fine.
case_untrusted_files() {
  t_require_root
  t_user_dir "$T/user"
  mkdir -p "$T/sticky"
  chmod 1777 "$T/sticky"
  # Programs that would pass but for whose they are or where they lie: a script is judged on
  # ownership alone.
  local name
  for name in bin/own-by-user bin/group-writable user/preflight; do
    printf '#!/bin/sh\nexit 0\n' >"$T/$name"
    chmod 0755 "$T/$name"
  done
  chown "$T_USER" "$T/bin/own-by-user"
  chmod 0775 "$T/bin/group-writable"
  t_as_user ln -s "$T_BIN" "$T/sticky/link"
  local -a bad=(
    "PREFLIGHT_BIN=$T/bin/own-by-user|PREFLIGHT_BIN $T/bin/own-by-user: $T/bin/own-by-user belongs to uid $T_USER, not root"
    "PREFLIGHT_BIN=$T/bin/group-writable|PREFLIGHT_BIN $T/bin/group-writable: $T/bin/group-writable can be written by group or others (mode 0775)"
    "PREFLIGHT_BIN=$T/user/preflight|PREFLIGHT_BIN $T/user/preflight: $T/user belongs to uid $T_USER, not root"
    "PREFLIGHT_BIN=$T/sticky/link|PREFLIGHT_BIN $T/sticky/link: the symbolic link $T/sticky/link belongs to uid $T_USER, not root"
    "PREFLIGHT_STATE_DIR=$T/user/state|state directory $T/user/state: the folder above it, $T/user: $T/user belongs to uid $T_USER, not root"
  )
  local item
  for item in "${bad[@]}"; do
    t_reset_records
    t_hook prolog "${item%%|*}"
    t_expect_rc 2
    t_expect_syslog "prolog: node=node01 job=4242 verdict=none exit=2 reason=configuration error: ${item#*|}*"
  done
  t_expect_no_file "$T/user/state"
  # The state directory itself: of a user's, writable by others, sticky and writable by others.
  mkdir -p "$T/s-user" "$T/s-world" "$T/s-sticky"
  chown "$T_USER" "$T/s-user"
  chmod 0777 "$T/s-world"
  chmod 1777 "$T/s-sticky"
  for item in s-user s-world s-sticky; do
    t_reset_records
    t_hook prolog PREFLIGHT_STATE_DIR="$T/$item"
    t_expect_rc 2
    grep -q "reason=configuration error: state directory $T/$item: " "$T/syslog" ||
      t_fail "$item: $(cat "$T/syslog")"
    [[ -z $(ls -A "$T/$item") ]] || t_fail "the hook wrote into $T/$item: $(ls -A "$T/$item")"
  done
  # The environment file: a user's, writable by others, a user's link to a good one.
  cp "$T/preflight.conf" "$T/user.conf"
  chown "$T_USER" "$T/user.conf"
  cp "$T/preflight.conf" "$T/world.conf"
  chmod 0666 "$T/world.conf"
  t_as_user ln -s "$T/preflight.conf" "$T/sticky/env.conf"
  for item in user.conf world.conf sticky/env.conf; do
    t_reset_records
    t_hook prolog PREFLIGHT_CONFIG="$T/$item"
    t_expect_rc 2
    grep -q "reason=configuration error: environment file $T/$item: " "$T/syslog" ||
      t_fail "$item: $(cat "$T/syslog")"
  done
  # A root-owned file in a sticky folder is fine.
  cp "$T/preflight.conf" "$T/sticky/root.conf"
  t_reset_records
  t_hook prolog PREFLIGHT_CONFIG="$T/sticky/root.conf"
  t_expect_rc 0
}

# A user cannot hold the lock: the state directory is 0700. One of an older version (0755, the
# lock 0644) is made 0700 and its lock replaced, so a user who opened and locked the old lock
# file blocks nothing: the prolog runs at once, and the user cannot open the new one.
case_lock_held_by_user() {
  t_require_root
  chmod 0711 "$T"
  chmod 0755 "$T/state"
  (umask 022 && : >"$T/state/lock")
  # One process holds it (bash takes the lock, then becomes sleep), so that one kill ends it.
  # shellcheck disable=SC2016
  setpriv --reuid="$T_USER" --regid="$T_USER" --clear-groups -- \
    bash -c 'exec 9<"$1" && flock 9 && exec sleep 60' holder "$T/state/lock" \
    </dev/null >/dev/null 2>&1 &
  local holder=$! deadline=$((SECONDS + 30))
  until ! flock -n "$T/state/lock" true; do
    ((SECONDS < deadline)) || t_fail "the user's flock did not take the lock within 30 s"
    sleep 0.05
  done
  t_hook prolog PREFLIGHT_LOCK_WAIT=60
  local rc=$T_RC
  kill "$holder" 2>/dev/null || true
  wait "$holder" 2>/dev/null || true
  T_RC=$rc
  t_expect_rc 0
  # Far less than the 60 s a prolog that waited for the user's lock would take, and room for the
  # quick profile on a busy machine.
  t_expect_max_seconds 30
  [[ $(t_mode "$T/state") == "700 0" && $(t_mode "$T/state/lock") == "600 0" ]] ||
    t_fail "state $(t_mode "$T/state"), lock $(t_mode "$T/state/lock")"
  if t_as_user flock -n "$T/state/lock" true 2>/dev/null; then t_fail "the user could take the new lock"; fi
}

# The metrics files go only into a folder no one else can write. One of a user's (who planted
# symbolic links at the names the old health check wrote through), or writable by others,
# sticky or not, is a configuration error: nothing is written there, nothing through the links.
# In a folder of root's the health check's file appears, 0644 for node_exporter, whoever owns
# the folders above.
case_untrusted_metrics_folder() {
  t_require_root
  echo intact >"$T/victim"
  t_user_dir "$T/m-user"
  local n
  for ((n = 0; n < 50; n++)); do
    t_as_user ln -s "$T/victim" "$T/m-user/preflight-healthcheck.prom.$n.tmp"
  done
  t_as_user ln -s "$T/victim" "$T/m-user/preflight-healthcheck.prom"
  mkdir -p "$T/m-world" "$T/m-sticky" "$T/m-root"
  chmod 0777 "$T/m-world"
  chmod 1777 "$T/m-sticky"
  local dir hook
  for dir in m-user m-world m-sticky; do
    for hook in healthcheck prolog; do
      t_reset_records
      t_hook "$hook" PREFLIGHT_PROM="$T/$dir/preflight.prom"
      t_expect_rc 2
      t_expect_no_scontrol
      grep -q "configuration error: metrics folder of PREFLIGHT_PROM $T/$dir: $T/$dir " "$T/syslog" ||
        t_fail "$hook, $dir: $(cat "$T/syslog")"
    done
    [[ $(cat "$T/victim") == intact ]] || t_fail "written through a link in $dir"
    [[ -z $(find "$T/$dir" -mindepth 1 ! -type l -print -quit) ]] || t_fail "a file was written into $dir"
  done
  # A folder of root's, also below one of a service account's (Debian's node_exporter package
  # gives /var/lib/prometheus to its user and keeps node-exporter/ below it root's).
  mkdir -p "$T/m-user/root-owned"
  chown root:root "$T/m-user/root-owned"
  for dir in m-root m-user/root-owned; do
    t_reset_records
    t_hook healthcheck PREFLIGHT_PROM="$T/$dir/preflight.prom"
    t_expect_rc 0
    [[ $(t_mode "$T/$dir/preflight-healthcheck.prom") == "644 0" ]] ||
      t_fail "the health check's metrics file: $(t_mode "$T/$dir/preflight-healthcheck.prom")"
    t_expect_file "$T/$dir/preflight.prom"
  done
  [[ $(cat "$T/victim") == intact ]] || t_fail "written through a link"
}

# PREFLIGHT_TEST_* work only beside test-harness.sh, which only the tests put beside the hooks:
# the repository's hooks, like the installed ones, ignore them. The original health check, given
# the harness's variables: preflight gets the fixed PATH (no stand-ins), the stand-in logger never
# runs, and a prolog's record in the test's default state directory is not found, so a "Prolog
# error" drain stays. With the harness, the record counts and the node is resumed.
case_harness_only_in_tests() {
  t_expect_no_file "$T_SRC_HOOKS/test-harness.sh"
  mkdir -p "$T/default-state"
  printf '%s\t4241\tnode01\t3\ttool\t-\ttool error: exit 3\n' "$(date +%s)" \
    >"$T/default-state/prolog-failures.tsv"
  t_node "State=IDLE+DRAIN Reason=Prolog error [root@$(t_now_stamp 0)]"
  t_fake record
  T_HOOKS=$T_SRC_HOOKS t_hook healthcheck PREFLIGHT_SYSLOG_TAG=preflight-test
  t_expect_rc 0
  [[ $(t_recorded PATH) == "$T_SYSTEM_PATH" ]] || t_fail "preflight's PATH: $(t_recorded PATH)"
  t_expect_no_file "$T/syslog"
  t_expect_scontrol "$SHOW" "$SHOW"
  grep -q "action=none: drained by someone else" "$T/hook.err" || t_fail "$(cat "$T/hook.err")"
  t_reset_records
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
}

t_setup "$2" "${3:-}"
SHOW=$(t_show)
t_dispatch "$1"
