#include "report/html/html_common.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

namespace preflight::html {

std::string size_text(std::size_t bytes) {
  constexpr std::size_t kMiB = 1024 * 1024;
  return bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + " MiB"
                           : std::to_string(bytes) + " bytes";
}

std::string clipped(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  // Back off continuation bytes (10xxxxxx) so no character is cut in half.
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + " [... " + std::to_string(text.size() - end) +
         " more bytes not shown]";
}

PageBudget::PageBudget(std::size_t max_bytes, std::size_t max_rows, std::size_t max_fleet_nodes)
    : max_bytes_(max_bytes),
      left_(max_bytes),
      max_rows_(max_rows),
      max_fleet_nodes_(max_fleet_nodes) {}

bool PageBudget::take(std::size_t bytes) {
  if (spent_ || bytes > left_) {
    spent_ = true;
    return false;
  }
  left_ -= bytes;
  return true;
}

void PageBudget::charge(std::size_t bytes) {
  left_ -= std::min(left_, bytes);
}

std::string PageBudget::more_text(std::size_t more, std::size_t limit) const {
  return std::to_string(more) + " more not shown: at most " + std::to_string(limit) + " here and " +
         size_text(max_bytes_) + " per page";
}

std::string PageBudget::more_row(std::size_t more, std::size_t limit, int columns) const {
  if (more == 0) return "";
  return "<tr><td class=\"none\" colspan=\"" + std::to_string(columns) + "\">" +
         more_text(more, limit) + "</td></tr>\n";
}

std::string PageBudget::more_note(std::size_t more, std::size_t limit) const {
  if (more == 0) return "";
  return "<p class=\"none\">" + more_text(more, limit) + "</p>\n";
}

bool Rows::add(std::string& out, const std::string& row) {
  if (!open() || !budget_.take(row.size())) return false;
  out += row;
  ++shown_;
  return true;
}

void Rows::add_charged(std::string& out, const std::string& part) {
  out += part;
  ++shown_;
}

std::string Rows::more_row(std::size_t total, int columns) const {
  return budget_.more_row(total > shown_ ? total - shown_ : 0, limit_, columns);
}

std::string Rows::more_note(std::size_t total) const {
  return budget_.more_note(total > shown_ ? total - shown_ : 0, limit_);
}

std::string more_in_cell(std::size_t more) {
  if (more == 0) return "";
  return " <span class=\"none\">... " + std::to_string(more) + " more not shown</span>";
}

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        // C0 controls (NUL included) and DEL are parse errors in HTML text; keep tab and
        // newline, which are ordinary white space.
        if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7f) {
          out += "\xEF\xBF\xBD";
        } else {
          out += c;
        }
      }
    }
  }
  return out;
}

const Json* member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string text_of(const Json& value) {
  return value.is_string() ? clipped(value.get_ref<const std::string&>()) : std::string();
}

std::string text(const Json& object, const char* key) {
  const Json* v = member(object, key);
  return v ? text_of(*v) : std::string();
}

