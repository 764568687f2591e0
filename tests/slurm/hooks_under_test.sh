# shellcheck shell=bash
# What the two suites that run the Slurm hooks share (tests/slurm/lib.sh, tests/slurm-real/lib.sh):
# the hooks under test, the binary they run, and reading an environment written down. Sourced;
# T_SRC is the checkout.

# t_hooks_under_test FROM TO: the hooks of folder FROM (every *.sh: the checkout's scripts/slurm/
# or an installed libexec/preflight/) into folder TO, with tests/slurm/test-harness.sh beside
# them, the only way stand-ins can come before the hooks' fixed PATH. Returns 1 if it cannot.
t_hooks_under_test() {
  mkdir -p "$2" && cp "$1"/*.sh "$T_SRC/tests/slurm/test-harness.sh" "$2/"
}

# t_trusted_binary BIN DIR: prints DIR/preflight, a hard link of BIN (a copy across file
# systems). The hooks refuse a program in a folder that group or others can write, as a checkout
# unpacked from `git archive` (0775) is; DIR is the test's own scratch folder.
t_trusted_binary() {
  mkdir -p "$2" && { ln "$1" "$2/preflight" 2>/dev/null || cp "$1" "$2/preflight"; } &&
    printf '%s' "$2/preflight"
}

# t_env_value FILE NAME: the value of NAME in an environment written down with `env -0` (the
# stand-in preflight's, a hook wrapper's); returns 1 if NAME was not set, 2 if there is no FILE.
t_env_value() {
  local entry
  [[ -f $1 ]] || return 2
  while IFS= read -r -d '' entry; do
    if [[ $entry == "$2="* ]]; then
      printf '%s' "${entry#*=}"
      return 0
    fi
  done <"$1"
  return 1
}
