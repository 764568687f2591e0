#!/usr/bin/env bash
# Installs preflight's build and test dependencies from Debian packages and checks for the CUDA
# toolkit. Idempotent: installs only what is missing. Needs root (or sudo) for apt-get.
# With --test it also installs what the test suite drives: Chromium (the HTML report is rendered
# headless), the Prometheus client library (the metrics file is parsed back), shellcheck (the
# Slurm and CI-gate scripts), dpkg-dev (the .deb is built and inspected), python3-debian (the
# .deb's copyright file is parsed by Debian's own DEP-5 reader), and for the hardening steps
# (docs/testing.md): clang with its sanitizer and libFuzzer runtimes (libclang-rt-14-dev),
# llvm-symbolizer for readable sanitizer reports (llvm), stress-ng for the loaded rerun, and
# ccache (scripts/test.sh's second tree reuses the first tree's objects through it), and a
# real Slurm 22.05 with munge for the slurm-real tests (tests/slurm-real/: they start and stop
# their own daemons; nothing is configured outside the tests' scratch folders). The daemons it
# installs are neither started nor enabled at boot (Debian would do both).
# With --cuda 12 it also puts a CUDA 12 toolkit into .deps/cuda-12/ (ignored by git) and prints
# its path; build with it: CUDA_HOME=.deps/cuda-12 scripts/build.sh. Clusters run drivers older
# than the R580 that CUDA 13 needs, so the CUDA 12 package is built too (docs/install.md,
# "Building with CUDA 12", says where each piece comes from and why).
#
# Usage: setup-deps.sh [--test] [--cuda 12]     (in any order)
# Environment: PREFLIGHT_DEBIAN_MIRROR (default https://deb.debian.org/debian) and
# PREFLIGHT_PYPI_FILES (default https://files.pythonhosted.org) replace the download hosts, e.g.
# with a snapshot.debian.org URL once the pinned packages have left the archive. Every file is
# checked against its pinned sha256 whatever the host.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "setup-deps: $*" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=lib/download.sh
source "$repo/scripts/lib/download.sh"

