#pragma once
// Sample statistics shared by the checks that measure (gemm TFLOP/s, bandwidth GB/s).
#include <cstddef>
#include <vector>

namespace preflight {

struct SampleStats {
  std::size_t count = 0;
  double median = 0.0;  // the mean of the two middle values for an even count
  double min = 0.0;
  double max = 0.0;
};

// Median, minimum and maximum; NaN samples are left out (a failed sample is reported
// elsewhere, and NaN has no order). All zero when no sample is left.
SampleStats summarize(std::vector<double> samples);

}  // namespace preflight
