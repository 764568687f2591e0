#!/usr/bin/env bash
# The gate's own node-list expander and host-file reader (scripts/lib/hostlist.sh), called
# directly: the forms Slurm's lists take, and the mistakes that must be refused.
#   test_hostlist.sh HOSTLIST_SH
set -euo pipefail
hostlist=${1:?usage: test_hostlist.sh HOSTLIST_SH}
# shellcheck source-path=SCRIPTDIR source=gate_lib.sh
source "$(dirname "$0")/gate_lib.sh"

expands_to() { # LIST EXPECTED (space-separated)
  local got
  got=$(bash "$hostlist" expand "$1" 2>"$GATE_TMP/err") || fail "'$1' was refused: $(<"$GATE_TMP/err")"
  check_eq "$(printf '%s' "$got" | tr '\n' ' ')" "$2" "expansion of '$1'"
  printf 'ok: %s -> %s\n' "$1" "$2"
}

refused() { # LIST MESSAGE-PART
  local got status=0
  got=$(bash "$hostlist" expand "$1" 2>"$GATE_TMP/err") || status=$?
  check_eq "$status" 1 "status of expanding '$1' (output '$got')"
  check_eq "$got" "" "output of refused '$1'"
  check_eq "$(wc -l <"$GATE_TMP/err")" 1 "lines of the message for '$1'"
  check_contains "$(<"$GATE_TMP/err")" "$2" "message for '$1'"
  printf 'ok: refused %s: %s\n' "$1" "$(<"$GATE_TMP/err")"
}

expands_to 'login1' 'login1'
expands_to 'a,b,c' 'a b c'
expands_to 'gpu[001-004,010],login1' 'gpu001 gpu002 gpu003 gpu004 gpu010 login1'
expands_to 'n[8-11]' 'n8 n9 n10 n11'
expands_to 'n[08-11]' 'n08 n09 n10 n11'
expands_to 'n[7]' 'n7'
expands_to 'n[3,1,2]' 'n3 n1 n2'
expands_to 'rack[1-2]-n[01-02]' 'rack1-n01 rack1-n02 rack2-n01 rack2-n02'
expands_to 'x[1]y[2,3]z,w' 'x1y2z x1y3z w'
expands_to 'a[1-2],b[3,5-6].c' 'a1 a2 b3.c b5.c b6.c'
expands_to 'node_1.cluster-a' 'node_1.cluster-a'
expands_to 'n,n' 'n n'
expands_to 'n[0009-0011]' 'n0009 n0010 n0011'
count=$(bash "$hostlist" expand 'gpu[0001-1024],cpu[1-64]' | wc -l)
check_eq "$count" 1088 "hosts in 'gpu[0001-1024],cpu[1-64]'"
check_eq "$(bash "$hostlist" expand 'gpu[0001-1024]' | tail -n 1)" gpu1024 "last host of gpu[0001-1024]"

refused '' 'empty node list'
refused 'a,,b' 'empty host name'
refused ',a' 'empty host name'
refused 'a,' 'empty host name'
refused 'a[1-' "unmatched '['"
refused 'a[1-2,3' "unmatched '['"
refused 'a]' "unmatched ']'"
refused 'a[1]]' "unmatched ']'"
refused 'a[]' 'empty brackets'
refused 'a[1,]' 'empty range'
refused 'a[,1]' 'empty range'
refused 'a[3-1]' 'runs backwards'
refused 'a[x]' 'bad range'
refused 'a[1-2-3]' 'bad range'
refused 'a[1[2]]' "nested '['"
refused 'a b' 'whitespace'
refused 'a;b' 'bad character'
refused 'host"x' 'bad character'
refused '-x' "bad host name '-x'"
refused 'n[1-200000]' 'more than 100000 hosts'
refused 'n[1234567890123456789]' 'number too long'

# Host files: comments, blank lines, Open MPI slot counts ignored, order kept.
cat >"$GATE_TMP/hosts" <<'HOSTS'
# the rack under test
gpu-b2 slots=8

gpu-a1   # spare
  gpu-c3 slots=4 max_slots=8
HOSTS
check_eq "$(bash "$hostlist" hostfile "$GATE_TMP/hosts" | tr '\n' ' ')" 'gpu-b2 gpu-a1 gpu-c3 ' \
  "hosts of the host file"
printf 'gpu1\ngpu2' >"$GATE_TMP/no-newline"
check_eq "$(bash "$hostlist" hostfile "$GATE_TMP/no-newline" | tr '\n' ' ')" 'gpu1 gpu2 ' \
  "hosts of a host file without a final newline"

hostfile_refused() { # FILE MESSAGE-PART
  local status=0
  bash "$hostlist" hostfile "$1" >"$GATE_TMP/out" 2>"$GATE_TMP/err" || status=$?
  check_eq "$status" 1 "status of reading $1"
  check_eq "$(wc -l <"$GATE_TMP/err")" 1 "lines of the message for $1"
  check_contains "$(<"$GATE_TMP/err")" "$2" "message for $1"
  printf 'ok: refused host file: %s\n' "$(<"$GATE_TMP/err")"
}
printf 'gpu1 cores=4\n' >"$GATE_TMP/bad-key"
hostfile_refused "$GATE_TMP/bad-key" "bad-key:1: unexpected 'cores=4'"
printf '# nothing\n\n' >"$GATE_TMP/empty"
hostfile_refused "$GATE_TMP/empty" 'no hosts'
printf 'gpu1\ngpu[1-2]\n' >"$GATE_TMP/bracket"
hostfile_refused "$GATE_TMP/bracket" "bracket:2: bad host name 'gpu[1-2]'"
hostfile_refused "$GATE_TMP/missing" 'cannot read host file'
echo "PASS"
