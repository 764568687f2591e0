#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The events check's threshold keys, "events.*" (events_thresholds.cpp; docs/checks/events.md).
const ThresholdSpecs& events_thresholds();

}  // namespace preflight
