// The GEMM family's core API: one parameter struct for every backend of fp8_blockwise_gemm,
// fp8_rowwise_gemm and bf16_gemm, the epilogue it fuses, and the tile configuration of the sm_90a kernels. No torch,
// no CUDA device code (host and device compilers both read it).
//
//   acc[m, n] = sum_k A[m, k] B[n, k]                               (bf16 x bf16, fp32 accumulation)
//   acc[m, n] = sum_kb (A[m, kb] . B[n, kb]) * sa(m, kb) * sb(n / 128, kb)   (FP8 1D2D, kb = 128-wide
//               K blocks; semantics in docs/semantics.md, "FP8 block scaling")
//   acc[m, n] = (sum_k A[m, k] B[n, k]) * (sa[m] * sb[n])          (FP8 rowwise: one fp32 sum over
//               the whole K, then the product of the row's and the column's scale, rounded once
//               to fp32, multiplies it; docs/semantics.md, "FP8 rowwise scaling")
//   y = acc + bias[n]                                                (fp32; bias fp32 or the out dtype)
//   epilogue:
//     kNone           out = y
//     kGeluTanh       out = gelu_tanh(y) = 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3)))
//     kGatedResidual  out = h + gate * y, h [M, N] and gate (per sample [B, N], the rows of one sample
//                     being M / B consecutive rows, or per token [M, N]) in out's dtype; out may be h
//                     itself (in place)
//   output:
//     kBF16 / kFP16   one rounding of the fp32 value to the 16-bit type
//     kFP8            the fp32 value quantized per token per 128 columns exactly as
//                     quantize_fp8_per_token_group does it (common/fp8_util.h): s = amax / 448,
//                     q = e4m3(v / s); q [M, N] bytes, scales fp32 [M, N / 128] at any strides
//                     (row-major or M-major). Needs N % 128 == 0; epilogue kNone or kGeluTanh.
//
// A fused QKV projection is one call with N = 3 * hidden (B = the three weights stacked along N);
// q, k, v are column views of out (out[..., :h], out[..., h:2h], out[..., 2h:]).
#pragma once

#include <cstdint>

namespace ltx_kernels {
namespace gemm {

enum class Epilogue : int { kNone = 0, kGeluTanh = 1, kGatedResidual = 2 };
enum class OutKind : int { kBF16 = 0, kFP16 = 1, kFP8 = 2 };
enum class GateKind : int { kNone = 0, kPerSample = 1, kPerToken = 2 };
// kFp6Blockwise: FP8 activations and LTX-2's packed FP6 weights ([N, 3K/4] bytes, ldb in bytes);
// only the sm89 kernel reads them directly, every other backend gets B unpacked to e4m3 first.
// kNvfp4: scaled_mm_nvfp4's operands (quantize_nvfp4):
//   out[m, n] = alpha * sum_k (q_a[m, k] s_a(m, k / 16)) (q_b[n, k] s_b(n, k / 16)) + bias[n]
// A [M, K/2] and B [N, K/2] contiguous bytes of two E2M1 codes (lda = ldb = K / 2), their E4M3
// block scales in the 128x4 swizzled layout, alpha one fp32 on the device; plain epilogue, fp32
// bias, 16-bit out. Only cuBLASLt runs it (compute capability >= 10.0).
// kFp8Rowwise: e4m3 A and B as for kFp8Blockwise, one fp32 scale per row of A (per token:
// sa(m) = a_scales[m * sa_stride_m]) and one per row of B (per output channel:
// sb(n) = b_scales[n * sb_stride_n]); sa_stride_k and sb_stride_k are unused. No K blocking: K
// is any length the operands' row strides allow.
enum class Operands : int { kFp8Blockwise = 0, kBf16 = 1, kFp6Blockwise = 2, kNvfp4 = 3, kFp8Rowwise = 4 };

// Whether A and B are e4m3 bytes (else bf16, packed FP6 or NVFP4: see above).
inline constexpr bool e4m3_operands(Operands ops) {
  return ops == Operands::kFp8Blockwise || ops == Operands::kFp8Rowwise;
}

// A tile configuration of the sm_90a kernels (heuristics.h chooses one; LTX_KERNELS_GEMM_CONFIG
// forces all or part of one). bm x bn output tile per CTA, K step of 128 bytes per pipeline stage
// (128 FP8 or 64 bf16 elements); cluster 2 = two CTAs on adjacent M tiles of the same N tile share
// B through TMA multicast; group_m = M tiles per raster group of the persistent tile order (even
// when cluster == 2); sms = persistent CTAs; stages = pipeline stages at most (2..8; the plan
// takes as many as fit in shared memory, up to this). A field left 0 means "the heuristic's value"
// (for sms: every SM; for stages: as many as fit).
struct TileConfig {
  int bm = 0, bn = 0;
  int cluster = 0;
  int group_m = 0;
  int sms = 0;
  int stages = 0;
};

struct GemmParams {
  Operands operands = Operands::kFp8Blockwise;
  int64_t M = 0, N = 0, K = 0;
  // A [M, K] and B [N, K], K-major rows (element (m, k) at a[m * lda + k]); e4m3 bytes or bf16.
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  // FP8 1D2D: sa(m, kb) = a_scales[m * sa_stride_m + kb * sa_stride_k] (any strides: row-major or
  // M-major), sb(nb, kb) = b_scales[nb * sb_stride_n + kb * sb_stride_k], nb = n / 128.
  // FP8 rowwise: sa(m) = a_scales[m * sa_stride_m], sb(n) = b_scales[n * sb_stride_n].
  const float* a_scales = nullptr;
  int64_t sa_stride_m = 0, sa_stride_k = 0;
  const float* b_scales = nullptr;
  int64_t sb_stride_n = 0, sb_stride_k = 0;
  // bias [N] (stride 1): fp32, or when bias_is_out_dtype of the 16-bit out dtype (bf16 for an FP8
  // output); may be null.
  const void* bias = nullptr;
  bool bias_is_out_dtype = false;
  Epilogue epilogue = Epilogue::kNone;
  // kGatedResidual: h [M, N] (row stride ld_residual) and gate (row stride ld_gate; per sample:
  // [B, N] with tokens_per_sample = M / B rows each; per token: [M, N]); both of the out dtype.
  const void* residual = nullptr;
  int64_t ld_residual = 0;
  const void* gate = nullptr;
  int64_t ld_gate = 0;
  GateKind gate_kind = GateKind::kNone;
  int64_t tokens_per_sample = 0;
  int64_t gate_rows = 0;  // B (per sample) or M (per token)
  // out [M, N] (row stride ldd): bf16, fp16 or e4m3 bytes; kFP8 also writes
  // d_scales[m * ds_stride_m + g * ds_stride_g], g = n / 128.
  OutKind out = OutKind::kBF16;
  void* d = nullptr;
  int64_t ldd = 0;
  float* d_scales = nullptr;
  int64_t ds_stride_m = 0, ds_stride_g = 0;
  // kNvfp4 only: the block scales of A and B ([roundup(rows, 128), roundup(K / 16, 4)] E4M3 bytes,
  // swizzled as quantize_nvfp4 writes them), alpha (device fp32), and the nibble order (hi_first:
  // element 2j in the high nibble, as LTX-2 packs; else the low one, as cuBLASLt reads).
  const void* a_block_scales = nullptr;
  const void* b_block_scales = nullptr;
  const float* alpha = nullptr;
  bool fp4_hi_first = false;
  // Forced tile configuration of the sm_90a kernels (bm == 0: the heuristic's choice).
  TileConfig config{};
};

}  // namespace gemm
}  // namespace ltx_kernels
