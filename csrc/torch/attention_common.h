// What the two attention adapters share (attention.cpp: attention; attention_quant.cpp:
// quantize_attention_fp8): the checks of q, k and v, the AttnDtype of a tensor, (b, s, h) strides
// by layout, and inputs as the CUDA kernels address them.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "common.h"
#include "ltx_kernels/attention/attention.h"

namespace ltx_kernels {
namespace torch_adapter {

inline AttnDtype attn_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return AttnDtype::kBF16;
    case at::kHalf: return AttnDtype::kFP16;
    case at::kFloat8_e4m3fn: return AttnDtype::kE4M3;
    default: return AttnDtype::kFP32;
  }
}

// (b, s, h) strides of a [B, S, H, D] ("bshd") or [B, H, S, D] ("bhsd") tensor.
inline AttnStrides bsh_strides(const at::Tensor& t, bool bhsd) {
  return bhsd ? AttnStrides{t.stride(0), t.stride(2), t.stride(1)} : AttnStrides{t.stride(0), t.stride(1), t.stride(2)};
}

// What a TMA tensor map of a 4-D tensor reads: the last dimension contiguous, the other strides
// positive multiples of 16 bytes (no zero strides: expanded dimensions are not addressable), a
// 16-byte aligned base.
inline bool out_addressable(const at::Tensor& t) {
  const int64_t es = t.element_size();
  bool ok = (t.size(3) <= 1 || t.stride(3) == 1) && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
  for (int d = 0; ok && d < 3; ++d) ok = t.size(d) <= 1 || (t.stride(d) > 0 && (t.stride(d) * es) % 16 == 0);
  return ok;
}

// An input as such a tensor: itself, else a contiguous copy (a fresh allocation: `contiguous()`
// would return a contiguous tensor on a misaligned base unchanged).
inline at::Tensor addressable(const at::Tensor& t) {
  return t.dim() == 4 && out_addressable(t) ? t : t.clone(at::MemoryFormat::Contiguous);
}

// An input as rows of D contiguous elements (what the CPU backends read).
inline at::Tensor rows(const at::Tensor& t) { return t.size(3) <= 1 || t.stride(3) == 1 ? t : t.contiguous(); }

// The layout argument: true for "bhsd" ([B, H, S, D]), false for "bshd"; anything else refused.
inline bool check_layout_bhsd(c10::string_view layout, const char* op) {
  const std::string lay(layout.data(), layout.size());
  LTX_CHECK(lay == "bshd" || lay == "bhsd", op, "layout must be 'bshd' ([B, S, H, D]) or 'bhsd' ([B, H, S, D]) (got '",
            lay, "')");
  return lay == "bhsd";
}

// The sizes of q [B, Sq, H, D] and k, v [B, Skv, Hkv, D] ("bshd"; "bhsd" swaps S and H).
struct QkvSizes {
  bool bhsd = false;
  const char* shape = "";  // "[B, S, H, D]" or "[B, H, S, D]", for messages
  int64_t B = 0, Sq = 0, H = 0, D = 0, Skv = 0, Hk = 0;
};

// The checks q, k and v share in both ops, in the order their messages are tested: the layout,
// 4-D tensors of q's dtype (`dtypes`: what q may be, `fp8` allows float8_e4m3fn) on q's device,
// k with q's batch and head dim, H a multiple of Hkv; and v with k's shape unless q is float8
// (attention's FP8 v is transposed: its caller checks it).
inline QkvSizes check_qkv(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, c10::string_view layout,
                          bool fp8, const char* dtypes, const char* op) {
  QkvSizes s;
  s.bhsd = check_layout_bhsd(layout, op);
  s.shape = s.bhsd ? "[B, H, S, D]" : "[B, S, H, D]";
  LTX_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op, "q, k and v must be 4-D ", s.shape, " (got shapes ",
            shape_str(q.sizes()), ", ", shape_str(k.sizes()), ", ", shape_str(v.sizes()), ")");
  const at::ScalarType qt = q.scalar_type();
  LTX_CHECK(qt == at::kBFloat16 || qt == at::kHalf || qt == at::kFloat || (fp8 && qt == at::kFloat8_e4m3fn), op,
            "q must be ", dtypes, " (got ", qt, ")");
  check_same_dtype(k, q, op, "k", "q");
  check_same_dtype(v, q, op, "v", "q");
  check_same_device(k, q, op, "k", "q");
  check_same_device(v, q, op, "v", "q");
  LTX_CHECK(q.is_cpu() || q.is_cuda(), op, "tensors must be on the CPU or a CUDA device (got ", q.device(), ")");
  s.B = q.size(0), s.Sq = q.size(s.bhsd ? 2 : 1), s.H = q.size(s.bhsd ? 1 : 2), s.D = q.size(3);
  s.Skv = k.size(s.bhsd ? 2 : 1), s.Hk = k.size(s.bhsd ? 1 : 2);
  LTX_CHECK(k.size(0) == s.B && k.size(3) == s.D, op, "k must be ", s.shape, " with q's batch and head dim (got q ",
            shape_str(q.sizes()), ", k ", shape_str(k.sizes()), ")");
  if (qt != at::kFloat8_e4m3fn)
    LTX_CHECK(v.sizes() == k.sizes(), op, "v must have k's shape (got k ", shape_str(k.sizes()), ", v ",
              shape_str(v.sizes()), ")");
  LTX_CHECK(s.Hk > 0 ? s.H % s.Hk == 0 : s.H == 0, op, "q's heads must be a multiple of k's heads (got ", s.H, " and ",
            s.Hk, ")");
  return s;
}

// The sizes into the params of either op (AttentionParams, AttnQuantParams).
template <class P>
void set_sizes(P& p, const QkvSizes& s) {
  p.batch = s.B;
  p.seqlen_q = s.Sq;
  p.seqlen_kv = s.Skv;
  p.heads = s.H;
  p.heads_kv = s.Hk;
  p.head_dim = s.D;
}

}  // namespace torch_adapter
}  // namespace ltx_kernels
