#!/usr/bin/env bash
# Configures and builds preflight in build/ (override with BUILD_DIR, relative to the checkout).
# Extra arguments go to cmake's configure step, e.g. -DPREFLIGHT_WITH_CUDA=OFF.
# CUDA_HOME picks the CUDA toolkit, e.g. CUDA_HOME=.deps/cuda-12 (from
# scripts/setup-deps.sh --cuda 12); without it, /usr/local/cuda. A CUDA_HOME without bin/nvcc is
# an error (exit 2) rather than a silent fallback: the package is named after the toolkit's major
# version, so building with another toolkit than the one asked for would mislabel it.
set -euo pipefail

cuda_home=""
if [[ -n "${CUDA_HOME:-}" ]]; then
  if [[ ! -x "$CUDA_HOME/bin/nvcc" ]]; then
    echo "build: CUDA_HOME=$CUDA_HOME has no bin/nvcc (scripts/setup-deps.sh --cuda 12 makes .deps/cuda-12)" >&2
    exit 2
  fi
  # Absolute, and resolved before the cd below: a relative CUDA_HOME means relative to where the
  # caller stands, and CMake would otherwise resolve it against the build folder.
  cuda_home=$(cd "$CUDA_HOME" && pwd)
  export PATH="$cuda_home/bin:$PATH"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
# cache_value NAME: a variable of the tree's CMakeCache.txt; empty when unset or not configured.
cache_value() {
  [[ -f "$build_dir/CMakeCache.txt" ]] || return 0
  sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" | head -n1
}

# Whether this configure builds the CUDA code: the last -DPREFLIGHT_WITH_CUDA on the command
# line, else what the tree was configured with, else the default (ON).
with_cuda=$(cache_value PREFLIGHT_WITH_CUDA)
for arg in "$@"; do
  case "$arg" in -DPREFLIGHT_WITH_CUDA=* | -DPREFLIGHT_WITH_CUDA:*=*) with_cuda=${arg#*=} ;; esac
done
case "${with_cuda^^}" in OFF | 0 | FALSE | NO | N) with_cuda=OFF ;; *) with_cuda=ON ;; esac

cuda_args=()
if [[ -n "$cuda_home" && "$with_cuda" == ON ]]; then
  # Both: CMAKE_CUDA_COMPILER picks nvcc (and with it the headers and libraries its nvcc.profile
  # names), CUDAToolkit_ROOT makes find_package(CUDAToolkit) take the same tree, not
  # /usr/local/cuda. Not passed without CUDA: CMake would warn that they went unused.
  cuda_args=(-DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" -DCUDAToolkit_ROOT="$cuda_home")
fi

# The configuration comes from CMakePresets.json: PREFLIGHT_PRESET (default dev; scripts/test.sh
# uses ci and cuda12), with BUILD_DIR, the toolkit and the extra arguments on top. The presets
# name Ninja; without it, Make.
preset=${PREFLIGHT_PRESET:-dev}
generator=()
command -v ninja >/dev/null 2>&1 || generator=(-G "Unix Makefiles")
cmake --preset "$preset" -B "$build_dir" "${generator[@]}" "${cuda_args[@]}" "$@"

# Which toolkit this tree builds with, in one line: the CUDA 12 and CUDA 13 builds look alike.
nvcc=$(cache_value CMAKE_CUDA_COMPILER)
if [[ "$(cache_value PREFLIGHT_WITH_CUDA)" == ON && -x "$nvcc" ]]; then
  echo "build: $build_dir uses CUDA $("$nvcc" --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p') ($nvcc)"
else
  echo "build: $build_dir has no CUDA compiler (PREFLIGHT_WITH_CUDA=OFF)"
fi
cmake --build "$build_dir" --parallel "$(nproc)"
