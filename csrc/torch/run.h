// Running a core on prepared params: on the CPU (at::parallel_for as the backend's ParallelFor)
// or on CUDA (the tensor's device made current, PyTorch's current stream, the launch error
// raised naming the op).
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "checks.h"
#include "ltx_kernels/cpu/parallel.h"
#include "prepared.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "ltx_kernels/common/device.h"
#endif

namespace ltx_kernels {
namespace torch_adapter {

// The CPU backend's ParallelFor on ATen's thread pool.
inline void torch_parallel_for(int64_t n, int64_t grain, const cpu::RangeFn& body) {
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { body(b, e); });
}

// <op>_cpu: the CPU backend on the prepared params, if there is anything to do.
template <class P>
void run_cpu(const Prepared<P>& pr, void (*core)(const P&, const cpu::ParallelFor&)) {
  if (pr.params) core(*pr.params, torch_parallel_for);
}

#ifdef LTX_KERNELS_WITH_CUDA
inline void check_cuda(cudaError_t err, const char* op) {
  LTX_CHECK(err == cudaSuccess, op, "CUDA error: ", cudaGetErrorString(err));
}

// Compute capability of the tensor's device as major * 10 + minor (90 = sm_90).
inline int device_cc(const at::Tensor& t) { return device_props(t.device().index()).cc; }

inline const at::Tensor& checked_cuda(const at::Tensor& t, const char* op) {
  LTX_CHECK(t.is_cuda(), op, "x must be a CPU or CUDA tensor (got ", t.device(), ")");
  return t;
}

// For a CUDA impl: checks the tensor is on a CUDA device, makes that device
// current for the scope, and names the stream to launch on (PyTorch's current stream).
struct CudaScope {
  c10::cuda::CUDAGuard guard;
  cudaStream_t stream;
  CudaScope(const at::Tensor& t, const char* op)
      : guard(checked_cuda(t, op).device()),
        stream(c10::cuda::getCurrentCUDAStream(t.device().index()).stream()) {}
};

// <op>_cuda: the CUDA core on the prepared params, if there is anything to do, on `on`'s device
// and current stream; a launch error raises naming the op.
template <class P>
void run_cuda(const Prepared<P>& pr, const at::Tensor& on, const char* op,
              cudaError_t (*core)(const P&, cudaStream_t)) {
  if (!pr.params) return;
  const CudaScope scope(on, op);
  check_cuda(core(*pr.params, scope.stream), op);
}
#else
// The CUDA branch of an adapter that serves both dispatch keys (the gemm family), in a build
// without CUDA.
[[noreturn]] inline void no_cuda_backend(const at::Tensor& t, const char* op) {
  LTX_CHECK(false, op, "this build has no CUDA backend (got a tensor on ", t.device(), ")");
  throw;  // unreachable: LTX_CHECK(false, ...) throws
}
#endif

}  // namespace torch_adapter
}  // namespace ltx_kernels
