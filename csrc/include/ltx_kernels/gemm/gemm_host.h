// Host helpers shared by the GEMM launchers (csrc/cuda/gemm/*.cu). No torch.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace ltx_kernels {
namespace gemm {
namespace host {

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Whether p is a multiple of `bytes` (a power of two).
inline bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// num_sms if positive, else the current device's SM count (132, an H100/H200, if it cannot be read).
inline int resolve_sms(int num_sms) {
  if (num_sms > 0) return num_sms;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) {
    (void)cudaGetLastError();
    return 132;
  }
  return sms;
}

}  // namespace host
}  // namespace gemm
}  // namespace ltx_kernels
