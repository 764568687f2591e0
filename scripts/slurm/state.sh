# shellcheck shell=bash
# The hooks' state directory (docs/slurm.md, State directory, Security): made and kept 0700 with
# its files 0600, the lock that serializes the hooks, the verdicts kept and the prolog's failure
# records, every file written whole through a new temporary file beside it. Sourced by common.sh,
# never run; functions return results in PF_* globals.
# shellcheck disable=SC2034

# The state directory holds the lock, the last verdicts and the history: 0700, its files 0600
# (umask 077), refused unless pf_trusted. A missing one is created below a folder that passes
# pf_trusted; an older one readable by others is made 0700. Returns 1 (PF_DETAIL) if it cannot
# be made or written, 2 if it is refused. Scratch directories a day old are left over from hooks
# killed with SIGKILL (no hook runs that long) and are removed.
pf_prepare_state_dir() {
  local dir=$PREFLIGHT_STATE_DIR rc=0
  pf_own_dir "$dir" || return
  pf_own_dir "$dir/history" || rc=$?
  if ((rc == 2)); then return 2; fi
  if ((rc != 0)) || ! PF_RUN_DIR=$(mktemp -d "$dir/.run.XXXXXX" 2>/dev/null); then
    PF_RUN_DIR=""
    PF_DETAIL="state directory $dir is not writable"
    return 1
  fi
  find "$dir" -maxdepth 1 -name '.run.*' -mmin +1440 -exec rm -rf -- {} + 2>/dev/null || true
}

# pf_own_dir DIR: DIR exists (made 0700 if missing, below a folder that passes pf_trusted),
# passes pf_trusted and is 0700. Returns 1 (PF_DETAIL) if it cannot be made, 2 if refused.
pf_own_dir() {
  local dir=$1 above=$1
  if [[ ! -e $dir && ! -L $dir ]]; then
    while [[ ! -e $above ]]; do above=$(pf_folder_of "$above"); done
    pf_trusted "$above" "state directory $dir: the folder above it," dir || return 2
    if ! mkdir -p -- "$dir" 2>/dev/null; then
      PF_DETAIL="state directory $dir cannot be made"
      return 1
    fi
  fi
  pf_trusted "$dir" "state directory" dir || return 2
  if [[ $(stat -c %a -- "$dir") != 700 ]] && ! chmod 0700 -- "$dir" 2>/dev/null; then
    PF_DETAIL="state directory $dir cannot be made 0700"
    return 1
  fi
}

# Serialize GPU checks: a prolog and a health check must not run preflight over each other. The
# lock is held until the hook exits; preflight inherits it, so a preflight that outlives its
# hook (stuck in the kernel) keeps the next one from piling onto the same GPUs. Returns 1 with
# PF_DETAIL (naming the processes that have the lock file open) if it stays taken for WAIT s.
pf_lock() {
  local wait=$1 file="$PREFLIGHT_STATE_DIR/lock" info tmp holder
  # flock needs only a read-only handle: a lock file anyone else could open (0644 in the 0755
  # folder of older versions) is replaced by a new 0600 one, and a handle still held on the old
  # file locks nothing that is used. (Two hooks of the first run after an upgrade could each
  # replace it and run at once: once, and harmless beside a lock anyone could hold.)
  info=$(stat -c '%u %a %F' -- "$file" 2>/dev/null) || info=""
  if [[ -n $info && $info != "$EUID 600 regular"* ]]; then
    if ! tmp=$(mktemp -- "$PREFLIGHT_STATE_DIR/.lock.XXXXXX" 2>/dev/null) ||
      ! mv -f -- "$tmp" "$file" 2>/dev/null; then
      PF_DETAIL="cannot replace the lock file $file ($info)"
      return 1
    fi
  fi
  if ! { exec {PF_LOCK_FD}>>"$file"; } 2>/dev/null; then
    PF_DETAIL="cannot open lock file $file"
    return 1
  fi
  local -a how=(-w "$wait")
  if ((wait == 0)); then how=(-n); fi
  # In the background, so that a signal interrupts the wait (bash runs traps only between
  # commands, but at once during `wait`). The lock belongs to the open file, which stays ours.
  flock "${how[@]}" "$PF_LOCK_FD" &
  PF_WAITING=$!
  if wait "$PF_WAITING"; then
    PF_WAITING=""
    return 0
  fi
  PF_WAITING=""
  holder=$(pf_lock_users "$file")
  PF_DETAIL="another preflight run held the lock $file for ${wait} s${holder:+ (open in $holder)}"
  return 1
}

