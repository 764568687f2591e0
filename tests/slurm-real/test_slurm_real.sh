#!/usr/bin/env bash
# The Slurm hooks, the fleet and the CI gate against a real one-node Slurm (slurmctld, slurmd and
# munged of this test, lib.sh): bash test_slurm_real.sh CASE PREFLIGHT_BINARY. Where
# tests/slurm/ checks the hooks' exact calls against stand-ins, these check what Slurm itself
# then does: the drain, the requeue, the reasons scontrol shows, srun's PMIx.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Shared memory between the ranks of one machine, no network probing in a container (as the
# mpirun tests, tests/gate/test_fleet.sh); srun passes the environment on to the tasks.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
FLEET=(fleet --transport host --checks inventory --expect-gpus 0 --slow-factor 0.3)
# Seconds Slurm takes to start a job on an idle node (the main scheduler runs on submission;
# the prolog, then the step): a second here, a few on a loaded machine.
SCHED=5

# t_wait_job ID SECONDS: polls until the job has ended, whatever way; JOB_STATE then says how.
t_wait_job() {
  t_poll "job $1 to end" "$2" t_job_in "$1" \
    'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|BOOT_FAIL|OUT_OF_MEMORY|PREEMPTED|DEADLINE'
}

t_node_drained() { t_node && [[ $NODE_STATE == *DRAIN* && $NODE_STATE != *COMPLETING* ]]; }

# A prolog failure: the node drained with Slurm's own reason, not busy any more (the health check
# skips busy nodes).
t_wait_prolog_drain() {
  t_poll "node drained after the prolog failed" "$1" t_node_drained
  [[ $NODE_REASON == "Prolog error"* ]] || t_fail "drain reason '$NODE_REASON', expected Prolog error"
}

t_idle() { t_node && [[ $NODE_STATE == IDLE && -z $NODE_REASON ]]; }

# Polled: right after `scontrol update State=RESUME` slurmctld shows the node
# IDLE+NOT_RESPONDING until slurmd answers its ping, about a second later.
t_expect_idle() {
  local deadline=$((SECONDS + 10))
  until t_idle; do
    ((SECONDS < deadline)) ||
      t_fail "node State=$NODE_STATE Reason=$NODE_REASON, expected IDLE without a reason"
    sleep 0.2
  done
}

# 1. A healthy node: the prolog passes, a batch job and an srun job run, the node stays idle.
case_healthy_job() {
  t_start
  local id
  id=$(t_sbatch --wrap true)
  t_wait_job "$id" $((SCHED + 10))
  [[ $JOB_STATE == COMPLETED ]] || t_fail "job $id ended $JOB_STATE: $JOB_LINE"
  t_expect_verdict "$T/state-preflight/prolog.json" pass
  t_expect_syslog "prolog: node=$T_NODE job=$id verdict=pass exit=0 duration=*s*"
  t_run srun 60 srun -n1 true
  ((T_RC == 0)) || t_fail "srun -n1 true: exit $T_RC: $(cat "$T/srun.err")"
  t_expect_syslog "prolog: node=$T_NODE job=$((id + 1)) verdict=pass exit=0 duration=*s*"
  t_poll "node idle after the jobs" 10 t_node_is idle
  t_expect_idle
}

# 2a. An unhealthy node (a GPU expected, none here): slurmd drains the node ("Prolog error") and
# requeues the batch job, which stays pending, not held (nohold_on_prolog_fail).
case_unhealthy_node_batch() {
  t_env_file 'PREFLIGHT_PROLOG_ARGS="--expect-gpus 1"'
  t_start
  local id
  id=$(t_sbatch --wrap true)
  t_wait_prolog_drain $((SCHED + 10))
  t_poll "job $id requeued" 10 t_job_in "$id" PENDING
  local restarts=0
  if [[ $JOB_LINE =~ \ Restarts=([0-9]+) ]]; then restarts=${BASH_REMATCH[1]}; fi
  ((restarts >= 1)) || t_fail "job $id pending but not requeued: $JOB_LINE"
  [[ $JOB_LINE != *" Priority=0 "* && $JOB_REASON != *Held* && $JOB_REASON != *held* ]] ||
    t_fail "job $id is held after the prolog failure: $JOB_LINE"
  t_expect_verdict "$T/state-preflight/prolog.json" fail
  [[ $(t_field "$T/state-preflight/prolog.json" reason) == "inventory: "* ]] ||
    t_fail "prolog.json: reason is not the inventory's"
  t_expect_syslog "prolog: node=$T_NODE job=$id verdict=fail exit=1 *reason=inventory: *"
}

