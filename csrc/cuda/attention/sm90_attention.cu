// sm_90a dense attention: the envelope (attention_sm90_why_not), the operands' addressing, the
// configuration (attention/heuristics.h) and the dtype dispatch. The kernels are instantiated in
// sm90_attention_{bf16,fp16,e4m3}.cu; the launcher is sm90_attention_launch.cuh and the kernel
// csrc/include/ltx_kernels/attention/sm90_attention_fwd.cuh.
#include "sm90_attention_launch.cuh"

namespace ltx_kernels {

const char* attention_sm90_why_not(const AttentionParams& a, int cc) {
  if (cc != 90) return "the sm_90a attention kernel needs compute capability 9.0";
  if (a.head_dim != 64 && a.head_dim != 128) return "the sm_90a attention kernel takes head_dim 64 or 128";
  if (a.dtype == AttnDtype::kFP32) return "the sm_90a attention kernel takes bf16, fp16 or float8_e4m3fn inputs";
  if (a.out_dtype != AttnDtype::kBF16 && a.out_dtype != AttnDtype::kFP16)
    return "the sm_90a attention kernel writes bf16 or fp16";
  if (a.dtype != AttnDtype::kE4M3 && a.out_dtype != a.dtype) return "16-bit inputs write their own dtype";
  if (a.batch > 65535 || a.heads > 65535 || a.seqlen_q > INT32_MAX || a.seqlen_kv > INT32_MAX)
    return "batch and heads must be <= 65535 and sequence lengths < 2^31";
  return nullptr;
}

namespace {

// What the TMA tensor maps address (sm90_attention_launch.cuh): strides of extent-1 dimensions
// address nothing (tidy replaces them, as the launcher does).
bool addressable(const AttentionParams& a) {
  using attention_sm90::esize;
  using attention_sm90::tidy;
  using attention_sm90::tma_ok;
  const int64_t es = esize(a.dtype), D = a.head_dim;
  const bool fp8 = a.dtype == AttnDtype::kE4M3;
  const AttnStrides vs = fp8 ? tidy(a.v_stride, D, a.heads_kv, a.batch, a.v_keys_padded)
                             : tidy(a.v_stride, a.seqlen_kv, a.heads_kv, a.batch, D);
  return tma_ok(a.q, tidy(a.q_stride, a.seqlen_q, a.heads, a.batch, D), es) &&
         tma_ok(a.k, tidy(a.k_stride, a.seqlen_kv, a.heads_kv, a.batch, D), es) && tma_ok(a.v, vs, es) &&
         tma_ok(a.out, tidy(a.out_stride, a.seqlen_q, a.heads, a.batch, D), esize(a.out_dtype)) &&
         (!fp8 || a.k_block != 1 || attention_sm90::kf_tma_ok(a)) && attention_sm90::bias_tma_ok(a);
}

}  // namespace

cudaError_t attention_forward_sm90(const AttentionParams& a, cudaStream_t stream) {
  if (a.batch == 0 || a.seqlen_q == 0 || a.heads == 0) return cudaSuccess;
  if (!addressable(a)) return cudaErrorNotSupported;
  using attention_sm90::Kernel;
  const bool fp8 = a.dtype == AttnDtype::kE4M3;
  const int persistent = attention_sm90::persistent_ok(a) ? a.persistent : 0;
  const Kernel k = attention_sm90::choose_kernel(fp8, int(a.head_dim), fp8 && a.k_block == 1, a.seqlen_kv, persistent);
  switch (a.dtype) {
    case AttnDtype::kBF16: return attention_sm90::forward_bf16(a, k, stream);
    case AttnDtype::kFP16: return attention_sm90::forward_fp16(a, k, stream);
    case AttnDtype::kE4M3: return attention_sm90::forward_e4m3(a, k, stream);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace ltx_kernels
