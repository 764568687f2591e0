#!/usr/bin/env bash
# Runs shellcheck over the Slurm hooks and their tests: bash shellcheck.sh SOURCE_DIR. Exit 77 (ctest:
# skipped) where shellcheck is not installed (Debian: apt-get install shellcheck).
set -euo pipefail
cd "$1"
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "skipped: shellcheck is not installed"
  exit 77
fi
shellcheck -x scripts/slurm/prolog.sh scripts/slurm/healthcheck.sh scripts/slurm/common.sh \
  scripts/slurm/trust.sh scripts/slurm/state.sh
shellcheck -x -P tests/slurm tests/slurm/lib.sh tests/slurm/test_prolog.sh \
  tests/slurm/test_healthcheck.sh tests/slurm/test_reboot.sh tests/slurm/test_security.sh \
  tests/slurm/test-harness.sh \
  tests/slurm/hooks_under_test.sh \
  tests/slurm/shellcheck.sh
# The example environment file is sourced by the hooks: it must be valid shell.
bash -n scripts/slurm/preflight.default
echo "shellcheck: clean"
