// `preflight fleet --sizes`: parse_fleet_sizes, and its promise that whatever it accepts is 1 to 8
// sizes of 8 bytes .. 4 GiB, each a multiple of 8 (the transports allocate and split by them).
#include <cstddef>
#include <cstdint>

#include "fleet/logic/fleet_setup.hpp"
#include "fuzz_support.hpp"
#include "preflight/errors.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::size_t> sizes;
  try {
    sizes = parse_fleet_sizes(std::string(fuzz::as_text(data, size)));
  } catch (const InvalidInput&) {
    return 0;
  }
  if (sizes.empty() || sizes.size() > 8) fuzz::violated("not 1 to 8 sizes");
  for (const std::size_t bytes : sizes) {
    if (bytes < 8 || bytes > (std::size_t{4} << 30) || bytes % 8 != 0) {
      fuzz::violated("a size outside 8 bytes .. 4 GiB or not a multiple of 8");
    }
  }
  return 0;
}
