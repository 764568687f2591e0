#include "net/verbs_library.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "gpu/loaded_library.hpp"

namespace preflight {
namespace {

constexpr const char* kDefaultLibrary = "libibverbs.so.1";

Symbol resolve(void* handle, const char* name) {
  return {dlsym(handle, name)};
}

// The functions without which neither inventory() nor transfer() can work. ibv_reg_mr is
// checked separately: ibv_reg_mr_iova2 can stand in for it.
constexpr const char* kRequired[] = {
    "ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name", "ibv_open_device",
    "ibv_close_device",    "ibv_query_device",     "ibv_query_port",      "ibv_query_gid",
    "ibv_alloc_pd",        "ibv_dealloc_pd",       "ibv_dereg_mr",        "ibv_create_cq",
    "ibv_destroy_cq",      "ibv_create_qp",        "ibv_destroy_qp",      "ibv_modify_qp",
    "ibv_wc_status_str",   "ibv_port_state_str"};

// The enum's names of the work completion statuses verbs.h knows.
struct WcStatusName {
  ibv_wc_status status;
  const char* name;
};
constexpr WcStatusName kWcStatusNames[] = {{IBV_WC_SUCCESS, "IBV_WC_SUCCESS"},
                                           {IBV_WC_LOC_LEN_ERR, "IBV_WC_LOC_LEN_ERR"},
                                           {IBV_WC_LOC_QP_OP_ERR, "IBV_WC_LOC_QP_OP_ERR"},
                                           {IBV_WC_LOC_EEC_OP_ERR, "IBV_WC_LOC_EEC_OP_ERR"},
                                           {IBV_WC_LOC_PROT_ERR, "IBV_WC_LOC_PROT_ERR"},
                                           {IBV_WC_WR_FLUSH_ERR, "IBV_WC_WR_FLUSH_ERR"},
                                           {IBV_WC_MW_BIND_ERR, "IBV_WC_MW_BIND_ERR"},
                                           {IBV_WC_BAD_RESP_ERR, "IBV_WC_BAD_RESP_ERR"},
                                           {IBV_WC_LOC_ACCESS_ERR, "IBV_WC_LOC_ACCESS_ERR"},
                                           {IBV_WC_REM_INV_REQ_ERR, "IBV_WC_REM_INV_REQ_ERR"},
                                           {IBV_WC_REM_ACCESS_ERR, "IBV_WC_REM_ACCESS_ERR"},
                                           {IBV_WC_REM_OP_ERR, "IBV_WC_REM_OP_ERR"},
                                           {IBV_WC_RETRY_EXC_ERR, "IBV_WC_RETRY_EXC_ERR"},
                                           {IBV_WC_RNR_RETRY_EXC_ERR, "IBV_WC_RNR_RETRY_EXC_ERR"},
                                           {IBV_WC_LOC_RDD_VIOL_ERR, "IBV_WC_LOC_RDD_VIOL_ERR"},
                                           {IBV_WC_REM_INV_RD_REQ_ERR, "IBV_WC_REM_INV_RD_REQ_ERR"},
                                           {IBV_WC_REM_ABORT_ERR, "IBV_WC_REM_ABORT_ERR"},
                                           {IBV_WC_INV_EECN_ERR, "IBV_WC_INV_EECN_ERR"},
                                           {IBV_WC_INV_EEC_STATE_ERR, "IBV_WC_INV_EEC_STATE_ERR"},
                                           {IBV_WC_FATAL_ERR, "IBV_WC_FATAL_ERR"},
                                           {IBV_WC_RESP_TIMEOUT_ERR, "IBV_WC_RESP_TIMEOUT_ERR"},
                                           {IBV_WC_GENERAL_ERR, "IBV_WC_GENERAL_ERR"}};

// Null for a status newer than this verbs.h.
const char* wc_status_name(ibv_wc_status status) {
  for (const WcStatusName& entry : kWcStatusNames) {
    if (entry.status == status) return entry.name;
  }
  return nullptr;
}

}  // namespace

std::string VerbsLibrary::library_name_from_env() {
  const char* name = std::getenv("PREFLIGHT_IBVERBS_LIBRARY");
  return name != nullptr && name[0] != '\0' ? name : kDefaultLibrary;
}

VerbsLibrary::VerbsLibrary(const std::string& library_name) : api_(std::make_unique<Api>()) {
  void* handle = open_library(library_name, error_);
  if (handle == nullptr) return;
  error_ = first_missing_symbol(handle, kRequired, library_name);
  if (!error_.empty()) {
    dlclose(handle);  // nothing from it is in use yet, so it can go
    return;
  }
  Api& api = *api_;
  // dlsym gives the default version of each symbol (IBVERBS_1.1 where there are two), which is
  // the one verbs.h declares.
  api.get_device_list = resolve(handle, "ibv_get_device_list");
  api.free_device_list = resolve(handle, "ibv_free_device_list");
  api.get_device_name = resolve(handle, "ibv_get_device_name");
  api.open_device = resolve(handle, "ibv_open_device");
  api.close_device = resolve(handle, "ibv_close_device");
  api.query_device = resolve(handle, "ibv_query_device");
  api.query_port_compat = resolve(handle, "ibv_query_port");
  api.query_gid = resolve(handle, "ibv_query_gid");
  api.alloc_pd = resolve(handle, "ibv_alloc_pd");
  api.dealloc_pd = resolve(handle, "ibv_dealloc_pd");
  api.reg_mr = resolve(handle, "ibv_reg_mr");
  api.dereg_mr = resolve(handle, "ibv_dereg_mr");
  api.create_cq = resolve(handle, "ibv_create_cq");
  api.destroy_cq = resolve(handle, "ibv_destroy_cq");
  api.create_qp = resolve(handle, "ibv_create_qp");
  api.destroy_qp = resolve(handle, "ibv_destroy_qp");
  api.modify_qp = resolve(handle, "ibv_modify_qp");
  api.wc_status_str = resolve(handle, "ibv_wc_status_str");
  api.port_state_str = resolve(handle, "ibv_port_state_str");
  api.reg_mr_iova2 = resolve(handle, "ibv_reg_mr_iova2");
  api.reg_dmabuf_mr = resolve(handle, "ibv_reg_dmabuf_mr");
  api.query_qp = resolve(handle, "ibv_query_qp");
  api.create_ah = resolve(handle, "ibv_create_ah");
  api.destroy_ah = resolve(handle, "ibv_destroy_ah");
  api.qp_to_qp_ex = resolve(handle, "ibv_qp_to_qp_ex");
  if (api.reg_mr == nullptr && api.reg_mr_iova2 == nullptr) {
    error_ = library_name + ": undefined symbol: ibv_reg_mr";
    *api_ = Api{};
    dlclose(handle);
    return;
  }
  ok_ = true;
}

int VerbsLibrary::query_port(ibv_context* context, std::uint8_t port, ibv_port_attr* attr) const {
  // verbs.h's ___ibv_query_port, spelled out: its fallback branch calls the linked symbol, and
  // its verbs_get_ctx_op() is a GNU statement expression. verbs_get_ctx() is a plain inline
  // function that only looks at the context.
  verbs_context* extended = verbs_get_ctx(context);
  const bool has_query_port =
      extended != nullptr &&
      extended->sz >= sizeof(*extended) - offsetof(verbs_context, query_port) &&
      extended->query_port != nullptr;
  if (has_query_port) {
    // The library copies or zero-fills to the size given, so a verbs.h newer or older than the
    // library is fine.
    return verbs_status(extended->query_port(context, port, attr, sizeof(*attr)));
  }
  std::memset(attr, 0, sizeof(*attr));
  return verbs_status(
      api_->query_port_compat(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attr)));
}

