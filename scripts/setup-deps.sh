#!/usr/bin/env bash
# Installs preflight's build and test dependencies from Debian packages and checks for the CUDA
# toolkit. Idempotent: installs only what is missing. Needs root (or sudo) for apt-get.
# With --test it also installs what the test suite drives: Chromium (the HTML report is rendered
# headless), the Prometheus client library (the metrics file is parsed back), shellcheck (the
# Slurm and CI-gate scripts), dpkg-dev (the .deb is built and inspected).
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config
  libcli11-dev nlohmann-json3-dev catch2
  libibverbs-dev libopenmpi-dev openmpi-bin
)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(chromium python3-prometheus-client shellcheck dpkg-dev util-linux bsdutils)
elif [[ $# -gt 0 ]]; then
  echo "setup-deps: unknown argument '$1' (known: --test)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
else
  echo "setup-deps: Debian packages already installed"
fi

# The CUDA toolkit is not a Debian package here: find it where NVIDIA installs it.
find_nvcc() {
  if [[ -n "${CUDA_HOME:-}" && -x "${CUDA_HOME}/bin/nvcc" ]]; then echo "${CUDA_HOME}/bin/nvcc"; return; fi
  if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return; fi
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [[ -x "$d/bin/nvcc" ]] && { echo "$d/bin/nvcc"; return; }
  done
}
nvcc_path=$(find_nvcc || true)
if [[ -z "$nvcc_path" ]]; then
  echo "setup-deps: CUDA toolkit not found (looked at \$CUDA_HOME, nvcc on PATH, /usr/local/cuda*)." >&2
  echo "setup-deps: install the CUDA toolkit (12.0 or newer), or build without GPU support with" >&2
  echo "            cmake -DPREFLIGHT_WITH_CUDA=OFF." >&2
  exit 1
fi
echo "setup-deps: CUDA toolkit: $("$nvcc_path" --version | tail -n 2 | head -n 1) ($nvcc_path)"
