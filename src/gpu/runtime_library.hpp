#pragma once
// The CUDA libraries this binary loads at run time rather than links (cuBLAS, NCCL): where each
// is looked for, in a fixed order the docs name (docs/install.md), and what was found. A node
// without one still starts the binary and gets a verdict that says which library, which soname
// and where it was looked for. Host code only: no CUDA header.
#include <string>
#include <vector>

namespace preflight {

struct RuntimeLibrarySpec {
  std::string name;          // "cuBLAS"
  std::string soname;        // "libcublas.so.13": the toolkit's major, as the build needs it
  std::string env_override;  // "PREFLIGHT_CUBLAS_LIBRARY": when set, the only place looked at
  std::string symbol;        // a function the library must export ("cublasGemmEx")
};

// One place looked at, in order: the place ("/usr/local/cuda/lib64/libcublas.so.13", or "the
// loader path (LD_LIBRARY_PATH, ld.so.cache)") and why it was not used (empty for the one used).
struct LibraryAttempt {
  std::string place;
  std::string why_not;
};

struct RuntimeLibrary {
  RuntimeLibrarySpec spec;
  void* handle = nullptr;  // from dlopen; never closed (threads may still run its code)
  std::string path;        // the file loaded, as the loader resolved it; empty when not found
  std::vector<LibraryAttempt> attempts;
  bool overridden = false;  // the environment variable named the only place

  bool found() const { return handle != nullptr; }
  // "cuBLAS (libcublas.so.13) not found; looked at: $PREFLIGHT_CUBLAS_LIBRARY (unset), ..."
  // Empty when found.
  std::string problem() const;
};

// The places, in order, for a library of the toolkit `cuda_major`: the package's bundled folder
// (<dir of the executable>/../lib/preflight), the loader path, $CUDA_HOME/lib64 (when set),
// /usr/local/cuda-<major>/lib64 and /usr/local/cuda/lib64. A folder is given as a path ending
// in '/', the loader path as "".
std::vector<std::string> runtime_library_folders(int cuda_major);

// Loads the library from the first place that has it (RTLD_NOW | RTLD_LOCAL: its symbols, and
// any CUDA runtime it carries, stay out of this binary's namespace) and checks that `symbol`
// resolves. With `spec.env_override` set and non-empty, that path is the only place. Never throws.
RuntimeLibrary load_runtime_library(const RuntimeLibrarySpec& spec,
                                    const std::vector<std::string>& folders);

}  // namespace preflight
