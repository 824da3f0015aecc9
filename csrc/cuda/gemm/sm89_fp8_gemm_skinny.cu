// Few-token blockwise FP8 GEMM (M <= 64) on mma.sync: host side (support check, split-K choice,
// workspace, launch). Kernel and design: ltx_kernels/gemm/sm89_fp8_gemm_skinny.cuh. Compiled for every
// target >= 8.9 (CMake: csrc/cuda/*/sm89_*.cu).
//
// Split-K choice: the grid has ceil(N/64) row tiles; when they fill fewer than the SMs' CTA slots
// (occupancy x SMs), K is split into SK pieces (at most one per two K steps of 2 x 128), so that
// every SM streams weights. mma.sync variant: SK = slots / row_tiles (at most 16), partials
// through a workspace. wgmma variant: the largest SK <= 8 (portable cluster size) for which every
// (1, SK) cluster is resident at once (cudaOccupancyMaxActiveClusters) and row_tiles x SK <= slots.
// LTX_KERNELS_SKINNY_SPLITK=<n> forces SK (benchmarking; clamped to the K blocks and the cluster
// limit); LTX_KERNELS_SKINNY_WGMMA=0 forces the mma.sync variant on Hopper.
#include <algorithm>
#include <climits>
#include <cstdlib>

#include "ltx_kernels/common/dev_config.h"
#include "ltx_kernels/common/device.h"
#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/gemm/sm89_fp8_gemm_skinny.cuh"
#include "ltx_kernels/gemm/gemm_host.h"

