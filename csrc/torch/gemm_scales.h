// The scale tables of the FP8 GEMM ops (csrc/torch/gemm_args.h): the shape and layout rules of
// fp8_blockwise_gemm's 1x128 / 128x128 block scales (and of the FP8 output's scales), and the
// per-row scales of fp8_rowwise_gemm.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "common.h"
#include "ltx_kernels/gemm/gemm_params.h"

namespace ltx_kernels {
namespace torch_adapter {
namespace gemm_op {

// A scale table [M, G] is row-major (strides (G, 1)) or M-major (strides (1, M_pad), M_pad >= M);
// a dimension of size 1 may have any stride.
inline bool row_or_m_major(const at::Tensor& s, int64_t M, int64_t G) {
  const int64_t s0 = s.stride(0), s1 = s.stride(1);
  return ((G <= 1 || s1 == 1) && (M <= 1 || s0 >= G)) || ((M <= 1 || s0 == 1) && (G <= 1 || s1 >= M));
}

// A float32 scale table [rows, cols] (`desc` names the shape in the message).
inline void check_scales(const at::Tensor& s, const char* name, int64_t rows, int64_t cols, const char* desc, const char* op) {
  LTX_CHECK(s.scalar_type() == at::kFloat, op, name, " must be float32 (got ", s.scalar_type(), ")");
  LTX_CHECK(s.dim() == 2 && s.size(0) == rows && s.size(1) == cols, op, name, " must have shape ", desc, " = [",
            rows, ", ", cols, "] (got ", shape_str(s.sizes()), ")");
}

// One float32 scale per row of a [rows, K] operand: shape [rows] or [rows, 1], any stride.
inline void check_row_scales(const at::Tensor& s, const char* name, int64_t rows, const char* what, const char* op) {
  LTX_CHECK(s.scalar_type() == at::kFloat, op, name, " must be float32 (got ", s.scalar_type(), ")");
  LTX_CHECK((s.dim() == 1 || (s.dim() == 2 && s.size(1) == 1)) && s.size(0) == rows, op, name,
            " must have shape [", rows, "] or [", rows, ", 1] (one scale per ", what, ") (got ", shape_str(s.sizes()),
            ")");
}

// fp8_rowwise_gemm's scales into p: sa(m) = a_scales[m * sa_stride_m] as given; the weight scales
// as a contiguous 16-byte aligned vector (the sm_90a kernel stages a tile's slice with one bulk
// copy): b_scales itself when it is one, else a copy of its N values (exact) returned in *sb_held.
inline void set_row_scales(gemm::GemmParams& p, const at::Tensor& sa, const at::Tensor& sb, at::Tensor* sb_held) {
  p.a_scales = sa.data_ptr<float>();
  p.sa_stride_m = sa.stride(0);
  at::Tensor v = sb.reshape({p.N});
  if (p.N > 1 && (v.stride(0) != 1 || reinterpret_cast<uintptr_t>(v.data_ptr()) % 16 != 0))
    v = at::empty({p.N}, v.options().memory_format(at::MemoryFormat::Contiguous)).copy_(v);
  *sb_held = v;
  p.b_scales = v.data_ptr<float>();
  p.sb_stride_n = 1;
}

}  // namespace gemm_op
}  // namespace torch_adapter
}  // namespace ltx_kernels
