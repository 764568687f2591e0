#pragma once
// A saved node verdict (preflight.verdict/1) read back into the Verdict model, for
// `preflight judge`. Every field is checked for its type; a missing optional field takes its
// default, so verdicts of older versions (without readings or thresholds) still load.
#include <string>

#include <nlohmann/json.hpp>

#include "preflight/verdict.hpp"

namespace preflight {

// Throws InvalidInput "ORIGIN: KEY.PATH: expected a string, got number" and the like.
Verdict verdict_from_json(const nlohmann::ordered_json& document, const std::string& origin);

// Reads and parses a verdict file, bounded (regular file, 64 MiB, 64 levels of nesting), and
// converts it. Throws InvalidInput naming the file.
Verdict load_verdict_file(const std::string& path);

}  // namespace preflight
