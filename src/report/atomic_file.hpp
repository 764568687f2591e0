#pragma once
// Output files are replaced atomically (temporary file in the same directory, fsync, rename,
// mode 0644), so a reader never sees half a verdict and a failed run never leaves one.
#include <string>
#include <string_view>

namespace preflight {

// Throws InvalidInput, naming `flag`, when the file could not be written here (directory missing
// or not writable, path is a directory): checked before the run so a bad --json never touches
// an existing file.
void ensure_writable(const std::string& path, const std::string& flag = "--json");

// Throws std::runtime_error naming the path and the system error.
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace preflight
