#!/usr/bin/env bash
# The CI gate without MPI: stub launchers record the command lines the gate builds (srun,
# mpirun, auto, scontrol, where preflight is found), and hand back canned fleet verdicts to test
# the judgement (--min-healthy, a launcher that crashes or lingers after the verdict, broken
# verdicts, the deadline, an interrupt).
#   test_launch.sh GATE PREFLIGHT
set -euo pipefail
GATE=${1:?usage: test_launch.sh GATE PREFLIGHT}
PREFLIGHT=${2:?usage: test_launch.sh GATE PREFLIGHT}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=gate_lib.sh
source "$here/gate_lib.sh"
GATE=$(cd "$(dirname "$GATE")" && pwd)/$(basename "$GATE")
PREFLIGHT=$(cd "$(dirname "$PREFLIGHT")" && pwd)/$(basename "$PREFLIGHT")

export STUB_DIR=$GATE_TMP
stub=$here/fake_launcher.sh
isolate_path
json=$GATE_TMP/v.json
is_root=0
((EUID != 0)) || is_root=1

# The stub's arguments up to preflight's --json value, which is a fresh path each run.
recorded() { sed -n '1,/^--json$/p' "$GATE_TMP/argv" | paste -sd' ' -; }
after_json() { sed '1,/^--json$/d' "$GATE_TMP/argv" | tail -n +2 | paste -sd' ' -; }
json_arg() { sed -n '/^--json$/{n;p;}' "$GATE_TMP/argv"; }

# ---- Command lines -------------------------------------------------------------------------

run_gate --launcher srun --launcher-bin "$stub" --preflight "$PREFLIGHT" --json "$json" \
  --nodes 'gpu[01-03]' --launcher-args '--gpus-per-node=8  --cpus-per-task=16' \
  -- --expect-gpus 8 --local-profile standard
check_eq "$rc" 3 "exit status when srun writes no verdict"
check_eq "$out_lines" 0 "stdout lines when the run broke"
check_contains "$err" "srun ended with status 0 after" "message without a verdict"
check_eq "$(recorded)" "--nodes=3 --ntasks=3 --ntasks-per-node=1 --nodelist=gpu[01-03] \
--mpi=pmix --gpus-per-node=8 --cpus-per-task=16 $PREFLIGHT fleet --json" "srun command line"
check_eq "$(after_json)" "--expect-gpus 8 --local-profile standard" "options after --"
[[ $(json_arg) == "$GATE_TMP/.ci-gate."*/fleet.json ]] || fail "preflight's --json: $(json_arg)"
echo "ok: srun command line"

printf '# rack 7\ngpu-b slots=8\n\ngpu-a   # spare\ngpu-c slots=4\n' >"$GATE_TMP/hosts"
run_gate --launcher mpirun --launcher-bin "$stub" --preflight "$PREFLIGHT" --json "$json" \
  --hostfile "$GATE_TMP/hosts" --launcher-args $'-x NCCL_DEBUG\n--mca\tbtl self'
check_eq "$rc" 3 "exit status when mpirun writes no verdict"
expected="--hostfile $(dirname "$(json_arg)")/hostfile -np 3 --map-by slot --bind-to none"
((!is_root)) || expected="--allow-run-as-root $expected"
check_eq "$(recorded)" "$expected -x NCCL_DEBUG --mca btl self $PREFLIGHT fleet --json" \
  "mpirun command line"
check_eq "$(paste -sd' ' "$GATE_TMP/hostfile")" "gpu-b slots=1 gpu-a slots=1 gpu-c slots=1" \
  "mpirun's host file: one slot per host, in the listed order"
echo "ok: mpirun command line"

run_gate --launcher mpirun --launcher-bin "$stub" --preflight "$PREFLIGHT" --json "$json" \
  --nodes 'localhost,localhost,localhost' --allow-duplicate-hosts
check_contains "$(recorded)" "-np 3 --map-by slot" "mpirun with duplicates"
check_eq "$(paste -sd' ' "$GATE_TMP/hostfile")" "localhost slots=3" "host file with duplicates"
echo "ok: duplicates run as slots of one host"

