#!/usr/bin/env bash
# Unpacks the header-only build dependencies (CLI11, nlohmann_json, Catch2) from their Debian
# packages into .deps/ (ignored by git), for build machines where nothing can be installed,
# such as a lent GPU node: copy the tree with .deps/ beside it and CMake finds them there.
# Run it on a machine that reaches Debian's archive. On a machine without libibverbs-dev or
# libopenmpi-dev, configure with -DPREFLIGHT_WITH_IBVERBS=OFF -DPREFLIGHT_WITH_MPI=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libcli11-dev nlohmann-json3-dev catch2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # apt-get download runs as _apt and must be able to write here
(cd "$work" && apt-get download "${packages[@]}" >/dev/null)
rm -rf .deps.new
mkdir -p .deps.new
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" .deps.new; done
# Replace what an earlier run unpacked, keeping what others put in .deps/ (the CUDA 12 toolkit
# of setup-deps.sh --cuda 12 in .deps/cuda-12).
mkdir -p .deps
for d in .deps.new/*; do
  rm -rf ".deps/${d##*/}"
  mv "$d" .deps/
done
rmdir .deps.new
echo "carry-deps: unpacked ${packages[*]} into .deps/ ($(du -sh .deps | cut -f1))"
