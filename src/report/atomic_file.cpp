#include "report/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "preflight/errors.hpp"

namespace preflight {

namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string errno_text() {
  return std::strerror(errno);
}

// Creates a unique temporary file beside path; returns its fd and fills tmp_path.
int make_temp_beside(const std::string& path, std::string& tmp_path) {
  std::string pattern = path + ".tmp.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const int fd = mkstemp(buf.data());
  if (fd >= 0) tmp_path.assign(buf.data());
  return fd;
}

}  // namespace

void ensure_writable(const std::string& path, const std::string& flag) {
  if (path.empty()) throw InvalidInput(flag + ": empty path");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw InvalidInput(flag + " " + path + ": is a directory");
  }
  const std::string dir = directory_of(path);
  if (stat(dir.c_str(), &st) != 0) {
    throw InvalidInput(flag + " " + path + ": directory " + dir + ": " + errno_text());
  }
  if (!S_ISDIR(st.st_mode))
    throw InvalidInput(flag + " " + path + ": " + dir + " is not a directory");
  // Probe with the same operation the final write uses (create beside, then remove), which
  // also catches read-only file systems that access() would miss.
  std::string tmp;
  const int fd = make_temp_beside(path, tmp);
  if (fd < 0)
    throw InvalidInput(flag + " " + path + ": cannot write in " + dir + ": " + errno_text());
  close(fd);
  unlink(tmp.c_str());
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  std::string tmp;
  const int fd = make_temp_beside(path, tmp);
  if (fd < 0)
    throw std::runtime_error("cannot create a temporary file beside " + path + ": " + errno_text());
  const auto fail = [&](const std::string& what) {
    const std::string why = errno_text();
    close(fd);
    unlink(tmp.c_str());
    throw std::runtime_error(what + " " + tmp + ": " + why);
  };
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write");
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (fchmod(fd, 0644) != 0) fail("cannot chmod");
  if (fsync(fd) != 0) fail("cannot fsync");
  if (close(fd) != 0) {
    const std::string why = errno_text();
    unlink(tmp.c_str());
    throw std::runtime_error("cannot close " + tmp + ": " + why);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    unlink(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + why);
  }
  // Make the rename itself durable; a failure here leaves a complete file, so it is ignored.
  const int dir_fd = open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
}

}  // namespace preflight
