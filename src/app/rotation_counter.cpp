#include "app/rotation_counter.hpp"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"
#include "report/atomic_file.hpp"

namespace preflight {

RotationCounter take_rotation(std::optional<std::uint64_t> given, const std::string& state_dir) {
  RotationCounter counter;
  if (given) {
    counter.value = *given;
    counter.from = "--rotation";
    return counter;
  }
  if (state_dir.empty()) return counter;
  const std::string path = (std::filesystem::path(state_dir) / "rotation").string();
  counter.from = "--state-dir " + state_dir;
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    std::string text = read_bounded_file(path, 64);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE) {
      throw InvalidInput(path + ": expected one whole number (the rotation counter), got \"" +
                         printable(text) + "\"");
    }
    counter.value = value;
  }
  try {
    write_file_atomically(path, std::to_string(counter.value + 1) + "\n");
  } catch (const std::exception& e) {
    throw InvalidInput("--state-dir: cannot keep the rotation counter: " + std::string(e.what()));
  }
  return counter;
}

}  // namespace preflight