ibv_mr* VerbsLibrary::reg_mr(ibv_pd* pd, void* address, std::size_t length, int access) const {
  if (api_->reg_mr != nullptr) return api_->reg_mr(pd, address, length, access);
  return api_->reg_mr_iova2(pd, address, length, reinterpret_cast<std::uintptr_t>(address),
                            static_cast<unsigned>(access));
}

std::string VerbsLibrary::wc_status_text(ibv_wc_status status) const {
  const char* name = wc_status_name(status);
  const char* text = api_->wc_status_str != nullptr ? api_->wc_status_str(status) : nullptr;
  std::string result = name != nullptr ? name : "IBV_WC status " + std::to_string(status);
  if (text != nullptr) result += std::string(": ") + text;
  return result;
}

std::string VerbsLibrary::port_state_name(ibv_port_state state) const {
  switch (state) {
    case IBV_PORT_NOP:
      return "NOP";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
    default:
      break;
  }
  const char* text = api_->port_state_str != nullptr ? api_->port_state_str(state) : nullptr;
  std::string name = text != nullptr ? text : "state " + std::to_string(state);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string verbs_failure(const char* function, const std::string& stage, int code) {
  return std::string(function) + "(" + stage + "): " + (code != 0 ? std::strerror(code) : "failed");
}

int verbs_status(int returned) {
  if (returned >= 0) return returned;
  const int code = errno;
  return code != 0 ? code : EIO;
}

}  // namespace preflight
