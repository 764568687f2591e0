# shellcheck shell=bash
# What the Slurm hooks require of a file, a folder or a program before they use it as root
# (docs/slurm.md, Security), after sshd's StrictModes: it and every folder above it belong to
# root (or to the user the hook runs as), nothing of it can be written by group or others
# (a folder above may be, if it is sticky, as /tmp is: then no one else can rename or replace
# what root owns in it), every symbolic link on the way belongs to root as well, and a program's
# library search path (RUNPATH, RPATH) names no folder relative to where it runs.
# Sourced by common.sh, never run. Each check returns 1 with the reason in PF_DETAIL.
# shellcheck disable=SC2034  # PF_DETAIL and PF_ELF_PATHS are read by the callers

# Root, or the user this hook runs as (root on a node; the tests' unprivileged runs).
pf_uid_ok() { [[ $1 == 0 || $1 == "$EUID" ]]; }

# pf_check_chain REAL WHAT STRICT [ABOVE]: REAL (a path without symbolic links) and every folder
# above it belong to root, and none can be written by group or others; the folders above REAL
# may if they are sticky. With STRICT=0, REAL itself is judged as one of those folders above
# (the folder of a symbolic link); with ABOVE=0, the folders above are not judged. One stat for
# the whole chain.
pf_check_chain() {
  local real=$1 what=$2 strict=$3 above=${4:-1} d i uid mode
  local -a paths=("$real") info=()
  d=$real
  while ((above)) && [[ $d != / ]]; do
    d=${d%/*}
    d=${d:-/}
    paths+=("$d")
  done
  mapfile -t info < <(stat -c '%u %a' -- "${paths[@]}" 2>/dev/null)
  if ((${#info[@]} != ${#paths[@]})); then
    PF_DETAIL="$what: cannot read the owner of $real or of a folder above it"
    return 1
  fi
  for i in "${!paths[@]}"; do
    read -r uid mode <<<"${info[i]}"
    if ! pf_uid_ok "$uid"; then
      PF_DETAIL="$what: ${paths[i]} belongs to uid $uid, not root"
      return 1
    fi
    mode=$((8#$mode))
    ((mode & 8#022)) || continue
    if ((i > 0 || !strict)) && ((mode & 8#1000)); then continue; fi
    PF_DETAIL=$(printf '%s: %s can be written by group or others (mode %04o)' "$what" "${paths[i]}" "$mode")
    return 1
  done
}

# pf_trusted PATH WHAT KIND [ABOVE]: PATH (absolute; KIND dir or file) exists, is of that kind,
# and passes pf_check_chain; so does the folder of every symbolic link on the way to it, and each
# such link belongs to root (whoever may replace a link decides where the path leads). ABOVE=0
# judges what PATH leads to alone (the metrics folder: see its caller).
pf_trusted() {
  local path=$1 what=$2 kind=$3 above=${4:-1} real prefix="" rest uid parent
  if [[ $path != /* ]]; then
    PF_DETAIL="$what $path: not an absolute path"
    return 1
  fi
  if ! real=$(realpath -e -- "$path" 2>/dev/null); then
    PF_DETAIL="$what $path does not exist"
    return 1
  fi
  if [[ $kind == dir && ! -d $real ]] || [[ $kind == file && ! -f $real ]]; then
    PF_DETAIL="$what $path is not a $([[ $kind == dir ]] && echo folder || echo regular file)"
    return 1
  fi
  pf_check_chain "$real" "$what $path" 1 "$above" || return 1
  ((above)) || return 0
  rest=${path#/}
  while [[ -n $rest ]]; do
    prefix+=/${rest%%/*}
    if [[ $rest == */* ]]; then rest=${rest#*/}; else rest=""; fi
    [[ -L $prefix ]] || continue
    uid=$(stat -c %u -- "$prefix" 2>/dev/null) || uid=unknown
    if ! pf_uid_ok "$uid"; then
      PF_DETAIL="$what $path: the symbolic link $prefix belongs to uid $uid, not root"
      return 1
    fi
    parent=$(realpath -e -- "${prefix%/*}/" 2>/dev/null) || parent=/
    pf_check_chain "$parent" "$what $path: the folder of the symbolic link $prefix" 0 || return 1
  done
}

