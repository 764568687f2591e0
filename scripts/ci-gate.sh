#!/usr/bin/env bash
# The CI gate: vets a set of nodes with `preflight fleet` before a big job and answers with an
# exit code, the fleet verdict file and the hosts to exclude (docs/ci-gate.md).
#
#   ci-gate.sh [OPTIONS] [-- PREFLIGHT-FLEET-OPTIONS...]
#
# stdout carries one line only, the exclude list, so that `$(ci-gate.sh ...)` can feed
# `sbatch --exclude=`; everything for people (the launcher's output, preflight's table, the
# summary) goes to stderr.
set -Eeuo pipefail

readonly EXIT_PASS=0 EXIT_FAIL=1 EXIT_USAGE=2 EXIT_BROKEN=3
# After the deadline the launcher gets SIGTERM (srun and mpirun pass it to the ranks), then
# SIGKILL this much later if it is still there.
readonly KILL_AFTER_S=15
# Processes of the launch still running once the launcher has ended (ranks that Open MPI puts in
# process groups of their own, a rank slow to honour SIGTERM) get SIGTERM, then SIGKILL this many
# milliseconds later; after SIGKILL the gate waits as long again before it gives up on them.
readonly LEFTOVER_GRACE_MS=5000
# How often the gate looks whether the launch's processes have ended.
readonly LEFTOVER_POLL_S=0.1
# preflight's ranks give up 10 s after the fleet's --timeout; the rest is for the launcher to
# start and tear down the job step.
readonly DEADLINE_MARGIN_S=60
# Without --timeout the fleet sizes its own budget (docs/fleet.md#time-budget) from the local
# profile and the round bound, which the gate cannot know beforehand: be generous. The burnin
# profile on 4096 nodes budgets about 4150 s by default.
readonly DEFAULT_DEADLINE_S=7200
# Once rank 0 has written the verdict the job is judged; ending it should take seconds.
readonly DEFAULT_GRACE_S=60

# Exit 1 means "nodes unhealthy" to the caller: a command of this script failing unexpectedly must
# not look like that.
trap 'printf "ci-gate: internal error at line %s\n" "$LINENO" >&2; exit 3' ERR

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# A checkout keeps the library in scripts/lib/; the installed layout is flat (libexec/preflight/).
if [[ -f $script_dir/lib/hostlist.sh ]]; then
  # shellcheck source-path=SCRIPTDIR source=lib/hostlist.sh
  source "$script_dir/lib/hostlist.sh"
else
  # shellcheck source-path=SCRIPTDIR source=lib/hostlist.sh
  source "$script_dir/hostlist.sh"
fi