# auto: srun inside an allocation (its node list by default), or when srun exists and no host
# file was given; mpirun otherwise.
ln -sf "$stub" "$GATE_TMP/bin/srun"
ln -sf "$stub" "$GATE_TMP/bin/mpirun"
SLURM_JOB_ID=42 SLURM_JOB_NODELIST='n[1-2],m7' run_gate --preflight "$PREFLIGHT" --json "$json"
check_eq "$(head -n 4 "$GATE_TMP/argv" | paste -sd' ' -)" \
  "--nodes=3 --ntasks=3 --ntasks-per-node=1 --nodelist=n[1-2],m7" "auto inside an allocation"
run_gate --preflight "$PREFLIGHT" --json "$json" --nodes 'n[1-2]'
check_eq "$(head -n 1 "$GATE_TMP/argv")" "--nodes=2" "auto with srun present and --nodes"
run_gate --preflight "$PREFLIGHT" --json "$json" --hostfile "$GATE_TMP/hosts"
check_contains "$(recorded)" "--hostfile" "auto with a host file"
rm "$GATE_TMP/bin/srun"
run_gate --preflight "$PREFLIGHT" --json "$json" --nodes 'n[1-2]'
check_contains "$(recorded)" "-np 2" "auto without srun"
echo "ok: auto launcher"

# scontrol, where installed, expands the list (a srun of a host file gets the names joined).
ln -sf "$stub" "$GATE_TMP/bin/scontrol"
STUB_HOSTS="x1 x2 x3 x4" run_gate --launcher mpirun --preflight "$PREFLIGHT" --json "$json" \
  --nodes 'x[1-4]'
check_eq "$(paste -sd' ' "$GATE_TMP/hostfile")" "x1 slots=1 x2 slots=1 x3 slots=1 x4 slots=1" \
  "hosts from scontrol"
rm "$GATE_TMP/bin/scontrol"
ln -sf "$stub" "$GATE_TMP/bin/srun"
run_gate --launcher srun --preflight "$PREFLIGHT" --json "$json" --hostfile "$GATE_TMP/hosts"
check_contains "$(recorded)" "--nodelist=gpu-b,gpu-a,gpu-c --mpi=pmix" "srun of a host file"
echo "ok: scontrol and host files under srun"

# Where preflight is found; always passed on as an absolute path.
ln -sf "$PREFLIGHT" "$GATE_TMP/pf"
(cd "$GATE_TMP" && run_gate --launcher mpirun --nodes n1 --json v.json --preflight ./pf &&
  check_contains "$(paste -sd" " "$GATE_TMP/argv")" " $GATE_TMP/pf fleet --json $GATE_TMP/.ci-gate." \
    "relative --preflight and --json")
PREFLIGHT_BIN=$GATE_TMP/pf run_gate --launcher mpirun --nodes n1 --json "$json"
check_contains "$(recorded)" " $GATE_TMP/pf fleet" "\$PREFLIGHT_BIN"
ln -sf "$PREFLIGHT" "$GATE_TMP/bin/preflight"
run_gate --launcher mpirun --nodes n1 --json "$json"
check_contains "$(recorded)" " $GATE_TMP/bin/preflight fleet" "preflight on PATH"
rm "$GATE_TMP/bin/preflight"
# A checkout (scripts/, build/) and the installed layout (libexec/preflight/ flat, bin/).
mkdir -p "$GATE_TMP/tree/scripts/lib" "$GATE_TMP/tree/build" "$GATE_TMP/prefix/libexec/preflight" \
  "$GATE_TMP/prefix/bin"
cp "$GATE" "$GATE_TMP/tree/scripts/"
cp "$(dirname "$GATE")/lib/hostlist.sh" "$GATE_TMP/tree/scripts/lib/"
ln -s "$PREFLIGHT" "$GATE_TMP/tree/build/preflight"
cp "$GATE" "$(dirname "$GATE")/lib/hostlist.sh" "$GATE_TMP/prefix/libexec/preflight/"
ln -s "$PREFLIGHT" "$GATE_TMP/prefix/bin/preflight"
GATE=$GATE_TMP/tree/scripts/ci-gate.sh run_gate --launcher mpirun --nodes 'n[1-2]' --json "$json"
check_contains "$(recorded)" " $GATE_TMP/tree/scripts/../build/preflight fleet" "checkout layout"
GATE=$GATE_TMP/prefix/libexec/preflight/ci-gate.sh run_gate --launcher mpirun --nodes 'n[1-2]' \
  --json "$json"
check_contains "$(recorded)" " $GATE_TMP/prefix/libexec/preflight/../../bin/preflight fleet" \
  "installed layout"