# "pid N (command)" of up to three processes other than this hook that have FILE open: whoever
# holds the lock, and any hook waiting for it. (/proc/locks names the process that took a flock,
# the hooks' short-lived flock command, not the hook or the preflight that inherited it.) Empty
# when none is found within 2 s.
pf_lock_users() {
  local pattern=$1 pid comm out="" n=0
  local -A seen=()
  # find's -lname takes a pattern: its special characters in the path match only themselves.
  pattern=${pattern//\\/\\\\}
  pattern=${pattern//\*/\\*}
  pattern=${pattern//\?/\\?}
  pattern=${pattern//\[/\\[}
  while IFS= read -r pid; do
    pid=${pid#/proc/}
    pid=${pid%%/*}
    [[ $pid =~ ^[0-9]+$ && $pid != "$$" && $pid != "$BASHPID" && -z ${seen[$pid]:-} ]] || continue
    seen[$pid]=1
    comm=$(head -c 64 "/proc/$pid/comm" 2>/dev/null) || comm=""
    out+="${out:+, }pid $pid${comm:+ ($(pf_sanitize "$comm" 32))}"
    ((++n < 3)) || break
  done < <(timeout 2 find /proc/[0-9]*/fd -lname "$pattern" -printf '%h\n' 2>/dev/null {PF_LOCK_FD}>&-)
  printf '%s' "$out"
}

# Keep the verdict: STATE/HOOK.json and STATE/last.json (the latest of either hook), and a copy
# in STATE/history/ of which the newest PREFLIGHT_HISTORY per hook are kept, each 0600. Every
# file appears whole: copies are written to a new temporary file (mktemp) in the same directory
# and renamed. Failures here are reported in PF_SAVE_ERROR, never fatal: the node's verdict
# matters more.
pf_save_verdict() {
  local hook=$1 verdict=$2 dir=$PREFLIGHT_STATE_DIR stamp
  PF_SAVE_ERROR=""
  stamp=$(date -u +%Y%m%dT%H%M%S.%NZ)
  chmod 0600 -- "$PF_VERDICT" 2>/dev/null || true
  if ((PREFLIGHT_HISTORY > 0)); then
    if pf_copy_into "$PF_VERDICT" "$dir/history/$hook-$stamp-$verdict.json"; then
      pf_rotate "$dir/history" "$hook" "$PREFLIGHT_HISTORY"
    else
      PF_SAVE_ERROR="history not written"
    fi
  fi
  if ! { pf_copy_into "$PF_VERDICT" "$dir/last.json" && mv -f -- "$PF_VERDICT" "$dir/$hook.json"; }; then
    PF_SAVE_ERROR="verdict not saved in $dir"
  fi
}

# pf_copy_into FROM TO: TO becomes a copy of FROM (0600), through a new temporary file beside it.
pf_copy_into() {
  local tmp
  tmp=$(mktemp -- "$(pf_folder_of "$2")/.${2##*/}.XXXXXX" 2>/dev/null) || return 1
  if cp -- "$1" "$tmp" 2>/dev/null && mv -f -- "$tmp" "$2" 2>/dev/null; then return 0; fi
  rm -f -- "$tmp"
  return 1
}

# pf_write_into FILE TEXT: FILE holds TEXT and a newline (0600), through a new temporary file
# beside it. Returns 1 if it cannot.
pf_write_into() {
  local tmp
  tmp=$(mktemp -- "$(pf_folder_of "$1")/.${1##*/}.XXXXXX" 2>/dev/null) || return 1
  if printf '%s\n' "$2" >"$tmp" 2>/dev/null && mv -f -- "$tmp" "$1" 2>/dev/null; then return 0; fi
  rm -f -- "$tmp"
  return 1
}

# Delete all but the newest KEEP history files of HOOK. Names start with the hook and a fixed-
# width UTC time stamp, so glob order (C locale) is age order; other files are left alone.
pf_rotate() {
  local dir=$1 hook=$2 keep=$3
  local -a files=()
  shopt -s nullglob
  files=("$dir/$hook"-[0-9]*Z-*.json)
  shopt -u nullglob
  if ((${#files[@]} > keep)); then
    rm -f -- "${files[@]:0:${#files[@]}-keep}"
  fi
}

# Append LINE to DIR/prolog-failures.tsv, keeping the newest PF_FAILURES_KEEP lines, through a
# new file renamed into place (a reader never sees half a line). Returns 1 if it cannot.
pf_append_failure() {
  local dir=$1 old=""
  if [[ -f $dir/$PF_FAILURES ]]; then
    old=$(tail -n $((PF_FAILURES_KEEP - 1)) -- "$dir/$PF_FAILURES" 2>/dev/null) || old=""
  fi
  pf_write_into "$dir/$PF_FAILURES" "${old:+$old$'\n'}$2"
}
