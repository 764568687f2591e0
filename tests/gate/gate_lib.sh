# shellcheck shell=bash disable=SC2034  # out, err, rc, elapsed: read by the tests
# Shared by the CI gate tests (sourced): a scratch folder removed on exit, assertions that stop
# the test with a message and the gate's own stderr, and a runner that captures the gate's
# stdout, stderr, status and duration. The caller sets GATE (path of scripts/ci-gate.sh).
set -euo pipefail

GATE_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gate-test.XXXXXX")
trap 'rm -rf -- "$GATE_TMP"' EXIT
# The tests decide the launcher and the nodes: a Slurm job around ctest must not leak in.
for var in "${!SLURM_@}"; do unset "$var"; done

out="" err="" rc=0 elapsed=0 out_lines=0

fail() {
  printf 'FAIL: %s\n' "$*" >&2
  if [[ -s $GATE_TMP/err ]]; then
    printf -- '--- the gate'"'"'s stderr:\n' >&2
    cat "$GATE_TMP/err" >&2
  fi
  exit 1
}

check_eq() { # ACTUAL EXPECTED WHAT
  [[ $1 == "$2" ]] || fail "$3: expected '$2', got '$1'"
}

check_contains() { # TEXT NEEDLE WHAT
  [[ $1 == *"$2"* ]] || fail "$3: '$2' not found"
}

# gone PID: true when the process has ended. A zombie has ended: where PID 1 does not reap
# orphans (some containers), a killed rank stays one.
gone() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }
  [[ ${stat%% *} == [ZX] ]]
}

# nothing_left: the gate's promise (docs/ci-gate.md#time-budget): when it returns, no process of
# its launch runs any more. Looked at once, not polled, since the gate itself waits for them: a
# process still there is a bug of the gate, whatever the load. The processes of this test's
# launches hold $GATE_TMP on their command lines (the verdict path); the stub launcher lists
# itself, its sleeps and its rank in $GATE_TMP/stub.pids. Stops the test after killing them.
nothing_left() {
  local left pid
  left=$(pgrep -f "$GATE_TMP" || true)
  if [[ -f $GATE_TMP/stub.pids ]]; then
    while read -r pid; do
      gone "$pid" || left+=" $pid"
    done <"$GATE_TMP/stub.pids"
    rm -f "$GATE_TMP/stub.pids"
  fi
  if [[ -n ${left// /} ]]; then
    # shellcheck disable=SC2086  # one pid per word
    kill -KILL $left 2>/dev/null || true
    fail "processes of the launch still running after the gate returned: ${left//$'\n'/ }"
  fi
}

# run_gate ARGS...: runs the gate with ARGS, in the environment of the caller; then requires
# that nothing of its launch is left.
run_gate() {
  local start=$SECONDS
  rc=0
  bash "$GATE" "$@" >"$GATE_TMP/out" 2>"$GATE_TMP/err" || rc=$?
  elapsed=$((SECONDS - start))
  out=$(<"$GATE_TMP/out")
  err=$(<"$GATE_TMP/err")
  out_lines=$(wc -l <"$GATE_TMP/out")
  nothing_left
}

# expect_usage_error ARGS...: the gate rejects ARGS before launching anything: exit 2, nothing on
# stdout, one line on stderr. The launcher must be a stub that leaves $GATE_TMP/launched.
expect_usage_error() {
  rm -f "$GATE_TMP/launched"
  run_gate "$@"
  local what="ci-gate.sh $*"
  check_eq "$rc" 2 "exit status of $what"
  check_eq "$out_lines" 0 "stdout lines of $what"
  check_eq "$(wc -l <"$GATE_TMP/err")" 1 "stderr lines of $what"
  [[ ! -e $GATE_TMP/launched ]] || fail "$what launched the launcher"
  printf 'ok: exit 2: %s\n' "$err"
}

# isolate_path: PATH becomes a folder holding only the tools the gate and the tests use, so that
# an srun, scontrol or mpirun of the machine cannot take part; a test adds its stubs there.
isolate_path() {
  local tool found
  mkdir -p "$GATE_TMP/bin"
  for tool in bash basename cat cp dirname find grep head ln mkdir mktemp mv paste pgrep readlink \
    rm sed setsid sleep tail timeout touch tr wc; do
    found=$(command -v "$tool") || fail "$tool is not installed"
    ln -sf "$found" "$GATE_TMP/bin/$tool"
  done
  PATH=$GATE_TMP/bin
  export PATH
}