# pf_trusted_program PATH WHAT: an executable regular file that passes pf_trusted and, if it is
# an ELF program, whose RUNPATH and RPATH entries are each an absolute folder or one under
# $ORIGIN (the program's own folder), and pass pf_check_chain where they exist. An empty or
# relative entry makes the loader look in the working directory, or below it, for the
# libraries root then runs (and dlopen, for NVML, follows the same path). A script (a wrapper
# an admin wrote) passes on ownership alone.
pf_trusted_program() {
  local path=$1 what=$2 real entry dir rc=0 origin
  pf_trusted "$path" "$what" file || return 1
  if [[ ! -x $path ]]; then
    PF_DETAIL="$what $path is not executable"
    return 1
  fi
  real=$(realpath -e -- "$path")
  origin=${real%/*}
  pf_elf_search_paths "$real" || rc=$?
  ((rc != 2)) || return 0
  if ((rc != 0)); then
    PF_DETAIL="$what $path: $PF_DETAIL"
    return 1
  fi
  local -a entries
  for entry in "${PF_ELF_PATHS[@]}"; do
    if [[ -z $entry || $entry == :* || $entry == *: || $entry == *::* ]]; then
      PF_DETAIL="$what $path: its library search path $entry has an empty entry, which means the working directory"
      return 1
    fi
    IFS=: read -r -a entries <<<"$entry" || true
    for dir in "${entries[@]}"; do
      # shellcheck disable=SC2016  # the loader's token $ORIGIN, literally
      case $dir in
        '$ORIGIN' | '$ORIGIN/'*) dir=$origin${dir#'$ORIGIN'} ;;
        '${ORIGIN}' | '${ORIGIN}/'*) dir=$origin${dir#'${ORIGIN}'} ;;
        /*) ;;
        *)
          PF_DETAIL="$what $path: its library search path $entry has the relative entry $dir"
          return 1
          ;;
      esac
      dir=$(realpath -e -- "$dir" 2>/dev/null) || continue
      pf_check_chain "$dir" "$what $path: the library folder $dir" 1 || return 1
    done
  done
}

# pf_elf_search_paths FILE: the DT_RUNPATH and DT_RPATH strings of a 64-bit little-endian ELF
# file (x86_64, aarch64: what preflight is built for) into PF_ELF_PATHS, read with od from
# coreutils (compute nodes may lack binutils). Returns 2 if FILE is not ELF, 1 (PF_DETAIL) if
# it is ELF but cannot be read as such. Every size read is bounded.
pf_elf_search_paths() {
  local file=$1 magic phoff phentsize phnum i dyn_off=-1 dyn_size=0 strtab=-1 str_off=-1
  local -a w=() loads=() offsets=()
  PF_ELF_PATHS=()
  magic=$(od -An -v -t x1 -N 6 -- "$file" 2>/dev/null | tr -d ' \n')
  [[ $magic == 7f454c46* ]] || return 2
  if [[ $magic != 7f454c460201 ]]; then
    PF_DETAIL="not a 64-bit little-endian ELF file, whose library search path could be read"
    return 1
  fi
  read -r phoff < <(od -An -v -t u8 --endian=little -j 32 -N 8 -- "$file") || true
  read -r phentsize phnum < <(od -An -v -t u2 --endian=little -j 54 -N 4 -- "$file") || true
  if [[ ! $phoff =~ ^[0-9]{1,12}$ ]] || ((phentsize != 56 || phnum < 1 || phnum > 512)); then
    PF_DETAIL="an ELF program header table that cannot be read"
    return 1
  fi
  # Each program header as 7 words: type|flags, offset, vaddr, paddr, filesz, memsz, align.
  read -r -a w < <(od -An -v -t u8 --endian=little -j "$phoff" -N $((phnum * 56)) -- "$file" | tr '\n' ' ') || true
  ((${#w[@]} == phnum * 7)) || { PF_DETAIL="a truncated ELF program header table"; return 1; }
  for ((i = 0; i < phnum; i++)); do
    case $((w[i * 7] & 0xffffffff)) in
      1) loads+=("${w[i * 7 + 2]} ${w[i * 7 + 4]} ${w[i * 7 + 1]}") ;;  # PT_LOAD: vaddr filesz offset
      2) dyn_off=${w[i * 7 + 1]} dyn_size=${w[i * 7 + 4]} ;;              # PT_DYNAMIC
    esac
  done
  ((dyn_off >= 0)) || return 0  # statically linked: no search path at all
  if ((dyn_size < 16 || dyn_size > 65536)); then
    PF_DETAIL="an ELF dynamic section of $dyn_size bytes"
    return 1
  fi
  read -r -a w < <(od -An -v -t u8 --endian=little -j "$dyn_off" -N "$dyn_size" -- "$file" | tr '\n' ' ') || true
  for ((i = 0; i + 1 < ${#w[@]}; i += 2)); do
    case ${w[i]} in
      0) break ;;                              # DT_NULL
      5) strtab=${w[i + 1]} ;;                 # DT_STRTAB (an address)
      15 | 29) offsets+=("${w[i + 1]}") ;;     # DT_RPATH, DT_RUNPATH (offsets into it)
    esac
  done
  ((${#offsets[@]})) || return 0
  local load vaddr size off
  for load in "${loads[@]}"; do
    read -r vaddr size off <<<"$load"
    if ((strtab >= vaddr && strtab < vaddr + size)); then str_off=$((strtab - vaddr + off)); fi
  done
  if ((str_off < 0)); then
    PF_DETAIL="an ELF string table outside every loaded segment"
    return 1
  fi
  local text
  for off in "${offsets[@]}"; do
    if ! IFS= read -r -d '' text < <(tail -c +$((str_off + off + 1)) -- "$file" | head -c 4096); then
      PF_DETAIL="an ELF library search path that does not end within 4096 bytes"
      return 1
    fi
    PF_ELF_PATHS+=("$text")
  done
}
