#!/usr/bin/env bash
# Quick start: install dependencies, build, and run the quick profile on this node. Prints the
# table and writes the verdict to verdict.json (or $VERDICT). Exits with preflight's exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh -DPREFLIGHT_BUILD_TESTS=OFF
exec build/preflight run --profile quick --json "${VERDICT:-verdict.json}" "$@"
