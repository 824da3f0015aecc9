// What the adapters of the ops with FP8 E4M3 per-token-group output share (fused_fp8.cpp: the
// norm and RoPE ops, fused_fp8_activation.cpp: the activations): the checks of q and the scales,
// the row inputs (on CUDA, copied unless they are whole 16-byte vectors: fp8_vector_rows), the
// FP8 output in the params (quant/fused_fp8_params.h), and the CUDA path's limits.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/accumulate.h>

#include "checks.h"
#include "ltx_kernels/quant/fused_fp8_params.h"
#include "prepared.h"
#include "rope_common.h"
#include "run.h"

namespace ltx_kernels {
namespace torch_adapter {

// x: a float type, at least `min_dim` dimensions.
inline void check_x(const at::Tensor& x, const char* op, const char* name, int64_t min_dim) {
  check_float_type(x, op, name);
  LTX_CHECK(x.dim() >= min_dim, op, name, " must have at least ", min_dim, " dimension(s) (got shape ",
            shape_str(x.sizes()), ")");
}

// q: float8_e4m3fn of shape `ysh`; scales: fp32 [M, C / group] (any strides); group divides C.
inline void check_fp8_out(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x, c10::IntArrayRef ysh,
                          int64_t group, const char* op) {
  LTX_CHECK(q.scalar_type() == at::kFloat8_e4m3fn, op, "q must be float8_e4m3fn (got ", q.scalar_type(), ")");
  check_same_device(q, x, op, "q", "x");
  LTX_CHECK(scales.scalar_type() == at::kFloat, op, "scales must be float32 (got ", scales.scalar_type(), ")");
  check_same_device(scales, x, op, "scales", "x");
  LTX_CHECK(group > 0, op, "group_size must be > 0 (got ", group, ")");
  LTX_CHECK(q.sizes() == ysh, op, "q must have shape ", shape_str(ysh), " (got ", shape_str(q.sizes()), ")");
  const int64_t C = ysh.back(), M = c10::multiply_integers(ysh.begin(), ysh.end() - 1);
  LTX_CHECK(C % group == 0, op, "the row width must be a multiple of group_size (got ", C, " and group_size ", group,
            ")");
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == M && scales.size(1) == C / group, op,
            "scales must have shape [M, C / group_size] = [", M, ", ", C / group, "] (got ",
            shape_str(scales.sizes()), ")");
}

// The tensor a row input is read from: t itself when row-addressable (on CUDA also whole 16-byte
// vectors), else one (aligned) contiguous copy.
template <class P>
const at::Tensor& rows_for(Prepared<P>& pr, const at::Tensor& t) {
  const at::Tensor& h = pr.rows_source(t);
  const RowLayout l = *as_rows(h);
  if (h.is_cuda() && !fp8_vector_rows(h.data_ptr(), l.rows, l.stride, h.element_size()))
    return pr.keep(t.clone(at::MemoryFormat::Contiguous));
  return h;
}

// weight, contiguous (and on CUDA 16-byte aligned), or nullptr.
template <class P>
const void* weight_arg(Prepared<P>& pr, const std::optional<at::Tensor>& t) {
  if (!t.has_value()) return nullptr;
  const at::Tensor& w = pr.keep(t->contiguous());
  if (!w.is_cuda() || fp8_vector_rows(w.data_ptr(), 1, 0, w.element_size())) return w.data_ptr();
  return pr.keep(w.clone(at::MemoryFormat::Contiguous)).data_ptr();
}

// cos/sin with 16-byte aligned rows on CUDA (the kernels read whole vectors): copied when not.
inline Table fp8_table(const at::Tensor& t0, bool per_head) {
  const Table t = table_of(t0, per_head);
  if (!t.t.is_cuda() || fp8_vector_tables(t.t.data_ptr(), t.st, t.t.element_size())) return t;
  return table_of(t0.clone(at::MemoryFormat::Contiguous), per_head);
}

// The FP8 output of an <op>_fp8 (q and the scales, checked by check_fp8_out; q row-addressable)
// and its row input x (rows_for's copies apply): fills p.q, p.op.x and p.op.dtype; rows of at
// most 2^31-1 elements.
template <class P>
void set_fp8_rows(Prepared<Fp8OutParams<P>>& pr, Fp8OutParams<P>& p, const at::Tensor& x, const at::Tensor& q,
                  const at::Tensor& scales, int64_t group, const char* op) {
  p.op.x = in_rows(rows_for(pr, x));
  const RowLayout ql = output_rows(q, op);
  p.q = Fp8GroupOut{static_cast<uint8_t*>(q.data_ptr()), ql.stride, scales.data_ptr<float>(), scales.stride(0),
                    scales.stride(1), group};
  check_rows_fit(p.op.x.layout, op);
  p.op.dtype = dtype_of(x);
}

#ifdef LTX_KERNELS_WITH_CUDA
// The CUDA path's limits beyond those of every <op>_fp8: h_out of the gated residual (rows of
// whole 16-byte vectors) and the split RoPE's head dim.
template <class OpParams>
void check_cuda_op(const OpParams&, const at::Tensor&, const char*) {}

inline void check_cuda_op(const FusedNormParams& p, const at::Tensor& x, const char* op) {
  const OutRows& ho = p.residual_out;  // set by the gated residual only
  LTX_CHECK(ho.data == nullptr || fp8_vector_rows(ho.data, ho.layout.rows, ho.layout.stride, x.element_size()), op,
            "on CUDA, h_out must be 16-byte aligned with a row stride of whole 16-byte vectors");
}

inline void check_cuda_op(const RopeParams& p, const at::Tensor& x, const char* op) {
  const char* why = p.shape.split ? split_rope_fp8_cuda_unsupported(int(x.element_size()), p.shape.head_dim) : nullptr;
  LTX_CHECK(why == nullptr, op, "on CUDA, ", why, " (got head dim ", p.shape.head_dim, ", dtype ", x.scalar_type(),
            ")");
}

// <op>_cuda of an FP8-output op: the CUDA path's limits (quant/fused_fp8_params.h) for its rows,
// q's alignment and the op's own, then the core.
template <class P>
void run_fp8_cuda(const Prepared<Fp8OutParams<P>>& pr, const at::Tensor& x, const char* op,
                  cudaError_t (*core)(const Fp8OutParams<P>&, cudaStream_t)) {
  if (!pr.params) return;
  const Fp8OutParams<P>& p = *pr.params;
  const int64_t cols = fp8_out_cols(p), group = p.q.group;
  const char* why = fused_fp8_cuda_unsupported(int(x.element_size()), cols, group);
  LTX_CHECK(why == nullptr, op, "on CUDA, ", why, " (got group_size ", group, ", row width ", cols, ", dtype ",
            x.scalar_type(), ")");
  LTX_CHECK(fp8_vector_rows(p.q.q, p.op.x.layout.rows, p.q.q_stride, x.element_size()), op,
            "on CUDA, q must be 16-byte aligned with a row stride of whole 16-byte vectors");
  check_cuda_op(p.op, x, op);
  run_cuda(pr, x, op, core);
}
#endif

}  // namespace torch_adapter
}  // namespace ltx_kernels
