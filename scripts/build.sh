#!/usr/bin/env bash
# Configures and builds preflight in build/ (override with BUILD_DIR). Extra arguments go to
# cmake's configure step, e.g. -DPREFLIGHT_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
nvcc_dir=""
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
  [[ -n "$d" && -x "$d/bin/nvcc" ]] && { nvcc_dir="$d/bin"; break; }
done
[[ -n "$nvcc_dir" ]] && export PATH="$nvcc_dir:$PATH"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
