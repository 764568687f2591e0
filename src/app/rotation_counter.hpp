#pragma once
// The pair rotation's run counter (docs/plan.md, "Rotation"): given with --rotation, or kept in
// DIR/rotation with --state-dir so that consecutive runs on a node cover every pair.
#include <cstdint>
#include <optional>
#include <string>

namespace preflight {

struct RotationCounter {
  std::uint64_t value = 0;
  std::string from = "none";  // "--rotation", "--state-dir DIR", "none"
};

// The counter for this run. With a state directory: the number in DIR/rotation (0 when the file
// does not exist yet), and the next number written back atomically before the run, so a run cut
// short still moves the rotation on. Throws InvalidInput naming the file when it is not a
// regular file of one number, or cannot be written.
RotationCounter take_rotation(std::optional<std::uint64_t> given, const std::string& state_dir);

}  // namespace preflight
