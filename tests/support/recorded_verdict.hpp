#pragma once
// A healthy run's verdict as `run --json` writes one, cut to what the learned limits read
// (`preflight baseline`, `--history`): the tests of both build their fleets and histories from it.
#include <cstdio>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace preflight::test {

// `checks` is the verdict's checks array (each with its metrics); `started_at` its ISO time.
inline nlohmann::json recorded_verdict(const std::string& host, const std::string& started_at,
                                       nlohmann::json checks, const std::string& node_shape_by) {
  return {
      {"schema", "preflight.verdict/1"},
      {"tool", {{"name", "preflight"}, {"version", "0.1.0"}, {"git", "test"}}},
      {"host", host},
      {"started_at", started_at},
      {"duration_s", 40.0},
      {"profile", "quick"},
      {"argv", {"preflight", "run", "--json", "v.json"}},
      {"verdict", "pass"},
      {"exit_code", 0},
      {"reason", ""},
      {"injected_faults", nlohmann::json::array()},
      {"findings", nlohmann::json::array()},
      {"checks", std::move(checks)},
      {"thresholds",
       {{"sku", "h100-sxm5-80gb"}, {"node_shape", "hgx-h100"}, {"node_shape_by", node_shape_by}}},
  };
}

// "2026-11-DDTHH:00:00Z".
inline std::string november_2026(int day, int hour) {
  char text[32];
  std::snprintf(text, sizeof text, "2026-11-%02dT%02d:00:00Z", day, hour);
  return text;
}

}  // namespace preflight::test