echo "ok: preflight located"

# ---- Judging canned verdicts -----------------------------------------------------------------

# verdict_json FILE VERDICT EXIT_CODE EXCLUDE NODE-VERDICT...: a fleet verdict of hosts n1, n2...
verdict_json() {
  local file=$1 verdict=$2 code=$3 exclude=$4 nodes="" faulty="" r=0 v
  shift 4
  for v in "$@"; do
    nodes+="${nodes:+,}{\"rank\":$r,\"host\":\"n$((r + 1))\",\"verdict\":\"$v\"}"
    [[ $v != faulty ]] || faulty+="${faulty:+,}{\"rank\":$r,\"host\":\"n$((r + 1))\"}"
    r=$((r + 1))
  done
  printf '{"schema":"preflight.fleet/1","transport":"host","nodes":[%s],"faulty":[%s],
"stragglers":[],"ambiguous":[],"bad_pairs":[],"exclude":"%s","injected_faults":[],
"verdict":"%s","reason":"%s","exit_code":%s}\n' "$nodes" "$faulty" "$exclude" "$verdict" \
    "${exclude:+1 faulty: $exclude}" "$code" >"$file"
}
judge=(--launcher mpirun --launcher-bin "$stub" --preflight "$PREFLIGHT" --json "$json"
  --nodes 'n[1-3]')
export STUB_VERDICT=$GATE_TMP/canned.json

verdict_json "$STUB_VERDICT" pass 0 "" healthy healthy healthy
run_gate "${judge[@]}"
check_eq "$rc" 0 "exit status of a passing fleet"
check_eq "$out_lines" 1 "stdout lines of a passing fleet"
check_eq "$out" "" "exclude line of a passing fleet"
check_contains "$(<"$json")" '"verdict":"pass"' "verdict file"
check_contains "$err" "GATE PASSED" "summary"
echo "ok: pass"

verdict_json "$STUB_VERDICT" fail 1 n2 healthy faulty healthy
run_gate "${judge[@]}"
check_eq "$rc:$out" "1:n2" "a faulty node"
check_contains "$err" "2 of 3 healthy, 1 faulty" "summary of a failing fleet"
for m in 0 1 2 3; do
  run_gate "${judge[@]}" --min-healthy "$m"
  expected=0
  ((m <= 2)) || expected=1
  check_eq "$rc:$out:$out_lines" "$expected:n2:1" "--min-healthy $m with 2 healthy"
done
echo "ok: fail, and --min-healthy below, at and above the healthy count"

verdict_json "$STUB_VERDICT" fail 1 n2.cluster healthy faulty healthy
run_gate "${judge[@]}"
check_contains "$err" "warning: not in the node list, as reported by the nodes: n2.cluster" \
  "an excluded name that is not listed"

# docs/fleet.md: mpirun may crash in its clean-up after MPI_Abort; the verdict decides.
verdict_json "$STUB_VERDICT" fail 1 n2 healthy faulty healthy
STUB_STATUS=139 run_gate "${judge[@]}"
check_eq "$rc:$out" "1:n2" "a launcher crashing after the verdict"
check_contains "$err" "mpirun ended with status 139 after the verdict was written" "note"
# A launcher that hangs after the verdict is stopped after --grace: about 2 s idle; a busy
# machine gets 15 s, which still tells it from the 62 s of the launcher left alone.
STUB_LINGER=62 run_gate "${judge[@]}" --grace 1
check_eq "$rc:$out" "1:n2" "a launcher lingering after the verdict"
((elapsed <= 15)) || fail "the lingering launcher was stopped after ${elapsed}s"
check_contains "$err" "still runs 1s after the verdict was written: stopping it" "note"
echo "ok: the verdict decides when the launcher crashes or lingers after it"