# 2b. The same under srun: an interactive job cannot be requeued; Slurm cancels it and srun
# fails with "Prolog failure on node N". Its exit status is 1, or 168 when the step's launch
# reached slurmd after the cancel ("Task launch ... failed: Job credential revoked"): seen once
# in 15 runs under a CPU hog on a 2-core machine (slurm 22.05.8). Both are a refused job.
case_unhealthy_node_srun() {
  t_env_file 'PREFLIGHT_PROLOG_ARGS="--expect-gpus 1"'
  t_start
  t_run srun 60 srun -n1 true
  ((T_RC == 1 || T_RC == 168)) || t_fail "srun exit $T_RC, expected 1 (or 168): $(cat "$T/srun.err")"
  ((T_SECONDS <= SCHED + 10)) || t_fail "srun took $T_SECONDS s"
  grep -q "Prolog failure on node $T_NODE" "$T/srun.err" ||
    t_fail "srun's stderr does not say Prolog failure: $(cat "$T/srun.err")"
  t_job 1
  [[ $JOB_STATE == CANCELLED ]] || t_fail "job 1 is $JOB_STATE, expected CANCELLED: $JOB_LINE"
  t_wait_prolog_drain 10
  t_expect_verdict "$T/state-preflight/prolog.json" fail
}

# 3. The health check drains an unhealthy node with a reason of its own, and a healthy run
# resumes it.
case_healthcheck_drains_and_resumes_its_own_drain() {
  t_start
  t_healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 1"
  t_expect_rc 0
  t_node
  [[ $NODE_STATE == *DRAIN* ]] || t_fail "State=$NODE_STATE after an unhealthy health check"
  [[ $NODE_REASON == "preflight: inventory: "* ]] || t_fail "drain reason '$NODE_REASON'"
  t_expect_syslog "healthcheck: node=$T_NODE verdict=fail exit=1 action=drain reason=preflight: inventory: *"
  t_healthcheck
  t_expect_rc 0
  t_expect_idle
  t_expect_syslog "healthcheck: node=$T_NODE verdict=pass exit=0 action=resume (was: preflight: inventory: *"
}

# 3b. The drain guard (issue 32): three more node names on this slurmd's address, two of them
# drained by preflight a moment ago. This node's unhealthy health check would make 3 of 4 nodes
# drained: systemic, so it is not drained, and syslog says so. Then, with the guard off, it is.
case_healthcheck_drain_guard() {
  t_start "NodeName=$T_NODE,pfghost[1-3] NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN"
  local ghost
  for ghost in pfghost1 pfghost2; do
    scontrol update NodeName="$ghost" State=DRAIN Reason="preflight: inventory: GPU lost" ||
      t_fail "scontrol update $ghost failed"
  done
  t_healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 1"
  t_expect_rc 0
  t_expect_idle
  t_expect_syslog "healthcheck: node=$T_NODE verdict=fail exit=1 action=none: systemic: with this node 3 of 4 nodes would be drained by preflight within 3600 s, *"
  t_healthcheck PREFLIGHT_HEALTHCHECK_ARGS="--checks inventory --expect-gpus 1" \
    PREFLIGHT_DRAIN_GUARD_PERCENT=100
  t_node
  [[ $NODE_STATE == *DRAIN* && $NODE_REASON == "preflight: inventory: "* ]] ||
    t_fail "State=$NODE_STATE Reason=$NODE_REASON with the guard off"
}

# 4. A drain by someone else survives a healthy health check, reason and all.
case_foreign_drain_kept() {
  t_start
  scontrol update NodeName="$T_NODE" State=DRAIN Reason="PSU swap" || t_fail "scontrol update failed"
  t_healthcheck
  t_expect_rc 0
  t_node
  [[ $NODE_STATE == *DRAIN* && $NODE_REASON == "PSU swap ["*@*"]"* ]] ||
    t_fail "State=$NODE_STATE Reason=$NODE_REASON, expected the admin's drain kept"
  t_expect_syslog "healthcheck: node=$T_NODE verdict=pass exit=0 action=none: drained by someone else*PSU swap*"
}

