// Shared by the torch adapters of the RoPE ops (rope.cpp) and of their FP8-output variants
// (fused_fp8.cpp): cos/sin table checks and layouts, and the shape rules of rms_norm_rope /
// rms_norm_split_rope. Table conventions: rope.cpp's header comment.
#pragma once

#include "common.h"
#include "ltx_kernels/common/rope_util.h"

namespace ltx_kernels {
namespace torch_adapter {

// A cos or sin table with its innermost stride 1 (copied when it was not) and its strides.
struct Table {
  at::Tensor t;
  RopeTableStrides st;
};

// t: (b, s, w) when !per_head, (b, h, s, w) when per_head. Size-1 batch broadcasts (stride 0).
inline Table table_of(const at::Tensor& t0, bool per_head) {
  at::Tensor t = (t0.size(-1) > 1 && t0.stride(-1) != 1) ? t0.contiguous() : t0;
  const int64_t sb = t.size(0) == 1 ? 0 : t.stride(0);
  if (per_head) return Table{t, RopeTableStrides{sb, t.size(1) == 1 ? 0 : t.stride(1), t.stride(2)}};
  return Table{t, RopeTableStrides{sb, 0, t.stride(1)}};
}

// The params' view of a cos / sin pair (tensors kept alive by the caller).
inline RopeTables rope_tables(const Table& cos, const Table& sin) {
  return RopeTables{cos.t.data_ptr(), sin.t.data_ptr(), cos.st, sin.st, cos.t.scalar_type() == at::kFloat};
}

inline void check_tables(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                  const char* op) {
  check_same_device(cos, x, op, "cos", "x");
  check_same_device(sin, x, op, "sin", "x");
  LTX_CHECK(cos.scalar_type() == at::kFloat || cos.scalar_type() == x.scalar_type(), op,
            "cos and sin must be float32 or x's dtype (got ", cos.scalar_type(), " with x ",
            x.scalar_type(), ")");
  check_same_dtype(sin, cos, op, "sin", "cos");
  LTX_CHECK(cos.sizes() == sin.sizes(), op, "cos and sin must have the same shape (got ",
            cos.sizes(), " and ", sin.sizes(), ")");
}

inline void check_weight(const std::optional<at::Tensor>& weight, const at::Tensor& x, int64_t cols,
                  const char* op) {
  if (!weight.has_value()) return;
  const at::Tensor& w = *weight;
  check_same_device(w, x, op, "weight", "x");
  check_same_dtype(w, x, op, "weight", "x");
  LTX_CHECK(w.dim() == 1 && w.size(0) == cols, op, "weight must be 1-D with x.shape[-1] = ", cols,
            " elements (got shape ", w.sizes(), ")");
}

// The batch size of a table must be 1 or B.
inline void check_table_batch(const at::Tensor& cos, int64_t batch, const char* op) {
  LTX_CHECK(cos.size(0) == 1 || cos.size(0) == batch, op,
            "cos/sin batch size must be 1 or x.shape[0] = ", batch, " (got shape ", cos.sizes(),
            ")");
}

// rms_norm_rope: x [B, S, C] (C even), cos/sin [B or 1, S, C]; the weight and eps too.
inline RopeShape check_norm_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                 const std::optional<at::Tensor>& weight, double eps,
                                 const char* op) {
  LTX_CHECK(x.dim() == 3, op, "x must be 3-D [B, S, C] (got shape ", x.sizes(), ")");
  const int64_t B = x.size(0), S = x.size(1), C = x.size(2);
  LTX_CHECK(C % 2 == 0, op, "x.shape[-1] must be even for interleaved pairs (got ", C, ")");
  LTX_CHECK(eps >= 0.0, op, "eps must be >= 0 (got ", eps, ")");
  check_weight(weight, x, C, op);
  check_tables(x, cos, sin, op);
  LTX_CHECK(cos.dim() == 3 && cos.size(1) == S && cos.size(2) == C, op,
            "cos/sin must have shape [B or 1, S, C] = [", B, " or 1, ", S, ", ", C,
            "] (got shape ", cos.sizes(), ")");
  check_table_batch(cos, B, op);
  return RopeShape{B, S, C, C, false};
}

// rms_norm_split_rope: x [B, S, C], cos/sin [B or 1, H, S, d/2] with H * d = C.
inline RopeShape check_norm_split_rope(const at::Tensor& x, const at::Tensor& cos,
                                       const at::Tensor& sin,
                                       const std::optional<at::Tensor>& weight, double eps,
                                       const char* op) {
  LTX_CHECK(x.dim() == 3, op, "x must be 3-D [B, S, C] (got shape ", x.sizes(), ")");
  const int64_t B = x.size(0), S = x.size(1), C = x.size(2);
  LTX_CHECK(eps >= 0.0, op, "eps must be >= 0 (got ", eps, ")");
  check_weight(weight, x, C, op);
  check_tables(x, cos, sin, op);
  LTX_CHECK(cos.dim() == 4 && cos.size(2) == S && cos.size(3) >= 1 &&
                cos.size(1) * 2 * cos.size(3) == C,
            op, "cos/sin must have shape [B or 1, heads, S, d/2] with heads * d = C = ", C,
            " and S = ", S, " (got shape ", cos.sizes(), ")");
  check_table_batch(cos, B, op);
  return RopeShape{B, S, C, 2 * cos.size(3), true};
}

}  // namespace torch_adapter
}  // namespace ltx_kernels
