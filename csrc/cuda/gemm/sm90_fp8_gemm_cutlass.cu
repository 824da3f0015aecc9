// Backend "sm90_cutlass": the CUTLASS-collective sm_90a blockwise-scaled FP8 GEMM, kept beside
// our own kernel (ltx_kernels/gemm/sm90_gemm.cuh, backend "sm90") for comparison; "auto" never
// picks it. Argument checks, its tile heuristic and dispatch. The kernels are CUTLASS 3.x warp-specialized TMA + wgmma
// kernels with CUTLASS's blockwise-scaling FP8 mainloop (software promotion every 128-wide K
// block, DeepGEMM's 1D2D recipe) and a fused fp32 per-column bias epilogue; the definition is in
// csrc/include/ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh, one configuration per file:
//
//   name        tile (MxNxK)  cluster  schedule     scheduler     out         file
//   t128x128    128x128x128   1x1x1    cooperative  persistent    bf16, fp16  sm90_fp8_gemm_cutlass_t128x128.cu
//   t64x128      64x128x128   1x1x1    ping-pong    persistent    bf16, fp16  sm90_fp8_gemm_cutlass_t64x128.cu
//   t128x128sk  128x128x128   1x1x1    cooperative  stream-K      bf16        sm90_fp8_gemm_cutlass_t128x128sk.cu
//   t128x128rs  128x128x128   1x1x1    cooperative  persistent    bf16        sm90_fp8_gemm_cutlass_t128x128rs.cu
// All but t128x128rs read M-major sa with TMA; t128x128rs takes row-major sa (cp.async).
//
// Why these: the blockwise mainloop keeps two fp32 accumulators per thread (the wgmma target and
// the promoted total), so a consumer warp group can hold at most a 64x128 slice without spilling
// (168 registers at 128x128 cooperative; 128x256 cooperative or 128x128 ping-pong would need
// ~256). The N tile must be a multiple of the 128-wide scale block, the K tile equals it.
// Hence 128x128 cooperative as the large-M workhorse, 64x128 ping-pong for M <= 64 and for
// problems with too few 128x128 tiles, stream-K for decode-like shapes (a handful of output
// tiles, long K: the weight read is the whole cost and must be spread over every SM), and the
// same 128x128 kernel for row-major sa (the layout quantize_fp8_per_token_group(..., "row")
// writes) so that the sm90 path is not limited to the M-major layout. Six instantiations in all.
//
// Heuristic (select_kernel below), with T128 = ceil(M/128)*ceil(N/128) tiles and S = num_sms:
//   - M <= 64: t64x128, or t128x128sk (bf16) when ceil(N/128) <= S/2 and K >= 1024;
//   - T128 < S (one partial wave): t128x128sk (bf16) when T128 <= S/2 and K >= 1024, else
//     t64x128 (twice the CTAs);
//   - otherwise t128x128, unless the 64-row tiles fill their last wave markedly better (wave
//     efficiency + 0.15: the 64-row tile runs wgmma at lower efficiency).
//   row-major sa (not M-major): t128x128rs whatever the shape (bf16 only).
// Not built, the next levers to measure (each one more sm90_fp8_gemm_cutlass_*.cu file): a 2x1x1 cluster with B
// multicast for the largest M*N, stream-K for the tail wave at large M (t128x128sk already is
// one: force it to measure), 64x128 tiles with a 2x1 cluster for mid M.
//
// Forcing a configuration (developer settings, common/dev_config.h):
//   LTX_KERNELS_SM90_CUTLASS_CONFIG = auto | t128x128 | t64x128 | t128x128sk | t128x128rs
//     (a kernel that cannot take the call -- output dtype, sa layout -- falls back to auto);
//   LTX_KERNELS_SM90_GEMM_RASTER = auto | m | n   (persistent scheduler raster order);
//   LTX_KERNELS_SM90_GEMM_SWIZZLE = 1 | 2 | 4 | 8 (scheduler max swizzle size, default 1).
//
// Performance: benchmarks/results/h200/gemm.json times it (baseline "sm90_cutlass") beside our
// sm_90a kernel and cuBLASLt's blockwise GEMM. The collective's mainloop bounds its rate (the
// raster order and swizzle size barely move it); that bound, and the fused epilogues and FP8
// output it does not express, are why the sm_90a kernel of sm90_gemm.cuh exists
// (docs/design/gemm.md).
//
// Scale layouts taken (anything else: supported() is false and the caller falls back):
//   sa: M-major, sa_stride_m == 1 (or M == 1), sa_stride_k % 4 == 0 and >= M (or K == 128),
//       16-byte aligned (the mainloop reads it with TMA); M itself need not be padded;
//       or (bf16 output) row-major, sa_stride_k == 1 (or K == 128), sa_stride_m >= 1.
//   sb: row-major, sb_stride_k == 1 (or K == 128), any sb_stride_n >= 1 (or N <= 128).
// Operands: A, B, D 16-byte aligned, lda % 16 == 0, ldb % 16 == 0, ldd % 8 == 0, N % 8 == 0,
// K % 128 == 0 (all TMA), M >= 1 anything; bias fp32 (or null) 4-byte aligned.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <limits>

