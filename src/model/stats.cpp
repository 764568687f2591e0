#include "model/stats.hpp"

#include <algorithm>
#include <cmath>

namespace preflight {

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  samples.erase(std::remove_if(samples.begin(), samples.end(),
                               [](double value) { return std::isnan(value); }),
                samples.end());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.count = n;
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2.0;
  return s;
}

}  // namespace preflight