# 5. A check that hangs inside the prolog: preflight's own deadline (PREFLIGHT_TIMEOUT - 5) ends
# it, the prolog fails with the verdict, Slurm drains the node, and nothing of it is left.
case_hang_ends_within_deadline() {
  t_env_file 'PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --inject-fault hang@check=inventory"' \
    PREFLIGHT_TIMEOUT=10
  t_start
  local id start=$SECONDS
  id=$(t_sbatch --wrap true)
  # The prolog's bound: PREFLIGHT_TIMEOUT + 8 s (docs/slurm.md, Time budgets), no lock to wait for.
  t_wait_prolog_drain $((SCHED + 10 + 8 + T_SLACK))
  t_expect_verdict "$T/state-preflight/prolog.json" fail
  t_expect_syslog "prolog: node=$T_NODE job=$id verdict=fail exit=1 *reason=injected fault: *"
  t_expect_no_preflight
  t_log "drained $((SECONDS - start)) s after submission"
}

# 6. An environment file that is not valid shell: a configuration error (exit 2) for both hooks,
# logged, and nothing written outside the test (the records stay in the state folder the file
# named before its broken line).
case_broken_env_file() {
  local default_state=0
  [[ -e /var/lib/preflight ]] && default_state=1
  t_env_file 'PREFLIGHT_TIMEOUT=('
  t_start
  local id
  id=$(t_sbatch --wrap true)
  t_wait_prolog_drain $((SCHED + 10))
  t_expect_syslog "prolog: *configuration error: *"
  grep -q "prolog failed status=2:0" "$T/log/slurmd.log" ||
    t_fail "slurmd.log does not show the prolog's exit 2"
  t_healthcheck
  t_expect_rc 2
  t_expect_syslog "healthcheck: configuration error: *preflight.conf*"
  ((default_state)) || [[ ! -e /var/lib/preflight ]] ||
    t_fail "the hooks created /var/lib/preflight"
}

# 7a. A "Prolog error" drain our prolog caused (recorded in prolog-failures.tsv) is resumed by
# the next healthy health check whose checks cover the check the prolog failed.
case_prolog_error_recovery() {
  t_env_file 'PREFLIGHT_PROLOG_ARGS="--expect-gpus 1"'
  t_start
  local id
  id=$(t_sbatch --wrap true)
  t_wait_prolog_drain $((SCHED + 10))
  # The record (time, job, node, exit, kind, failed checks, reason) names the check that failed:
  # the health check resumes only after a run that passed it.
  t_expect_record "$id" 1 fault inventory
  t_env_file  # fixed: --expect-gpus 0 again
  t_healthcheck
  t_expect_rc 0
  t_expect_idle
  t_expect_syslog "healthcheck: node=$T_NODE verdict=pass exit=0 action=resume (was: Prolog error*"
}

# 7c. The same for a configuration error: a broken environment file drains the node through the
# prolog (exit 2, recorded); once the file is fixed, the next healthy health check resumes it,
# naming the prolog's failure.
case_config_error_recovery() {
  t_env_file 'PREFLIGHT_TIMEOUT=('
  t_start
  local id
  id=$(t_sbatch --wrap true)
  t_wait_prolog_drain $((SCHED + 10))
  t_expect_record "$id" 2 config ""
  t_env_file
  t_healthcheck
  t_expect_rc 0
  t_expect_idle
  t_expect_syslog "healthcheck: node=$T_NODE verdict=pass exit=0 action=resume (was: Prolog error*job=$id exit=2 config*configuration error: *"
}

# t_expect_record JOB EXIT KIND CHECKS: prolog-failures.tsv has the prolog's record of that job.
t_expect_record() {
  local file=$T/state-preflight/prolog-failures.tsv epoch job node rc kind checks reason
  t_expect_file "$file"
  # Read with a character that is not IFS white space: tab is, and `read` would merge the empty
  # checks field of a tool or configuration error into its neighbour.
  while IFS=$'\x1f' read -r epoch job node rc kind checks reason; do
    [[ $job == "$1" ]] || continue
    [[ $epoch =~ ^[0-9]+$ && $node == "$T_NODE" && $rc == "$2" && $kind == "$3" && -n $reason ]] ||
      t_fail "prolog-failures.tsv: job $1 recorded as: $epoch|$job|$node|$rc|$kind|$checks|$reason"
    [[ $checks != - ]] || checks=""  # "-": none (the prolog writes no empty field)
    [[ $checks == "$4" ]] ||
      t_fail "prolog-failures.tsv: job $1's failed checks are '$checks', expected '$4' (preflight report's checks_failed)"
    return 0
  done < <(tr '\t' '\037' <"$file")
  t_fail "prolog-failures.tsv has no record of job $1: $(cat "$file")"
}

