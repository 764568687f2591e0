#pragma once
// Internal helpers of the HTML report (src/core/html_*.cpp, docs/report.md): escaping, tolerant
// field access, number formatting, colour classes.
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

// Text for an HTML text node or a double-quoted attribute value: & < > " ' become character
// references, control characters other than tab and newline become U+FFFD (they are parse
// errors in HTML). The result is inert in both contexts.
std::string escape(std::string_view text);

// The member `key` of `object`, or nullptr when `object` is not an object or has no such key.
const Json* member(const Json& object, const char* key);
// The string at `key`; "" when absent or not a string.
std::string text(const Json& object, const char* key);
// `value` if it is a string, else "".
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
