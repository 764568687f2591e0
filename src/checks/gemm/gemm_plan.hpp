#pragma once
// The gemm check's time model (docs/plan.md): for a request (the node's GPUs, the profile, the
// seconds it may take) the product seconds per GPU and dtype that run() gives the engine, and the
// seconds that work is modelled to take. plan_work() and run() call plan_gemm_work, so `preflight
// plan` shows the work a run does. Pure: no hardware, no clock. The constants and where they come
// from are in gemm_plan.cpp; unit-tested in tests/checks/gemm/test_gemm_plan.cpp.
#include <vector>

#include "checks/gemm/gemm_options.hpp"
#include "preflight/engine/gemm_engine.hpp"
#include "preflight/work_plan.hpp"

namespace preflight {

// One dtype's share of the work, on every GPU at once.
struct GemmDtypeWork {
  GemmDtype dtype = GemmDtype::bf16;
  int size = 0;             // m = n = k the model assumes (run() chooses per GPU's memory)
  double product_s = 0.0;   // one verified product at the modelled speed
  double round_s = 0.0;     // one full round (repeats_per_round products): the engine's least
  double overhead_s = 0.0;  // setup, warm-up and drain; the first dtype: the GPUs' setup too
  double seconds = 0.0;     // modelled: overhead + max(product seconds, round)
};

struct GemmWork {
  GemmSettings settings;              // the profile's and the options' settings
  double product_seconds = 0;         // per GPU and dtype, as run() gives it to the engine
  bool fixed = false;                 // --gemm-seconds was given: the work is not reduced
  double library_s = 0;               // loading cuBLAS, before the first dtype
  std::vector<GemmDtypeWork> dtypes;  // in settings.dtypes' order
  WorkPlan plan;
};

// The work for this request. Reduced (request.seconds below the whole work's) by the product
// seconds, every dtype alike, down to 1 s (or the profile's, when smaller); --gemm-seconds is
// kept as given. gpus <= 0: nothing to run (0 s), the dtypes still listed.
GemmWork plan_gemm_work(const WorkRequest& request);

}  // namespace preflight