namespace ltx_kernels {
namespace gemm {
namespace {

using ltx_kernels::gemm_skinny::Cfg;
using ltx_kernels::gemm_skinny::kMaxClusterSplits;
using ltx_kernels::gemm_skinny::kRowsPerCta;
using ltx_kernels::gemm_skinny::kThreads;
using ltx_kernels::gemm_skinny::kWK;
using ltx_kernels::gemm_skinny::kWR;
using ltx_kernels::gemm_skinny::skinny_gemm_kernel;
using ltx_kernels::gemm_skinny::SplitWorkspace;
using host::aligned;
using host::cdiv;
using host::resolve_sms;

constexpr int64_t kMaxM = 64;
constexpr int kMaxSplits = 16;

// The wgmma + cluster variant exists only in builds with an sm_90a image of this file (CMake
// defines LTX_KERNELS_SKINNY_SM90A then); any other build runs the mma.sync variant everywhere.
#if defined(LTX_KERNELS_SKINNY_SM90A)
constexpr bool kBuildHasWgmma = true;
#else
constexpr bool kBuildHasWgmma = false;
#endif

int nt_for(int64_t M) { return M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8; }
int nt_index(int nt) { return nt == 1 ? 0 : nt == 2 ? 1 : nt == 4 ? 2 : 3; }

// wgmma variant on compute capability 9.0 when built (LTX_KERNELS_SKINNY_WGMMA=0 turns it off).
bool use_wgmma(int cc) {
  const std::string s = dev_setting("LTX_KERNELS_SKINNY_WGMMA");  // common/dev_config.h
  const bool off = !s.empty() && s[0] == '0';
  return kBuildHasWgmma && cc == 90 && !off;
}

// Resident CTAs per SM of one instantiation (0 when it cannot launch here).
template <int NT, bool WG>
int ctas_per_sm() {
  auto kernel = skinny_gemm_kernel<NT, WG>;
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess ||
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<NT, WG>::SMEM) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, Cfg<NT, WG>::SMEM) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// per process (the device is assumed not to change kind within a process)
int occupancy(int nt, bool wg) {
  static const int mma[4] = {ctas_per_sm<1, false>(), ctas_per_sm<2, false>(), ctas_per_sm<4, false>(),
                             ctas_per_sm<8, false>()};
  if (!wg) return mma[nt_index(nt)];
  static const int wgm[4] = {ctas_per_sm<1, true>(), ctas_per_sm<2, true>(), ctas_per_sm<4, true>(),
                             ctas_per_sm<8, true>()};
  return wgm[nt_index(nt)];
}

// Launch configuration of a (tiles, splits) grid; cluster (1, splits) when `cluster` (`attr` must
// outlive the configuration).
template <int NT, bool WG>
cudaLaunchConfig_t launch_config(int64_t tiles, int splits, bool cluster, cudaLaunchAttribute (&attr)[1],
                                 cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(tiles), unsigned(splits), 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = Cfg<NT, WG>::SMEM;
  cfg.stream = stream;
  if (cluster) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = unsigned(splits);
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  return cfg;
}

// Clusters of (1, sk) CTAs of the wgmma variant that fit on the device at once (0 if none).
template <int NT>
int max_clusters(int sk) {
  auto kernel = skinny_gemm_kernel<NT, true>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<NT, true>::SMEM) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config<NT, true>(1, sk, true, attr, nullptr);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// max_clusters for sk = 0..8 (entries 0 and 1 unused), per NT, per process.
const int* cluster_table(int nt) {
  struct T {
    int v[4][kMaxClusterSplits + 1] = {};
  };
  static const T t = [] {
    T r;
    for (int sk = 2; sk <= kMaxClusterSplits; ++sk) {
      r.v[0][sk] = max_clusters<1>(sk);
      r.v[1][sk] = max_clusters<2>(sk);
      r.v[2][sk] = max_clusters<4>(sk);
      r.v[3][sk] = max_clusters<8>(sk);
    }
    return r;
  }();
  return t.v[nt_index(nt)];
}

int forced_splits() {
  const std::string s = dev_setting("LTX_KERNELS_SKINNY_SPLITK");  // common/dev_config.h
  const int n = s.empty() ? 0 : std::atoi(s.c_str());
  return n > 0 ? n : 0;
}

int choose_splits(const Fp8BlockwiseGemmArgs& p, int num_sms, bool wg) {
  const int64_t kb = p.K / 128;
  const int64_t tiles = cdiv(p.N, kRowsPerCta);
  const int64_t slots = int64_t(resolve_sms(num_sms)) * std::max(1, occupancy(nt_for(p.M), wg));
  int64_t sk;
  if (forced_splits() > 0) {
    sk = forced_splits();
  } else if (wg) {
    // the largest cluster split whose clusters all fit on the device at once (one wave) without
    // more CTAs than CTA slots; none fits: no split
    const int* maxc = cluster_table(nt_for(p.M));
    sk = 1;
    for (int c = kMaxClusterSplits; c >= 2; --c) {
      if (c <= kb / (2 * kWK) && tiles <= maxc[c] && tiles * c <= slots) {
        sk = c;
        break;
      }
    }
  } else {
    sk = slots / tiles;
    sk = std::min<int64_t>(sk, kb / (2 * kWK));
  }
  sk = std::min<int64_t>(std::min<int64_t>(sk, kb), wg ? kMaxClusterSplits : kMaxSplits);
  return int(std::max<int64_t>(sk, 1));
}

size_t counters_bytes(int64_t tiles) { return size_t(cdiv(tiles * 4, 256) * 256); }

size_t workspace_bytes_for(const Fp8BlockwiseGemmArgs& p, int splits, bool wg) {
  if (splits <= 1 || wg) return 0;  // the cluster variant reduces in distributed shared memory
  const int64_t tiles = cdiv(p.N, kRowsPerCta);
  return counters_bytes(tiles) + size_t(splits) * size_t(tiles) * kWR * nt_for(p.M) * 32 * sizeof(float4);
}

template <int NT, bool WG>
cudaError_t launch(const Fp8BlockwiseGemmArgs& p, int splits, void* ws, cudaStream_t stream) {
  auto kernel = skinny_gemm_kernel<NT, WG>;
  static PerDeviceMax smem_limit;  // per device: common/per_device.h
  cudaError_t e = raise_dynamic_smem(smem_limit, kernel, int(Cfg<NT, WG>::SMEM));
  if (e != cudaSuccess) return e;
  const int64_t tiles = cdiv(p.N, kRowsPerCta);
  SplitWorkspace w;
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config<NT, WG>(tiles, splits, WG && splits > 1, attr, stream);
  if (!WG && splits > 1) {
    w.counters = static_cast<int*>(ws);
    w.partial = reinterpret_cast<float4*>(static_cast<uint8_t*>(ws) + counters_bytes(tiles));
    e = cudaMemsetAsync(w.counters, 0, size_t(tiles) * sizeof(int), stream);
    if (e != cudaSuccess) return e;
  }
  return cudaLaunchKernelEx(&cfg, kernel, p, splits, w);
}

template <bool WG>
cudaError_t launch_nt(const Fp8BlockwiseGemmArgs& p, int splits, void* ws, cudaStream_t stream) {
  switch (nt_for(p.M)) {
    case 1: return launch<1, WG>(p, splits, ws, stream);
    case 2: return launch<2, WG>(p, splits, ws, stream);
    case 4: return launch<4, WG>(p, splits, ws, stream);
    default: return launch<8, WG>(p, splits, ws, stream);
  }
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
  return occupancy(nt_for(p.M), use_wgmma(device_cc)) > 0;
}

size_t fp8_blockwise_gemm_skinny_workspace(const Fp8BlockwiseGemmArgs& p, int num_sms) {
  if (p.M < 1 || p.M > kMaxM || p.K < 128 || p.N < 1) return 0;
  const bool wg = use_wgmma(current_device_props().cc);
  return workspace_bytes_for(p, choose_splits(p, num_sms, wg), wg);
}

cudaError_t fp8_blockwise_gemm_skinny(const Fp8BlockwiseGemmArgs& p, void* workspace, size_t workspace_bytes,
                                      int num_sms, cudaStream_t stream) {
  const int cc = current_device_props().cc;
  if (!fp8_blockwise_gemm_skinny_supported(p, cc)) return cudaErrorNotSupported;
  const bool wg = use_wgmma(cc);
  const int splits = choose_splits(p, num_sms, wg);
  if (workspace_bytes_for(p, splits, wg) > 0 &&
      (workspace == nullptr || workspace_bytes < workspace_bytes_for(p, splits, wg))) {
    return cudaErrorInvalidValue;
  }
  return wg ? launch_nt<true>(p, splits, workspace, stream) : launch_nt<false>(p, splits, workspace, stream);
}

}  // namespace gemm
}  // namespace ltx_kernels