with_test=0
cuda_major=""
while (($#)); do
  case $1 in
    --test) with_test=1 ;;
    --cuda)
      [[ $# -ge 2 ]] || { echo "setup-deps: --cuda needs a major version (known: 12)" >&2; exit 2; }
      cuda_major=$2
      shift ;;
    --cuda=*) cuda_major=${1#--cuda=} ;;
    *) echo "setup-deps: unknown argument '$1' (known: --test, --cuda 12)" >&2; exit 2 ;;
  esac
  shift
done
# Only 12 is fetched: CUDA 13 is the toolkit installed on the build machine (/usr/local/cuda).
if [[ -n "$cuda_major" && "$cuda_major" != 12 ]]; then
  echo "setup-deps: --cuda $cuda_major is not supported (known: 12; CUDA 13 is the system toolkit)" >&2
  exit 2
fi

packages=(
  build-essential cmake ninja-build git pkg-config
  libcli11-dev nlohmann-json3-dev catch2
  libibverbs-dev libopenmpi-dev openmpi-bin
)
if ((with_test)); then
  packages+=(chromium python3-prometheus-client shellcheck dpkg-dev util-linux bsdutils
    python3-debian clang libclang-rt-14-dev llvm stress-ng ccache
    slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge)
fi
# The services among the test packages (package and service share the name).
test_daemons=(slurmctld slurmd munge)
if [[ -n "$cuda_major" ]]; then
  packages+=(curl ca-certificates unzip)  # the downloads, and the NCCL wheel is a zip
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  # Daemons among them (the tests start their own and stop them by pid): Debian would start
  # each on install and enable it at boot, so on a workstation or GPU node a slurmd, slurmctld
  # and munged would run and stay. Debian's policy-rc.d hook (invoke-rc.d(8)) keeps them from
  # starting during the install; one the admin already has is left as it is, and decides.
  new_daemons=()
  for p in "${missing[@]}"; do
    for d in "${test_daemons[@]}"; do [[ $p == "$d" ]] && new_daemons+=("$d"); done
  done
  policy=/usr/sbin/policy-rc.d
  if ((${#new_daemons[@]})) && [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# setup-deps.sh: no service starts while it installs\nexit 101\n' |
      "${sudo_cmd[@]}" tee "$policy" >/dev/null
    "${sudo_cmd[@]}" chmod 0755 "$policy"
    trap '"${sudo_cmd[@]}" rm -f "$policy"' EXIT
  else
    policy=""
  fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  if [[ -n $policy ]]; then
    "${sudo_cmd[@]}" rm -f "$policy"
    trap - EXIT
  fi
  # ... and not enabled at boot: only the services this run installed (an admin's own slurmd
  # stays as it was). systemctl works on the unit files without a running systemd, update-rc.d(8)
  # turns the init scripts' S links into K links; a later upgrade of the package keeps both
  # (its postinst enables a unit again only if it "was-enabled", deb-systemd-helper(1p)).
  for d in "${new_daemons[@]}"; do
    if command -v systemctl >/dev/null 2>&1; then
      "${sudo_cmd[@]}" systemctl disable --quiet "$d.service" >/dev/null 2>&1 || true
    fi
    if [[ -e /etc/init.d/$d ]] && command -v update-rc.d >/dev/null 2>&1; then
      "${sudo_cmd[@]}" update-rc.d "$d" disable >/dev/null 2>&1 || true
    fi
  done
  ((${#new_daemons[@]} == 0)) ||
    echo "setup-deps: ${new_daemons[*]} installed, not started and not enabled at boot"
else
  echo "setup-deps: Debian packages already installed"
fi

# --- CUDA 12 toolkit in .deps/cuda-12 ---------------------------------------------------------
# NVIDIA's cu12 wheels on PyPI carry no nvcc driver, cicc, cudafe++, fatbinary or nvlink, so the
# compiler comes from Debian trixie's non-free packages of NVIDIA's CUDA 12.4.1 (NVIDIA's own
# binaries; they need only glibc 2.7 and run on Debian 12). The packages are extracted, never
# installed: nothing outside .deps/ changes, and Debian 12's own packages stay as they are.
# Pins: path in the archive (or on PyPI's file host), size in bytes, sha256 (from trixie's
# non-free and main Packages index, and from PyPI's JSON). Bump them together with the version
# in docs/install.md.
cuda12_version=12.4.131
cuda12_pool=pool/non-free/n/nvidia-cuda-toolkit
cuda12_debs=(
  # nvcc, cicc, cudafe++, fatbinary, nvlink, ptxas, bin2c, crt/*.stub, libdevice
  "toolkit $cuda12_pool/nvidia-cuda-toolkit_12.4.131~12.4.1-2_amd64.deb 87240108 cd5fe85aee38d108b315f408a688641478f2402622a10c677478eb7a6c4e5319"
  # include/ (cuda_runtime.h, crt/, cublas_v2.h, ...) and the static runtime libraries
  "dev $cuda12_pool/nvidia-cuda-dev_12.4.127~12.4.1-2_amd64.deb 933853452 d846838f914a0176948d48a8bcade5d6dbcccb5c9374343f6475f5503f173ee0"
  # libcudart.so.12, which CMake's FindCUDAToolkit looks for to find the library folder
  "cudart $cuda12_pool/libcudart12_12.4.127~12.4.1-2_amd64.deb 176216 361b3721cf84bf068e111ff013c819de61cb475268b0d38db99839471f1b4130"
  # nvml.h: src/gpu/nvml_library.cpp checks its own NVML declarations against it when present
  "nvml $cuda12_pool/libnvidia-ml-dev_12.4.127~12.4.1-2_amd64.deb 91556 6f796a688ee18e21495f4b9a28fe1f9b67e3a95f709880d751eb4c8d483bbfbb"
  # <nv/target> and <cuda/std/...>: CUDA 12.4's cuda_fp16.h/cuda_bf16.h include them, and Debian
  # ships them apart from nvidia-cuda-dev (CCCL 2.3.2 is the version CUDA 12.4 came with)
  "cccl pool/main/c/cccl/libcu++-dev_2.3.2-2_all.deb 765284 30e911c1909265591b5ea793df0e49e56bed631238b68b3e75c97590c4985686"
)
# nccl.h (and libnccl.so.2) for CUDA 12: Debian's libnccl-dev is in contrib and built against
# Debian's toolkit packaging; NVIDIA's cu12 wheel holds the same files NVIDIA ships.
cuda12_wheel="nccl packages/4a/4e/44dbb46b3d1b0ec61afda8e84837870f2f9ace33c564317d59b70bc19d3e/nvidia_nccl_cu12-2.28.9-py3-none-manylinux_2_18_x86_64.whl 296782137 485776daa8447da5da39681af455aa3b2c2586ddcf4af8772495e7c532c7e5ab"
# Changes whenever a pin or the layout built below changes, so a rerun rebuilds exactly then.
cuda12_layout_version=1

# fetch URL SIZE SHA256 OUT: download and check against the pins; one error line on failure.
fetch() {
  local url=$1 size=$2 sha=$3 out=$4 err got status=0
  err=$(curl -fsSL --retry 3 --connect-timeout 30 -o "$out" "$url" 2>&1) || status=$?
  if ((status)); then
    err=${err##*$'\n'}
    die "download failed: $url: $(download_cause "$status" "${err#curl: (*) }")"
  fi
  got=$(stat -c %s "$out")
  [[ "$got" == "$size" ]] || die "$url: $got bytes, pinned $size"
  got=$(sha256sum "$out" | cut -d' ' -f1)
  [[ "$got" == "$sha" ]] || die "$url: sha256 $got, pinned $sha"
}

# extract DEB DIR MEMBER...: only these members of a .deb's data archive, as dpkg-deb reads it.
extract() {
  local deb=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" "$@" 2>"$dir.err" ||
    die "extracting from $(basename "$deb") failed: $(head -n1 "$dir.err")"
}

install_cuda12() {
  local dest=$repo/.deps/cuda-12 stamp_name=.preflight-setup-deps stamp
  stamp=$(printf '%s\n' "layout $cuda12_layout_version" "${cuda12_debs[@]}" "$cuda12_wheel" |
    sha256sum | cut -d' ' -f1)
  if [[ -x "$dest/bin/nvcc" && "$(cat "$dest/$stamp_name" 2>/dev/null)" == "$stamp" ]]; then
    echo "setup-deps: CUDA 12 toolkit already installed (nvcc $cuda12_version)"
    echo "setup-deps: CUDA 12 toolkit: $dest"
    return 0
  fi

  local debian=${PREFLIGHT_DEBIAN_MIRROR:-https://deb.debian.org/debian}
  local pypi=${PREFLIGHT_PYPI_FILES:-https://files.pythonhosted.org}
  local arch
  arch=$(dpkg --print-architecture)
  [[ "$arch" == amd64 ]] || die "--cuda 12 has pins for amd64 only, this machine is $arch"
  mkdir -p "$repo/.deps"
  # Downloads and the new tree go next to the destination (same file system, so the final mv is
  # a rename; 1.3 GB of downloads may not fit a small /tmp), and are removed whatever happens.
  work=$(mktemp -d "$repo/.deps/.cuda-12-work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  local stage=$work/cuda-12 start=$SECONDS bytes=0 entry name path size sha
  declare -A deb=()

  echo "setup-deps: downloading the CUDA 12 toolkit ($cuda12_version, about 1.3 GB)"
  for entry in "${cuda12_debs[@]}"; do
    read -r name path size sha <<<"$entry"
    deb[$name]=$work/$(basename "$path")
    fetch "$debian/$path" "$size" "$sha" "${deb[$name]}"
    bytes=$((bytes + size))
  done
  read -r name path size sha <<<"$cuda12_wheel"
  local wheel
  wheel=$work/$(basename "$path")
  fetch "$pypi/$path" "$size" "$sha" "$wheel"
  bytes=$((bytes + size))
  echo "setup-deps: downloaded $((bytes / 1000000)) MB in $((SECONDS - start)) s; extracting"

  # The layout of NVIDIA's own toolkit (bin/, nvvm/, include/, lib64/), which nvcc, its
  # nvcc.profile below and CMake's FindCUDAToolkit all expect.
  local x=$work/x d=usr/lib/nvidia-cuda-toolkit l=usr/lib/x86_64-linux-gnu
  extract "${deb[toolkit]}" "$x" ./$d/bin/nvcc ./$d/bin/cicc ./$d/bin/crt/link.stub \
    ./$d/bin/crt/prelink.stub ./usr/bin/cudafe++ ./usr/bin/fatbinary ./usr/bin/nvlink \
    ./usr/bin/ptxas ./usr/bin/bin2c ./$d/libdevice/libdevice.10.bc \
    ./usr/share/doc/nvidia-cuda-toolkit/copyright
  extract "${deb[dev]}" "$x" ./usr/include ./$l/libcudart_static.a ./$l/libcudadevrt.a \
    ./$l/libculibos.a ./usr/share/doc/nvidia-cuda-dev/copyright
  extract "${deb[cudart]}" "$x" ./$l/libcudart.so.12.4.127
  extract "${deb[nvml]}" "$x" ./usr/include/nvml.h
  extract "${deb[cccl]}" "$x" ./usr/include/cuda ./usr/include/nv \
    ./usr/share/doc/libcu++-dev/copyright
  unzip -q -o "$wheel" 'nvidia/nccl/include/nccl.h' 'nvidia/nccl/lib/libnccl.so.2' \
    'nvidia_nccl_cu12-2.28.9.dist-info/licenses/License.txt' -d "$x/wheel" 2>"$work/unzip.err" ||
    die "extracting from $(basename "$wheel") failed: $(head -n1 "$work/unzip.err")"

  mkdir -p "$stage"/{bin/crt,nvvm/bin,nvvm/libdevice,lib64,share/licenses}
  mv "$x/$d/bin/nvcc" "$x"/usr/bin/{cudafe++,fatbinary,nvlink,ptxas,bin2c} "$stage/bin/"
  mv "$x/$d"/bin/crt/{link,prelink}.stub "$stage/bin/crt/"
  mv "$x/$d/bin/cicc" "$stage/nvvm/bin/"
  mv "$x/$d/libdevice/libdevice.10.bc" "$stage/nvvm/libdevice/"
  mv "$x/usr/include" "$stage/include"
  mv "$x/wheel/nvidia/nccl/include/nccl.h" "$stage/include/"
  mv "$x"/$l/{libcudart_static.a,libcudadevrt.a,libculibos.a,libcudart.so.12.4.127} \
    "$x/wheel/nvidia/nccl/lib/libnccl.so.2" "$stage/lib64/"
  # The soname and development links the packages would have made (libnccl.so: CMake's
  # find_library(nccl) looks for it).
  ln -s libcudart.so.12.4.127 "$stage/lib64/libcudart.so.12"
  ln -s libcudart.so.12 "$stage/lib64/libcudart.so"
  ln -s libnccl.so.2 "$stage/lib64/libnccl.so"
  # Debian's copyright files name NVIDIA's licence terms for each piece; kept with the tree.
  local pkg
  for pkg in nvidia-cuda-toolkit nvidia-cuda-dev libcu++-dev; do
    mv "$x/usr/share/doc/$pkg/copyright" "$stage/share/licenses/$pkg.copyright"
  done
  mv "$x/wheel/nvidia_nccl_cu12-2.28.9.dist-info/licenses/License.txt" "$stage/share/licenses/nvidia-nccl-cu12.License.txt"
  # nvcc reads bin/nvcc.profile: everything relative to nvcc's own folder ($(_HERE_)), so the
  # tree works wherever it lies (Debian's profile names /usr/lib/nvidia-cuda-toolkit instead).
  cat >"$stage/bin/nvcc.profile" <<'EOF'
TOP = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib64"
EOF

  # Proof that the tree compiles and links device code (cicc, ptxas, fatbinary, nvlink, the
  # stubs, libdevice, the headers preflight uses, cudart_static) before anything relies on it.
  cat >"$work/smoke.cu" <<'EOF'
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
__global__ void k(__nv_bfloat16* p) { p[threadIdx.x] = __float2bfloat16(sinf(1.0f)); }
int main() {
  ncclUniqueId id{};
  int n = id.internal[0];
  return cudaGetDeviceCount(&n) == cudaSuccess ? 0 : 1;
}
EOF
  "$stage/bin/nvcc" -arch=sm_80 -o "$work/smoke" "$work/smoke.cu" >"$work/smoke.log" 2>&1 ||
    die "the assembled CUDA 12 toolkit does not compile a test kernel: $(head -n1 "$work/smoke.log")"
  local release
  release=$("$stage/bin/nvcc" --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p')
  [[ "$release" == "$cuda12_version" ]] || die "nvcc reports '$release', pinned $cuda12_version"

  echo "$stamp" >"$stage/$stamp_name"
  rm -rf "$dest"
  mv "$stage" "$dest"
  echo "setup-deps: CUDA 12 toolkit (nvcc $release) installed in $((SECONDS - start)) s," \
    "$(du -sm "$dest" | cut -f1) MB"
  echo "setup-deps: CUDA 12 toolkit: $dest"
}

# --- the system CUDA toolkit ------------------------------------------------------------------
# The CUDA toolkit is not a Debian package here: find it where NVIDIA installs it.
find_nvcc() {
  if [[ -n "${CUDA_HOME:-}" && -x "${CUDA_HOME}/bin/nvcc" ]]; then echo "${CUDA_HOME}/bin/nvcc"; return; fi
  if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return; fi
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [[ -x "$d/bin/nvcc" ]] && { echo "$d/bin/nvcc"; return; }
  done
}
nvcc_path=$(find_nvcc || true)
if [[ -n "$nvcc_path" ]]; then
  echo "setup-deps: CUDA toolkit: $("$nvcc_path" --version | tail -n 2 | head -n 1) ($nvcc_path)"
elif [[ -z "$cuda_major" ]]; then
  echo "setup-deps: CUDA toolkit not found (looked at \$CUDA_HOME, nvcc on PATH, /usr/local/cuda*)." >&2
  echo "setup-deps: install the CUDA toolkit (12.0 or newer), or build without GPU support with" >&2
  echo "            cmake -DPREFLIGHT_WITH_CUDA=OFF." >&2
  exit 1
else
  # With --cuda 12 the toolkit to build with is the one installed below.
  echo "setup-deps: no system CUDA toolkit (looked at \$CUDA_HOME, nvcc on PATH, /usr/local/cuda*)"
fi

if [[ "$cuda_major" == 12 ]]; then
  install_cuda12
fi
