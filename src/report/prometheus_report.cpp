#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <regex>
#include <utility>
#include <vector>

#include "report/prometheus.hpp"

namespace preflight {

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A check metric that is a key figure: its key (a regex whose groups become the labels), the
// Prometheus name, and the factor to base units. Metrics no rule names stay in the JSON only.
struct FigureRule {
  const char* check;
  const char* key;
  std::vector<const char*> labels;  // one per regex group
  const char* name;
  double scale;
  const char* help;
};

const std::vector<FigureRule>& figure_rules() {
  static const std::vector<FigureRule> rules = {
      {"inventory", R"(gpu_count)", {}, "preflight_gpus", 1, "GPUs the driver lists"},
      {"inventory",
       R"(gpu(\d+)\.temperature_c)",
       {"gpu"},
       "preflight_gpu_temperature_celsius",
       1,
       "GPU temperature at the start of the run"},
      {"inventory",
       R"(gpu(\d+)\.ecc_corrected_volatile)",
       {"gpu"},
       "preflight_gpu_ecc_corrected_volatile_errors",
       1,
       "correctable ECC errors since the driver loaded"},
      {"inventory",
       R"(gpu(\d+)\.ecc_uncorrected_volatile)",
       {"gpu"},
       "preflight_gpu_ecc_uncorrected_volatile_errors",
       1,
       "uncorrectable ECC errors since the driver loaded"},
      {"inventory",
       R"(gpu(\d+)\.pcie_gen_max_link)",
       {"gpu"},
       "preflight_gpu_pcie_generation_max",
       1,
       "highest PCIe generation the GPU's link can train to"},
      {"inventory",
       R"(gpu(\d+)\.pcie_width)",
       {"gpu"},
       "preflight_gpu_pcie_width_lanes",
       1,
       "current PCIe link width"},
      {"inventory",
       R"(gpu(\d+)\.nvlink_active)",
       {"gpu"},
       "preflight_gpu_nvlink_active_links",
       1,
       "NVLink links up"},
      {"inventory",
       R"(gpu(\d+)\.probe_ms)",
       {"gpu"},
       "preflight_gpu_probe_seconds",
       1e-3,
       "time of the responsiveness probe (context, kernel, copy)"},
      {"gemm",
       R"(gpu(\d+)\.(\w+)\.tflops_median)",
       {"gpu", "dtype"},
       "preflight_gemm_tflops",
       1,
       "median TFLOP/s of the verified matrix products"},
      {"gemm",
       R"((\w+)\.node_median_tflops)",
       {"dtype"},
       "preflight_gemm_node_median_tflops",
       1,
       "median over the node's GPUs of their median TFLOP/s"},
      {"gemm",
       R"(gpu(\d+)\.(\w+)\.sm_clock_mhz_median)",
       {"gpu", "dtype"},
       "preflight_gemm_sm_clock_hertz",
       1e6,
       "median SM clock during the products"},
      {"gemm",
       R"(gpu(\d+)\.(\w+)\.power_w_median)",
       {"gpu", "dtype"},
       "preflight_gemm_power_watts",
       1,
       "median board power during the products"},
      {"gemm",
       R"(gpu(\d+)\.(\w+)\.temperature_c_max)",
       {"gpu", "dtype"},
       "preflight_gemm_temperature_max_celsius",
       1,
       "highest GPU temperature during the products"},
      {"pcie",
       R"(gpu(\d+)\.(h2d|d2h|bidir)_gbps)",
       {"gpu", "direction"},
       "preflight_pcie_bandwidth_bytes_per_second",
       1e9,
       "verified host<->GPU copy bandwidth, one GPU at a time"},
      {"pcie",
       R"(gpu(\d+)\.(h2d|d2h|bidir)_all_gbps)",
       {"gpu", "direction"},
       "preflight_pcie_concurrent_bandwidth_bytes_per_second",
       1e9,
       "verified host<->GPU copy bandwidth with every GPU copying at once"},
      {"hbm",
       R"(gpu(\d+)\.hbm_traffic_gbps)",
       {"gpu"},
       "preflight_hbm_bandwidth_bytes_per_second",
       1e9,
       "GPU memory traffic of verified device-to-device copies"},
      {"hbm",
       R"(gpu(\d+)\.pattern_bad_words)",
       {"gpu"},
       "preflight_hbm_pattern_bad_words",
       1,
       "words of GPU memory that read back wrong in the pattern test"},
      {"nvlink",
       R"(unidirectional_min_gbps)",
       {},
       "preflight_nvlink_min_bandwidth_bytes_per_second",
       1e9,
       "slowest GPU pair's unidirectional copy bandwidth"},
      {"nccl",
       R"((allgather|allreduce)\.(\d+)\.busbw_gbps)",
       {"op", "bytes"},
       "preflight_nccl_busbw_bytes_per_second",
       1e9,
       "bus bandwidth of the node's verified collective (nccl-tests' definition)"},
      {"rdma",
       R"(([^.]+)\.rate_gbps)",
       {"port"},
       "preflight_rdma_port_rate_bits_per_second",
       1e9,
       "RDMA port rate"},
      {"rdma",
       R"(([^.-]+)\.loopback_gbps)",
       {"port"},
       "preflight_rdma_loopback_bits_per_second",
       1e9,
       "verified RDMA write bandwidth of a port to itself"},
      {"rdma",
       R"(([^.-]+)-([^.-]+)\.pair_gbps)",
       {"src", "dst"},
       "preflight_rdma_pair_bits_per_second",
       1e9,
       "verified RDMA write bandwidth between NICs"},
      {"rdma",
       R"(([^.-]+)\.gpudirect_gbps)",
       {"nic"},
       "preflight_rdma_gpudirect_bits_per_second",
       1e9,
       "verified RDMA write bandwidth from the NIC into its nearest GPU's memory"},
  };
  return rules;
}

// The rules with their patterns compiled once: a node has hundreds of metrics.
const std::vector<std::pair<const FigureRule*, std::regex>>& compiled_rules() {
  static const auto compiled = [] {
    std::vector<std::pair<const FigureRule*, std::regex>> out;
    for (const FigureRule& rule : figure_rules()) out.emplace_back(&rule, std::regex(rule.key));
    return out;
  }();
  return compiled;
}

struct Sample {
  Labels labels;
  double value = 0;
};

struct Family {
  std::string help;
  std::vector<Sample> samples;
};

// Families in the order first added: the exposition format wants each family's samples together.
class Exposition {
 public:
  void add(const std::string& name, const std::string& help, Labels labels, double value) {
    if (!std::isfinite(value)) return;  // a figure that is not a number is left out
    auto [it, inserted] = index_.emplace(name, families_.size());
    if (inserted) families_.push_back({name, Family{help, {}}});
    // One series per label set: the same finding twice must not make the file invalid.
    auto& samples = families_[it->second].second.samples;
    for (const Sample& s : samples) {
      if (s.labels == labels) return;
    }
    samples.push_back({std::move(labels), value});
  }

