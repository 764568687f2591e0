#!/usr/bin/env bash
# readelf -d on the built binary: no CUDA, cuBLAS, NCCL or NVML library among its NEEDED entries.
# The binary opens cuBLAS, NCCL and NVML with dlopen (a search list of its own, docs/install.md)
# and links the CUDA runtime statically, so one package per CUDA major starts on any node and
# reports a missing library or a too-old driver as a finding instead of failing to load.
# Usage: test_needed.sh BINARY READELF
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
bin=$1 readelf=${2:-}
if [[ -z "$readelf" ]]; then
  echo "readelf not found (binutils): skipped"
  exit 77
fi
needed=$("$readelf" -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p') ||
  die "readelf -d $bin failed"
[[ -n "$needed" ]] || die "readelf -d $bin lists no NEEDED entry at all (not a dynamic binary?)"
for lib in $needed; do
  case "$lib" in
    libcublas.so* | libcublasLt.so* | libnccl.so* | libcudart.so* | libnvidia-ml.so* | libcuda.so*)
      fail "$bin has NEEDED $lib: it must be loaded at run time (dlopen) or linked statically" ;;
  esac
done
echo "NEEDED: $(tr '\n' ' ' <<<"$needed")"
finish
