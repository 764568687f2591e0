#!/usr/bin/env bash
# Tests of scripts/slurm/healthcheck.sh (docs/slurm.md): bash test_healthcheck.sh CASE BINARY.
# Each case runs the health check as slurmd would, against a stand-in scontrol that answers
# `scontrol -o show node node01` from $T/node.line and records every argument vector, and
# checks the exact calls, the exit code and the one syslog line.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SHOW=""
DRAINED_BY_US="State=IDLE+DRAIN Reason=preflight: inventory: gpu3 ECC_UNCORRECTABLE_VOLATILE 2 errors [root@2026-01-02T03:04:05]"

# Healthy and not drained: the state is read (before the run, to skip a busy node, and after
# it), nothing is changed.
case_healthy_idle() {
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "healthcheck: node=node01 verdict=pass exit=0 action=none"
  t_expect_file "$T/state/healthcheck.json"
  cmp -s "$T/state/healthcheck.json" "$T/state/last.json" || t_fail "last.json not updated"
  t_expect_file "$T/state/history/"healthcheck-*-pass.json
}

# Healthy and drained by preflight: resumed.
case_resume_own_drain() {
  t_node "$DRAINED_BY_US"
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
  t_expect_syslog "healthcheck: node=node01 verdict=pass exit=0 action=resume (was: preflight: inventory: gpu3 *)"
  # Draining (a job still on it) counts as drained as well.
  t_reset_records
  t_node "State=MIXED+DRAIN Reason=preflight: did not finish within 30 s [root@2026-01-02T03:04:05]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_SKIP_BUSY=0
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
}

# Healthy, but drained by someone else (or by Slurm): never resumed, whatever the reason's
# resemblance to ours.
case_never_resume_foreign_drain() {
  local -a reasons=(
    "maintenance: replace PSU [admin@2026-01-02T03:04:05]"
    "Prolog error [root@2026-01-02T03:04:05]"
    "preflight [root@2026-01-02T03:04:05]"
    "PREFLIGHT: upper case [root@2026-01-02T03:04:05]"
    "preflight- something [root@2026-01-02T03:04:05]"
    "ticket 42 preflight: quoted [admin@2026-01-02T03:04:05]"
  )
  local r
  for r in "${reasons[@]}"; do
    t_reset_records
    t_node "State=IDLE+DRAIN Reason=$r Comment=Reason=preflight: fake"
    t_hook healthcheck
    t_expect_rc 0
    t_expect_scontrol "$SHOW" "$SHOW"
    t_expect_syslog "healthcheck: node=node01 verdict=pass exit=0 action=none: drained by someone else, left drained (reason: ${r%% \[*}*"
  done
  # No Reason field at all (a drain without reason is not ours either).
  t_reset_records
  t_node "State=IDLE+DRAIN"
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW"
}

# Unhealthy: drained with "preflight: <the verdict's reason>" as one argument.
case_drain_unhealthy() {
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_rc 0
  local reason
  reason=$(t_field "$T/state/healthcheck.json" reason)
  [[ $reason == "inventory: "* ]] || t_fail "unexpected verdict reason '$reason'"
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: $reason")"
  t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=drain reason=preflight: $reason"
  grep -q -- '-p daemon.err' "$T/logger.calls" || t_fail "drain not logged as an error"
}

# Unhealthy, but the node already has a reason: someone else's is kept, ours is not repeated,
# an older one of ours is replaced.
case_drain_respects_existing_reason() {
  t_node "State=IDLE+DRAIN Reason=hardware ticket 1234 [admin@2026-01-02T03:04:05]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "* action=none: already has a reason that is not ours, kept (reason: hardware ticket 1234 *"
  local reason
  reason=$(t_field "$T/state/healthcheck.json" reason)
  t_reset_records
  t_node "State=IDLE+DRAIN Reason=preflight: $reason [root@2026-01-02T03:04:05]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "* action=none: already drained with this reason: preflight: $reason"
  t_reset_records
  t_node "$DRAINED_BY_US"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: $reason")"
}

# preflight does not end (ignores SIGTERM): the health check still ends in bounded time and
# drains the node saying so; the stuck process is gone.
case_outer_deadline() {
  t_fake stuck
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_TIMEOUT=6
  t_expect_rc 0
  # SIGTERM at 6 s, SIGKILL at 11 s; the hook gives up waiting at 14 s.
  t_expect_max_seconds $((6 + 5 + 3 + T_SLACK))
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: did not finish within 6 s")"
  t_expect_syslog "healthcheck: node=node01 verdict=none action=drain reason=preflight: did not finish within 6 s"
  t_expect_gone "$(cat "$T/fake.pid")"
}

# preflight exit 3 and 2: drained as a tool error (default), or only logged (ignore).
case_tool_errors() {
  t_fake exit3
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=DRAIN \
    "Reason=preflight: tool error: exit 3 (internal error): preflight: internal error: boom x")"
  t_reset_records
  t_fake exit2
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=DRAIN \
    "Reason=preflight: tool error: exit 2 (invalid invocation or configuration): preflight: --expect-gpus: bad value")"
  t_reset_records
  t_fake exit3
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=ignore
  t_expect_rc 0
  t_expect_scontrol "$SHOW"
  t_expect_syslog "healthcheck: node=node01 verdict=none action=none (PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=ignore): tool error: exit 3 *"
}

