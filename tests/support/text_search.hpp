#pragma once
// Counting a text in a rendered page or report, for the tests of the reports.
#include <cstddef>
#include <string>

namespace preflight::test {

// How often `needle` occurs in `haystack`, not overlapping: "aaaa" holds "aa" twice.
inline std::size_t occurrences(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace preflight::test
