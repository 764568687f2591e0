#pragma once
// NCCL loaded at run time with dlopen, never linked: a node without libnccl.so.2 still runs
// every other check, and the nccl check says why it skipped. nccl.h supplies the types only.
#include <nccl.h>

#include <string>

#include "gpu/runtime_library.hpp"

namespace preflight {

// The NCCL functions the collective engine calls. Optional ones may be null.
struct NcclApi {
  ncclResult_t (*get_version)(int*) = nullptr;  // optional
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank_config)(ncclComm_t*, int, ncclUniqueId, int,
                                        ncclConfig_t*) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_finalize)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  const char* (*get_error_string)(ncclResult_t) = nullptr;
  const char* (*get_last_error)(ncclComm_t) = nullptr;  // optional
};

class NcclLibrary {
 public:
  // Searches (nccl_library_spec() in the places of runtime_library_folders()) and loads the library
  // (RTLD_NOW | RTLD_LOCAL: NCCL's symbols, and the CUDA runtime it carries, stay out of the global
  // namespace, where they could clash with this binary's static cudart) and resolves the functions.
  // Never throws: ok() is then false and error() says why. The library is never unloaded: after a
  // timeout, aborted communicators may still have NCCL threads running its code.
  NcclLibrary();
  // The same, for a library already searched.
  explicit NcclLibrary(RuntimeLibrary library);
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  bool ok() const { return error_.empty(); }
  // The search's account (which soname, where it was looked for), or "<path>: no symbol
  // ncclCommInitRankConfig (NCCL 2.14 or newer needed)".
  const std::string& error() const { return error_; }
  const std::string& path() const { return library_.path; }
  const NcclApi& api() const { return api_; }
  int version_code() const { return version_code_; }  // NCCL_VERSION_CODE, 0 when unknown

  // "<call>: <ncclGetErrorString>/<ncclGetLastError>" (the last part only where NCCL has one).
  std::string describe(const char* call, ncclResult_t result, ncclComm_t comm) const;

 private:
  RuntimeLibrary library_;
  NcclApi api_;
  std::string error_;
  int version_code_ = 0;
};

}  // namespace preflight
