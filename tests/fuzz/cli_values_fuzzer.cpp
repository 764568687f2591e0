// Values the commands parse after the command line: `preflight plan --node gpus=N,sku=S,nics=M`
// (parse_node_description) and `preflight run --duration` (parse_duration, promised to give
// seconds in (0, 30 days]). Both get every input.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "app/plan_view.hpp"
#include "fuzz_support.hpp"
#include "preflight/errors.hpp"
#include "run/burnin.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  try {
    (void)parse_node_description(std::string(text));
  } catch (const InvalidInput&) {
  }
  try {
    const double seconds = parse_duration(text, "--duration");
    if (!(seconds > 0 && seconds <= 30.0 * 24 * 3600)) {
      fuzz::violated("parse_duration accepted a duration outside (0, 30 days]");
    }
  } catch (const InvalidInput&) {
  }
  return 0;
}
