#pragma once
// Memory left allocated on purpose. After a deadline, freeing what a hung device or a silent peer
// may still write into (verbs objects, registered buffers, MPI receive buffers) could crash or
// hang the tool, so those blocks are released from their owners and never freed
// (net/verbs_resources.hpp, fleet/mpi/host_transport.cpp). Under LeakSanitizer each one is
// marked here, so that a leak report from a sanitizer build is always a real leak
// (docs/testing.md, "Sanitizers"). Elsewhere this compiles to nothing.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define PREFLIGHT_LEAK_CHECKED 1
#endif
#endif
#if !defined(PREFLIGHT_LEAK_CHECKED) && \
    (defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_LEAK__))
#define PREFLIGHT_LEAK_CHECKED 1
#endif
#ifdef PREFLIGHT_LEAK_CHECKED
#include <sanitizer/lsan_interface.h>
#endif

namespace preflight {

// `block` (any pointer into a heap block, or null) is abandoned on purpose; what it points to
// is abandoned with it.
inline void mark_abandoned(const void* block) noexcept {
#ifdef PREFLIGHT_LEAK_CHECKED
  if (block != nullptr) __lsan_ignore_object(block);
#else
  (void)block;
#endif
}

}  // namespace preflight