# 7b. A "Prolog error" drain with no record of ours (set by hand, or by another prolog) stays.
case_unmatched_prolog_error_stays() {
  t_start
  scontrol update NodeName="$T_NODE" State=DRAIN Reason="Prolog error" || t_fail "scontrol update failed"
  t_healthcheck
  t_expect_rc 0
  t_node
  [[ $NODE_STATE == *DRAIN* && $NODE_REASON == "Prolog error ["* ]] ||
    t_fail "State=$NODE_STATE Reason=$NODE_REASON, expected the drain kept"
}

# 8. A PREFLIGHT_TIMEOUT longer than Slurm's limit on the prolog: the prolog reads
# PrologEpilogTimeout (scontrol show config), ends before slurmd's SIGTERM and SIGKILL, and
# leaves its verdict and a syslog line. 30 s: the prolog keeps 18 s for its own ending and
# preflight 5 s for its verdict, and preflight refuses a --timeout below its floor (4 s here).
# Without the cut, preflight's inventory deadline is 47 s and slurmd kills the prolog at 30 s.
case_prolog_timeout_saves_verdict() {
  t_env_file 'PREFLIGHT_PROLOG_ARGS="--expect-gpus 0 --inject-fault hang@check=inventory"' \
    PREFLIGHT_TIMEOUT=120
  t_start PrologEpilogTimeout=30
  local id
  id=$(t_sbatch --wrap true)
  t_wait_prolog_drain $((SCHED + 30 + T_SLACK))
  # What slurmd 22.05 logs when it kills a prolog at its limit (newer versions: the last form).
  if grep -E 'prolog poll timeout|prolog killed by signal|timeout after [0-9]+ ms: killing pgid' \
    "$T/log/slurmd.log" >"$T/killed.log"; then
    t_fail "slurmd killed the prolog at PrologEpilogTimeout: $(cat "$T/killed.log")"
  fi
  t_expect_verdict "$T/state-preflight/prolog.json" fail
  t_expect_syslog "prolog: node=$T_NODE job=$id verdict=fail exit=1 *reason=injected fault: *"
  t_expect_no_preflight
}

