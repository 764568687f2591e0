// `preflight fleet --topology FILE`: parse_topology ("HOST SWITCH" lines, '#' comments), then
// switches_of as the planner uses it, for hosts named in the file and one that is not.
#include <cstddef>
#include <cstdint>

#include "fleet/logic/fleet_setup.hpp"
#include "fuzz_support.hpp"
#include "preflight/errors.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::map<std::string, std::string> topology;
  try {
    topology = parse_topology(std::string(fuzz::as_text(data, size)));
  } catch (const InvalidInput&) {
    return 0;
  }
  std::vector<std::string> hosts;
  for (const auto& [host, leaf] : topology) {
    if (host.empty() || leaf.empty()) fuzz::violated("an empty host or switch name accepted");
    hosts.push_back(host);
  }
  hosts.push_back("not-in-the-file");
  if (switches_of(hosts, topology).size() != hosts.size()) {
    fuzz::violated("switches_of does not name a switch for every host");
  }
  return 0;
}