# Broken runs: exit 3, nothing on stdout; the verdict file is replaced only by a readable one.
echo old >"$json"
verdict_json "$STUB_VERDICT" pass 0 "" healthy healthy
run_gate "${judge[@]}"
check_eq "$rc:$out_lines" "3:0" "a verdict of 2 nodes for 3"
check_contains "$err" "the verdict lists 2 nodes, 3 were launched" "message"
echo '{"schema":"preflight.fleet/1","nodes":[],"verdict":"fail","exit_code":3,
"reason":"internal error: disk full"}' >"$STUB_VERDICT"
run_gate "${judge[@]}"
check_eq "$rc:$out_lines" "3:0" "a verdict with exit_code 3"
check_contains "$err" "internal error: disk full" "message"
check_contains "$(<"$json")" "disk full" "the verdict of an internal error is kept"
echo old >"$json"
echo 'not json' >"$STUB_VERDICT"
run_gate "${judge[@]}"
check_eq "$rc:$out_lines" "3:0" "an unreadable verdict"
check_contains "$err" "the verdict cannot be read" "message"
check_eq "$(<"$json")" old "the verdict file after an unreadable verdict"
unset STUB_VERDICT
STUB_STATUS=1 run_gate "${judge[@]}"
check_eq "$rc:$out_lines" "3:0" "a launcher failing without a verdict"
check_eq "$(<"$json")" old "the verdict file after a failed launch"
echo "ok: broken runs"

# The outer deadline: SIGTERM to the launcher's process group, exit 3. About 2 s idle; a busy
# machine gets 10 s, which still tells it from timeout's SIGKILL (17 s) and the stub's 61 s.
STUB_SLEEP=61 run_gate "${judge[@]}" --deadline 2
check_eq "$rc:$out_lines" "3:0" "a launcher running past the deadline"
check_contains "$err" "the deadline of 2s passed before a verdict was written" "message"
((elapsed <= 10)) || fail "the deadline of 2 s ended the gate after ${elapsed}s"
echo "ok: deadline (${elapsed}s)"

# Ranks that outlive their launcher: Open MPI's mpirun puts each rank in a process group of its
# own, which the SIGTERM to the launcher's group misses. The gate returns only once they are
# gone too (run_gate checks at once that none of the stub's processes is left).
STUB_SLEEP=61 STUB_RANK=term run_gate "${judge[@]}" --deadline 2
check_eq "$rc:$out_lines" "3:0" "the deadline with a rank in a group of its own"
check_contains "$err" "processes of the launch still running after mpirun ended" "note on the rank"
((elapsed <= 10)) || fail "the gate ended the rank after ${elapsed}s"
echo "ok: a rank left by the launcher at the deadline is ended (${elapsed}s)"
# One that ignores SIGTERM, left by a launcher that wrote the verdict and exited: SIGKILL 5 s
# after SIGTERM, and the verdict still decides.
export STUB_VERDICT=$GATE_TMP/canned.json
verdict_json "$STUB_VERDICT" pass 0 "" healthy healthy healthy
STUB_RANK=stubborn run_gate "${judge[@]}"
unset STUB_VERDICT
check_eq "$rc:$out_lines" "0:1" "a passing fleet whose launcher left a rank ignoring SIGTERM"
check_contains "$err" "SIGKILL" "note on the SIGKILL"
((elapsed >= 5 && elapsed <= 5 + 10)) || fail "the stubborn rank was ended after ${elapsed}s"
echo "ok: a rank ignoring SIGTERM is SIGKILLed after the grace (${elapsed}s)"

# SIGTERM to the gate reaches the launcher, which runs in a session of its own, and the rank it
# left. Sent once the stub has started (polled up to 30 s: a busy machine is slow to get there);
# the gate ends within about a second of it, 10 s on a busy machine (the stub would run 61 s).
rm -f "$GATE_TMP/rank.ready"
STUB_SLEEP=61 STUB_RANK=term bash "$GATE" "${judge[@]}" >"$GATE_TMP/out" 2>"$GATE_TMP/err" &
gate_pid=$!
deadline=$((SECONDS + 30))
until [[ -e $GATE_TMP/rank.ready ]] || ((SECONDS >= deadline)); do sleep 0.1; done
[[ -e $GATE_TMP/rank.ready ]] || fail "the stub launcher did not start within 30 s"
start=$SECONDS
kill -TERM "$gate_pid"
rc=0
wait "$gate_pid" || rc=$?
check_eq "$rc" 3 "exit status after SIGTERM"
check_contains "$(<"$GATE_TMP/err")" "interrupted by SIGTERM" "message after SIGTERM"
((SECONDS - start <= 10)) || fail "the gate took $((SECONDS - start))s to end after SIGTERM"
nothing_left
echo "ok: SIGTERM"

check_eq "$(find "$GATE_TMP" -maxdepth 1 -name '.ci-gate.*')" "" "work folders left behind"
echo "PASS"
