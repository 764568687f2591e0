/* A fake NVIDIA driver library for tests: it answers cuDriverGetVersion only, which is all that
 * preflight asks the driver before it touches the CUDA runtime (src/gpu/cuda_driver.hpp). Point
 * PREFLIGHT_CUDA_DRIVER_LIBRARY at it; FAKE_CUDA_DRIVER_VERSION sets the CUDA version it reports
 * (12040 for 12.4; default 13000), FAKE_CUDA_DRIVER_ERROR a CUresult to fail with instead.
 * Its soname is not libcuda.so.1, so the CUDA runtime, which opens libcuda.so.1 itself, never
 * takes it for the real driver. */
#include <stdlib.h>

static int number_from_env(const char* name, int fallback) {
  const char* text = getenv(name);
  if (text == NULL || *text == '\0') return fallback;
  char* end = NULL;
  const long value = strtol(text, &end, 10);
  return end != NULL && *end == '\0' ? (int)value : fallback;
}

int cuDriverGetVersion(int* version) {
  const int error = number_from_env("FAKE_CUDA_DRIVER_ERROR", 0);
  if (error != 0) return error;
  if (version == NULL) return 1; /* CUDA_ERROR_INVALID_VALUE */
  *version = number_from_env("FAKE_CUDA_DRIVER_VERSION", 13000);
  return 0;
}
