#!/usr/bin/env bash
# A stand-in for srun, mpirun or scontrol in the gate tests: it records how it was called and
# plays the part the test sets in its environment, so the gate's command lines and its
# judgement can be tested without MPI.
#   STUB_DIR      where to leave `launched`, `argv` (one argument per line), `hostfile`
#   STUB_VERDICT  a fleet verdict to copy to the path given to `preflight fleet --json`
#   STUB_STATUS   the exit status (default 0)
#   STUB_SLEEP    seconds to sleep first
#   STUB_LINGER   seconds to sleep after the verdict, as a launcher stuck in its clean-up
#   STUB_RANK     term | stubborn: first start a "rank" in a process group of its own, as Open
#                 MPI's mpirun does, so that a signal to the launcher's group misses it and it
#                 outlives the stub; `term` ends on SIGTERM, `stubborn` ignores it (only SIGKILL
#                 ends it). Its pid goes to `rank.pid`.
# Every process the stub starts, and the stub itself, is listed in `stub.pids` (one pid a line),
# so that the tests can require that none outlives the gate.
# Called as scontrol (`scontrol show hostnames LIST`), it prints STUB_HOSTS, one per line.
set -euo pipefail

if [[ $(basename "$0") == scontrol ]]; then
  read -r -a hosts <<<"${STUB_HOSTS:?}"
  printf '%s\n' "${hosts[@]}"
  exit 0
fi
: "${STUB_DIR:?}"
echo "$$" >>"$STUB_DIR/stub.pids"
touch "$STUB_DIR/launched"
printf '%s\n' "$@" >"$STUB_DIR/argv"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --hostfile) cp "${args[i + 1]}" "$STUB_DIR/hostfile" ;;
    --json) json=${args[i + 1]} ;;
  esac
done
# pause SECONDS: sleeps in a child whose pid is listed.
pause() {
  sleep "$1" &
  echo "$!" >>"$STUB_DIR/stub.pids"
  wait "$!"
}
case ${STUB_RANK:-} in
  "") ;;
  term | stubborn)
    # shellcheck disable=SC2016  # expanded by the rank's shell
    rank='echo >"$1"; exec sleep 1000'
    [[ $STUB_RANK == term ]] || rank="trap '' TERM; $rank"
    rm -f "$STUB_DIR/rank.ready"
    set -m # job control: the background job gets a process group of its own
    bash -c "$rank" rank "$STUB_DIR/rank.ready" </dev/null >/dev/null 2>&1 &
    set +m
    echo "$!" >>"$STUB_DIR/stub.pids"
    echo "$!" >"$STUB_DIR/rank.pid"
    # Polled, up to 30 s: the rank is ready once it ignores SIGTERM (stubborn).
    for ((i = 0; i < 300; i++)); do
      [[ ! -e $STUB_DIR/rank.ready ]] || break
      sleep 0.1
    done
    [[ -e $STUB_DIR/rank.ready ]] || { echo "fake launcher: the rank never started" >&2; exit 99; }
    ;;
  *) echo "fake launcher: STUB_RANK must be term or stubborn" >&2; exit 99 ;;
esac
pause "${STUB_SLEEP:-0}"
if [[ -n ${STUB_VERDICT:-} ]]; then
  # Replaced atomically, as preflight does.
  cp "$STUB_VERDICT" "${json:?no --json given to preflight fleet}.tmp"
  mv "$json.tmp" "$json"
fi
pause "${STUB_LINGER:-0}"
exit "${STUB_STATUS:-0}"
