#pragma once
// Functions shared by host and device code are marked PREFLIGHT_HOST_DEVICE: __host__
// __device__ under nvcc, plain inline functions for the host compiler (unit tests), so the host
// tests check the very math the kernels run.
#if defined(__CUDACC__)
#define PREFLIGHT_HOST_DEVICE __host__ __device__
#else
#define PREFLIGHT_HOST_DEVICE
#endif
