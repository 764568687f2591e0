#!/usr/bin/env bash
# A stand-in for srun, mpirun or scontrol in the gate tests: it records how it was called and
# plays the part the test sets in its environment, so the gate's command lines and its
# judgement can be tested without MPI.
#   STUB_DIR      where to leave `launched`, `argv` (one argument per line), `hostfile`
#   STUB_VERDICT  a fleet verdict to copy to the path given to `preflight fleet --json`
#   STUB_STATUS   the exit status (default 0)
#   STUB_SLEEP    seconds to sleep first
#   STUB_LINGER   seconds to sleep after the verdict, as a launcher stuck in its clean-up
# Called as scontrol (`scontrol show hostnames LIST`), it prints STUB_HOSTS, one per line.
set -euo pipefail

if [[ $(basename "$0") == scontrol ]]; then
  read -r -a hosts <<<"${STUB_HOSTS:?}"
  printf '%s\n' "${hosts[@]}"
  exit 0
fi
: "${STUB_DIR:?}"
touch "$STUB_DIR/launched"
printf '%s\n' "$@" >"$STUB_DIR/argv"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --hostfile) cp "${args[i + 1]}" "$STUB_DIR/hostfile" ;;
    --json) json=${args[i + 1]} ;;
  esac
done
sleep "${STUB_SLEEP:-0}"
if [[ -n ${STUB_VERDICT:-} ]]; then
  # Replaced atomically, as preflight does.
  cp "$STUB_VERDICT" "${json:?no --json given to preflight fleet}.tmp"
  mv "$json.tmp" "$json"
fi
sleep "${STUB_LINGER:-0}"
exit "${STUB_STATUS:-0}"
