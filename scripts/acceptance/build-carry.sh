#!/usr/bin/env bash
# Builds the GPU acceptance kit's binaries here, for a GPU machine that should not spend its time
# building (docs/benchmarks.md, "On the device tool"): Release, sm_90 (or $CUDA_ARCH), without
# libibverbs and MPI (the lent machine has neither), in build-device/; then copies preflight,
# BUILD/tests/gpu_tests and the three GPU benchmarks, stripped, into build-carry/ (about 8 MB), the
# folder to carry and pass as `scripts/gpu-acceptance.sh --build-dir build-carry`.
#   scripts/acceptance/build-carry.sh [BUILD_DIR [CARRY_DIR]]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-device}
carry=${2:-build-carry}
arch=${CUDA_ARCH:-90}
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
  [[ -n $d && -x $d/bin/nvcc ]] && { export PATH="$d/bin:$PATH" && break; }
done
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
targets=(preflight gpu_tests preflight-bench-gemm preflight-bench-bandwidth preflight-bench-nccl)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CUDA_ARCHITECTURES=$arch" -DPREFLIGHT_WITH_MPI=OFF -DPREFLIGHT_WITH_IBVERBS=OFF \
  -DPREFLIGHT_BUILD_TESTS=ON -DPREFLIGHT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"
rm -rf "$carry.new"
mkdir -p "$carry.new/tests" "$carry.new/bench"
cp "$build/preflight" "$carry.new/"
cp "$build/tests/gpu_tests" "$carry.new/tests/"
cp "$build"/bench/preflight-bench-{gemm,bandwidth,nccl} "$carry.new/bench/"
strip "$carry.new/preflight" "$carry.new/tests/gpu_tests" "$carry.new"/bench/*
rm -rf "$carry"
mv "$carry.new" "$carry"
echo "build-carry: $carry/ ($(du -sh "$carry" | cut -f1)), sm_$arch; carry it and run" \
  "scripts/gpu-acceptance.sh --build-dir $carry"
