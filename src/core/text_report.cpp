#include <cstdio>
#include <sstream>

#include "preflight/report.hpp"

namespace preflight {

namespace {

const char* colour_of(Status s) {
  switch (s) {
    case Status::pass:
      return "\033[32m";
    case Status::warn:
      return "\033[33m";
    case Status::fail:
    case Status::error:
      return "\033[31m";
    case Status::skip:
      return "\033[90m";
  }
  return "";
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string padded(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string status_cell(Status s, const TextStyle& style, std::size_t width) {
  const std::string text = padded(upper(to_string(s)), width);
  if (!style.colour) return text;
  return std::string(colour_of(s)) + text + "\033[0m";
}

Status status_of(Severity s) {
  return s == Severity::fail ? Status::fail : s == Severity::warn ? Status::warn : Status::pass;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

void finding_lines(std::ostringstream& os, const std::string& where, const Finding& f,
                   const TextStyle& style) {
  os << "  " << status_cell(status_of(f.severity), style, 5) << padded(where, 11) << ' '
     << padded(f.entity, 8) << ' ' << f.code << (f.injected ? " [injected]" : "") << ": "
     << f.message << '\n';
  if (!f.remediation.empty()) os << "        fix: " << f.remediation << '\n';
}

// A check's matrices as grids (rows: from, columns: to), "-" where there is no figure.
void matrix_lines(std::ostringstream& os, const CheckResult& c) {
  for (const Matrix& m : c.matrices) {
    bool any = false;
    for (const auto& row : m.values) {
      for (const auto& cell : row) any = any || cell.has_value();
    }
    if (!any) continue;
    os << '\n' << c.name << ' ' << m.name << " (" << m.unit << "), row to column:\n";
    os << padded("", 8);
    for (const auto& label : m.labels) os << padded(label, 9);
    os << '\n';
    for (std::size_t i = 0; i < m.values.size(); ++i) {
      os << padded(i < m.labels.size() ? m.labels[i] : "", 8);
      for (const auto& cell : m.values[i]) {
        char buf[32];
        if (cell) {
          std::snprintf(buf, sizeof buf, "%.1f", *cell);
        } else {
          std::snprintf(buf, sizeof buf, "-");
        }
        os << padded(buf, 9);
      }
      os << '\n';
    }
  }
}

}  // namespace

std::string verdict_to_text(const Verdict& v, const TextStyle& style) {
  std::ostringstream os;
  os << "preflight " << v.tool.version << " on " << v.host << ", profile " << v.profile << ", "
     << v.system.gpus.size() << " GPU" << (v.system.gpus.size() == 1 ? "" : "s");
  if (!v.system.driver_version.empty()) os << ", driver " << v.system.driver_version;
  os << '\n';
  if (!v.injected_faults.empty()) {
    os << "injected faults:";
    for (const auto& f : v.injected_faults) os << ' ' << f;
    os << '\n';
  }
  os << '\n' << padded("CHECK", 12) << padded("STATUS", 8) << padded("TIME", 8) << "SUMMARY\n";
  for (const auto& c : v.checks) {
    const std::string summary =
        c.status == Status::skip && !c.skip_reason.empty() ? c.skip_reason : c.summary;
    os << padded(c.name, 12) << status_cell(c.status, style, 8) << padded(seconds(c.duration_s), 8)
       << summary << '\n';
  }

  for (const auto& c : v.checks) matrix_lines(os, c);

  bool header = false;
  const auto heading = [&] {
    if (!header) os << "\nFindings:\n";
    header = true;
  };
  for (const auto& f : v.findings) {
    if (f.severity == Severity::info) continue;
    heading();
    finding_lines(os, "run", f, style);
  }
  for (const auto& c : v.checks) {
    for (const auto& f : c.findings) {
      if (f.severity == Severity::info) continue;
      heading();
      finding_lines(os, c.name, f, style);
    }
  }
  os << "\nVerdict: " << status_cell(v.verdict, style, 0) << " (exit " << v.exit_code << ", "
     << seconds(v.duration_s) << ")";
  if (!v.reason.empty()) os << ": " << v.reason;
  os << '\n';
  return os.str();
}

}  // namespace preflight
