#pragma once
// Error types that cross module boundaries. InvalidInput is bad user input (flags, threshold
// files, fault specs, environment): main turns it into one line on stderr and exit code 2.
// Anything else that escapes is an internal error of the tool (exit code 3).
#include <stdexcept>
#include <string>

namespace preflight {

class InvalidInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace preflight