  std::string text() const {
    std::string out;
    for (const auto& [name, family] : families_) {
      out += "# HELP " + name + " " + family.help + "\n# TYPE " + name + " gauge\n";
      for (const Sample& s : family.samples) {
        out += name;
        if (!s.labels.empty()) {
          out += '{';
          for (std::size_t i = 0; i < s.labels.size(); ++i) {
            out += (i ? "," : "") + s.labels[i].first + "=\"" + escaped(s.labels[i].second) + '"';
          }
          out += '}';
        }
        out += ' ' + number(s.value) + '\n';
      }
    }
    return out;
  }

 private:
  static std::string escaped(const std::string& value) {
    std::string out;
    for (char c : value) {
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '"') {
        out += "\\\"";
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    return out;
  }
  // The shortest text that reads back as the same double: 0.305, not 0.30471969900000001.
  static std::string number(double v) {
    char buf[40];
    for (int precision = 15; precision <= 17; ++precision) {
      std::snprintf(buf, sizeof buf, "%.*g", precision, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
  }

  std::map<std::string, std::size_t> index_;
  std::vector<std::pair<std::string, Family>> families_;
};

constexpr Status kStatuses[] = {Status::pass, Status::warn, Status::fail, Status::skip,
                                Status::error};

void add_figures(Exposition& out, const CheckResult& check) {
  for (const auto& [key, value] : check.metrics) {
    for (const auto& [rule_ptr, pattern] : compiled_rules()) {
      const FigureRule& rule = *rule_ptr;
      if (check.name != rule.check) continue;
      std::smatch m;
      if (!std::regex_match(key, m, pattern)) continue;
      Labels labels;
      for (std::size_t i = 0; i < rule.labels.size(); ++i) {
        labels.emplace_back(rule.labels[i], m[i + 1].str());
      }
      out.add(rule.name, rule.help, std::move(labels), value * rule.scale);
      break;
    }
  }
  // Pair tables (nvlink): every ordered GPU pair's bandwidth, so a dashboard can find the link.
  for (const Matrix& matrix : check.matrices) {
    if (matrix.unit != "GB/s") continue;
    std::string mode = matrix.name;
    if (const auto cut = mode.rfind("_gbps"); cut != std::string::npos) mode.resize(cut);
    for (std::size_t i = 0; i < matrix.values.size() && i < matrix.labels.size(); ++i) {
      for (std::size_t j = 0; j < matrix.values[i].size() && j < matrix.labels.size(); ++j) {
        if (!matrix.values[i][j]) continue;
        out.add("preflight_" + check.name + "_pair_bandwidth_bytes_per_second",
                "verified copy bandwidth from src to dst",
                {{"src", matrix.labels[i]}, {"dst", matrix.labels[j]}, {"mode", mode}},
                *matrix.values[i][j] * 1e9);
      }
    }
  }
}

void add_findings(Exposition& out, const std::string& where, const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.severity == Severity::info) continue;
    out.add("preflight_finding",
            "a warn or fail finding of the last run (docs/findings.md); 1 while it stands",
            {{"check", where},
             {"code", f.code},
             {"entity", f.entity},
             {"severity", std::string(to_string(f.severity))},
             {"injected", f.injected ? "true" : "false"}},
            1);
  }
}

}  // namespace

double epoch_seconds_of(const std::string& utc_iso8601) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char zone = 0;
  if (std::sscanf(utc_iso8601.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &year, &month, &day, &hour,
                  &minute, &second, &zone) != 7 ||
      zone != 'Z') {
    return 0;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<double>(timegm(&tm));
}

std::string verdict_to_prometheus(const Verdict& v) {
  Exposition out;
  for (Status s : {Status::pass, Status::warn, Status::fail}) {
    out.add("preflight_verdict", "node verdict of the last run: 1 for the verdict it had",
            {{"verdict", std::string(to_string(s))}}, v.verdict == s ? 1 : 0);
  }
  out.add("preflight_healthy", "1 when the last run's exit code was 0 (healthy)", {},
          v.exit_code == kExitHealthy ? 1 : 0);
  out.add("preflight_exit_code", "exit code of the last run (docs/verdict.md)", {}, v.exit_code);
  out.add("preflight_injected", "1 when the last run was an --inject-fault drill", {},
          v.injected_faults.empty() ? 0 : 1);
  out.add("preflight_last_run_timestamp_seconds", "start of the last run, seconds since the epoch",
          {}, epoch_seconds_of(v.started_at));
  out.add("preflight_last_run_duration_seconds", "wall time of the last run", {}, v.duration_s);
  out.add("preflight_info", "the tool, profile and software stack of the last run",
          {{"version", v.tool.version},
           {"git", v.tool.git},
           {"profile", v.profile},
           {"driver", v.system.driver_version},
           {"cuda_driver", v.system.cuda_driver},
           {"nccl", v.system.nccl}},
          1);
  if (v.burnin) {
    out.add("preflight_burnin_passes", "passes the last burn-in ran", {}, v.burnin->passes_run);
    out.add("preflight_burnin_failed_passes", "passes of the last burn-in that were unhealthy", {},
            [&v] {
              int n = 0;
              for (const auto& p : v.passes) n += p.exit_code != kExitHealthy ? 1 : 0;
              return n;
            }());
  }
  for (const CheckResult& c : v.checks) {
    for (Status s : kStatuses) {
      out.add("preflight_check_status", "status of each check in the last run: 1 for its status",
              {{"check", c.name}, {"status", std::string(to_string(s))}}, c.status == s ? 1 : 0);
    }
  }
  for (const CheckResult& c : v.checks) {
    if (c.status == Status::skip) continue;
    out.add("preflight_check_duration_seconds", "wall time of each check that ran",
            {{"check", c.name}}, c.duration_s);
  }
  add_findings(out, "run", v.findings);
  for (const CheckResult& c : v.checks) add_findings(out, c.name, c.findings);
  for (const CheckResult& c : v.checks) add_figures(out, c);
  return out.text();
}

}  // namespace preflight
