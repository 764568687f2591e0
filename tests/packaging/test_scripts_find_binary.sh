#!/usr/bin/env bash
# The installed scripts work from libexec/preflight/: the Slurm hooks source common.sh next to
# them and ci-gate.sh sources lib/hostlist.sh, and each finds the installed binary at
# ../../bin/preflight with nothing on PATH and no PREFLIGHT_BIN. Slurm, logger and the launcher
# are stand-ins in a temporary folder; the prolog and the health check really run the binary.
# Usage: test_scripts_find_binary.sh CMAKE BUILD_DIR
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
cmake=$1 build=$2
make_tmp "$build"
prefix=$tmp/prefix
libexec=$prefix/libexec/preflight

# The hooks search their fixed PATH first; a preflight there would be found first (as
# documented), and this test could not tell which binary ran.
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  if [[ -x $d/preflight ]]; then
    echo "a preflight is installed on the default PATH ($d/preflight): skipped"
    exit 77
  fi
done

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; die "cmake --install failed"; }
installed=$(readlink -f "$prefix/bin/preflight")
for s in prolog.sh healthcheck.sh ci-gate.sh; do
  [[ -x $libexec/$s ]] || die "libexec/preflight/$s is not installed"
done

# Stand-ins: logger (for the gate; the installed hooks, which have no test harness beside them,
# use the machine's logger from their fixed PATH), scontrol (the health check reads the node's
# state), and a launcher that records the command the gate would run on every node.
mkdir -p "$tmp/bin" "$tmp/slurm" "$tmp/state" "$tmp/gate"
cat >"$tmp/bin/logger" <<'STUB'
#!/bin/sh
exit 0
STUB
cat >"$tmp/slurm/scontrol" <<'STUB'
#!/bin/sh
if [ "$1" = -o ] && [ "$2" = show ]; then echo "NodeName=$4 Arch=x86_64 State=IDLE"; fi
exit 0
STUB
cat >"$tmp/bin/mpirun" <<STUB
#!/bin/sh
printf '%s\n' "\$@" >"$tmp/launched"
exit 0
STUB
chmod +x "$tmp/bin/logger" "$tmp/slurm/scontrol" "$tmp/bin/mpirun"
hook_env=(env -i "PATH=$tmp/bin:/usr/bin:/bin" "HOME=$tmp" PREFLIGHT_CONFIG= PREFLIGHT_SYSLOG_TAG=preflight-test
  "PREFLIGHT_STATE_DIR=$tmp/state" PREFLIGHT_NODENAME=pkgtest
  "PREFLIGHT_SCONTROL=$tmp/slurm/scontrol" PREFLIGHT_TIMEOUT=60
  PREFLIGHT_HEALTHCHECK_TIMEOUT=60 "PREFLIGHT_PROLOG_ARGS=--expect-gpus 0"
  "PREFLIGHT_HEALTHCHECK_ARGS=--expect-gpus 0")

# Exit 0 or 1 is a judgement (the binary ran and wrote a verdict); 3 would be "not found".
rc=0
"${hook_env[@]}" "$libexec/prolog.sh" >"$tmp/prolog.out" 2>&1 || rc=$?
if [[ $rc != 0 && $rc != 1 ]] || [[ ! -s $tmp/state/prolog.json ]]; then
  cat "$tmp/prolog.out" >&2
  fail "installed prolog.sh exited $rc without a verdict in PREFLIGHT_STATE_DIR"
fi
rc=0
"${hook_env[@]}" "$libexec/healthcheck.sh" >"$tmp/healthcheck.out" 2>&1 || rc=$?
if [[ $rc != 0 ]] || [[ ! -s $tmp/state/healthcheck.json ]]; then
  cat "$tmp/healthcheck.out" >&2
  fail "installed healthcheck.sh exited $rc without a verdict in PREFLIGHT_STATE_DIR"
fi

# The verdicts record the command line: the binary the hooks ran is the installed one.
for hook in prolog healthcheck; do
  [[ -s $tmp/state/$hook.json ]] || continue
  ran=$(grep -A1 '"argv": \[' "$tmp/state/$hook.json" | sed -n '2s/^ *"\(.*\)",\{0,1\}$/\1/p')
  [[ -n $ran && $(readlink -f "$ran") == "$installed" ]] ||
    fail "installed $hook.sh ran '$ran', not the installed $installed"
done

# ci-gate.sh: node list expanded by lib/hostlist.sh (no scontrol on PATH), binary found, the
# launcher started with it. The stand-in writes no verdict, so the gate ends "broken" (3).
rc=0
env -i "PATH=$tmp/bin:/usr/bin:/bin" "HOME=$tmp" "$libexec/ci-gate.sh" \
  --nodes 'pkgtest[1-2]' --launcher mpirun --launcher-bin "$tmp/bin/mpirun" \
  --json "$tmp/gate/fleet.json" -- --expect-gpus 0 >"$tmp/gate.out" 2>&1 || rc=$?
if [[ ! -f $tmp/launched ]]; then
  cat "$tmp/gate.out" >&2
  fail "installed ci-gate.sh (exit $rc) never started the launcher"
else
  used=""
  prev=""
  while IFS= read -r arg; do
    [[ $arg == fleet && -n $prev ]] && used=$prev
    prev=$arg
  done <"$tmp/launched"
  [[ -n $used && $(readlink -f "$used") == "$installed" ]] ||
    fail "installed ci-gate.sh launched '$used fleet', not the installed $installed"
  [[ $rc == 3 ]] || { cat "$tmp/gate.out" >&2; fail "ci-gate.sh exited $rc, expected 3 (no verdict)"; }
fi
finish