# 8b. A job of an unprivileged user (nobody) that asks for one of the node's two GPUs (GRES with
# stand-in device files): slurmd hands the prolog CUDA_VISIBLE_DEVICES=0 and its kin, from the
# folder slurmd runs in, here one that user owns (as a slurmd started there, or a Slurm that
# starts the prolog in the job's folder, would), with a ./preflight planted in it. preflight
# gets none of the job's GPU variables, the fixed PATH and / as its folder; the planted program
# never runs; the job completes and the node is not drained. A stand-in preflight records what
# it was given and runs the real one.
case_one_gpu_job_of_a_user() {
  local user=65534 work=$T/userwork
  getent passwd "$user" >/dev/null || t_fail "no account with uid $user (nobody) to run the job as"
  mkdir -p "$T/dev" "$work"
  # Character devices are what slurmd 22.05 takes for GRES files (a regular file is "not a valid
  # character or block device"); these are /dev/null's and /dev/zero's numbers, never opened.
  if ! mknod "$T/dev/nvidia0" c 1 3 || ! mknod "$T/dev/nvidia1" c 1 5; then
    t_fail "cannot make stand-in device files with mknod (no CAP_MKNOD here?)"
  fi
  printf 'Name=gpu File=%s/dev/nvidia[0-1]\n' "$T" >"$T/gres.conf"
  printf '#!/bin/sh\ntouch %q\n' "$T/planted-ran" >"$work/preflight"
  chmod 0755 "$work/preflight"
  chown -R "$user:$user" "$work"
  cat >"$T/record-preflight" <<EOF
#!/bin/bash
[[ \$1 == run ]] && /usr/bin/env -0 >$(printf '%q' "$T/preflight.env") && /bin/pwd -P >$(printf '%q' "$T/preflight.cwd")
exec $(printf '%q' "$T_BIN") "\$@"
EOF
  chmod 0755 "$T/record-preflight"
  t_env_file "PREFLIGHT_BIN=$T/record-preflight" PREFLIGHT_SLURM_PROLOG_TIMEOUT=none
  # The daemons start in the user's folder (not in a subshell: the clean-up needs their pids).
  cd "$work"
  t_start GresTypes=gpu "NodeName=$T_NODE NodeAddr=127.0.0.1 CPUs=$(nproc) Gres=gpu:2 State=UNKNOWN"
  cd /
  local id
  # shellcheck disable=SC2016  # expanded by the job
  id=$(t_sbatch --chdir="$work" --uid="$user" --gid="$user" --gres=gpu:1 -o "$work/job-%j.out" \
    --wrap 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"')
  t_wait_job "$id" $((SCHED + 10))
  [[ $JOB_STATE == COMPLETED ]] || t_fail "job $id ended $JOB_STATE: $JOB_LINE"
  grep -qx 'CUDA_VISIBLE_DEVICES=0' "$work/job-$id.out" || t_fail "the job did not get one GPU"
  # What slurmd gave the prolog, then what the prolog gave preflight.
  t_expect_file "$T/prolog.env"
  t_expect_file "$T/preflight.env"
  [[ $(t_env_value "$T/prolog.env" CUDA_VISIBLE_DEVICES) == 0 ]] ||
    t_fail "slurmd did not hand the prolog CUDA_VISIBLE_DEVICES=0"
  [[ $(cat "$T/prolog.cwd") == "$work" ]] || t_fail "the prolog started in $(cat "$T/prolog.cwd")"
  local var
  for var in CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES ZE_AFFINITY_MASK; do
    if t_env_value "$T/preflight.env" "$var" >/dev/null; then t_fail "preflight was given $var"; fi
  done
  [[ $(t_env_value "$T/preflight.env" PATH) == "$T/stubs:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" ]] ||
    t_fail "preflight's PATH: $(t_env_value "$T/preflight.env" PATH)"
  [[ $(cat "$T/preflight.cwd") == / ]] || t_fail "preflight ran in $(cat "$T/preflight.cwd")"
  [[ ! -e $T/planted-ran ]] || t_fail "the planted ./preflight ran"
  t_expect_verdict "$T/state-preflight/prolog.json" pass
  t_expect_syslog "prolog: node=$T_NODE job=$id verdict=pass exit=0 duration=*s*"
  t_poll "node idle after the job" 10 t_node_is idle
  t_expect_idle
}

# t_fleet NAME SRUN-ARGS... -- FLEET-ARGS...: runs the fleet under srun (4 ranks on this node's
# 2 CPUs: --overcommit), the verdict in $T/NAME.json. Sets T_RC, T_SECONDS, $T/NAME.out/.err.
t_fleet() {
  local name=$1
  shift
  local -a launch=()
  while (($#)) && [[ $1 != -- ]]; do launch+=("$1"); shift; done
  (($#)) && shift
  t_run "$name" 120 srun "${launch[@]}" "$T_BIN" "${FLEET[@]}" --json "$T/$name.json" "$@"
  t_log "srun ${launch[*]} fleet $*: exit $T_RC in $T_SECONDS s"
}

t_fleet_fail() { t_fail "$1"$'\n'"--- srun's stderr:"$'\n'"$(tail -n 30 "$T/$2.err")"; }

# 9a. A healthy fleet of 4 ranks under srun --mpi=pmix.
case_fleet_under_srun_healthy() {
  t_start
  t_fleet healthy --mpi=pmix -n 4 --overcommit
  ((T_RC == 0)) || t_fleet_fail "exit $T_RC, expected 0" healthy
  t_expect_verdict "$T/healthy.json" pass
  [[ $(t_field "$T/healthy.json" nodes):$(t_field "$T/healthy.json" healthy) == 4:4 ]] ||
    t_fail "the verdict does not count 4 healthy nodes"
}

# 9b. Rank 2's data arrives corrupt: exit 1, and the verdict names its node.
case_fleet_under_srun_corrupt() {
  t_start
  t_fleet corrupt --mpi=pmix -n 4 --overcommit -- --inject-fault allgather-corrupt@node=2
  ((T_RC == 1)) || t_fleet_fail "exit $T_RC, expected 1" corrupt
  t_expect_verdict "$T/corrupt.json" fail
  [[ $(t_field "$T/corrupt.json" faulty) == 1 ]] || t_fail "not exactly one faulty node"
  [[ $(t_field "$T/corrupt.json" exclude) == "$(uname -n)" ]] || t_fail "exclude is not this node"
  [[ $(t_field "$T/corrupt.json" reason) == *"(rank 2)"* ]] || t_fail "the reason does not name rank 2"
}

# 9c. Rank 1 never joins its all-gathers: the fleet's own timeouts end the run (about 10 s
# here; its bound is --timeout + 10 s), rank 1 is faulty, and no rank is left behind.
case_fleet_under_srun_hang() {
  t_start
  t_fleet hang --mpi=pmix -n 4 --overcommit -- --inject-fault allgather-hang@node=1 \
    --group-timeout 3 --timeout 30 --local-timeout 10
  ((T_RC == 1)) || t_fleet_fail "exit $T_RC, expected 1" hang
  ((T_SECONDS <= 30 + 10 + T_SLACK)) || t_fail "the run took $T_SECONDS s"
  [[ $(t_field "$T/hang.json" reason) == *"(rank 1)"* ]] || t_fail "the reason does not name rank 1"
  t_poll "the ranks to end" "$T_SLACK" t_no_fleet_rank
}

t_no_fleet_rank() { ! pgrep -f -- "$T_BIN fleet .*$T/" >/dev/null; }

# 9d. srun without PMIx (MpiDefault=none here, or --mpi=pmi2): Open MPI's MPI_Init cannot
# wire the ranks up. preflight must say so and how to launch it: exit 3 naming --mpi=pmix.
case_fleet_without_pmix() {
  t_start
  local mpi
  for mpi in default pmi2; do
    local -a launch=(-n 2 --overcommit)
    [[ $mpi == default ]] || launch+=(--mpi="$mpi")
    t_fleet "nopmix-$mpi" "${launch[@]}"
    ((T_RC == 3)) || t_fleet_fail "srun ${launch[*]}: exit $T_RC, expected 3" "nopmix-$mpi"
    grep -q -e '--mpi=pmix' "$T/nopmix-$mpi.err" ||
      t_fleet_fail "srun ${launch[*]}: stderr does not name --mpi=pmix" "nopmix-$mpi"
  done
}

# 10. The CI gate with srun against this cluster: named nodes from outside an allocation, a
# drill that must fail naming the node, and inside a batch job (auto launcher, the job's nodes),
# as docs/ci-gate.md shows it.
case_ci_gate_under_srun() {
  t_start
  local gate=$T_SRC/scripts/ci-gate.sh
  local -a fleet=(-- --transport host --checks inventory --expect-gpus 0 --timeout 30)
  t_run gate 120 bash "$gate" --launcher srun --nodes "$T_NODE" --preflight "$T_BIN" \
    --json "$T/gate.json" "${fleet[@]}"
  ((T_RC == 0)) || t_fail "gate exit $T_RC, expected 0: $(tail -n 20 "$T/gate.err")"
  [[ $(cat "$T/gate.out") == "" && $(wc -l <"$T/gate.out") == 1 ]] ||
    t_fail "gate printed '$(cat "$T/gate.out")', expected one empty line"
  grep -q "GATE PASSED" "$T/gate.err" || t_fail "no GATE PASSED"
  grep -q -- "--mpi=pmix" "$T/gate.err" || t_fail "the gate did not launch with srun --mpi=pmix"
  t_expect_verdict "$T/gate.json" pass

  t_run gate-drill 120 bash "$gate" --launcher srun --nodes "$T_NODE" --preflight "$T_BIN" \
    --json "$T/gate-drill.json" "${fleet[@]}" --inject-fault local-fail@node=0
  ((T_RC == 1)) || t_fail "drill: gate exit $T_RC, expected 1: $(tail -n 20 "$T/gate-drill.err")"
  [[ $(cat "$T/gate-drill.out") == "$(uname -n)" ]] ||
    t_fail "drill: exclude '$(cat "$T/gate-drill.out")', expected $(uname -n)"

  local id cmd
  cmd=$(printf '%q ' bash "$gate" --preflight "$T_BIN" --json "$T/gate-batch.json" "${fleet[@]}")
  id=$(t_sbatch --wrap "$cmd")
  t_wait_job "$id" $((SCHED + 60))
  [[ $JOB_STATE == COMPLETED ]] ||
    t_fail "batch job $id ended $JOB_STATE: $(tail -n 20 "$T/job-$id.out")"
  grep -q "launcher srun\|srun, deadline" "$T/job-$id.out" || t_fail "the gate in the job did not use srun"
  t_expect_verdict "$T/gate-batch.json" pass
}

t_dispatch "$@"