#include "cutlass/arch/config.h"
#include "ltx_kernels/common/dev_config.h"
#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass_configs.cuh"
#include "ltx_kernels/gemm/gemm_host.h"

namespace ltx_kernels {
namespace gemm {
namespace {

using sm90_cutlass::Sm90Kernel;
using sm90_cutlass::Sm90RunOptions;
using host::aligned;
using host::cdiv;
using host::resolve_sms;

struct EnvChoice {
  bool forced = false;
  Sm90Kernel kernel = Sm90Kernel::kT128x128;
  Sm90RunOptions opts;
};

EnvChoice env_choice() {
  return [] {
    EnvChoice c;
    if (const std::string cfg = dev_setting("LTX_KERNELS_SM90_CUTLASS_CONFIG"); !cfg.empty()) {
      const char* s = cfg.c_str();
      if (!std::strcmp(s, "t128x128")) { c.forced = true; c.kernel = Sm90Kernel::kT128x128; }
      else if (!std::strcmp(s, "t64x128")) { c.forced = true; c.kernel = Sm90Kernel::kT64x128; }
      else if (!std::strcmp(s, "t128x128rs")) { c.forced = true; c.kernel = Sm90Kernel::kT128x128RS; }
      else if (!std::strcmp(s, "t128x128sk")) { c.forced = true; c.kernel = Sm90Kernel::kT128x128SK; }
      else if (*s && std::strcmp(s, "auto")) {
        std::fprintf(stderr, "ltx_kernels: ignoring LTX_KERNELS_SM90_CUTLASS_CONFIG=%s (auto, t128x128, t64x128, "
                             "t128x128sk, t128x128rs)\n", s);
      }
    }
    if (const std::string s = dev_setting("LTX_KERNELS_SM90_GEMM_RASTER"); !s.empty()) {
      if (s == "m") c.opts.raster = 1;
      else if (s == "n") c.opts.raster = 2;
    }
    if (const std::string s = dev_setting("LTX_KERNELS_SM90_GEMM_SWIZZLE"); !s.empty()) {
      const int v = std::atoi(s.c_str());
      if (v == 1 || v == 2 || v == 4 || v == 8) c.opts.swizzle = v;
    }
    return c;
  }();
}

bool has_fp16(Sm90Kernel k) { return k == Sm90Kernel::kT128x128 || k == Sm90Kernel::kT64x128; }

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

// sa readable by the TMA (M-major) kernels.
bool sa_m_major(const Fp8BlockwiseGemmArgs& p) {
  const int64_t kb = p.K / 128;
  if (!aligned(p.a_scales, 16)) return false;
  if (p.M > 1 && p.sa_stride_m != 1) return false;
  if (kb > 1) return p.sa_stride_k >= p.M && p.sa_stride_k % 4 == 0 && p.sa_stride_k <= kIntMax / kb;
  return ((p.M + 3) / 4) * 4 <= kIntMax;
}

// sa readable by t128x128rs (row-major = K-major, cp.async; bf16 output only).
bool sa_k_major(const Fp8BlockwiseGemmArgs& p) {
  const int64_t kb = p.K / 128;
  if (p.out != GemmOut::kBF16 || !aligned(p.a_scales, 4)) return false;
  if (kb > 1 && p.sa_stride_k != 1) return false;
  if (p.M > 1) return p.sa_stride_m >= 1 && p.sa_stride_m <= kIntMax / p.M;
  return kb <= kIntMax;
}

// Fraction of the SM slots busy over all waves when `tiles` tiles run on `slots` concurrent slots.
double wave_efficiency(int64_t tiles, int64_t slots) {
  return static_cast<double>(tiles) / static_cast<double>(cdiv(tiles, slots) * slots);
}

Sm90Kernel select_kernel(const Fp8BlockwiseGemmArgs& p, int num_sms) {
  const EnvChoice env = env_choice();
  const bool fp16 = p.out == GemmOut::kFP16;
  const bool m_major = sa_m_major(p);
  if (env.forced) {
    const bool ok = env.kernel == Sm90Kernel::kT128x128RS ? sa_k_major(p)
                                                           : (m_major && (!fp16 || has_fp16(env.kernel)));
    if (ok) return env.kernel;
  }
  if (!m_major) return Sm90Kernel::kT128x128RS;  // supported() guarantees sa_k_major
  const int64_t S = num_sms > 0 ? num_sms : 132;
  const int64_t n_tiles = cdiv(p.N, 128);
  const int64_t t128 = cdiv(p.M, 128) * n_tiles;
  const int64_t t64 = cdiv(p.M, 64) * n_tiles;
  const bool long_k = p.K >= 1024;
  if (p.M <= 64) {
    return (!fp16 && n_tiles * 2 <= S && long_k) ? Sm90Kernel::kT128x128SK : Sm90Kernel::kT64x128;
  }
  if (t128 < S) {
    return (!fp16 && t128 * 2 <= S && long_k) ? Sm90Kernel::kT128x128SK : Sm90Kernel::kT64x128;
  }
  // Ping-pong: one CTA per SM, each of its two consumer warp groups owns a 64x128 tile.
  return wave_efficiency(t64, 2 * S) > wave_efficiency(t128, S) + 0.15 ? Sm90Kernel::kT64x128
                                                                       : Sm90Kernel::kT128x128;
}

size_t workspace_for(Sm90Kernel k, const Fp8BlockwiseGemmArgs& p, int sms, const Sm90RunOptions& o) {
  switch (k) {
    case Sm90Kernel::kT128x128: return sm90_cutlass::t128x128_workspace(p, sms, o);
    case Sm90Kernel::kT64x128: return sm90_cutlass::t64x128_workspace(p, sms, o);
    case Sm90Kernel::kT128x128RS: return sm90_cutlass::t128x128rs_workspace(p, sms, o);
    case Sm90Kernel::kT128x128SK: return sm90_cutlass::t128x128sk_workspace(p, sms, o);
  }
  return 0;
}

cudaError_t run_kernel(Sm90Kernel k, const Fp8BlockwiseGemmArgs& p, void* ws, size_t ws_bytes, int sms,
                       const Sm90RunOptions& o, cudaStream_t stream) {
  switch (k) {
    case Sm90Kernel::kT128x128: return sm90_cutlass::t128x128_run(p, ws, ws_bytes, sms, o, stream);
    case Sm90Kernel::kT64x128: return sm90_cutlass::t64x128_run(p, ws, ws_bytes, sms, o, stream);
    case Sm90Kernel::kT128x128RS: return sm90_cutlass::t128x128rs_run(p, ws, ws_bytes, sms, o, stream);
    case Sm90Kernel::kT128x128SK: return sm90_cutlass::t128x128sk_run(p, ws, ws_bytes, sms, o, stream);
  }
  return cudaErrorNotSupported;
}

}  // namespace

bool fp8_blockwise_gemm_sm90_supported(const Fp8BlockwiseGemmArgs& p, int device_cc) {
#if !defined(CUTLASS_ARCH_MMA_SM90_SUPPORTED)
  (void)p;
  (void)device_cc;
  return false;
#else
  if (device_cc != 90) return false;
  if (p.out != GemmOut::kBF16 && p.out != GemmOut::kFP16) return false;
  // Extents: the CUTLASS problem shape is int.
  if (p.M < 1 || p.N < 1 || p.K < 128 || p.K % 128 != 0) return false;
  if (p.M > kIntMax || p.N > kIntMax || p.K > kIntMax) return false;
  if (!p.a || !p.b || !p.d || !p.a_scales || !p.b_scales) return false;
  // TMA operands A, B, D: 16-byte aligned base and row stride.
  if (!aligned(p.a, 16) || !aligned(p.b, 16) || !aligned(p.d, 16)) return false;
  if (p.lda < p.K || p.lda % 16 != 0 || p.ldb < p.K || p.ldb % 16 != 0) return false;
  if (p.ldd < p.N || p.ldd % 8 != 0) return false;
  // CUTLASS's TMA epilogue asks the contiguous extent of D to be a multiple of 16 bytes too.
  if (p.N % 8 != 0) return false;
  if (p.bias && !aligned(p.bias, 4)) return false;
  const int64_t kb = p.K / 128;
  const int64_t nb = (p.N + 127) / 128;
  // sa: M-major (TMA: 16-byte aligned base and K stride) or row-major (cp.async, bf16 only);
  // int32 layout strides.
  if (!sa_m_major(p) && !sa_k_major(p)) return false;
  // sb: row-major (K-major), read with 4-byte cp.async.
  if (!aligned(p.b_scales, 4)) return false;
  if (kb > 1 && p.sb_stride_k != 1) return false;
  if (nb > 1 && (p.sb_stride_n < 1 || p.sb_stride_n > kIntMax / nb)) return false;
  return true;
#endif
}

size_t fp8_blockwise_gemm_sm90_workspace(const Fp8BlockwiseGemmArgs& p, int num_sms) {
  if (!fp8_blockwise_gemm_sm90_supported(p, 90)) return 0;
  const int sms = resolve_sms(num_sms);
  return workspace_for(select_kernel(p, sms), p, sms, env_choice().opts);
}

cudaError_t fp8_blockwise_gemm_sm90(const Fp8BlockwiseGemmArgs& p, void* workspace, size_t workspace_bytes,
                                    int num_sms, cudaStream_t stream) {
  if (!fp8_blockwise_gemm_sm90_supported(p, 90)) return cudaErrorNotSupported;
  const int sms = resolve_sms(num_sms);
  return run_kernel(select_kernel(p, sms), p, workspace, workspace_bytes, sms, env_choice().opts, stream);
}

}  // namespace gemm
}  // namespace ltx_kernels