usage() {
  cat <<'EOF'
usage: ci-gate.sh [OPTIONS] [-- PREFLIGHT-FLEET-OPTIONS...]

Runs `preflight fleet` on every listed node (one rank per node) under srun or mpirun, writes
the fleet verdict, prints the hosts to exclude on stdout as one line (empty when none), and
exits 0 only when the gate passes.

Nodes (one of; inside a Slurm allocation the default is $SLURM_JOB_NODELIST):
  --nodes LIST            Slurm hostlist, e.g. 'gpu[001-004,010],login1'
  --hostfile FILE         one host per line; '#' comments; 'host slots=N' (slots ignored)
  --allow-duplicate-hosts let a host appear several times (several ranks on it; mpirun only)
Launching:
  --launcher auto|srun|mpirun   auto: srun inside a Slurm allocation, or when srun exists and
                                no host file was given; mpirun otherwise
  --launcher-bin PATH     the srun or mpirun executable (default: from PATH)
  --launcher-args "ARGS"  extra launcher arguments, split at spaces (repeatable)
  --preflight PATH        the preflight binary (default: $PREFLIGHT_BIN, then PATH, then
                          the checkout's build/ or the installed bin/)
  --deadline SECONDS      outer deadline of the launch (default: preflight's --timeout + 60,
                          else 7200); SIGTERM then, SIGKILL 15 s later
  --grace SECONDS         stop the launcher this long after the verdict is written if it
                          has not ended by itself (default 60)
Judging:
  --json PATH             fleet verdict file (default ./preflight-fleet.json)
  --min-healthy M         pass when the verdict is complete and at least M nodes are healthy
                          (default: pass only when every node is healthy and no pair is bad)
Everything after -- goes to `preflight fleet` unchanged, e.g. -- --expect-gpus 8.

Exit: 0 gate passed; 1 gate failed; 2 invalid invocation; 3 the fleet run broke.
EOF
}

usage_error() {
  printf 'ci-gate: %s (see ci-gate.sh --help)\n' "$*" >&2
  exit "$EXIT_USAGE"
}

broken() {
  printf 'ci-gate: error: %s\n' "$*" >&2
  printf 'ci-gate: GATE BROKEN (exit 3): no judgement; %s %s\n' "$json" "$json_state" >&2
  exit "$EXIT_BROKEN"
}

note() { printf 'ci-gate: %s\n' "$*" >&2; }

# ---- Arguments -------------------------------------------------------------------------------

json_state="was not updated"
# The launch: its pid (also its session and process group), whether this shell has reaped it,
# and whether end_launch has run.
launch_pid="" launch_reaped=0 launch_done=0
nodes_list="" nodes_given=0 hostfile="" launcher=auto launcher_bin="" preflight=""
json=./preflight-fleet.json min_healthy="" deadline="" grace=$DEFAULT_GRACE_S allow_duplicates=0
launcher_args=() fleet_args=()

need_value() {
  (($# >= 2)) || usage_error "$1 needs a value"
}

while (($# > 0)); do
  opt=$1
  # --opt=value is the same as --opt value.
  if [[ $opt == --*=* ]]; then
    set -- "${opt%%=*}" "${opt#*=}" "${@:2}"
    opt=$1
  fi
  case $opt in
    --nodes) need_value "$@"; nodes_list=$2; nodes_given=1; shift 2 ;;
    --hostfile)
      need_value "$@"
      [[ -n $2 ]] || usage_error "--hostfile needs a file name"
      hostfile=$2
      shift 2
      ;;
    --allow-duplicate-hosts) allow_duplicates=1; shift ;;
    --launcher) need_value "$@"; launcher=$2; shift 2 ;;
    --launcher-bin) need_value "$@"; launcher_bin=$2; shift 2 ;;
    --launcher-args)
      need_value "$@"
      # Split at blanks and newlines, never evaluated: quotes inside are plain characters.
      read -r -d "" -a words <<<"$2" || true
      launcher_args+=("${words[@]}")
      shift 2
      ;;
    --preflight) need_value "$@"; preflight=$2; shift 2 ;;
    --json) need_value "$@"; json=$2; shift 2 ;;
    --min-healthy) need_value "$@"; min_healthy=$2; shift 2 ;;
    --deadline) need_value "$@"; deadline=$2; shift 2 ;;
    --grace) need_value "$@"; grace=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; fleet_args=("$@"); break ;;
    *) usage_error "unknown option '$opt' (options for preflight fleet go after --)" ;;
  esac
done

case $launcher in
  auto | srun | mpirun) ;;
  *) usage_error "--launcher must be auto, srun or mpirun, not '$launcher'" ;;
esac
if [[ -n $min_healthy && ! $min_healthy =~ ^[0-9]{1,7}$ ]]; then
  usage_error "--min-healthy needs a whole number of nodes, not '$min_healthy'"
fi
if [[ -n $deadline && ! $deadline =~ ^[1-9][0-9]{0,6}$ ]]; then
  usage_error "--deadline needs a whole number of seconds from 1 to 9999999, not '$deadline'"
