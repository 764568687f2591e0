#pragma once
// cuBLAS loaded at run time with dlopen, never linked: a node without libcublas.so.<major> still
// starts the binary and gets a verdict that names the missing library (TOOL_LIBRARY_MISSING)
// rather than a loader error and no verdict. cublas_v2.h supplies the types only; each
// function's pointer type is taken from its declaration there, so a mismatch cannot compile.
#include <cublas_v2.h>

#include <string>

#include "gpu/runtime_library.hpp"

namespace preflight {

// cublasGemmEx with a cublasComputeType_t (the exported C function). cublas_api.h adds a C++
// overload taking the legacy cudaDataType compute type; the cast below picks the C one, and
// fails to compile if the header's declaration ever differs.
using CublasGemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                          int, int, const void*, const void*, cudaDataType, int,
                                          const void*, cudaDataType, int, const void*, void*,
                                          cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

// The cuBLAS functions the gemm engine calls, by their exported names (cublas_v2.h maps
// cublasCreate to cublasCreate_v2 and so on).
struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&::cublasSetAtomicsMode) set_atomics_mode = nullptr;
  decltype(static_cast<CublasGemmExFn>(&::cublasGemmEx)) gemm_ex = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  decltype(&::cublasGetProperty) get_property = nullptr;
};

// What the gemm engine and discovery look for: libcublas.so.<CUBLAS_VER_MAJOR> (libcublasLt,
// which it needs, is found through its own RUNPATH, $ORIGIN), or $PREFLIGHT_CUBLAS_LIBRARY.
RuntimeLibrarySpec cublas_library_spec();

class CublasLibrary {
 public:
  // Resolves the functions of an already loaded library. Never throws: ok() is then false and
  // problem() says why (the search's account, or the first missing symbol).
  explicit CublasLibrary(RuntimeLibrary library);
  CublasLibrary(const CublasLibrary&) = delete;
  CublasLibrary& operator=(const CublasLibrary&) = delete;

  bool ok() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }
  const std::string& path() const { return library_.path; }
  const CublasApi& api() const { return api_; }
  // "13.0.2", from cublasGetProperty; empty when unknown.
  std::string version() const;

 private:
  RuntimeLibrary library_;
  CublasApi api_;
  std::string problem_;
};

// "CUBLAS_STATUS_EXECUTION_FAILED: the GPU program failed to execute"; with a null api (or one
// without the status functions), "CUBLAS_STATUS <n>".
std::string cublas_status_text(const CublasApi* api, cublasStatus_t status);

}  // namespace preflight
