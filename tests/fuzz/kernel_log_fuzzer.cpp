// Kernel-log text (--kernel-log FILE, or /dev/kmsg's records): every line through the parser and
// the event recogniser, the events collected under each counting rule, the readings judged and
// written as JSON and read back. A saved log is outside input: it must never crash or hang.
#include <cstddef>
#include <cstdint>

#include "checks/events/event_collector.hpp"
#include "checks/events/events_readings.hpp"
#include "checks/events/kernel_log.hpp"
#include "fuzz_support.hpp"
#include "preflight/errors.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Thresholds thresholds = test::builtin_thresholds(nullptr, "fuzz");
  const std::string_view text = fuzz::as_text(data, size);
  CountingRule rules[3];
  rules[1].mode = CountingRule::Mode::after_seq;
  rules[1].seq = 3;
  rules[2].mode = CountingRule::Mode::since_usec;
  rules[2].usec = 1'000'000;
  for (const CountingRule& rule : rules) {
    EventCollector collector(rule);
    LogBounds bounds;
    bounds.max_records = 4096;
    (void)read_log_text(text, bounds, [&](const LogRecord& r) { collector.add(r); });
    EventsReadings readings;
    readings.source = "file";
    readings.gpus = {{"gpu0", "0000:3b:00.0"}};
    collector.finish(readings);
    (void)judge_events(readings, thresholds);
    const nlohmann::ordered_json j = readings;
    (void)j.dump();  // throws on text that is not UTF-8: the verdict writer would
    try {
      (void)j.get<EventsReadings>();
    } catch (const InvalidInput&) {
      // Refused on the way back is allowed (never expected): never a crash.
    }
  }
  (void)cursor_text(parse_cursor(text).value_or(KernelLogCursor{}));
  return 0;
}
