// Properties of a CUDA device that launchers and adapters choose by (architecture, SM count,
// shared memory, L2), queried once per device and cached. Host code only; no torch.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <thread>

#include "ltx_kernels/common/per_device.h"

namespace ltx_kernels {

struct DeviceProps {
  int cc = 0;          // compute capability, major * 10 + minor (90 for sm_90); 0: no such device
  int sm_count = 0;    // streaming multiprocessors
  int smem_optin = 0;  // dynamic shared memory a block may opt in to (bytes)
  int l2_bytes = 0;    // L2 cache size (bytes)
};

// The properties of CUDA device `device` (an index as cudaSetDevice takes it). The first call
// for a device asks the runtime; later calls return the cached values (thread-safe). Every
// field is 0 when `device` names no device.
inline const DeviceProps& device_props(int device) {
  constexpr int kMaxDevices = kMaxCudaDevices;
  static DeviceProps props[kMaxDevices];
  // Not std::call_once: that binds pthread_once@GLIBC_2.34 on a new glibc, and the wheel must
  // load on manylinux_2_28. The first caller claims the slot (0 -> 1), fills it and publishes it
  // (2); a concurrent caller waits for the publication, which takes a few attribute queries.
  static std::atomic<int> state[kMaxDevices];
  static const DeviceProps none{};
  if (device < 0 || device >= kMaxDevices) return none;
  if (state[device].load(std::memory_order_acquire) == 2) return props[device];
  int expected = 0;
  if (state[device].compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    int major = 0, minor = 0, sms = 0, smem = 0, l2 = 0;
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
                    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
                    cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) == cudaSuccess &&
                    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) == cudaSuccess;
    if (ok) {
      props[device] = DeviceProps{major * 10 + minor, sms, smem, l2};
    } else {
      (void)cudaGetLastError();  // our failed query must not surface as someone else's error
    }
    state[device].store(2, std::memory_order_release);
  } else {
    while (state[device].load(std::memory_order_acquire) != 2) std::this_thread::yield();
  }
  return props[device];
}

// The properties of the current device (cudaGetDevice); every field 0 when there is none.
inline const DeviceProps& current_device_props() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    device = -1;
  }
  return device_props(device);
}

// Lets `kernel` use `bytes` of dynamic shared memory on the current device: sets
// cudaFuncAttributeMaxDynamicSharedMemorySize there unless `limit` (the kernel's own
// PerDeviceMax, a static in its launcher) says a value >= bytes is already set on this device.
// Returns the runtime's error (cudaGetDevice's or the attribute's), cudaSuccess otherwise.
template <class Kernel>
cudaError_t raise_dynamic_smem(PerDeviceMax& limit, Kernel kernel, int bytes) {
  int device = -1;
  const cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  return cudaError_t(limit.raise(device, bytes, [&](int b) {
    return int(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, b));
  }));
}

}  // namespace ltx_kernels
