#pragma once
// Reporters: render a Verdict as JSON (schema preflight.verdict/1, docs/verdict.md) or as the
// human table. They only read the verdict; checks never format output themselves.
#include <string>

#include "preflight/verdict.hpp"

namespace preflight {

// The verdict document, two-space indent, trailing newline.
std::string verdict_to_json_text(const Verdict& verdict);

struct TextStyle {
  bool colour = false;  // ANSI colours; only on a terminal
};
std::string verdict_to_text(const Verdict& verdict, const TextStyle& style);

}  // namespace preflight
