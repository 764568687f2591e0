#pragma once
// The verdict as Prometheus metrics in the text exposition format, for node_exporter's textfile
// collector (`preflight run --prom PATH`, docs/prometheus.md): the verdict, each check's status,
// the run's timestamp and duration, and the key figures per GPU, NIC and pair. Names follow
// Prometheus conventions: a `preflight_` prefix, base units (seconds, bytes and bits per second,
// celsius, watts, hertz) as suffixes, entities as labels. Host-only.
#include <string>

#include "preflight/figures.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// `figures`: the checks' declared key figures (CheckRegistry::figure_catalogue()); metrics no
// declaration matches stay in the JSON only.
std::string verdict_to_prometheus(const Verdict& verdict, const FigureCatalogue& figures);

// Seconds since the epoch of a "YYYY-MM-DDTHH:MM:SSZ" time; 0 when it cannot be read.
double epoch_seconds_of(const std::string& utc_iso8601);

}  // namespace preflight