std::optional<double> number_of(const Json& value) {
  if (!value.is_number()) return std::nullopt;
  const double d = value.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

std::optional<double> number(const Json& object, const char* key) {
  const Json* v = member(object, key);
  return v ? number_of(*v) : std::nullopt;
}

std::optional<long long> integer_of(const Json& value) {
  if (value.is_number_integer()) return value.get<long long>();
  const std::optional<double> d = number_of(value);
  // Bounds well inside long long so the cast below is defined.
  if (!d || std::floor(*d) != *d || std::fabs(*d) > 9.0e15) return std::nullopt;
  return static_cast<long long>(*d);
}

std::optional<long long> integer(const Json& object, const char* key) {
  const Json* v = member(object, key);
  return v ? integer_of(*v) : std::nullopt;
}

const Json& array(const Json& object, const char* key) {
  static const Json empty = Json::array();
  const Json* v = member(object, key);
  return v && v->is_array() ? *v : empty;
}

const Json& object(const Json& object, const char* key) {
  static const Json empty = Json::object();
  const Json* v = member(object, key);
  return v && v->is_object() ? *v : empty;
}

std::optional<bool> boolean(const Json& object, const char* key) {
  const Json* v = member(object, key);
  if (!v || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::string format_number(std::optional<double> value) {
  if (!value) return "-";
  const double v = *value;
  char buf[64];
  if (std::floor(v) == v && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (std::fabs(v) >= 1000.0) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

std::string format_integer(std::optional<long long> value) {
  return value ? std::to_string(*value) : "-";
}

std::string format_seconds(std::optional<double> value) {
  if (!value) return "-";
  char buf[64];
  if (std::fabs(*value) < 100.0) {
    std::snprintf(buf, sizeof buf, "%.2f s", *value);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f s", *value);
  }
  return buf;
}

std::string breakable(std::string_view text) {
  // After 20 characters without a space, break after punctuation; after 30, anywhere (between
  // whole UTF-8 characters).
  constexpr std::size_t kSoft = 20;
  constexpr std::size_t kHard = 30;
  std::string out;
  std::size_t start = 0;
  std::size_t run = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t len = lead < 0x80           ? 1
                      : (lead >> 5) == 0x06 ? 2
                      : (lead >> 4) == 0x0e ? 3
                      : (lead >> 3) == 0x1e ? 4
                                            : 1;
    len = std::min(len, text.size() - i);
    const char c = text[i];
    i += len;
    if (c == ' ' || c == '\t' || c == '\n') {
      run = 0;
      continue;
    }
    ++run;
    const bool punct = len == 1 && c != '\0' && std::strchr("/,;:=&@-_.)]}>", c) != nullptr;
    if (i < text.size() && ((run >= kSoft && punct) || run >= kHard)) {
      out += escape(text.substr(start, i - start)) + "<wbr>";
      start = i;
      run = 0;
    }
  }
  return out + escape(text.substr(start));
}

std::string cell(const std::string& text) {
  return text.empty() ? "<span class=\"none\">-</span>" : breakable(text);
}

const char* tone_class(const std::string& word) {
  static constexpr std::array<std::pair<const char*, const char*>, 17> tones{{
      {"pass", "t-good"},
      {"ok", "t-good"},
      {"healthy", "t-good"},
      {"warn", "t-warn"},
      {"straggler", "t-warn"},
      {"slow", "t-warn"},
      {"fail", "t-bad"},
      {"faulty", "t-bad"},
      {"corrupt", "t-bad"},
      {"timeout", "t-bad"},
      {"missing", "t-bad"},
      {"error", "t-odd"},
      {"ambiguous", "t-odd"},
      {"info", "t-info"},
      {"skip", "t-muted"},
      {"not run", "t-muted"},
      {"none", "t-muted"},
  }};
  for (const auto& [name, cls] : tones) {
    if (word == name) return cls;
  }
  return "t-muted";
}

std::string badge(const std::string& word) {
  if (word.empty()) return "<span class=\"badge t-muted\">-</span>";
  // A long word (not one preflight writes) is cut to the badge's width with an ellipsis (CSS);
  // the title keeps all of it.
  const std::string text = escape(word);
  const std::string title = word.size() > 10 ? " title=\"" + text + "\"" : "";
  return std::string("<span class=\"badge ") + tone_class(word) + "\"" + title + ">" + text +
         "</span>";
}

std::string drill_badge() {
  return "<span class=\"drill\" title=\"produced by --inject-fault, not by the hardware\">"
         "injected</span>";
}

std::string command_line_details(const Json& doc, const std::string& summary) {
  const Json& words = array(doc, "argv");
  std::string argv;
  std::size_t shown = 0;
  for (; shown < words.size() && shown < kMaxCellItems; ++shown) {
    argv += (argv.empty() ? "" : " ") + text_of(words[shown]);
  }
  return "<details><summary>" + summary + "</summary><p><code>" + cell(clipped(argv)) +
         more_in_cell(words.size() - shown) + "</code></p></details>\n";
}

namespace {

struct Rgb {
  double r, g, b;
};

// Stops of the ramp (position, colour), ColorBrewer RdYlGn colours. Red holds down to half of
// the scale and yellow sits at 80%, so a link at half its peers' speed reads as alarming, one a
// few percent off as nearly green.
struct Stop {
  double at;
  Rgb colour;
};
constexpr std::array<Stop, 4> kRamp{
    {{0.0, {165, 0, 38}}, {0.5, {215, 48, 39}}, {0.8, {254, 224, 139}}, {1.0, {26, 152, 80}}}};

std::string hex(const Rgb& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<unsigned>(std::lround(c.r)),
                static_cast<unsigned>(std::lround(c.g)), static_cast<unsigned>(std::lround(c.b)));
  return buf;
}

}  // namespace

std::string heat_style(double t) {
  if (!std::isfinite(t)) t = 0.0;
  t = std::clamp(t, 0.0, 1.0);
  std::size_t seg = 0;
  while (seg + 2 < kRamp.size() && t > kRamp[seg + 1].at) ++seg;
  const Stop& a = kRamp[seg];
  const Stop& b = kRamp[seg + 1];
  const double f = (t - a.at) / (b.at - a.at);
  const Rgb c{a.colour.r + (b.colour.r - a.colour.r) * f,
              a.colour.g + (b.colour.g - a.colour.g) * f,
              a.colour.b + (b.colour.b - a.colour.b) * f};
  // White or dark text, whichever contrasts more with the cell (WCAG relative luminance), so
  // every cell stays legible and cells of nearly the same colour get the same text colour.
  const auto linear = [](double channel) {
    const double s = channel / 255.0;
    return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  const double lum = 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
  constexpr double kDarkText = 0.0159;  // #1f2328
  const bool white = (1.0 + 0.05) / (lum + 0.05) > (lum + 0.05) / (kDarkText + 0.05);
  return "background:" + hex(c) + ";color:" + (white ? "#ffffff" : "#1f2328");
}

std::string heat_gradient() {
  std::string out = "linear-gradient(to right";
  for (const Stop& s : kRamp) {
    out += "," + hex(s.colour) + " " + std::to_string(static_cast<int>(s.at * 100)) + "%";
  }
  return out + ")";
}

namespace {

constexpr std::array<std::uint32_t, 64> kSha256K{
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t rotr(std::uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

// FIPS 180-4, one 64-byte block into the state.
void sha256_block(std::array<std::uint32_t, 8>& h, const unsigned char* p) {
  std::array<std::uint32_t, 64> w{};
  for (int i = 0; i < 16; ++i) {
    w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) |
           (std::uint32_t{p[4 * i + 2]} << 8) | std::uint32_t{p[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::array<std::uint32_t, 8> v = h;
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
    const std::uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
    const std::uint32_t t1 = v[7] + s1 + ch + kSha256K[i] + w[i];
    const std::uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
    const std::uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
    const std::uint32_t t2 = s0 + maj;
    v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
  }
  for (int i = 0; i < 8; ++i) h[i] += v[i];
}

}  // namespace

std::string sha256_base64(std::string_view data) {
  std::array<std::uint32_t, 8> h{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string msg(data);
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  msg += static_cast<char>(0x80);
  while (msg.size() % 64 != 56) msg += '\0';
  for (int i = 7; i >= 0; --i) msg += static_cast<char>((bits >> (8 * i)) & 0xff);
  for (std::size_t off = 0; off < msg.size(); off += 64) {
    sha256_block(h, reinterpret_cast<const unsigned char*>(msg.data() + off));
  }
  std::array<unsigned char, 32> digest{};
  for (int i = 0; i < 8; ++i) {
    for (int b = 0; b < 4; ++b) digest[4 * i + b] = (h[i] >> (24 - 8 * b)) & 0xff;
  }
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < digest.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t{digest[i]} << 16) |
                            (i + 1 < digest.size() ? std::uint32_t{digest[i + 1]} << 8 : 0) |
                            (i + 2 < digest.size() ? std::uint32_t{digest[i + 2]} : 0);
    out += kB64[(n >> 18) & 63];
    out += kB64[(n >> 12) & 63];
    out += i + 1 < digest.size() ? kB64[(n >> 6) & 63] : '=';
    out += i + 2 < digest.size() ? kB64[n & 63] : '=';
  }
  return out;
}

}  // namespace preflight::html
