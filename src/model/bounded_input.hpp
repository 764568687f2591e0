#pragma once
// Files the tool takes from outside (a thresholds file, a verdict to judge) may be hostile or
// simply wrong: a FIFO that never ends, /dev/zero, a document nested a million levels deep.
// These read them with bounds and turn every problem into one InvalidInput line naming the file.
#include <cstddef>
#include <string>
#include <string_view>

namespace preflight {

// Text from outside for a one-line message: control characters escaped, at most max_chars.
std::string printable(std::string_view text, std::size_t max_chars = 80);

// The whole file, which must be a regular file of at most max_bytes. Opened without blocking
// (a FIFO cannot hang the tool) and checked on the open descriptor. Throws InvalidInput
// "PATH: is a directory, not a regular file", "PATH: larger than N MiB", ...
std::string read_bounded_file(const std::string& path, std::size_t max_bytes);

// The rest of an open descriptor (stdin, a pipe that may never end), read until EOF and at most
// one buffer past max_bytes. Throws InvalidInput "NAME: larger than N MiB" or
// "NAME: cannot read: ...".
std::string read_bounded_descriptor(int fd, const std::string& name, std::size_t max_bytes);

// Deepest bracket nesting of JSON text outside strings; the scan stops once it passes
// stop_above, so a document of a million '[' costs nothing. Run it before a parser recurses.
int json_nesting_depth(std::string_view text, int stop_above);

}  // namespace preflight
