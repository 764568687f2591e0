#pragma once
// Small text helpers shared by the terminal reporters (the table, the burn-in progress).
#include <cctype>
#include <string>
#include <string_view>

namespace preflight {

inline std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Pads with spaces to `width` columns; longer text is left as it is.
inline std::string padded(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace preflight
