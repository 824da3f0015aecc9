// Host side of the sm_90a GEMM kernels (csrc/include/ltx_kernels/gemm/sm90_gemm.cuh): tensor maps,
// shared-memory plan, persistent grid and cluster launch of one (operands, bm, bn) instantiation.
// Included by the sm_90a GEMM instantiation files of csrc/cuda/gemm only (FP8 1D2D, bf16, FP8
// rowwise).
#pragma once

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "ltx_kernels/common/device.h"
#include "ltx_kernels/gemm/gemm_params.h"
#include "ltx_kernels/gemm/heuristics.h"
#include "ltx_kernels/gemm/sm90_gemm.cuh"
#include "ltx_kernels/gemm/sm90_plan.h"

namespace ltx_kernels {
namespace gemm {
namespace sm90 {
namespace host {

inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A 2-D row-major matrix [outer, inner] (row stride `row_bytes`) read or written in boxes of
// box_inner x box_outer elements.
inline bool encode_2d(CUtensorMap* map, CUtensorMapDataType dt, int elem_bytes, const void* base, uint64_t inner,
                      uint64_t outer, uint64_t row_bytes, uint32_t box_inner, uint32_t box_outer, int swizzle) {
  auto fn = encode_fn();
  if (fn == nullptr || base == nullptr) return false;
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0 || row_bytes % 16 != 0 || inner == 0 || outer == 0) return false;
  const cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(outer)};
  const cuuint64_t strides[1] = {cuuint64_t(outer > 1 ? row_bytes : ((inner * elem_bytes + 15) / 16 * 16))};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t estr[2] = {1, 1};
  const CUtensorMapSwizzle sw = swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                : CU_TENSOR_MAP_SWIZZLE_NONE;
  return fn(map, dt, 2, const_cast<void*>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

inline CUtensorMapDataType dtype_of(OutKind o) {
  return o == OutKind::kFP16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
         : o == OutKind::kFP8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                              : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

inline int device_smem_optin() {
  int dev = 0, v = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return v;
}

// Launch one instantiation of the recipe kOps. cudaErrorNotSupported: this configuration cannot
// take these arguments (the caller reports or falls back); other errors are real failures.
template <Operands kOps, int BM, int BN>
cudaError_t launch_recipe(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream) {
  constexpr bool kFp8 = Recipe<kOps>::kE4m3;
  constexpr bool kPromote = Recipe<kOps>::kPromote;
  if (g.operands != kOps) return cudaErrorNotSupported;
  const int smem_max = device_smem_optin();
  heuristics::Problem pr;
  pr.ops = g.operands;
  pr.M = g.M;
  pr.N = g.N;
  pr.K = g.K;
  pr.epilogue = g.epilogue;
  pr.out = g.out;
  pr.gate = g.gate_kind;
  pr.tokens_per_sample = g.tokens_per_sample;
  if (!heuristics::tile_ok(pr, BM, BN, smem_max)) return cudaErrorNotSupported;
  const Sm90Layout L = plan_layout(g.operands, BM, BN, g.out, g.gate_kind, g.tokens_per_sample, smem_max, cfg.stages);

  const int in_bytes = kFp8 ? 1 : 2;
  const CUtensorMapDataType in_dt = kFp8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const uint32_t k_box = uint32_t(kStageK) / uint32_t(in_bytes);
  CUtensorMap tm_a, tm_b, tm_d, tm_h, tm_g, tm_sa;
  std::memset(&tm_h, 0, sizeof(tm_h));
  std::memset(&tm_g, 0, sizeof(tm_g));
  std::memset(&tm_sa, 0, sizeof(tm_sa));
  if (!encode_2d(&tm_a, in_dt, in_bytes, g.a, uint64_t(g.K), uint64_t(g.M), uint64_t(g.lda) * in_bytes, k_box, BM, 128) ||
      !encode_2d(&tm_b, in_dt, in_bytes, g.b, uint64_t(g.K), uint64_t(g.N), uint64_t(g.ldb) * in_bytes, k_box, BN / 2,
                 128))
    return cudaErrorNotSupported;
  const int out_bytes = g.out == OutKind::kFP8 ? 1 : 2;
  const uint32_t chunk_cols = uint32_t(L.d_sw / out_bytes);
  if (!encode_2d(&tm_d, dtype_of(g.out), out_bytes, g.d, uint64_t(g.N), uint64_t(g.M), uint64_t(g.ldd) * out_bytes,
                 chunk_cols, BM, L.d_sw))
    return cudaErrorNotSupported;
  if (g.epilogue == Epilogue::kGatedResidual) {
    if (!encode_2d(&tm_h, dtype_of(g.out), 2, g.residual, uint64_t(g.N), uint64_t(g.M), uint64_t(g.ld_residual) * 2,
                   chunk_cols, BM, L.d_sw))
      return cudaErrorNotSupported;
    const bool per_token = g.gate_kind == GateKind::kPerToken;
    if (!encode_2d(&tm_g, dtype_of(g.out), 2, g.gate, uint64_t(g.N), uint64_t(g.gate_rows), uint64_t(g.ld_gate) * 2,
                   chunk_cols, per_token ? BM : 8, L.d_sw))
      return cudaErrorNotSupported;
  }

  // FP8 1D2D: the activation scales by TMA (one bm x 1 box per stage, rows past M zero-filled) when
  // they are M-major with 16-byte aligned columns, as quantize_fp8_per_token_group's "mn_major"
  // layout stores them; any other layout is copied by the loader's 32 lanes with cp.async.
  const int64_t num_kb = heuristics::cdiv(g.K, kFp8 ? 128 : 64);
  bool sa_tma = false;
  if (kPromote && g.sa_stride_m == 1 && (num_kb == 1 || (g.sa_stride_k >= g.M && g.sa_stride_k % 4 == 0)))
    sa_tma = encode_2d(&tm_sa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, g.a_scales, uint64_t(g.M), uint64_t(num_kb),
                       num_kb == 1 ? uint64_t(g.M * 4 + 15) / 16 * 16 : uint64_t(g.sa_stride_k) * 4, uint32_t(BM), 1, 0);

  KernelArgs p;
  p.sa_tma = sa_tma ? 1u : 0u;
  p.M = uint32_t(g.M);
  p.N = uint32_t(g.N);
  p.K = uint32_t(g.K);
  p.num_m = uint32_t(heuristics::cdiv(g.M, BM));
  p.num_n = uint32_t(heuristics::cdiv(g.N, BN));
  p.num_kb = uint32_t(num_kb);
  const int64_t tiles = int64_t(p.num_m) * int64_t(p.num_n);
  if (tiles > int64_t(UINT32_MAX) / 2) return cudaErrorNotSupported;
  p.num_tiles = uint32_t(tiles);
  p.cluster = uint32_t(cfg.cluster == 2 ? 2 : 1);
  p.group_m = uint32_t(cfg.group_m > 0 ? cfg.group_m : 16);
  if (p.cluster == 2 && (p.group_m & 1u)) p.group_m += 1;  // pairs need even raster groups
  p.L = L;
  p.sa = g.a_scales;
  p.sa_sm = g.sa_stride_m;
  p.sa_sk = g.sa_stride_k;
  p.sb = g.b_scales;
  p.sb_sn = g.sb_stride_n;
  p.sb_sk = g.sb_stride_k;
  p.bias = g.bias;
  p.bias_16bit = g.bias_is_out_dtype ? 1u : 0u;
  p.epi = int(g.epilogue);
  p.out = int(g.out);
  p.gate_kind = int(g.gate_kind);
  p.tokens_per_sample = uint32_t(g.tokens_per_sample > 0 ? g.tokens_per_sample : 1);
  p.ds = g.d_scales;
  p.ds_sm = g.ds_stride_m;
  p.ds_sg = g.ds_stride_g;

  auto kernel = gemm_kernel<kOps, BM, BN>;
  // The kernel's dynamic shared memory limit, raised once per device and size (per_device.h)
  static PerDeviceMax smem_limit;
  if (cudaError_t e = raise_dynamic_smem(smem_limit, kernel, int(L.smem_bytes)); e != cudaSuccess) return e;

  cudaLaunchConfig_t lc = {};
  cudaLaunchAttribute attr[1];
  lc.blockDim = dim3(kThreads, 1, 1);
  lc.dynamicSmemBytes = L.smem_bytes;
  lc.stream = stream;
  int64_t ctas = num_sms > 0 ? num_sms : 132;
  if (cfg.sms > 0 && cfg.sms < ctas) ctas = cfg.sms;
  if (p.cluster == 2) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    lc.attrs = attr;
    lc.numAttrs = 1;
    // clusters of two that can be resident at once with this much shared memory
    lc.gridDim = dim3(unsigned(ctas / 2 * 2), 1, 1);
    // cached per shared-memory size (the device is assumed not to change kind within a process)
    static std::atomic<uint64_t> cache{0};
    const uint64_t c = cache.load(std::memory_order_relaxed);
    int clusters = (c >> 32) == L.smem_bytes ? int(c & 0xffffffffu) : 0;
    if (clusters == 0) {
      if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &lc) != cudaSuccess || clusters <= 0) {
        (void)cudaGetLastError();
        return cudaErrorNotSupported;
      }
      cache.store((uint64_t(L.smem_bytes) << 32) | uint32_t(clusters), std::memory_order_relaxed);
    }
    ctas = std::min<int64_t>(ctas / 2, clusters) * 2;
    ctas = std::min<int64_t>(ctas, (tiles + 1) / 2 * 2);
  } else {
    ctas = std::min<int64_t>(ctas, tiles);
  }
  if (ctas < 1) ctas = 1;
  lc.gridDim = dim3(unsigned(ctas), 1, 1);
  return cudaLaunchKernelEx(&lc, kernel, tm_a, tm_b, tm_d, tm_h, tm_g, tm_sa, p);
}

// The FP8 1D2D (kFp8) or bf16 recipe.
template <bool kFp8, int BM, int BN>
cudaError_t launch(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream) {
  return launch_recipe<kFp8 ? Operands::kFp8Blockwise : Operands::kBf16, BM, BN>(g, cfg, num_sms, stream);
}

}  // namespace host
}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
