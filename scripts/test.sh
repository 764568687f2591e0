#!/usr/bin/env bash
# Installs dependencies, builds from scratch in build-test/ (or $BUILD_DIR) and runs the whole
# test suite. GPU tests (label gpu) report "skipped" where no GPU is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh --test
export BUILD_DIR=${BUILD_DIR:-build-test}
rm -rf "$BUILD_DIR"
scripts/build.sh -DPREFLIGHT_BUILD_TESTS=ON
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 300 "$@"
