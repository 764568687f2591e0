#pragma once
// Internal helpers of the HTML report (src/report/html/html_*.cpp, docs/report.md): escaping,
// tolerant field access, number formatting, colour classes.
//
// The documents come from other machines and from older or newer versions of preflight, and a
// report of a broken verdict is exactly when the page is needed. So every accessor here takes
// any JSON value and answers "absent" for a missing or mistyped field instead of throwing, and
// every string that reaches the page goes through escape().
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/text_format.hpp"

namespace preflight::html {

using Json = nlohmann::ordered_json;

// The caps of one page (docs/report.md#limits). The documents come from other machines, and
// one that is runaway or hostile (a million findings, a 60 MB label repeated in every cell of a
// heat map) must still give a page a browser opens, in about the time its parse takes.
//
// Bytes of one text of a document (a message, a label, a key) that reach the page.
inline constexpr std::size_t kMaxTextBytes = 16 * 1024;
// Items of a list inside one table cell or line: a node's reasons, a pair's hosts, the fault
// specs, the words of the command line.
inline constexpr std::size_t kMaxCellItems = 100;

// "64 MiB" for a whole number of MiB, else "1000 bytes".
std::string size_text(std::size_t bytes);

// `text` cut after max_bytes (at a character boundary) with " [... N more bytes not shown]";
// `text` itself when it is not longer.
std::string clipped(std::string_view text, std::size_t max_bytes = kMaxTextBytes);

// What is left of the page, shared by every part of one page. Rows are charged as they are
// added, so the page stops near max_bytes however the document is built; and once one row does
// not fit, nothing later is added either: the page is cut at one place, and every table that
// loses rows says how many, rather than the page being thinned out here and there.
class PageBudget {
 public:
  PageBudget(std::size_t max_bytes, std::size_t max_rows, std::size_t max_fleet_nodes);
  bool spent() const { return spent_; }
  // Takes `bytes` when they fit; false, and spent from then on, when they do not.
  bool take(std::size_t bytes);
  // Takes `bytes` even past the limit (the summary, which lists every document).
  void charge(std::size_t bytes);
  std::size_t max_rows() const { return max_rows_; }
  std::size_t max_fleet_nodes() const { return max_fleet_nodes_; }
  std::size_t max_bytes() const { return max_bytes_; }
  // "N more not shown: at most LIMIT here and 64 MiB per page" (text, nothing from a document).
  std::string more_text(std::size_t more, std::size_t limit) const;
  // That text as a table row across `columns` columns, or "" when `more` is 0.
  std::string more_row(std::size_t more, std::size_t limit, int columns) const;
  // That text as a paragraph, or "" when `more` is 0.
  std::string more_note(std::size_t more, std::size_t limit) const;

 private:
  std::size_t max_bytes_;
  std::size_t left_;
  std::size_t max_rows_;
  std::size_t max_fleet_nodes_;
  bool spent_ = false;
};

// The rows of one table, list or chart as they are added: at most `limit`, each charged to the
// page's budget.
class Rows {
 public:
  Rows(PageBudget& budget, std::size_t limit) : budget_(budget), limit_(limit) {}
  // Whether another row may be built. Asked before building it, so the rows past the limit of
  // a million-row table cost nothing.
  bool open() const { return shown_ < limit_ && !budget_.spent(); }
  // Appends the row and charges it; false (and closed) when the budget does not take it.
  bool add(std::string& out, const std::string& row);
  // Appends a part whose rows were charged as they were built (a table in a <details>).
  void add_charged(std::string& out, const std::string& part);
  std::size_t shown() const { return shown_; }
  std::size_t limit() const { return limit_; }
  // budget.more_row / more_note for the `total - shown()` rows left out.
  std::string more_row(std::size_t total, int columns) const;
  std::string more_note(std::size_t total) const;

 private:
  PageBudget& budget_;
  std::size_t limit_;
  std::size_t shown_ = 0;
};

// " <span class="none">... N more not shown</span>" after a list cut at kMaxCellItems; "" when
// nothing was left out.
std::string more_in_cell(std::size_t more);

// Text for an HTML text node or a double-quoted attribute value: & < > " ' become character
// references, control characters other than tab and newline become U+FFFD (they are parse
// errors in HTML). The result is inert in both contexts.
std::string escape(std::string_view text);

// The member `key` of `object`, or nullptr when `object` is not an object or has no such key.
const Json* member(const Json& object, const char* key);
// The string at `key`, clipped(); "" when absent or not a string.
std::string text(const Json& object, const char* key);
// `value`, clipped(), if it is a string, else "".
std::string text_of(const Json& value);
// A finite number at `key` (or `value` itself); nullopt for absent, null, non-numbers.
std::optional<double> number(const Json& object, const char* key);
std::optional<double> number_of(const Json& value);
// A whole number at `key` that fits a long long (2.0 counts; 2.5 and "2" do not).
std::optional<long long> integer(const Json& object, const char* key);
std::optional<long long> integer_of(const Json& value);
// The array or object at `key`, or an empty one when absent or of another type.
const Json& array(const Json& object, const char* key);
const Json& object(const Json& object, const char* key);
std::optional<bool> boolean(const Json& object, const char* key);

// Figures for people: whole numbers without a fraction, others with about four significant
// digits; "-" for nullopt (null, missing, non-finite, mistyped).
std::string format_number(std::optional<double> value);
std::string format_integer(std::optional<long long> value);
// "3.46 s"; "-" when unknown.
std::string format_seconds(std::optional<double> value);

// Escaped text for element content, with <wbr> break opportunities inside long runs without
// spaces (a path, a hostile host name), so a table column can be narrower than the run while
// ordinary words stay whole.
std::string breakable(std::string_view text);
// breakable(text), or a grey "-" when the text is empty.
std::string cell(const std::string& text);

// The CSS class (t-good, t-warn, t-bad, t-info, t-odd, t-muted) for a verdict, status,
// severity, node conclusion or group outcome. The class comes from a fixed list, never from the
// document's text, so a hostile word cannot reach an attribute.
const char* tone_class(const std::string& word);
// A coloured label with the word (or "-") in it.
std::string badge(const std::string& word);
// A prominent marker for results produced by --inject-fault drills.
std::string drill_badge();
// The document's argv, joined by spaces, in a closed <details> titled `summary`.
std::string command_line_details(const Json& doc, const std::string& summary);

// "1 pass", "3 passes": the model's helper, which the html:: callers name as one of these.
using ::preflight::count_of;

// Background and text colour for a heat-map cell at position t in [0, 1] of the matrix's
// scale, as "background:#rrggbb;color:#rrggbb": dark red at 0, red at 0.5, yellow at 0.8, green
// at 1.
std::string heat_style(double t);
// The same ramp as a CSS linear-gradient for the legend.
std::string heat_gradient();

// SHA-256 of `data`, base64-encoded: the page's Content-Security-Policy names its one inline
// script by hash, so no injected script could run even if escaping ever failed.
std::string sha256_base64(std::string_view data);

}  // namespace preflight::html
