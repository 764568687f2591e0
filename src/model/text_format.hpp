#pragma once
// Small text helpers shared by the terminal reporters (the table, the burn-in progress) and by
// messages built elsewhere: counted nouns, user text echoed in a one-line error.
#include <cctype>
#include <cstddef>
#include <cstdio>
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

// "1 product", "3 products".
inline std::string count_of(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// One number in a printf format, "%.1f s" -> "2.5 s".
inline std::string formatted(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// Appends one character of user text to a one-line message: a control character as "\x1b",
// so that the text cannot forge extra lines; any other character as it is.
inline void append_printable(std::string& out, char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7f) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
    out += escaped;
  } else {
    out += c;
  }
}

}  // namespace preflight
