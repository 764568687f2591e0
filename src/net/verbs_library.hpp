#pragma once
// libibverbs (rdma-core) loaded at run time with dlopen, never linked: the binary must start on
// nodes without rdma-core, where the rdma check then says why it did not run. verbs.h supplies
// types only. Every exported function is called through the table resolved here; the only verbs.h
// functions called directly are the inline ones that dispatch through a device context's own ops
// table (ibv_post_send, ibv_poll_cq) or through an extended queue pair's function pointers
// (ibv_wr_start, ibv_wr_rdma_write, ...), which reference no libibverbs symbol.
//
// Do not call verbs.h's macro wrappers (ibv_reg_mr(...), ibv_query_port(...),
// ibv_get_device_list(...) in static-provider builds) anywhere in src/net: they expand to calls of
// the linked symbols, and the binary would then need libibverbs at load time.
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace preflight {

class VerbsLibrary {
 public:
  // The functions this code uses. The types come from verbs.h's own declarations, so a signature
  // that differs from the header does not compile. Functions that older rdma-core releases lack
  // get spelled-out types (their declarations may be missing from an older verbs.h) and may be
  // null.
  struct Api {
    decltype(&::ibv_get_device_list) get_device_list = nullptr;
    decltype(&::ibv_free_device_list) free_device_list = nullptr;
    decltype(&::ibv_get_device_name) get_device_name = nullptr;
    decltype(&::ibv_open_device) open_device = nullptr;
    decltype(&::ibv_close_device) close_device = nullptr;
    decltype(&::ibv_query_device) query_device = nullptr;
    // The exported symbol takes rdma-core's compat port struct: use query_port() below.
    decltype(&::ibv_query_port) query_port_compat = nullptr;
    decltype(&::ibv_query_gid) query_gid = nullptr;
    decltype(&::ibv_alloc_pd) alloc_pd = nullptr;
    decltype(&::ibv_dealloc_pd) dealloc_pd = nullptr;
    decltype(&::ibv_reg_mr) reg_mr = nullptr;  // the exported one, with an int access
    decltype(&::ibv_dereg_mr) dereg_mr = nullptr;
    decltype(&::ibv_create_cq) create_cq = nullptr;
    decltype(&::ibv_destroy_cq) destroy_cq = nullptr;
    decltype(&::ibv_create_qp) create_qp = nullptr;
    decltype(&::ibv_destroy_qp) destroy_qp = nullptr;
    decltype(&::ibv_modify_qp) modify_qp = nullptr;
    decltype(&::ibv_wc_status_str) wc_status_str = nullptr;
    decltype(&::ibv_port_state_str) port_state_str = nullptr;
    // Optional.
    ibv_mr* (*reg_mr_iova2)(ibv_pd*, void*, std::size_t, std::uint64_t, unsigned) = nullptr;
    // rdma-core 34 and later: registration of a dma-buf (GPUDirect without nvidia-peermem).
    ibv_mr* (*reg_dmabuf_mr)(ibv_pd*, std::uint64_t offset, std::size_t length, std::uint64_t iova,
                             int fd, int access) = nullptr;
    decltype(&::ibv_query_qp) query_qp = nullptr;
    // EFA's SRD queue pairs (efa_connection.hpp): the address handle of the peer, and the
    // extended queue pair whose function pointers post work requests (rdma-core 24 and later).
    decltype(&::ibv_create_ah) create_ah = nullptr;
    decltype(&::ibv_destroy_ah) destroy_ah = nullptr;
    ibv_qp_ex* (*qp_to_qp_ex)(ibv_qp*) = nullptr;
  };

  // PREFLIGHT_IBVERBS_LIBRARY when set and non-empty, else "libibverbs.so.1".
  static std::string library_name_from_env();

  // Loads `library_name` and resolves the functions. Never throws for a missing or broken
  // library: ok() is then false and error() says why. The library is never unloaded: resources
  // abandoned on a hung device (see verbs_resources.hpp) and the providers' threads still point
  // into it.
  explicit VerbsLibrary(const std::string& library_name);
  VerbsLibrary(const VerbsLibrary&) = delete;
  VerbsLibrary& operator=(const VerbsLibrary&) = delete;

  bool ok() const { return ok_; }
  // The dlopen message ("libibverbs.so.1: cannot open shared object file: ..."), or the dlsym
  // message of the first required function that is missing.
  const std::string& error() const { return error_; }
  // Valid only when ok().
  const Api& api() const { return *api_; }

  // What verbs.h's ibv_query_port() wrapper does, without referencing the linked symbol: the
  // context's extended query_port (which fills the whole struct, active_speed_ex included where
  // the library has it), else the exported function, which fills the compat prefix. Returns 0
  // or an errno value.
  int query_port(ibv_context* context, std::uint8_t port, ibv_port_attr* attr) const;
  // ibv_reg_mr, or ibv_reg_mr_iova2 with the address as iova where the library lacks the former.
  // Null with errno set on failure.
  ibv_mr* reg_mr(ibv_pd* pd, void* address, std::size_t length, int access) const;
  bool has_dmabuf() const { return ok_ && api_->reg_dmabuf_mr != nullptr; }

  // "IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded".
  std::string wc_status_text(ibv_wc_status status) const;
  // "ACTIVE", "DOWN", "INIT", "ARMED", "NOP", "ACTIVE_DEFER"; ibv_port_state_str (upper case)
  // for anything else. libibverbs' own text is lower case ("active"), the names here are those of
  // the enum, as ibv_devinfo and the rdma check use them.
  std::string port_state_name(ibv_port_state state) const;

 private:
  std::unique_ptr<Api> api_;
  bool ok_ = false;
  std::string error_;
};

// "<function>(<stage>): <strerror(code)>", e.g. "ibv_modify_qp(RTR): Connection timed out".
// `code` is an errno value; 0 gives "failed" (a call that failed without saying why).
std::string verbs_failure(const char* function, const std::string& stage, int code);

// Verbs functions that return int report failure either as an errno value (rdma-core) or as -1
// with errno set (older providers): this gives the errno value of either, 0 for success.
int verbs_status(int returned);

}  // namespace preflight
