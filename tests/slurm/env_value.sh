# shellcheck shell=bash
# t_env_value FILE NAME: the value of NAME in an environment written down with `env -0` (the
# stand-in preflight's, a hook wrapper's); returns 1 if NAME was not set, 2 if there is no FILE.
# Sourced by tests/slurm/lib.sh and tests/slurm-real/lib.sh.
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
