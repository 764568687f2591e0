// The host buffers of the loopback mesh bound to a NUMA node (src/net/transfer_memory.cpp,
// make_host_memory): on this machine's own nodes, read from its /sys, since what is tested is the
// kernel's placement. A binding the kernel refuses is an error naming mbind, never memory
// elsewhere. Only with PREFLIGHT_WITH_IBVERBS, where src/net/ is built (tests/CMakeLists.txt).
#include <catch2/catch.hpp>

#ifdef FAKE_IBVERBS_PATH

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "checks/rdma/rdma_math.hpp"  // parse_numa_node_list
#include "model/bounded_input.hpp"
#include "net/transfer_memory.hpp"
#include "preflight/errors.hpp"

using namespace preflight;

namespace {

std::vector<int> machine_numa_nodes() {
  try {
    return parse_numa_node_list(read_bounded_file("/sys/devices/system/node/online", 4096));
  } catch (const InvalidInput&) {
    return {};
  }
}

// The node the page at `address` is on (get_mempolicy(2), MPOL_F_NODE | MPOL_F_ADDR); -1 when
// the kernel does not say.
int node_of_page(std::uint64_t address) {
  int node = -1;
  const long rc = ::syscall(SYS_get_mempolicy, &node, nullptr, 0UL,
                            reinterpret_cast<void*>(address), MPOL_F_NODE | MPOL_F_ADDR);
  return rc == 0 ? node : -1;
}

}  // namespace

TEST_CASE("rdma numa memory: host buffers land on the node asked for, or the error says mbind") {
  constexpr std::size_t kBytes = 4u << 20;
  const std::vector<int> nodes = machine_numa_nodes();
  if (nodes.empty()) {
    WARN("no NUMA node list in /sys: a kernel without NUMA, nothing to bind to");
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  SECTION("unbound, as before the mesh") {
    std::string error;
    const auto memory = make_host_memory(kBytes, error);
    REQUIRE(memory != nullptr);
    CHECK(error.empty());
  }
  SECTION("every node of this machine") {
    for (int node : nodes) {
      INFO("NUMA node " << node);
      std::string error;
      const auto memory = make_host_memory(kBytes, error, node);
      if (memory == nullptr && error.find("Operation not permitted") != std::string::npos) {
        // A container whose seccomp profile keeps mbind from processes without CAP_SYS_NICE.
        WARN(error);
        return;
      }
      REQUIRE(memory != nullptr);
      CHECK(error.empty());
      REQUIRE(memory->prepare(7, deadline).ok());  // the first touch
      for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{kBytes / 2}}) {
        CHECK(node_of_page(memory->source_address() + offset) == node);
        CHECK(node_of_page(memory->destination_address() + offset) == node);
      }
    }
  }
  SECTION("a node that is not online") {
    const int absent = nodes.back() + 1;
    std::string error;
    CHECK(make_host_memory(kBytes, error, absent) == nullptr);
    CHECK_THAT(error,
               Catch::StartsWith("mbind(source, NUMA node " + std::to_string(absent) + "):"));
    CHECK(make_host_memory(kBytes, error, 5000) == nullptr);
    CHECK(error == "mbind(source, NUMA node 5000): no such node");
  }
}

#endif  // FAKE_IBVERBS_PATH
