#include "model/bounded_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "model/text_format.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

std::string size_text(std::size_t bytes) {
  return bytes % (1024 * 1024) == 0 ? std::to_string(bytes / (1024 * 1024)) + " MiB"
                                    : std::to_string(bytes) + " bytes";
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_chars) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    append_printable(out, text[i]);
  }
  return out;
}

std::string read_bounded_file(const std::string& path, std::size_t max_bytes) {
  const std::string name = printable(path);
  // O_NONBLOCK: opening a FIFO must not hang the tool; fstat on the open descriptor (not stat
  // on the path) so the checked file is the one read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InvalidInput(name + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat info {};
  if (::fstat(fd, &info) != 0) throw InvalidInput(name + ": cannot open: " + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) throw InvalidInput(name + ": is a directory, not a regular file");
  if (!S_ISREG(info.st_mode)) throw InvalidInput(name + ": not a regular file");
  if (static_cast<std::size_t>(info.st_size) > max_bytes) {
    throw InvalidInput(name + ": larger than " + size_text(max_bytes));
  }
  // The file may have grown since fstat: the read is bounded too.
  return read_bounded_descriptor(fd, name, max_bytes);
}

std::string read_bounded_descriptor(int fd, const std::string& name, std::size_t max_bytes) {
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InvalidInput(name + ": cannot read: " + std::strerror(errno));
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) throw InvalidInput(name + ": larger than " + size_text(max_bytes));
  }
}

int json_nesting_depth(std::string_view text, int stop_above) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop_above) return deepest;  // no need to scan the rest
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace preflight
