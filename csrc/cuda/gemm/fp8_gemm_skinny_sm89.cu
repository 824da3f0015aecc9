// Few-token blockwise FP8 GEMM (M <= 64) on mma.sync: host side (support check, split-K choice,
// workspace, launch). Kernel and design: ltx_kernels/gemm/fp8_gemm_skinny.cuh. Compiled for every
// target >= 8.9 (CMake: csrc/cuda/*/*_sm89.cu).
//
// Split-K choice: the grid has ceil(N/64) row tiles; when they fill fewer than the SMs' CTA slots
// (occupancy x SMs), K is split into SK = slots / row_tiles pieces (at most one per two K steps of
// 2 x 128, and at most 16), so that every SM streams weights. LTX_KERNELS_SKINNY_SPLITK=<n>
// forces SK (benchmarking; clamped to the number of K blocks).
#include <algorithm>
#include <climits>
#include <cstdlib>

#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/gemm/fp8_gemm_skinny.cuh"

namespace ltx {
namespace gemm {
namespace {

using ltx_kernels::gemm_skinny::Cfg;
using ltx_kernels::gemm_skinny::kRowsPerCta;
using ltx_kernels::gemm_skinny::kThreads;
using ltx_kernels::gemm_skinny::kWK;
using ltx_kernels::gemm_skinny::kWR;
using ltx_kernels::gemm_skinny::skinny_gemm_kernel;
using ltx_kernels::gemm_skinny::SplitWorkspace;

constexpr int64_t kMaxM = 64;
constexpr int kMaxSplits = 16;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

int nt_for(int64_t M) { return M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8; }

template <int NT>
bool has_image() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, skinny_gemm_kernel<NT>) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

// Resident CTAs per SM of the NT instantiation (0 when it cannot launch here).
template <int NT>
int ctas_per_sm() {
  auto kernel = skinny_gemm_kernel<NT>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<NT>::SMEM) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, Cfg<NT>::SMEM) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

int occupancy(int nt) {
  // per process, per NT (the device is assumed not to change kind within a process)
  static const int occ[4] = {ctas_per_sm<1>(), ctas_per_sm<2>(), ctas_per_sm<4>(), ctas_per_sm<8>()};
  return occ[nt == 1 ? 0 : nt == 2 ? 1 : nt == 4 ? 2 : 3];
}

int forced_splits() {
  static const int v = [] {
    const char* s = std::getenv("LTX_KERNELS_SKINNY_SPLITK");
    const int n = s ? std::atoi(s) : 0;
    return n > 0 ? n : 0;
  }();
  return v;
}

int resolve_sms(int num_sms) {
  if (num_sms > 0) return num_sms;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) {
    (void)cudaGetLastError();
    return 132;
  }
  return sms;
}

int choose_splits(const Fp8BlockwiseGemmArgs& p, int num_sms) {
  const int64_t kb = p.K / 128;
  const int64_t tiles = cdiv(p.N, kRowsPerCta);
  int64_t sk;
  if (forced_splits() > 0) {
    sk = forced_splits();
  } else {
    const int64_t slots = int64_t(resolve_sms(num_sms)) * std::max(1, occupancy(nt_for(p.M)));
    sk = slots / tiles;
    sk = std::min<int64_t>(sk, kb / (2 * kWK));
  }
  sk = std::min<int64_t>(std::min<int64_t>(sk, kb), kMaxSplits);
  return int(std::max<int64_t>(sk, 1));
}

size_t counters_bytes(int64_t tiles) { return size_t(cdiv(tiles * 4, 256) * 256); }

size_t workspace_bytes_for(const Fp8BlockwiseGemmArgs& p, int splits) {
  if (splits <= 1) return 0;
  const int64_t tiles = cdiv(p.N, kRowsPerCta);
  return counters_bytes(tiles) + size_t(splits) * size_t(tiles) * kWR * nt_for(p.M) * 32 * sizeof(float4);
}

template <int NT>
cudaError_t launch(const Fp8BlockwiseGemmArgs& p, int splits, void* ws, cudaStream_t stream) {
  auto kernel = skinny_gemm_kernel<NT>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<NT>::SMEM);
  if (e != cudaSuccess) return e;
  const int64_t tiles = cdiv(p.N, kRowsPerCta);
  SplitWorkspace w;
  if (splits > 1) {
    w.counters = static_cast<int*>(ws);
    w.partial = reinterpret_cast<float4*>(static_cast<uint8_t*>(ws) + counters_bytes(tiles));
    e = cudaMemsetAsync(w.counters, 0, size_t(tiles) * sizeof(int), stream);
    if (e != cudaSuccess) return e;
  }
  kernel<<<dim3(unsigned(tiles), unsigned(splits)), kThreads, Cfg<NT>::SMEM, stream>>>(p, splits, w);
  return cudaGetLastError();
}

}  // namespace

bool fp8_blockwise_gemm_skinny_supported(const Fp8BlockwiseGemmArgs& p, int device_cc) {
  if (device_cc < 89) return false;
  if (p.M < 1 || p.M > kMaxM || p.N < 1 || p.K < 128 || p.K % 128 != 0) return false;
  if (p.out != GemmOut::kBF16 && p.out != GemmOut::kFP16) return false;
  if (!p.a || !p.b || !p.d || !p.a_scales || !p.b_scales) return false;
  if (!aligned(p.a, 16) || !aligned(p.b, 16) || p.lda % 16 != 0 || p.ldb % 16 != 0) return false;
  if (p.lda < p.K || p.ldb < p.K || p.ldd < p.N || !aligned(p.d, 2)) return false;
  if (!aligned(p.a_scales, 4) || !aligned(p.b_scales, 4) || (p.bias && !aligned(p.bias, 4))) return false;
  if (cdiv(p.N, kRowsPerCta) > INT_MAX) return false;
  switch (nt_for(p.M)) {
    case 1: return has_image<1>() && occupancy(1) > 0;
    case 2: return has_image<2>() && occupancy(2) > 0;
    case 4: return has_image<4>() && occupancy(4) > 0;
    default: return has_image<8>() && occupancy(8) > 0;
  }
}

size_t fp8_blockwise_gemm_skinny_workspace(const Fp8BlockwiseGemmArgs& p, int num_sms) {
  if (p.M < 1 || p.M > kMaxM || p.K < 128 || p.N < 1) return 0;
  return workspace_bytes_for(p, choose_splits(p, num_sms));
}

cudaError_t fp8_blockwise_gemm_skinny(const Fp8BlockwiseGemmArgs& p, void* workspace, size_t workspace_bytes,
                                      int num_sms, cudaStream_t stream) {
  int dev = 0, major = 0, minor = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  if ((e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) != cudaSuccess) return e;
  if ((e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev)) != cudaSuccess) return e;
  if (!fp8_blockwise_gemm_skinny_supported(p, major * 10 + minor)) return cudaErrorNotSupported;
  int splits = choose_splits(p, num_sms);
  if (splits > 1 && (workspace == nullptr || workspace_bytes < workspace_bytes_for(p, splits))) {
    return cudaErrorInvalidValue;
  }
  switch (nt_for(p.M)) {
    case 1: return launch<1>(p, splits, workspace, stream);
    case 2: return launch<2>(p, splits, workspace, stream);
    case 4: return launch<4>(p, splits, workspace, stream);
    default: return launch<8>(p, splits, workspace, stream);
  }
}

}  // namespace gemm
}  // namespace ltx
