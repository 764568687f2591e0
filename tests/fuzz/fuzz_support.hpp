#pragma once
// What the fuzz targets share (tests/fuzz/README.md). A target feeds the input to one parser of
// outside input: the documented rejection (InvalidInput, include/preflight/errors.hpp) is a normal
// outcome and is caught; anything else escapes, and libFuzzer reports the uncaught exception as
// a crash. A broken promise that does not crash by itself (a document that does not read back)
// calls violated(), so it is saved as a crash input as well.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/check.hpp"

namespace preflight::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The pieces between any of `separators`, empty ones included: an empty line or argument is
// input too.
inline std::vector<std::string> split(std::string_view text, std::string_view separators) {
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find_first_of(separators, start);
    pieces.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return pieces;
    start = end + 1;
  }
}

// The checks built into the binary, registered once per process as main() does.
inline const CheckRegistry& builtin_registry() {
  static const CheckRegistry registry = [] {
    CheckRegistry r;
    register_builtin_checks(r);
    return r;
  }();
  return registry;
}

[[noreturn]] inline void violated(const char* promise) {
  std::fprintf(stderr, "fuzz: broken promise: %s\n", promise);
  std::fflush(stderr);
  __builtin_trap();
}

}  // namespace preflight::fuzz
