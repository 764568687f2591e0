#!/usr/bin/env bash
# Runs shellcheck over the GPU acceptance kit and its tests, and over CI's test scripts:
# bash shellcheck.sh SOURCE_DIR. Exit 77 (ctest: skipped) where shellcheck is not installed
# (Debian: apt-get install shellcheck).
set -euo pipefail
cd "$1"
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "skipped: shellcheck is not installed"
  exit 77
fi
shellcheck -x scripts/gpu-acceptance.sh scripts/acceptance/build.sh scripts/acceptance/build-carry.sh
shellcheck -x tests/acceptance/test_kit.sh tests/acceptance/shellcheck.sh
# And what CI runs around the suite: the test driver and its hardening steps (docs/testing.md).
shellcheck -x scripts/test.sh scripts/test-under-load.sh scripts/sanitize.sh scripts/fuzz.sh
echo "shellcheck: clean"
