#!/usr/bin/env bash
# Node lists for scripts/ci-gate.sh, without Slurm: Slurm hostlist expressions and host files.
#
# Sourced by ci-gate.sh (which prefers `scontrol show hostnames` where Slurm is installed and
# uses hostlist_expand otherwise). Run directly, it is the test hook for the expander:
#   hostlist.sh expand 'gpu[001-004,010],login1'   # one host per line
#   hostlist.sh hostfile hosts.txt                  # one host per line
# Errors: one line on stderr, status 1. Only functions and constants are defined when sourced,
# so the caller's shell options stay its own.

# Host names a node list may hold. It is the set the fleet verdict accepts in its exclude list
# (docs/fleet-verdict.md), so a host the gate launches on can also be excluded. A leading '-'
# would read as an option to srun or mpirun.
readonly HOSTLIST_NAME_RE='^[A-Za-z0-9._][A-Za-z0-9._-]*$'
# A typo such as node[1-1000000] should fail at once rather than fill the memory.
readonly HOSTLIST_MAX_HOSTS=100000

hostlist_error() {
  printf 'hostlist: %s\n' "$*" >&2
  return 1
}

# _hostlist_expand_token PREFIX REST: appends to the caller's array `_hl_out` every name that
# REST (text with zero or more bracket groups) yields after PREFIX. Several groups multiply out,
# the first one outermost, as in Slurm: rack[1-2]-n[1-2] -> rack1-n1 rack1-n2 rack2-n1 rack2-n2.
_hostlist_expand_token() {
  local prefix=$1 rest=$2
  if [[ $rest != *'['* ]]; then
    [[ $rest != *']'* ]] || hostlist_error "unmatched ']' in '$_hl_list'" || return 1
    _hl_out+=("$prefix$rest")
    ((${#_hl_out[@]} <= HOSTLIST_MAX_HOSTS)) ||
      hostlist_error "more than $HOSTLIST_MAX_HOSTS hosts in '$_hl_list'" || return 1
    return 0
  fi
  local head=${rest%%'['*}
  local after=${rest#*'['}
  [[ $head != *']'* ]] || hostlist_error "unmatched ']' in '$_hl_list'" || return 1
  [[ $after == *']'* ]] || hostlist_error "unmatched '[' in '$_hl_list'" || return 1
  local body=${after%%']'*}
  local tail=${after#*']'}
  [[ $body != *'['* ]] || hostlist_error "nested '[' in '$_hl_list'" || return 1
  [[ -n $body ]] || hostlist_error "empty brackets in '$_hl_list'" || return 1
  local item lo hi width n num items
  IFS=, read -r -a items <<<"$body"
  # A trailing comma inside the brackets leaves no item for `read`: count the commas instead.
  local commas=${body//[^,]/}
  ((${#items[@]} == ${#commas} + 1)) || hostlist_error "empty range in '[$body]'" || return 1
  for item in "${items[@]}"; do
    [[ -n $item ]] || hostlist_error "empty range in '[$body]'" || return 1
    if [[ $item =~ ^([0-9]+)-([0-9]+)$ ]]; then
      lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
    elif [[ $item =~ ^[0-9]+$ ]]; then
      lo=$item hi=$item
    else
      hostlist_error "bad range '$item' in '[$body]' (expected N or N-M with digits)"
      return 1
    fi
    # 18 digits stay inside bash's 64-bit arithmetic.
    ((${#lo} <= 18 && ${#hi} <= 18)) || hostlist_error "number too long in '[$body]'" || return 1
    # The lower bound's digits set the width, so gpu[001-010] keeps its zero padding; 10#
    # keeps a leading zero from meaning octal.
    width=${#lo}
    ((10#$lo <= 10#$hi)) || hostlist_error "range '$item' runs backwards" || return 1
    ((10#$hi - 10#$lo < HOSTLIST_MAX_HOSTS)) ||
      hostlist_error "more than $HOSTLIST_MAX_HOSTS hosts in '$_hl_list'" || return 1
    for ((n = 10#$lo; n <= 10#$hi; n++)); do
      printf -v num "%0*d" "$width" "$n"
      _hostlist_expand_token "$prefix$head$num" "$tail" || return 1
    done
  done
}

# hostlist_expand LIST: prints the hosts of a Slurm hostlist expression, one per line, in order
# (duplicates kept: the caller decides about them). Commas separate names except inside
# brackets; a bracket holds comma-separated numbers and ranges.
hostlist_expand() {
  local _hl_list=$1
  local -a _hl_out=() pieces=()
  local token="" piece opens closes open=0
  [[ -n $_hl_list ]] || hostlist_error "empty node list" || return 1
  [[ ! $_hl_list =~ [[:space:]] ]] || hostlist_error "whitespace in node list '$_hl_list'" ||
    return 1
  # `read` drops a trailing empty field, so a trailing comma is caught here.
  [[ $_hl_list != *, ]] || hostlist_error "empty host name in '$_hl_list'" || return 1
  # Split at every comma, then glue back the pieces of a bracket that held commas. This is
  # linear in the list's length; a loop over characters is quadratic in bash and takes
  # minutes on a list of thousands of names.
  IFS=, read -r -a pieces <<<"$_hl_list"
  for piece in "${pieces[@]}"; do
    if ((open)); then token+=",$piece"; else token=$piece; fi
    opens=${token//[!\[]/} closes=${token//[!\]]/}
    if ((${#opens} > ${#closes})); then
      open=1
      continue
    fi
    open=0
    [[ -n $token ]] || hostlist_error "empty host name in '$_hl_list'" || return 1
    # Only name characters and brackets outside the ranges; the ranges check themselves.
    [[ ${token//[][,]/} =~ ^[A-Za-z0-9._-]*$ ]] ||
      hostlist_error "bad character in '$token' (allowed: letters, digits, '.', '_', '-')" ||
      return 1
    _hostlist_expand_token "" "$token" || return 1
  done
  ((!open)) || hostlist_error "unmatched '[' in '$_hl_list'" || return 1
  local host
  for host in "${_hl_out[@]}"; do
    [[ $host =~ $HOSTLIST_NAME_RE ]] || hostlist_error "bad host name '$host'" || return 1
  done
  printf '%s\n' "${_hl_out[@]}"
}

# hostfile_read FILE: prints the hosts of a host file, one per line, in file order. One host
# per line; '#' starts a comment; blank lines are skipped. Open MPI's `host slots=N` (and
# max_slots=N) is accepted and the slot counts ignored: the gate runs one rank per node.
hostfile_read() {
  local file=$1 line lineno=0 host word
  local -a words
  [[ -f $file && -r $file ]] || hostlist_error "cannot read host file '$file'" || return 1
  local -a hosts=()
  while IFS= read -r line || [[ -n $line ]]; do
    lineno=$((lineno + 1))
    line=${line%%'#'*}
    read -r -a words <<<"$line"
    ((${#words[@]} > 0)) || continue
    host=${words[0]}
    for word in "${words[@]:1}"; do
      [[ $word =~ ^(slots|max_slots)=[0-9]+$ ]] ||
        hostlist_error "$file:$lineno: unexpected '$word' (one host per line, optionally" \
          "'slots=N')" || return 1
    done
    [[ $host =~ $HOSTLIST_NAME_RE ]] ||
      hostlist_error "$file:$lineno: bad host name '$host'" || return 1
    hosts+=("$host")
  done <"$file"
  ((${#hosts[@]} > 0)) || hostlist_error "no hosts in '$file'" || return 1
  printf '%s\n' "${hosts[@]}"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  case "${1:-} $#" in
    "expand 2") hostlist_expand "$2" ;;
    "hostfile 2") hostfile_read "$2" ;;
    *)
      echo "usage: hostlist.sh expand LIST | hostlist.sh hostfile FILE" >&2
      exit 2
      ;;
  esac
fi
