# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # the globals it shares with the kit, which sources it
# The GPU acceptance kit's build step and the toolkit it finds (scripts/gpu-acceptance.sh).
# Sourced by the kit: it uses the kit's SRC, BOX, out_dir, smi, build_dir, boxed, secs, now_ms,
# kit_key and record_step, and sets cuda_home, runtime_note, cublas_note, nccl_note and
# build_dir.

cuda_home=""
for d in "${CUDA_HOME:-}" "$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x/x)")")" \
  /usr/local/cuda; do
  [[ -n $d && -x $d/bin/nvcc ]] && { cuda_home=$d && break; }
done

# A file inside the NVIDIA wheels of the machine's Python (nvidia/<package>/...), where a GPU
# image without NCCL in the toolkit has it.
find_in_python_wheels() {
  python3 - "$1" <<'EOF' 2>/dev/null
import os, sys
name = sys.argv[1]
for base in sys.path:
    root = os.path.join(base, "nvidia")
    if not os.path.isdir(root):
        continue
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath[len(root):].count(os.sep) >= 3:
            dirnames[:] = []
        if name in filenames:
            print(os.path.join(dirpath, name))
            sys.exit(0)
sys.exit(1)
EOF
}

# The libraries the binaries need where the loader finds them. A library they link that ldd
# cannot find, and cuBLAS and NCCL (opened with dlopen) where the binary's own search does not
# find them (its `--version` says "cuBLAS: not found (libcublas.so.13)"), come from the NVIDIA
# wheels of the machine's Python: the kit adds their folders to LD_LIBRARY_PATH, where the
# binary's search looks, and records it in runtime_note; cublas_note and nccl_note are what the
# binary then reports for each.
runtime_note=""
cublas_note=""
nccl_note=""
add_wheel_library() {
  local lib
  lib=$(find_in_python_wheels "$1") || return 1
  export LD_LIBRARY_PATH="${lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  runtime_note+="$1 from ${lib%/*} (Python wheel, added to LD_LIBRARY_PATH); "
}
locate_runtime_libraries() {
  local program lib bin=$1
  for program in "$@"; do
    [[ -x $program ]] || continue
    while read -r lib; do
      add_wheel_library "$lib" || runtime_note+="$lib not found; "
    done < <(ldd "$program" 2>/dev/null | awk '$2 == "=>" && $3 == "not" {print $1}')
  done
  [[ -x $bin ]] || return 0
  while read -r lib; do
    add_wheel_library "$lib" || runtime_note+="$lib not found; "
  done < <("$bin" --version 2>/dev/null | sed -n 's/^\(cuBLAS\|NCCL\): not found (\(lib[^)]*\))$/\2/p')
  cublas_note=$("$bin" --version 2>/dev/null | sed -n 's/^cuBLAS: //p')
  nccl_note=$("$bin" --version 2>/dev/null | sed -n 's/^NCCL: //p')
}

have_header() {
  local d
  for d in /usr/include /usr/local/include "$SRC/.deps/usr/include"; do
    [[ -e $d/$1 ]] && return 0
  done
  return 1
}


step_build() {
  local deadline=$1 start=$2
  if [[ -n $build_dir ]]; then
    record_step build "${BOX[build]}" "$(secs $(($(now_ms) - start)))" skipped \
      "--build-dir $build_dir (built elsewhere)"
    return
  fi
  build_dir=$SRC/build-acceptance
  local missing=() h
  for h in nlohmann/json.hpp CLI/CLI.hpp catch2/catch.hpp; do
    have_header "$h" || missing+=("$h")
  done
  if [[ -z $cuda_home ]]; then
    record_step build "${BOX[build]}" 0 failed "no CUDA toolkit (nvcc) found: set CUDA_HOME"
    return
  fi
  if ((${#missing[@]})); then
    record_step build "${BOX[build]}" 0 failed "missing ${missing[*]}: run scripts/carry-deps.sh where Debian's archive is reachable and carry .deps"
    return
  fi
  local arch cap
  cap=$(timeout 5 "$smi" --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
  arch=${cap//[^0-9]/}
  [[ -n $arch ]] || arch=90
  local flags=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$arch"
    -DPREFLIGHT_BUILD_TESTS=ON -DPREFLIGHT_BUILD_BENCH=ON -DCMAKE_POLICY_VERSION_MINIMUM=3.5
    "-DCMAKE_CUDA_COMPILER=$cuda_home/bin/nvcc")
  local verbs=OFF mpi=OFF
  # ldconfig's list read whole, then matched: under pipefail `| grep -q` fails when grep exits
  # before the writer is done (SIGPIPE), and the rdma check would be built out.
  local libraries
  libraries=$(ldconfig -p 2>/dev/null) || libraries=""
  [[ -e /usr/include/infiniband/verbs.h ]] && grep -q 'libibverbs\.so ' <<<"$libraries" &&
    verbs=ON
  command -v mpicxx >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 && mpi=ON
  flags+=("-DPREFLIGHT_WITH_IBVERBS=$verbs" "-DPREFLIGHT_WITH_MPI=$mpi")
  local nccl_header="toolkit"
  if [[ ! -e $cuda_home/include/nccl.h && ! -e /usr/include/nccl.h ]]; then
    local header lib
    if header=$(find_in_python_wheels nccl.h) && lib=$(find_in_python_wheels libnccl.so.2); then
      flags+=("-DNCCL_INCLUDE_DIR=${header%/*}" "-DNCCL_LIBRARY=$lib")
      nccl_header="${header%/*} (Python wheel)"
    else
      nccl_header="not found (no nccl check)"
    fi
  fi
  local generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  kit_key build "here: $build_dir, sm_$arch, ibverbs $verbs, MPI $mpi, nccl.h $nccl_header"
  local targets=(preflight gpu_tests preflight-bench-gemm preflight-bench-bandwidth
    preflight-bench-nccl)
  {
    echo "+ cmake -S $SRC -B $build_dir ${generator[*]} ${flags[*]}"
    echo "+ cmake --build $build_dir --target ${targets[*]}"
  } >"$out_dir/build.cmd"
  # shellcheck disable=SC2016  # the inner script expands its own arguments
  PATH=$cuda_home/bin:$PATH boxed "$deadline" "$out_dir/build.log" "$out_dir/build.err" \
    bash -c 'cmake -S "$1" -B "$2" "${@:5}" && cmake --build "$2" --parallel "$3" --target $4' \
    build "$SRC" "$build_dir" "$(nproc)" "${targets[*]}" "${generator[@]}" "${flags[@]}"
  local state="done" note="sm_$arch, ibverbs $verbs, MPI $mpi"
  if [[ $RC == 124 || $RC == 137 ]]; then
    state=timed-out
  elif [[ $RC != 0 ]]; then
    state=failed
    note="cmake exit $RC: $(tail -n 3 "$out_dir/build.err" "$out_dir/build.log" 2>/dev/null |
      grep -v '^==>' | grep . | tail -n 2 | tr '\n\t' '  ')"
  fi
  record_step build "${BOX[build]}" "$(secs "$RUN_MS")" "$state" "$note"
}