# A hostile reason in the verdict arrives as exactly one argument "Reason=preflight: ...",
# sanitized to one printable line, and nothing in it runs.
case_hostile_reason() {
  t_craft_hostile_verdict
  t_fake verdict1
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: $T_HOSTILE_CLEAN")"
  grep -q '^argc=4 update ' "$T/scontrol.calls" || t_fail "update was not 4 arguments"
  local f
  for f in "$T/pwn1" "$T/pwn2" "$T/pwn3" /pwn1 /pwn2 /pwn3; do t_expect_no_file "$f"; done
  t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=drain reason=preflight: $T_HOSTILE_CLEAN"
}

# A report that is not drain-safe (a raw newline, a 600-character reason): one line, capped so
# that "preflight: " plus the reason is at most 211 characters.
case_long_reason_capped() {
  local long="" i
  for ((i = 0; i < 60; i++)); do long+="word$i \"x\" "; done
  printf 'kind\tnode\nverdict\tfail\nexit_code\t1\nreason\t%s\nnext line\n' "$long" >"$T/raw.tsv"
  t_craft_hostile_verdict
  t_fake raw-tsv
  t_hook healthcheck
  t_expect_rc 0
  local want
  want=$(printf '%s' "${long//\"x\"/x}")
  want=${want:0:197}
  want="Reason=preflight: ${want% }..."
  ((${#want} == 218 || ${#want} == 217)) || t_fail "test bug: want is ${#want} long"
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=DRAIN "$want")"
}

# A job on the node: the health check leaves the GPUs alone.
case_skip_busy_node() {
  local state
  for state in ALLOCATED MIXED "ALLOCATED+DRAIN" "IDLE+COMPLETING"; do
    t_reset_records
    t_node "State=$state"
    t_fake exit3
    t_hook healthcheck
    t_expect_rc 0
    t_expect_scontrol "$SHOW"
    t_expect_no_file "$T/fake.calls"
    t_expect_syslog "healthcheck: node=node01 action=skip: node is busy (State=$state), no checks run"
  done
}

# A prolog holds the lock: skipped with a warning that names who has the lock file open,
# nothing changed.
case_lock_busy_skips() {
  t_hold_lock
  t_node "$DRAINED_BY_US"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_LOCK_WAIT=1
  t_release_lock
  t_expect_rc 0
  t_expect_scontrol "$SHOW"
  t_expect_syslog "healthcheck: node=node01 action=skip (1 in a row; drained at 3): another preflight run held the lock $T/state/lock for 1 s (open in pid $$ (bash))"
  grep -q -- '-p daemon.warning' "$T/logger.calls" || t_fail "not logged as a warning"
}

# A lock that stays taken (here by this test's shell, as by a preflight stuck in the driver since
# an earlier run): every run is skipped with a warning, the PREFLIGHT_HEALTHCHECK_LOCK_SKIPS-th
# in a row drains the node saying why, later ones keep that reason, and once the lock is free a
# healthy run resumes the node and starts counting anew.
case_lock_skips_drain() {
  t_hold_lock
  local i reason
  for i in 1 2; do
    t_reset_records
    t_hook healthcheck PREFLIGHT_HEALTHCHECK_LOCK_WAIT=0
    t_expect_rc 0
    t_expect_scontrol "$SHOW"
    t_expect_syslog "healthcheck: node=node01 action=skip ($i in a row; drained at 3): *"
  done
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_LOCK_WAIT=0
  t_expect_rc 0
  t_expect_syslog "healthcheck: node=node01 verdict=none action=drain reason=preflight: health check skipped 3 times in a row since *Z: another preflight run held the lock $T/state/lock for 0 s (open in pid $$ (bash))"
  reason=$(sed -n 's/.* action=drain reason=//p' "$T/syslog")
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=DRAIN "Reason=$reason")"
  # Still held: the same reason, so the drain is left as it is.
  t_node "State=IDLE+DRAIN Reason=$reason [root@2026-01-02T03:04:05]"
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_LOCK_WAIT=0
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "* action=none: already drained with this reason: $reason"
  # Free again: a healthy run resumes its own drain.
  t_release_lock
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_LOCK_WAIT=0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
  t_expect_no_file "$T/state/healthcheck-lock-skips"
  # 0: never drained for it.
  t_hold_lock
  for i in 1 2 3 4; do
    t_reset_records
    t_hook healthcheck PREFLIGHT_HEALTHCHECK_LOCK_WAIT=0 PREFLIGHT_HEALTHCHECK_LOCK_SKIPS=0
    t_expect_scontrol "$SHOW"
    t_expect_syslog "healthcheck: node=node01 action=skip ($i in a row): *"
  done
  t_release_lock
}

# Invalid configuration: exit 2 and nothing touched.
case_config_error() {
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_TIMEOUT=0
  t_expect_rc 2
  t_expect_no_scontrol
  t_expect_syslog "healthcheck: configuration error: PREFLIGHT_HEALTHCHECK_TIMEOUT=0: not *"
  t_reset_records
  t_hook healthcheck PREFLIGHT_CONFIG="$T/nope.conf"
  t_expect_rc 2
  t_expect_no_scontrol
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ON_TOOL_ERROR=resume
  t_expect_rc 2
  t_expect_no_scontrol
}

# scontrol failing: exit 1 and the failure logged.
case_scontrol_failure() {
  echo 1 >"$T/update.rc"
  t_node "$DRAINED_BY_US"
  t_hook healthcheck
  t_expect_rc 1
  t_expect_syslog "* action=resume failed: *"
  # The state cannot be read at all: an unhealthy node is drained anyway.
  t_reset_records
  echo 0 >"$T/update.rc"
  rm "$T/node.line"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_rc 0
  grep -q '^argc=4 update NodeName=node01 State=DRAIN Reason=preflight:\\ inventory:' \
    "$T/scontrol.calls" || t_fail "not drained"
}

# The drill of docs/slurm.md: an injected fault drains the node with a reason that says it was
# injected; the next healthy run resumes it.
case_drill() {
  # 10 s: preflight's --timeout 5 holds the floor of a node without GPUs (4 s, docs/plan.md).
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_TIMEOUT=10 \
    PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 0 --inject-fault hang@check=inventory"
  t_expect_rc 0
  t_expect_max_seconds 16
  local drain
  drain=$(sed -n 3p "$T/scontrol.calls")
  # The code docs/slurm.md's drill names: CHECK_TIMEOUT, not RUN_INCOMPLETE.
  [[ $drain == "argc=4 update NodeName=node01 State=DRAIN Reason=preflight:\\ injected\\ fault:\\ inventory:\\ CHECK_TIMEOUT\\ "* ]] ||
    t_fail "not drained for the injected fault: $drain"
  local reason
  reason=$(t_field "$T/state/healthcheck.json" reason)
  t_node "State=IDLE+DRAIN Reason=preflight: $reason [root@2026-01-02T03:04:05]"
  t_reset_records
  t_hook healthcheck
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
}

# A "Prolog error" drain our prolog recorded: a healthy run that covers the failed check
# resumes it, naming the prolog's failure; so do a tool error, a configuration error and a
# killed prolog, which say nothing against the node.
case_resume_prolog_error_drain() {
  t_failure_record fault inventory "inventory: NO_GPU_VISIBLE no GPU" 5
  t_node "State=IDLE+DRAIN Reason=Prolog error [root@$(t_now_stamp 0)]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 0"
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
  t_expect_syslog "healthcheck: node=node01 verdict=pass exit=0 action=resume (was: Prolog error *; prolog failure: job=4241 exit=1 fault (inventory): inventory: NO_GPU_VISIBLE no GPU)"
  local kind
  for kind in tool config; do
    rm "$T/state/prolog-failures.tsv"
    t_failure_record "$kind" "" "tool error: exit 3 (internal error)" 5
    t_reset_records
    t_hook healthcheck
    t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
  done
  # A marker of a prolog that is gone (killed) becomes a record; a drain a minute later matches.
  rm "$T/state/prolog-failures.tsv"
  sleep 0 &
  local gone=$!
  wait "$gone"
  printf '%s\t4250\tnode01\t%s\n' "$(($(date +%s) - 60))" "$gone" >"$T/state/prolog.running.$gone"
  t_reset_records
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
  t_expect_syslog "* action=resume (was: Prolog error *; prolog failure: job=4250 exit=- killed: the prolog was killed before it ended *)"
  t_expect_no_file "$T/state/prolog.running.$gone"
}

# A prolog fault this run does not cover (the prolog failed gemm, the health check runs only
# inventory): the drain is taken over, reason "preflight: prolog: ...", and stays; a later run
# that covers it resumes it.
case_prolog_error_not_covered() {
  t_failure_record fault gemm "gemm: gpu1 GEMM_MISMATCH 3 elements differ" 5
  t_node "State=IDLE+DRAIN Reason=Prolog error [root@$(t_now_stamp 0)]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 0"
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: prolog: gemm: gpu1 GEMM_MISMATCH 3 elements differ")"
  t_expect_syslog "* action=takeover: the prolog failed gemm; this run passed only inventory, left drained with reason=preflight: prolog: gemm: gpu1 * (was: Prolog error *)"
  # Taken over: later runs that do not cover it leave it; the record is found at any age.
  t_node "State=IDLE+DRAIN Reason=preflight: prolog: gemm: gpu1 GEMM_MISMATCH 3 elements differ [root@$(t_now_stamp 0)]"
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 0"
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "* action=none: the prolog failed gemm; this run passed only inventory, left drained (reason: preflight: prolog: gemm: *"
  # A run whose checks include gemm and pass it resumes: here a crafted verdict from a stand-in.
  sed 's/"name": "inventory"/"name": "gemm"/' "$T/state/healthcheck.json" >"$T/crafted.json"
  grep -q '"name": "gemm"' "$T/crafted.json" || t_fail "no crafted verdict"
  t_fake verdict0
  t_reset_records
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW" "$(t_argv update NodeName=node01 State=RESUME)"
}

# A "Prolog error" with no record near its time is someone else's (another prolog, a record
# from long ago, another node's record): left drained. An unhealthy run takes a matched one over.
case_unmatched_prolog_error_kept() {
  t_failure_record fault inventory "inventory: old" 7200
  printf '%s\t4241\tnode02\t1\tfault\tinventory\tother node\n' "$(date +%s)" \
    >>"$T/state/prolog-failures.tsv"
  t_node "State=IDLE+DRAIN Reason=Prolog error [root@$(t_now_stamp 0)]"
  t_hook healthcheck
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "* action=none: drained by someone else, left drained (reason: Prolog error *"
  # Unhealthy: kept too (not ours) ...
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_scontrol "$SHOW" "$SHOW"
  # ... but a matched one is taken over with this run's reason.
  t_failure_record tool "" "did not finish within 120 s" 3
  t_reset_records
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  local reason
  reason=$(t_field "$T/state/healthcheck.json" reason)
  t_expect_scontrol "$SHOW" "$SHOW" \
    "$(t_argv update NodeName=node01 State=DRAIN "Reason=preflight: $reason")"
}

# A broken environment file is said loudly: the syslog line, and the health check's metrics
# file beside PREFLIGHT_PROM (config_ok 0), which the next good run sets back to 1.
case_config_error_metrics() {
  mkdir "$T/textfile"
  local prom="$T/textfile/preflight.prom" metrics="$T/textfile/preflight-healthcheck.prom"
  printf 'PREFLIGHT_PROM=%q\nPREFLIGHT_HEALTHCHECK_TIMEOUT=(\n' "$prom" >"$T/broken.conf"
  t_hook healthcheck PREFLIGHT_CONFIG="$T/broken.conf"
  t_expect_rc 2
  t_expect_no_scontrol
  t_expect_syslog "healthcheck: configuration error: $T/broken.conf failed *"
  grep -qx 'preflight_healthcheck_config_ok 0' "$metrics" || t_fail "metrics: $(cat "$metrics")"
  grep -q '^preflight_healthcheck_last_run_timestamp_seconds [0-9]*$' "$metrics" ||
    t_fail "no run time stamp"
  [[ -z $(find "$T/textfile" -name '.*' -print -quit) ]] || t_fail "temporary file left"
  [[ $(t_mode "$metrics") == "644 $EUID" ]] || t_fail "$metrics: $(t_mode "$metrics"), not 644"
  t_reset_records
  t_hook healthcheck PREFLIGHT_PROM="$prom" PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 0"
  t_expect_rc 0
  grep -qx 'preflight_healthcheck_config_ok 1' "$metrics" || t_fail "metrics: $(cat "$metrics")"
}

# The drain guard (issue 32): the cluster as `scontrol -o show node` lists it: node01 idle and
# nodes n2..nTOTAL, the first DRAINED of them drained with REASON (a time stamp appended).
t_cluster() {
  local total=$1 drained=$2 reason=$3 i
  {
    printf 'NodeName=%s Arch=x86_64 State=IDLE ThreadsPerCore=1\n' "$T_NODE"
    for ((i = 2; i <= total; i++)); do
      if ((i - 1 <= drained)); then
        printf 'NodeName=n%d Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=1 Reason=%s\n' "$i" "$reason"
      else
        printf 'NodeName=n%d Arch=x86_64 State=IDLE ThreadsPerCore=1\n' "$i"
      fi
    done
  } >"$T/nodes.out"
}

# More than 20% of the nodes (and at least 3) drained by preflight within the hour: the next
# unhealthy node is not drained; the err line says "systemic". Older drains, someone else's,
# fewer than three nodes, a listing that fails, or the guard off: the node drains as before.
case_drain_guard() {
  local drain
  t_cluster 10 2 "preflight: inventory: GPU count 0, expected 1 [root@$(t_now_stamp 60)]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_rc 0
  t_expect_scontrol "$SHOW" "$SHOW"
  t_expect_syslog "healthcheck: node=node01 verdict=fail exit=1 action=none: systemic: with this node 3 of 10 nodes would be drained by preflight within 3600 s, more than PREFLIGHT_DRAIN_GUARD_PERCENT=20%; not draining, look for a common cause; would drain with: preflight: inventory: *"
  grep -q -- '-p daemon.err' "$T/logger.calls" || t_fail "the guard not logged as an error"
  # Slurm's "Prolog error" counts as preflight's.
  t_reset_records
  t_cluster 10 2 "Prolog error [slurm@$(t_now_stamp 60)]"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  t_expect_syslog "* action=none: systemic: with this node 3 of 10 nodes *"

  local -a drains_anyway=(
    "older than the window|10 2|preflight: x [root@$(t_now_stamp 7200)]"
    "someone else's drains|10 2|maintenance [admin@$(t_now_stamp 60)]"
    "two nodes may be two bad nodes|4 1|preflight: x [root@$(t_now_stamp 60)]"
    "within the share|20 3|preflight: x [root@$(t_now_stamp 60)]"
  )
  local item what counts reason
  for item in "${drains_anyway[@]}"; do
    IFS='|' read -r what counts reason <<<"$item"
    t_reset_records
    # shellcheck disable=SC2086  # "TOTAL DRAINED"
    t_cluster $counts "$reason"
    t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
    grep -q 'action=drain reason=' "$T/syslog" || t_fail "$what: not drained: $(cat "$T/syslog")"
  done
  # The listing fails (slurmctld unreachable): a bad node must not take jobs.
  t_reset_records
  rm -f "$T/nodes.out"
  t_hook healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"
  grep -q 'action=drain reason=' "$T/syslog" || t_fail "listing failed: not drained"
  # 100 turns the guard off: no listing at all.
  t_reset_records
  rm -f "$T/list.calls"
  t_cluster 10 5 "preflight: x [root@$(t_now_stamp 60)]"
  t_config "PREFLIGHT_BIN=$(printf '%q' "$T_BIN")" "PREFLIGHT_STATE_DIR=$(printf '%q' "$T/state")" \
    'PREFLIGHT_HEALTHCHECK_ARGS="--expect-gpus 1"' 'PREFLIGHT_SLURM_PROLOG_TIMEOUT=none' \
    'PREFLIGHT_DRAIN_GUARD_PERCENT=100'
  t_hook healthcheck
  grep -q 'action=drain reason=' "$T/syslog" || t_fail "guard off: not drained"
  t_expect_no_file "$T/list.calls"
}

t_setup "$2" "${3:-}"
SHOW=$(t_show)
t_dispatch "$1"
