// Per-device settings that a launcher must apply once on each GPU it runs on. Host code; no
// CUDA, no torch (the CUDA wrapper is raise_dynamic_smem in common/device.h).
//
// Why per device: a kernel that uses more than 48 KB of dynamic shared memory must opt in with
// cudaFuncSetAttribute, and that attribute belongs to the current device's context. A process
// that runs the kernel on two GPUs (a model split over devices, a second model on cuda:1) has to
// set it on each; remembering "done" once per process leaves the second GPU's launches failing.
// Setting it on every launch is correct but costs a runtime call that can wait for other work.
#pragma once

#include <atomic>
#include <mutex>

namespace ltx_kernels {

constexpr int kMaxCudaDevices = 64;  // device indices cached per process (others: not cached)

// The largest value applied so far, per device: raise(device, v, apply) makes sure that
// apply(w) has succeeded on `device` for some w >= v. It calls apply(v) only when no call with
// at least v has succeeded there yet; the calls are serialized and only ever raise, so a smaller
// request never lowers the setting under a concurrent larger launch. apply returns 0 on success
// (cudaSuccess) or an error code, which raise returns and does not remember (the next call tries
// again). Devices outside [0, kMaxCudaDevices) are not cached: apply(v) every time.
// Use one object per kernel: a function-local static in the kernel's launcher.
class PerDeviceMax {
 public:
  template <class Apply>
  int raise(int device, int value, Apply&& apply) {
    if (device < 0 || device >= kMaxCudaDevices) return apply(value);
    std::atomic<int>& done = done_[device];
    if (done.load(std::memory_order_acquire) >= value) return 0;
    std::lock_guard<std::mutex> lock(mutex_);
    if (done.load(std::memory_order_relaxed) >= value) return 0;
    const int err = apply(value);
    if (err == 0) done.store(value, std::memory_order_release);
    return err;
  }

  // The value applied on `device` (0: none yet, or not cached).
  int applied(int device) const {
    return device >= 0 && device < kMaxCudaDevices ? done_[device].load(std::memory_order_acquire) : 0;
  }

 private:
  std::atomic<int> done_[kMaxCudaDevices] = {};
  std::mutex mutex_;
};

}  // namespace ltx_kernels
