#!/usr/bin/env bash
# Tests of scripts/slurm/prolog.sh (docs/slurm.md): bash test_prolog.sh CASE PREFLIGHT_BINARY.
# Each case runs the prolog as slurmd would, against stand-in scontrol and logger, and checks
# the exit code, the one syslog line, the files in the state directory, and that the prolog
# never calls scontrol.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Healthy node: exit 0, the verdict kept as prolog.json, last.json and in history/, one line.
case_healthy() {
  mkdir -p "$T/state/.run.old" "$T/state/.run.recent"
  touch -d '2 days ago' "$T/state/.run.old"
  t_hook prolog
  t_expect_rc 0
  t_expect_syslog "prolog: node=node01 job=4242 verdict=pass exit=0 duration=*s"
  t_expect_file "$T/state/prolog.json"
  cmp -s "$T/state/prolog.json" "$T/state/last.json" || t_fail "last.json differs from prolog.json"
  [[ $(t_field "$T/state/prolog.json" verdict) == pass ]] || t_fail "prolog.json is not a pass"
  local -a hist=("$T"/state/history/prolog-*-pass.json)
  if ((${#hist[@]} != 1)) || [[ ! -f ${hist[0]} ]]; then
    t_fail "expected one history file: ${hist[*]}"
  fi
  t_expect_no_file "$T/state/healthcheck.json"
  t_expect_no_file "$T/state/.run.old"
  rmdir "$T/state/.run.recent" || t_fail "a recent scratch directory was removed"
  [[ -z $(find "$T/state" -name '.*' ! -name . -print -quit) ]] || t_fail "temporary files left"
  t_expect_no_scontrol
  grep -q -- '-t preflight -p daemon.info --' "$T/logger.calls" || t_fail "logger options"
  # Only root can read what the hooks keep: the folders 0700 (made so: t_setup's was 0755), the
  # files they write 0600.
  local f
  for f in "$T/state" "$T/state/history"; do
    [[ $(t_mode "$f") == "700 $EUID" ]] || t_fail "$f: mode and owner $(t_mode "$f"), expected 700"
  done
  for f in "$T/state/prolog.json" "$T/state/last.json" "${hist[0]}" "$T/state/lock"; do
    [[ $(t_mode "$f") == "600 $EUID" ]] || t_fail "$f: mode and owner $(t_mode "$f"), expected 600"
  done
}

# No GPU where one is expected: exit 1 (slurmd drains and requeues), reason from the verdict.
case_unhealthy() {
  t_hook prolog PREFLIGHT_PROLOG_ARGS="--expect-gpus 1"
  t_expect_rc 1
  local reason
  reason=$(t_field "$T/state/prolog.json" reason)
  [[ $reason == "inventory: "* ]] || t_fail "unexpected verdict reason '$reason'"
  t_expect_syslog "prolog: node=node01 job=4242 verdict=fail exit=1 duration=*s reason=$reason; slurmd drains the node and requeues the job"
  t_expect_file "$T/state/history/"prolog-*-fail.json
  t_expect_no_scontrol
}

# A check that hangs: preflight's own --timeout (PREFLIGHT_TIMEOUT - 5) ends it with a fail
# verdict whose reason says the fault was injected.
case_hang_inside_deadline() {
  # 10 s: preflight's --timeout 5 holds the floor of a node without GPUs (4 s, docs/plan.md).
  t_hook prolog PREFLIGHT_TIMEOUT=10 \
    PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --inject-fault hang@check=inventory"
  t_expect_rc 1
  t_expect_max_seconds 14
  t_expect_syslog "prolog: * verdict=fail exit=1 * reason=injected fault: *"
  t_expect_no_scontrol
}

# preflight itself does not end (ignores SIGTERM): the outer deadline kills it, the prolog ends
# in bounded time, fails closed with exit 3, and leaves no process behind. SIGTERM at 6 s,
# SIGKILL at 11 s; the prolog gives up waiting at 14 s (then the stuck process would be left).
case_outer_deadline() {
  t_fake stuck
  t_hook prolog PREFLIGHT_TIMEOUT=6
  t_expect_rc 3
  t_expect_max_seconds $((6 + 5 + 3 + T_SLACK))
  t_expect_syslog "prolog: node=node01 job=4242 verdict=none exit=3 reason=did not finish within 6 s; prolog fails, *"
  local pid
  pid=$(cat "$T/fake.pid")
  t_expect_gone "$pid"
  t_expect_no_file "$T/state/prolog.json"
  t_expect_no_scontrol
}

# Even SIGKILL does not end the run (a process stuck in the kernel): the prolog stops waiting
# PREFLIGHT_TIMEOUT + 8 s after the start and fails closed.
case_unkillable() {
  t_fake unkillable
  t_hook prolog PREFLIGHT_TIMEOUT=6
  t_expect_rc 3
  t_expect_max_seconds $((6 + 8 + T_SLACK))
  ((T_SECONDS >= 13)) || t_fail "gave up after $T_SECONDS s, before the SIGKILL grace"
  t_expect_syslog "prolog: node=node01 job=4242 verdict=none exit=3 reason=did not finish within 6 s; *"
}

# preflight exits 2 or 3, or 0 without a verdict: a tool error, failing closed by default.
case_tool_errors() {
  t_fake exit3
  t_hook prolog
  t_expect_rc 3
  t_expect_syslog "prolog: * verdict=none exit=3 reason=tool error: exit 3 (internal error): preflight: internal error: boom x; prolog fails, *"
  t_reset_records
  t_fake exit0-no-verdict
  t_hook prolog
  t_expect_rc 3
  t_expect_syslog "* reason=tool error: exit 0 without a readable verdict; prolog fails, *"
  # The real binary refusing an argument (exit 2).
  t_reset_records
  t_hook prolog PREFLIGHT_BIN="$T_BIN" PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --no-such-flag"
  t_expect_rc 3
  t_expect_syslog "* verdict=none exit=3 reason=tool error: exit 2 (invalid invocation or configuration)*"
  t_expect_no_file "$T/state/prolog.json"
  t_expect_no_scontrol
}

# PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass lets the job start, and says so.
case_tool_error_pass() {
  t_fake exit3
  t_hook prolog PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass
  t_expect_rc 0
  t_expect_syslog "prolog: * verdict=none exit=0 reason=tool error: exit 3 *; job allowed to start (PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass)"
  grep -q -- '-p daemon.warning' "$T/logger.calls" || t_fail "not logged as a warning"
  # A stuck preflight likewise.
  t_reset_records
  t_fake stuck
  t_hook prolog PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass PREFLIGHT_TIMEOUT=6
  t_expect_rc 0
  t_expect_syslog "* reason=did not finish within 6 s; job allowed to start *"
}

# Invalid configuration: exit 2, one line, preflight not run, nothing written.
case_config_errors() {
  local -a bad=(
    "PREFLIGHT_CONFIG=$T/missing.conf|PREFLIGHT_CONFIG=$T/missing.conf does not exist"
    "PREFLIGHT_TIMEOUT=abc|PREFLIGHT_TIMEOUT=abc: not a whole number from 6 to 86400"
    "PREFLIGHT_TIMEOUT=5|PREFLIGHT_TIMEOUT=5: not a whole number*"
    "PREFLIGHT_HISTORY=-1|PREFLIGHT_HISTORY=-1: not*"
    "PREFLIGHT_PROLOG_ON_TOOL_ERROR=maybe|PREFLIGHT_PROLOG_ON_TOOL_ERROR=maybe: not one of: fail pass"
    "PREFLIGHT_STATE_DIR=relative/dir|PREFLIGHT_STATE_DIR=relative/dir: not an absolute path"
    "PREFLIGHT_NODENAME=-rf|node name -rf: not a host name*"
    "PREFLIGHT_PROLOG_ARGS=--json /tmp/x|PREFLIGHT_PROLOG_ARGS must not contain --json*"
    "PREFLIGHT_PROLOG_ARGS=--timeout=3|PREFLIGHT_PROLOG_ARGS must not contain --timeout=3*"
    "PREFLIGHT_BIN=$T/nothing|PREFLIGHT_BIN $T/nothing does not exist"
    "PREFLIGHT_BIN=$T/preflight.conf|PREFLIGHT_BIN $T/preflight.conf is not executable"
    "PREFLIGHT_BIN=build/preflight|PREFLIGHT_BIN=build/preflight: not an absolute path"
    "PREFLIGHT_SCONTROL=scontrol|PREFLIGHT_SCONTROL=scontrol: not an absolute path"
    "PREFLIGHT_CONFIG=preflight.conf|PREFLIGHT_CONFIG=preflight.conf: not an absolute path"
    "PREFLIGHT_HEALTHCHECK_LOCK_SKIPS=-1|PREFLIGHT_HEALTHCHECK_LOCK_SKIPS=-1: not a whole number from 0 to 1000"
    "PREFLIGHT_SYSLOG_TAG=a b|PREFLIGHT_SYSLOG_TAG=a b: not 1 to 32*"
  )
  local item
  for item in "${bad[@]}"; do
    t_reset_records
    t_hook prolog "${item%%|*}"
    t_expect_rc 2
    t_expect_syslog "prolog: node=* job=4242 verdict=none exit=2 reason=configuration error: ${item#*|}; prolog fails, slurmd drains the node and requeues the job"
  done
  # A file that is not valid shell.
  t_reset_records
  printf 'PREFLIGHT_TIMEOUT=30\nif then\n' >"$T/broken.conf"
  t_hook prolog PREFLIGHT_CONFIG="$T/broken.conf"
  t_expect_rc 2
  t_expect_syslog "prolog: node=node01 job=4242 verdict=none exit=2 reason=configuration error: $T/broken.conf failed *"
  t_expect_no_file "$T/state/prolog.json"
  t_expect_no_file "$T/state/lock"
}

# The environment file sets the state directory, history depth, syslog tag and arguments; the
# environment wins over it; PREFLIGHT_CONFIG= (empty) reads no file.
case_env_file() {
  cat >"$T/site.conf" <<EOF
# site settings
export CUDA_VISIBLE_DEVICES= NVIDIA_VISIBLE_DEVICES=none
PREFLIGHT_BIN=$(printf '%q' "$T_BIN")
PREFLIGHT_STATE_DIR=$(printf '%q' "$T/site-state")
PREFLIGHT_HISTORY=1
PREFLIGHT_SYSLOG_TAG=gpucheck
PREFLIGHT_PROLOG_ARGS="--expect-gpus 1 --checks inventory"
EOF
  t_hook prolog PREFLIGHT_CONFIG="$T/site.conf"
  t_expect_rc 1
  t_expect_file "$T/site-state/prolog.json"
  t_expect_no_file "$T/state/prolog.json"
  grep -q -- '-t gpucheck ' "$T/logger.calls" || t_fail "syslog tag from the file not used"
  grep -q 'gpucheck: prolog: ' "$T/hook.err" || t_fail "stderr line lacks the tag"
  # The environment overrides the file: now healthy.
  t_reset_records
  t_hook prolog PREFLIGHT_CONFIG="$T/site.conf" PREFLIGHT_PROLOG_ARGS="--expect-gpus 0"
  t_expect_rc 0
  t_expect_syslog "prolog: * verdict=pass *"
  local -a hist=("$T"/site-state/history/prolog-*.json)
  ((${#hist[@]} == 1)) || t_fail "PREFLIGHT_HISTORY=1 kept ${#hist[@]} files"
  # No file at all: the defaults, with the variables given in the environment.
  t_reset_records
  t_hook prolog PREFLIGHT_CONFIG= PREFLIGHT_BIN="$T_BIN" PREFLIGHT_STATE_DIR="$T/env-state" \
    PREFLIGHT_PROLOG_ARGS="--expect-gpus 0"
  t_expect_rc 0
  t_expect_file "$T/env-state/prolog.json"
  grep -q -- '-t preflight ' "$T/logger.calls" || t_fail "default syslog tag not used"
}

# scripts/slurm/preflight.default documents every variable with its default: uncommenting all
# of its lines changes no setting.
case_example_defaults() {
  sed -n 's/^#\(PREFLIGHT_[A-Z_]*=\)/\1/p' "$T_SRC_HOOKS/preflight.default" >"$T/uncommented.conf"
  # shellcheck disable=SC2016
  local dump='PF_HOOK=test; source "$1/common.sh"; pf_init; pf_load_config
    for v in "${PF_VARS[@]}"; do printf "%s=%q\n" "$v" "${!v}"; done'
  local plain example
  plain=$(env -i PATH=/usr/bin:/bin SLURMD_NODENAME=node01 PREFLIGHT_CONFIG= \
    bash -c "$dump" dump "$T_HOOKS" 2>&1) || t_fail "defaults: $plain"
  example=$(env -i PATH=/usr/bin:/bin SLURMD_NODENAME=node01 PREFLIGHT_CONFIG="$T/uncommented.conf" \
    bash -c "$dump" dump "$T_HOOKS" 2>&1) || t_fail "example file: $example"
  [[ $plain == "$example" ]] || t_fail "example file differs from the defaults:"$'\n'"$(
    diff <(echo "$plain") <(echo "$example"))"
  local listed
  listed=$(grep -c '^#PREFLIGHT_[A-Z_]*=' "$T_SRC_HOOKS/preflight.default")
  ((listed == $(wc -l <<<"$plain"))) || t_fail "preflight.default lists $listed variables"
  [[ $plain == *"PREFLIGHT_TIMEOUT=120"* ]] || t_fail "unexpected defaults: $plain"
}

# History keeps the newest PREFLIGHT_HISTORY files of this hook; other files stay.
case_history_rotation() {
  mkdir -p "$T/state/history"
  : >"$T/state/history/prolog-20000101T000000.000000000Z-pass.json"
  : >"$T/state/history/prolog-20000101T000001.000000000Z-fail.json"
  : >"$T/state/history/healthcheck-20000101T000000.000000000Z-pass.json"
  : >"$T/state/history/notes.txt"
  for _ in 1 2 3 4; do
    t_hook prolog PREFLIGHT_HISTORY=3 PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --checks inventory"
    t_expect_rc 0
  done
  local -a kept=("$T"/state/history/prolog-*.json)
  ((${#kept[@]} == 3)) || t_fail "kept ${#kept[@]} prolog verdicts, expected 3: ${kept[*]}"
  [[ ${kept[0]} != *20000101* ]] || t_fail "the oldest verdicts were not removed"
  t_expect_file "$T/state/history/healthcheck-20000101T000000.000000000Z-pass.json"
  t_expect_file "$T/state/history/notes.txt"
  local f
  for f in "${kept[@]}"; do
    [[ $(t_field "$f" verdict) == pass ]] || t_fail "$f is not a whole verdict"
  done
  cmp -s "${kept[2]}" "$T/state/prolog.json" || t_fail "newest history file is not prolog.json"
  # 0 keeps none.
  t_hook prolog PREFLIGHT_HISTORY=0 PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --checks inventory"
  kept=("$T"/state/history/prolog-*.json)
  ((${#kept[@]} == 3)) || t_fail "PREFLIGHT_HISTORY=0 changed the history"
}

# PREFLIGHT_USE_HISTORY=yes: each run is also judged against the node's own verdicts in
# history/ (preflight run --history, docs/baseline.md); off by default. The same unhealthy run
# three times: only the run with the setting on says the node keeps failing (REPEATED_FAILURES),
# and the verdict records the folder it read.
case_use_history() {
  local failing="--expect-gpus 1 --checks inventory"
  t_hook prolog PREFLIGHT_PROLOG_ARGS="$failing"
  t_expect_rc 1
  t_hook prolog PREFLIGHT_PROLOG_ARGS="$failing"
  t_expect_rc 1
  ! grep -q REPEATED_FAILURES "$T/state/prolog.json" ||
    t_fail "history used without PREFLIGHT_USE_HISTORY=yes"
  t_hook prolog PREFLIGHT_USE_HISTORY=yes PREFLIGHT_PROLOG_ARGS="$failing"
  t_expect_rc 1
  grep -q '"code": "REPEATED_FAILURES"' "$T/state/prolog.json" ||
    t_fail "no REPEATED_FAILURES after three unhealthy runs with PREFLIGHT_USE_HISTORY=yes"
  grep -q "\"history_dir\": \"$T/state/history\"" "$T/state/prolog.json" ||
    t_fail "the verdict does not record the history folder"
  t_hook prolog PREFLIGHT_USE_HISTORY=maybe PREFLIGHT_PROLOG_ARGS="$failing"
  t_expect_rc 2
  grep -q "configuration error: PREFLIGHT_USE_HISTORY" "$T/syslog" ||
    t_fail "PREFLIGHT_USE_HISTORY=maybe was not refused by name"
}

# A verdict file whose reason is hostile: the syslog line is one printable line without quotes,
# and nothing in the reason is executed.
case_hostile_reason() {
  t_craft_hostile_verdict
  t_fake verdict1
  t_hook prolog
  t_expect_rc 1
  t_expect_syslog "prolog: node=node01 job=4242 verdict=fail exit=1 duration=*s reason=$T_HOSTILE_CLEAN; slurmd drains *"
  local f
  for f in "$T/pwn1" "$T/pwn2" "$T/pwn3" /pwn1 /pwn2 /pwn3; do t_expect_no_file "$f"; done
  t_expect_no_scontrol
}

# Where the binary comes from without PREFLIGHT_BIN: the fixed PATH, then the installed layout
# next to the hooks; never a build tree beside them, nor a ./preflight in the working directory
# (slurmd passes no PATH, and bash's default one ends in "."). None at all is a tool error.
case_find_binary() {
  local d
  for d in ${T_SYSTEM_PATH//:/ }; do
    if [[ -x $d/preflight ]]; then
      echo "skipped: $d/preflight is installed, so the search would find it first"
      exit 77
    fi
  done
  mkdir -p "$T/prefix/bin" "$T/prefix/build" "$T/work"
  t_hooks_under_test "$T_SRC_HOOKS" "$T/prefix/libexec/preflight" || t_fail "cannot copy the hooks"
  ln -s "$T_BIN" "$T/prefix/bin/preflight"
  t_config "PREFLIGHT_STATE_DIR=$T/state" 'PREFLIGHT_PROLOG_ARGS="--expect-gpus 0"'
  T_HOOKS=$T/prefix/libexec/preflight t_hook prolog
  t_expect_rc 0
  t_reset_records
  rm "$T/prefix/bin/preflight"
  ln -s "$T_BIN" "$T/prefix/build/preflight"
  printf '#!/bin/sh\ntouch %q\n' "$T/planted-ran" >"$T/work/preflight"
  chmod 0755 "$T/work/preflight"
  T_CWD=$T/work T_HOOKS=$T/prefix/libexec/preflight t_hook prolog
  t_expect_rc 3
  t_expect_syslog "prolog: * verdict=none exit=3 reason=tool error: preflight binary not found *"
  t_expect_no_file "$T/planted-ran"
}

# A health check holding the lock: the prolog waits PREFLIGHT_LOCK_WAIT, then fails closed,
# naming the holder (this test's shell, from /proc/locks).
case_lock_busy() {
  t_hold_lock
  t_hook prolog PREFLIGHT_LOCK_WAIT=2
  t_release_lock
  t_expect_rc 3
  # The 2 s wait and about 2 s for the rest; the lock stays held, so a hook not giving up hangs.
  t_expect_max_seconds $((2 + 2 + T_SLACK))
  t_expect_syslog "* reason=tool error: another preflight run held the lock $T/state/lock for 2 s (open in pid $$ (bash)); *"
}

# slurmd's SIGTERM (PrologEpilogTimeout) reaches preflight, which writes a partial verdict; the
# prolog ends within seconds, unhealthy. The signal goes once preflight runs (polled, not slept:
# a busy machine is slow to get there); about 1 s idle, 10 s allowed for a busy machine, where
# a signal not passed on would leave the prolog to its 120 s.
case_sigterm() {
  cd "$T"
  t_env
  "${T_ENV[@]}" PREFLIGHT_TIMEOUT=120 \
    PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --inject-fault hang@check=inventory" \
    /bin/bash "$T_HOOKS/prolog.sh" >"$T/hook.out" 2>"$T/hook.err" &
  local pid=$! start
  t_wait_preflight_running >/dev/null
  start=$SECONDS
  kill -TERM "$pid" || t_fail "prolog process not found"
  T_RC=0
  wait "$pid" || T_RC=$?
  t_expect_rc 1
  ((SECONDS - start <= 10)) || t_fail "the prolog took $((SECONDS - start)) s after SIGTERM"
  t_expect_syslog "prolog: * verdict=fail exit=1 * reason=injected fault: *SIGTERM* (prolog interrupted by SIGTERM); *"
  # While it waits for the lock (its flock runs: polled): it stops at once, exit 3. 10 s allowed
  # for a busy machine, where a signal not heeded would leave it waiting 60 s.
  t_reset_records
  t_hold_lock
  "${T_ENV[@]}" PREFLIGHT_LOCK_WAIT=60 /bin/bash "$T_HOOKS/prolog.sh" >"$T/hook.out" 2>"$T/hook.err" &
  pid=$!
  t_wait_child "$pid" flock
  start=$SECONDS
  kill -TERM "$pid" || t_fail "prolog process not found"
  T_RC=0
  wait "$pid" || T_RC=$?
  t_release_lock
  t_expect_rc 3
  ((SECONDS - start <= 10)) || t_fail "the prolog took $((SECONDS - start)) s after SIGTERM"
  t_expect_syslog "prolog: node=node01 interrupted by SIGTERM before preflight ran; exit 3"
  t_expect_no_file "$T/fake.calls"
  [[ -z $(find "$T/state" -name '.run.*' -print -quit) ]] || t_fail "scratch directory left"
}

# PREFLIGHT_PROM is passed as --prom when this preflight has the flag.
case_prom() {
  # Read whole, then matched: `| grep -q` under pipefail fails when grep exits before the
  # writer is done (SIGPIPE).
  local help
  help=$("$T_BIN" run --help 2>&1) || true
  if ! grep -q -- '--prom' <<<"$help"; then
    echo "skipped: this preflight has no --prom"
    exit 77
  fi
  mkdir "$T/textfile"
  t_hook prolog PREFLIGHT_PROM="$T/textfile/preflight.prom"
  t_expect_rc 0
  t_expect_file "$T/textfile/preflight.prom"
}

# Every failure the prolog causes is recorded (time, job, node, exit, kind, failed checks,
# reason) for the health check; a healthy run adds nothing and no marker stays behind.
case_failure_record() {
  t_hook prolog
  t_expect_rc 0
  t_expect_no_file "$T/state/prolog-failures.tsv"
  t_hook prolog PREFLIGHT_PROLOG_ARGS="--expect-gpus 1"
  t_expect_rc 1
  local epoch job node rc kind checks reason
  IFS=$'\t' read -r epoch job node rc kind checks reason <"$T/state/prolog-failures.tsv"
  ((epoch >= $(date +%s) - 60)) || t_fail "record time $epoch"
  [[ $job == 4242 && $node == node01 && $rc == 1 && $kind == fault && $checks == inventory ]] ||
    t_fail "record: $(cat "$T/state/prolog-failures.tsv")"
  [[ $reason == "$(t_field "$T/state/prolog.json" reason)" ]] || t_fail "record reason '$reason'"
  # A tool error and a configuration error are recorded with their kind.
  t_fake exit3
  t_hook prolog
  t_expect_rc 3
  t_hook prolog PREFLIGHT_TIMEOUT=0
  t_expect_rc 2
  [[ $(cut -f4,5 "$T/state/prolog-failures.tsv" | paste -sd' ') == "1	fault 3	tool 2	config" ]] ||
    t_fail "records: $(cat "$T/state/prolog-failures.tsv")"
  [[ $(cut -f7 "$T/state/prolog-failures.tsv" | sed -n 3p) == "configuration error: PREFLIGHT_TIMEOUT=0: "* ]] ||
    t_fail "config record: $(sed -n 3p "$T/state/prolog-failures.tsv")"
  [[ -z $(find "$T/state" -name 'prolog.running.*' -print -quit) ]] || t_fail "marker left"
  # At most 20 records, the newest kept.
  for _ in $(seq 1 25); do t_hook prolog PREFLIGHT_TIMEOUT=0; done
  (($(wc -l <"$T/state/prolog-failures.tsv") == 20)) || t_fail "records not capped at 20"
  [[ $(cut -f5 "$T/state/prolog-failures.tsv" | sort -u) == config ]] || t_fail "oldest not dropped"
}

# A configuration error follows PREFLIGHT_PROLOG_ON_TOOL_ERROR when the file set it: pass lets
# the job start (exit 0, a warning, no record).
case_config_error_pass() {
  t_hook prolog PREFLIGHT_TIMEOUT=0 PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass
  t_expect_rc 0
  t_expect_syslog "prolog: node=node01 job=4242 verdict=none exit=0 reason=configuration error: PREFLIGHT_TIMEOUT=0: *; job allowed to start (PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass)"
  t_expect_no_file "$T/state/prolog-failures.tsv"
  t_reset_records
  printf 'PREFLIGHT_PROLOG_ON_TOOL_ERROR=pass\nPREFLIGHT_TIMEOUT=(\n' >"$T/broken.conf"
  t_hook prolog PREFLIGHT_CONFIG="$T/broken.conf"
  t_expect_rc 0
  t_expect_syslog "prolog: * exit=0 reason=configuration error: $T/broken.conf failed *"
  # Without the policy in the file: exit 2, recorded in the default state directory (the file
  # broke before it named one).
  t_reset_records
  printf 'PREFLIGHT_TIMEOUT=(\n' >"$T/broken.conf"
  t_hook prolog PREFLIGHT_CONFIG="$T/broken.conf"
  t_expect_rc 2
  t_expect_syslog "prolog: node=node01 job=4242 verdict=none exit=2 reason=configuration error: *; prolog fails, *"
  [[ $(cut -f3,5 "$T/default-state/prolog-failures.tsv") == "node01	config" ]] || t_fail "not recorded"
  t_expect_no_file "$T/state/prolog-failures.tsv"
}

# PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto reads Slurm's limit once an hour; a PREFLIGHT_TIMEOUT that
# would overrun it is cut (with a warning) so that the verdict is saved before slurmd kills.
case_slurm_limit() {
  printf '%s\n' 'Configuration data as of 2026-11-26T04:12:41' 'MessageTimeout          = 10 sec' \
    'PrologEpilogTimeout     = 30' 'PrologFlags             = Alloc' >"$T/config.out"
  # A hang: preflight's deadline is cut to 30 - 18 = 12 s (its --timeout 7), so it ends with
  # a verdict within about 8 s, long before the Slurm limit of 30 s.
  t_hook prolog PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto PREFLIGHT_TIMEOUT=120 \
    PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --inject-fault hang@check=inventory"
  t_expect_rc 1
  t_expect_max_seconds $((30 - 18 + T_SLACK))
  [[ $(wc -l <"$T/syslog") == 2 ]] || t_fail "expected the warning and the verdict line"
  grep -q "PREFLIGHT_LOCK_WAIT + PREFLIGHT_TIMEOUT + 18 = 188 s is more than the Slurm prolog limit of 30 s (scontrol show config)" \
    "$T/syslog" || t_fail "no warning: $(cat "$T/syslog")"
  # 12 s less the seconds the prolog took to get there (one or two on a busy machine).
  local cut
  cut=$(sed -n 's/.*verdict=fail exit=1 .*(deadline cut to \([0-9]*\) s by the Slurm prolog limit of 30 s).*/\1/p' \
    "$T/syslog")
  if [[ -z $cut ]] || ((cut < 9 || cut > 12)); then t_fail "no cut noted: $(cat "$T/syslog")"; fi
  t_expect_file "$T/state/prolog.json"
  [[ $(cat "$T/state/slurm-prolog-timeout") == 30 ]] || t_fail "limit not kept"
  grep -Eq "\"timeout_s\": $((cut - 5))(\\.0+)?,?\$" "$T/state/prolog.json" ||
    t_fail "preflight did not get --timeout $((cut - 5))"
  # Within the hour the kept value is used: no scontrol call.
  t_reset_records
  t_hook prolog PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto PREFLIGHT_TIMEOUT=10 PREFLIGHT_LOCK_WAIT=0
  t_expect_rc 0
  t_expect_no_scontrol
  t_expect_syslog "prolog: * verdict=pass exit=0 *"
  # An hour old: read again; slurmctld unreachable: PREFLIGHT_TIMEOUT alone, no warning.
  touch -d '2 hours ago' "$T/state/slurm-prolog-timeout"
  rm "$T/config.out"
  t_reset_records
  t_hook prolog PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto
  t_expect_rc 0
  t_expect_scontrol "$(t_argv show config)"
  t_expect_syslog "prolog: * verdict=pass exit=0 *"
  # No limit in slurm.conf (65534 in scontrol's output) and PrologTimeout, where it exists, wins.
  printf '%s\n' 'PrologEpilogTimeout     = 65534' >"$T/config.out"
  rm -f "$T/state/slurm-prolog-timeout"
  t_hook prolog PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto
  [[ $(cat "$T/state/slurm-prolog-timeout") == none ]] || t_fail "65534 is no limit"
  printf '%s\n' 'PrologEpilogTimeout     = 600' 'PrologTimeout           = 100' >"$T/config.out"
  rm -f "$T/state/slurm-prolog-timeout"
  t_hook prolog PREFLIGHT_SLURM_PROLOG_TIMEOUT=auto
  [[ $(cat "$T/state/slurm-prolog-timeout") == 100 ]] || t_fail "PrologTimeout not preferred"
}

# A limit that leaves preflight less than 6 s is a tool error before anything runs.
case_slurm_limit_too_small() {
  t_hook prolog PREFLIGHT_SLURM_PROLOG_TIMEOUT=20
  t_expect_rc 3
  t_expect_no_file "$T/fake.calls"
  # 20 - 18 = 2 s, less the second or two a busy machine takes to get there.
  grep -Eq "reason=tool error: the Slurm prolog limit of 20 s \(PREFLIGHT_SLURM_PROLOG_TIMEOUT\) leaves -?[0-2] s for preflight, less than 6;" \
    "$T/syslog" || t_fail "syslog: $(cat "$T/syslog")"
  t_hook prolog PREFLIGHT_SLURM_PROLOG_TIMEOUT=0
  t_expect_rc 2
}

# A prolog killed with SIGKILL (slurmd at its limit) leaves its marker for the health check.
case_killed_leaves_marker() {
  t_fake stuck
  t_env
  "${T_ENV[@]}" SLURM_JOB_ID=4243 /bin/bash "$T_HOOKS/prolog.sh" >"$T/hook.out" 2>"$T/hook.err" &
  local pid=$!
  # The marker is written before preflight starts; the stand-in known to t_cleanup before the kill.
  t_wait_fake_running
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  local marker="$T/state/prolog.running.$pid"
  t_expect_file "$marker"
  local epoch job node mpid
  IFS=$'\t' read -r epoch job node mpid <"$marker"
  [[ $job == 4243 && $node == node01 && $mpid == "$pid" ]] || t_fail "marker: $(cat "$marker")"
  t_expect_no_file "$T/state/prolog-failures.tsv"
}

t_setup "$2" "${3:-}"
t_dispatch "$1"