fi
[[ $grace =~ ^[0-9]{1,7}$ ]] || usage_error "--grace needs a whole number of seconds, not '$grace'"
((nodes_given == 0 || ${#hostfile} == 0)) || usage_error "give --nodes or --hostfile, not both"

# The gate owns the verdict path: a second --json would send the verdict elsewhere.
fleet_timeout=""
for ((i = 0; i < ${#fleet_args[@]}; i++)); do
  case ${fleet_args[i]} in
    --json | --json=*) usage_error "give the verdict path with the gate's --json, not after --" ;;
    --timeout=*) fleet_timeout=${fleet_args[i]#--timeout=} ;;
    --timeout) fleet_timeout=${fleet_args[i + 1]:-} ;;
  esac
done

# ---- Nodes -----------------------------------------------------------------------------------

if [[ -n $hostfile ]]; then
  # On failure the library prints nothing on stdout, so its message is all that is captured.
  host_text=$(hostfile_read "$hostfile" 2>&1) || usage_error "${host_text#hostlist: }"
else
  if ((nodes_given == 0)); then
    [[ -n ${SLURM_JOB_NODELIST:-} ]] ||
      usage_error "no nodes: give --nodes or --hostfile, or run inside a Slurm allocation"
    nodes_list=$SLURM_JOB_NODELIST
  fi
  [[ -n $nodes_list ]] || usage_error "empty node list"
  # Slurm's own expander knows every form its lists take; ours covers the common syntax and
  # is what runs where Slurm is not installed (or scontrol cannot run without a slurm.conf).
  if ! command -v scontrol >/dev/null 2>&1 ||
    ! host_text=$(scontrol show hostnames "$nodes_list" 2>/dev/null) || [[ -z $host_text ]]; then
    host_text=$(hostlist_expand "$nodes_list" 2>&1) ||
      usage_error "invalid node list: ${host_text#hostlist: }"
  fi
fi
mapfile -t hosts <<<"$host_text"
node_count=${#hosts[@]}
((node_count > 0)) || usage_error "empty node list"

declare -A seen=()
for host in "${hosts[@]}"; do
  [[ $host =~ $HOSTLIST_NAME_RE ]] || usage_error "bad host name '$host'"
  if [[ -n ${seen[$host]:-} ]] && ((!allow_duplicates)); then
    usage_error "host '$host' is listed twice (one rank per node; --allow-duplicate-hosts" \
      "runs several ranks on one host, for tests)"
  fi
  seen[$host]=$((${seen[$host]:-0} + 1))
done

if [[ -n $min_healthy ]] && ((10#$min_healthy > node_count)); then
  usage_error "--min-healthy $min_healthy is more than the $node_count nodes listed"
fi

# ---- Programs --------------------------------------------------------------------------------

# Every node must find preflight at the same path, so the path is made absolute here.
absolute() {
  local path=$1
  while [[ $path == ./* ]]; do path=${path#./}; done
  [[ $path == /* ]] || path=$PWD/$path
  printf '%s\n' "$path"
}

if [[ -z $preflight ]]; then
  if [[ -n ${PREFLIGHT_BIN:-} ]]; then
    preflight=$PREFLIGHT_BIN
  elif command -v preflight >/dev/null 2>&1; then
    preflight=$(command -v preflight)
  elif [[ -x $script_dir/../build/preflight ]]; then
    preflight=$script_dir/../build/preflight
  else
    preflight=$script_dir/../../bin/preflight
  fi
fi
preflight=$(absolute "$preflight")
[[ -f $preflight && -x $preflight ]] ||
  usage_error "preflight not found or not executable at '$preflight' (use --preflight PATH)"

if [[ $launcher == auto ]]; then
  if [[ -n ${SLURM_JOB_ID:-} ]] || { [[ -z $hostfile ]] && command -v srun >/dev/null 2>&1; }; then
    launcher=srun
  else
    launcher=mpirun
  fi
fi
# The launch runs in a session of its own (see Launch below): setsid is util-linux's.
command -v setsid >/dev/null 2>&1 || usage_error "setsid not found on PATH (it is in util-linux)"
if [[ -z $launcher_bin ]]; then
  launcher_bin=$(command -v "$launcher" 2>/dev/null) ||
    usage_error "$launcher not found on PATH (use --launcher-bin PATH or --launcher)"
fi
# A bare name is looked up on PATH, as a shell would.
if [[ $launcher_bin != */* ]]; then
  found=$(command -v "$launcher_bin" 2>/dev/null) ||
    usage_error "launcher '$launcher_bin' not found on PATH"
  launcher_bin=$found
fi
[[ -x $launcher_bin && ! -d $launcher_bin ]] ||
  usage_error "launcher '$launcher_bin' is not an executable"
if [[ $launcher == srun ]] && ((${#seen[@]} < node_count)); then
  usage_error "duplicate hosts work with mpirun only (srun runs one task per node)"
fi

json=$(absolute "$json")
json_dir=$(dirname "$json")
[[ -d $json_dir && -w $json_dir ]] || usage_error "cannot write the verdict into '$json_dir'"
[[ ! -d $json ]] || usage_error "--json '$json' is a directory"

if [[ -z $deadline ]]; then
  if [[ $fleet_timeout =~ ^[0-9]{1,7}$ ]]; then
    deadline=$((10#$fleet_timeout + DEADLINE_MARGIN_S))
  else
    deadline=$DEFAULT_DEADLINE_S
  fi
fi

# ---- Launch ----------------------------------------------------------------------------------

# preflight writes into a fresh folder next to the verdict path (the same file system, which
# rank 0's node must share): a verdict left by an earlier run can never be taken for this
# run's, and the final rename is atomic.
work=$(mktemp -d "$json_dir/.ci-gate.XXXXXX") || usage_error "cannot create a folder in '$json_dir'"
# Whatever ends this script, no process of the launch outlives it (end_launch, below).
trap 'end_launch; rm -rf -- "$work"' EXIT
fresh=$work/fleet.json

cmd=("$launcher_bin")
if [[ $launcher == srun ]]; then
  # srun reads hostlist syntax itself: the list as given stays short on a command line that is
  # logged; a host file's names are joined. srun numbers the tasks in Slurm's node order.
  srun_nodes=$nodes_list
  [[ -z $hostfile ]] || srun_nodes=$(IFS=,; printf '%s' "${hosts[*]}")
  cmd+=(--nodes="$node_count" --ntasks="$node_count" --ntasks-per-node=1
    --nodelist="$srun_nodes" --mpi=pmix)
else
  # One line per host with its rank count, in first-appearance order: with map-by slot, rank
  # r runs on the r-th host (duplicates, allowed for tests, run next to each other). Open MPI
  # rejects a host named twice with slot counts, hence the sum.
  declare -A written=()
  for host in "${hosts[@]}"; do
    [[ -z ${written[$host]:-} ]] || continue
    written[$host]=1
    printf '%s slots=%d\n' "$host" "${seen[$host]}"
  done >"$work/hostfile"
  ((EUID != 0)) || cmd+=(--allow-run-as-root)
  # The one rank of a node runs checks on threads across all its GPUs: no pinning to a core.
  cmd+=(--hostfile "$work/hostfile" -np "$node_count" --map-by slot --bind-to none)
fi
cmd+=("${launcher_args[@]}" "$preflight" fleet --json "$fresh" "${fleet_args[@]}")

note "$node_count nodes, $launcher, deadline ${deadline}s: $(printf '%q ' "${cmd[@]}")"
started=$SECONDS

# The launch owns a session: setsid makes the background job (a script has no job control, so it
# is never a process-group leader and setsid does not fork) the leader of a new session and of its
# process group, both numbered $launch_pid. `timeout` leads them; the launcher and everything it
# starts on this machine stay in that session, the ranks that Open MPI's mpirun puts in process
# groups of their own included. The launch's processes are therefore those of session
# $launch_pid, and the gate returns only once none of them is left (end_launch).
# It runs in the background so that this shell can pass on SIGINT/SIGTERM/SIGHUP (a Ctrl-C on the
# terminal does not reach another session), and can stop a launcher that lingers after the verdict
# is written: docs/fleet.md says mpirun may hang or crash in its clean-up after MPI_Abort, and the
# verdict is complete by then.
interrupted="" verdict_at="" stopped=0 left=() now_ms=0
# shellcheck disable=SC2317  # called by the traps below
forward() {
  [[ -n $interrupted ]] || interrupted=$1
  # timeout passes SIGTERM on to the launcher's process group, and SIGKILLs it 15 s later. Only
  # timeout is signalled: a second SIGTERM makes mpirun quit at once, without ending its ranks.
  if [[ -n $launch_pid ]] && ((!launch_done)); then kill -TERM "$launch_pid" 2>/dev/null || true; fi
}

clock_ms() { # now_ms: milliseconds since the epoch
  local us=${EPOCHREALTIME//[!0-9]/}
  now_ms=$((10#$us / 1000))
}

# launch_processes: `left` becomes the pids of the launch's processes still running, every
# process of session $launch_pid (from /proc). A zombie has ended: where PID 1 does not reap
# orphans (some containers), a killed rank stays one.
# shellcheck disable=SC2317  # called by end_launch, also from the EXIT trap
launch_processes() {
  local file stat rest state
  left=()
  for file in /proc/[0-9]*/stat; do
    { read -r stat <"$file"; } 2>/dev/null || continue
    rest=${stat##*) } # after the name, which may hold ") ": state ppid pgrp session ...
    state=${rest%% *}
    rest=${rest#* }
    rest=${rest#* }
    rest=${rest#* }
    if [[ ${rest%% *} == "$launch_pid" && $state != [ZX] ]]; then
      left+=("${file:6:-5}") # /proc/PID/stat
    fi
  done
}

# end_launch: returns once no process of the launch is left, within 2 x LEFTOVER_GRACE_MS.
# After the launcher (timeout) ended, that is normally at once. Processes still running (ranks
# that outlived their launcher, or the whole launch when this script ends unexpectedly) get
# SIGTERM, and SIGKILL LEFTOVER_GRACE_MS later, polled every LEFTOVER_POLL_S. One that survives
# SIGKILL as long again (stuck in the kernel) is named on stderr and left: the gate never waits
# forever.
# shellcheck disable=SC2317  # called below and from the EXIT trap
end_launch() {
  [[ -n $launch_pid ]] && ((!launch_done)) || return 0
  launch_done=1
  local signal=TERM deadline pid when
  local -A termed=()
  # Only when this script ends unexpectedly is the launcher still running (unreaped, its pid is
  # still its own): it may not have become a session leader yet.
  if ((!launch_reaped)); then
    termed[$launch_pid]=1
    kill -TERM "$launch_pid" 2>/dev/null || true
  fi
  launch_processes
  ((${#left[@]} > 0)) || return 0
  when="after $launcher ended"
  ((launch_reaped)) || when="as the gate ends"
  note "processes of the launch still running $when: pids ${left[*]}: SIGTERM," \
    "SIGKILL after $((LEFTOVER_GRACE_MS / 1000))s"
  clock_ms
  deadline=$((now_ms + LEFTOVER_GRACE_MS))
  while ((${#left[@]} > 0)); do
    clock_ms
    if ((now_ms >= deadline)); then
      [[ $signal == TERM ]] || break
      signal=KILL
      deadline=$((now_ms + LEFTOVER_GRACE_MS))
      note "still running after SIGTERM: pids ${left[*]}: SIGKILL"
    fi
    for pid in "${left[@]}"; do
      # SIGTERM once to each (a rank may write its partial verdict on it), SIGKILL until it is gone.
      [[ $signal == KILL || -z ${termed[$pid]:-} ]] || continue
      termed[$pid]=1
      kill "-$signal" "$pid" 2>/dev/null || true
    done
    sleep "$LEFTOVER_POLL_S"
    launch_processes
  done
  ((${#left[@]} == 0)) || note "warning: still running after SIGKILL, given up: pids ${left[*]}"
}

trap 'forward SIGINT' INT
trap 'forward SIGTERM' TERM
trap 'forward SIGHUP' HUP
setsid timeout --kill-after="$KILL_AFTER_S" "$deadline" "${cmd[@]}" </dev/null >&2 &
launch_pid=$!
# bash reaps its children as they end, so kill -0 fails once the launcher is gone. Polling
# five times a second costs nothing next to a fleet run.
while kill -0 "$launch_pid" 2>/dev/null; do
  if [[ -z $verdict_at && -s $fresh ]]; then
    verdict_at=$SECONDS
  elif [[ -n $verdict_at ]] && ((!stopped && SECONDS - verdict_at >= grace)); then
    note "$launcher still runs ${grace}s after the verdict was written: stopping it"
    kill -TERM "$launch_pid" 2>/dev/null || true
    stopped=1
  fi
  sleep 0.2
done
status=0
wait "$launch_pid" || status=$?
launch_reaped=1
# The launcher has ended; what it started may not have (a rank slow to honour SIGTERM, or one
# its launcher was SIGKILLed before it could end it). Signals still only mark the interruption.
end_launch
trap - INT TERM HUP
elapsed=$((SECONDS - started))

[[ -z $interrupted ]] || broken "interrupted by $interrupted after ${elapsed}s"

# ---- Verdict ---------------------------------------------------------------------------------

if [[ ! -s $fresh ]]; then
  case $status in
    124 | 137) broken "the deadline of ${deadline}s passed before a verdict was written" ;;
    125 | 126 | 127) broken "the launcher could not be started (status $status)" ;;
    *) broken "$launcher ended with status $status after ${elapsed}s and no verdict was" \
      "written (preflight exit 2 means it rejected its options: see its message above)" ;;
  esac
fi

tsv=$("$preflight" report --format tsv "$fresh" 2>&1) ||
  broken "the verdict cannot be read: ${tsv//$'\n'/ }"
declare -A field=()
while IFS=$'\t' read -r key value; do
  if [[ -n $key ]]; then field[$key]=$value; fi
done <<<"$tsv"

# A readable verdict is this run's: keep it for the people reading the job, whatever it says.
mv -f -- "$fresh" "$json" || broken "cannot move the verdict to $json"
json_state="holds this run's verdict"

[[ ${field[kind]:-} == fleet ]] || broken "$json is not a fleet verdict"
case ${field[exit_code]:-}/${field[verdict]:-} in
  0/pass | 1/fail) ;;
  *) broken "preflight reported an internal error: ${field[reason]:-exit ${field[exit_code]:-?}}" ;;
esac
[[ ${field[nodes]:-} == "$node_count" && ${field[healthy]:-} =~ ^[0-9]+$ ]] ||
  broken "the verdict lists ${field[nodes]:-no} nodes, $node_count were launched"
if ((status == 124 || status == 137)); then
  note "the deadline passed after the verdict was written; judging by the verdict"
elif ((status > 1)); then
  # docs/fleet.md: mpirun can crash in its clean-up after MPI_Abort; the verdict is complete.
  note "$launcher ended with status $status after the verdict was written; judging by the verdict"
fi

healthy=${field[healthy]}
exclude=${field[exclude]:-}
note "fleet verdict ${field[verdict]^^} in ${elapsed}s: $healthy of $node_count healthy," \
  "${field[faulty]} faulty, ${field[stragglers]} stragglers, ${field[ambiguous]} ambiguous," \
  "${field[bad_pairs]} bad pairs${field[reason]:+: ${field[reason]}}"
[[ ${field[injected]:-0} == 0 ]] || note "faults were injected (a drill)"
note "verdict: $json"
note "exclude: ${exclude:-(none)}"
# Nodes report their own host name; one that is not the listed name would not be excluded by
# Slurm (a short name against a long one, an address in a host file).
unknown=()
IFS=, read -r -a excluded <<<"$exclude"
for host in "${excluded[@]}"; do
  [[ -n ${seen[$host]:-} ]] || unknown+=("$host")
done
((${#unknown[@]} == 0)) ||
  note "warning: not in the node list, as reported by the nodes: ${unknown[*]}"

printf '%s\n' "$exclude"
if [[ -n $min_healthy ]]; then
  if ((healthy >= 10#$min_healthy)); then
    note "GATE PASSED: $healthy healthy nodes, at least $min_healthy required"
    exit "$EXIT_PASS"
  fi
  note "GATE FAILED (exit 1): $healthy healthy nodes, at least $min_healthy required"
  exit "$EXIT_FAIL"
fi
if [[ ${field[verdict]} == pass ]]; then
  note "GATE PASSED: all $node_count nodes healthy"
  exit "$EXIT_PASS"
fi
note "GATE FAILED (exit 1): the fleet verdict is fail"
exit "$EXIT_FAIL"
