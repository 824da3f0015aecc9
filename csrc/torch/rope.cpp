// Torch adapter for the RoPE family: checks, row and table layouts, then one RopeParams
// (rope/rope_params.h; cos/sin float32 or x's dtype) for the CPU backend (cpu/ops.h) or the
// CUDA core (cuda/ops.h).
//
// Table conventions (the Python docstrings in ltx_kernels/rope.py say the same):
//   rms_norm_rope:        x [B, S, C], cos/sin [B or 1, S, C]              (interleaved, whole row)
//   rms_norm_split_rope:  x [B, S, C], cos/sin [B or 1, H, S, d/2], C = H*d (split, per head)
//   apply_rope:           x [B, S, C] or [B, S, H, d]; cos/sin [B or 1, S, w] (one table shared
//                         by every head) or [B or 1, H, S, w] (one per head), w = d (interleaved)
//                         or d/2 (split). Head width d: x's last dim for 4-D x; for 3-D x, C / H
//                         with a per-head table, w (interleaved) or 2w (split) with a shared one.
// cos/sin may have any outer strides (stride 0 broadcasts); an innermost stride other than 1
// costs one contiguous copy of the table.
#include "common.h"
#include "rope_common.h"
#include "ltx_kernels/cpu/ops.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

void check_x_out(const at::Tensor& out, const at::Tensor& x, const char* op) {
  check_float_type(x, op, "x");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  LTX_CHECK(out.sizes() == x.sizes(), op, "out must have the shape of x (got ", out.sizes(),
            " and ", x.sizes(), ")");
}

// x3 / out3: [B, S, C] views (4-D x flattened); everything else already checked.
Prepared<RopeParams> make_rope_params(const char* op, at::Tensor& out3, const at::Tensor& x3, const at::Tensor& cos0,
                                      const at::Tensor& sin0, bool per_head, const std::optional<at::Tensor>& weight,
                                      bool norm, double eps, const RopeShape& shape) {
  Prepared<RopeParams> pr;
  RopeParams& p = pr.emplace();
  set_rows(pr, p, out3, x3, op);
  const Table ct = table_of(cos0, per_head);
  const Table sn = table_of(sin0, per_head);
  pr.keep(ct.t);
  pr.keep(sn.t);
  check_no_partial_overlap(out3, ct.t, op, "cos");
  check_no_partial_overlap(out3, sn.t, op, "sin");
  p.tables = rope_tables(ct, sn);
  p.weight = nullptr;
  if (norm && weight.has_value()) {
    const at::Tensor& wc = pr.keep(weight->contiguous());
    check_no_partial_overlap(out3, wc, op, "weight");
    p.weight = wc.data_ptr();
  }
  p.shape = shape;
  p.eps = static_cast<float>(eps);
  return pr;
}

// rms_norm_rope (split false) and rms_norm_split_rope (split true).
Prepared<RopeParams> make_norm_rope_params(const char* op, bool split, at::Tensor& out, const at::Tensor& x,
                                           const at::Tensor& cos, const at::Tensor& sin,
                                           const std::optional<at::Tensor>& weight, double eps) {
  check_x_out(out, x, op);
  const RopeShape shape = split ? check_norm_split_rope(x, cos, sin, weight, eps, op)
                                : check_norm_rope(x, cos, sin, weight, eps, op);
  if (x.numel() == 0) return {};
  return make_rope_params(op, out, x, cos, sin, split, weight, true, eps, shape);
}

Prepared<RopeParams> make_apply_rope_params(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                                            const at::Tensor& sin, bool interleaved) {
  constexpr const char* op = "apply_rope";
  check_x_out(out, x, op);
  LTX_CHECK(x.dim() == 3 || x.dim() == 4, op,
            "x must be [B, S, C] or [B, S, heads, d] (got shape ", x.sizes(), ")");
  check_tables(x, cos, sin, op);
  LTX_CHECK(cos.dim() == 3 || cos.dim() == 4, op,
            "cos/sin must be [B or 1, S, w] (shared by all heads) or [B or 1, heads, S, w] "
            "(per head) (got shape ",
            cos.sizes(), ")");
  const bool per_head = cos.dim() == 4;
  const int64_t B = x.size(0), S = x.size(1);
  const int64_t C = x.dim() == 4 ? x.size(2) * x.size(3) : x.size(2);
  const int64_t w = cos.size(-1);
  int64_t d;
  if (x.dim() == 4) {
    d = x.size(3);
    if (per_head)
      LTX_CHECK(cos.size(1) == x.size(2), op, "per-head cos/sin must have x.shape[2] = ",
                x.size(2), " heads (got shape ", cos.sizes(), ")");
  } else if (per_head) {
    LTX_CHECK(cos.size(1) >= 1 && C % cos.size(1) == 0, op,
              "per-head cos/sin: heads = cos.shape[1] must divide C = ", C, " (got shape ",
              cos.sizes(), ")");
    d = C / cos.size(1);
  } else {
    d = interleaved ? w : 2 * w;
  }
  LTX_CHECK(d > 0 && d % 2 == 0, op, "the head dim d must be even and positive (got ", d, ")");
  LTX_CHECK(C % d == 0, op, "the head dim d = ", d, " must divide C = ", C);
  const int64_t want_w = interleaved ? d : d / 2;
  LTX_CHECK(w == want_w && cos.size(per_head ? 2 : 1) == S, op, "cos/sin must have shape [",
            B, " or 1, ", per_head ? std::to_string(C / d) + ", " : std::string(), S, ", ",
            want_w, "] (w = ", interleaved ? "d" : "d/2", " with d = ", d, ", ",
            interleaved ? "interleaved" : "split", ") (got shape ", cos.sizes(), ")");
  check_table_batch(cos, B, op);
  if (x.numel() == 0) return {};
  const at::Tensor x3 = x.dim() == 4 ? x.flatten(2) : x;
  at::Tensor out3 = out;
  if (out.dim() == 4) {
    out3 = out.flatten(2);
    LTX_CHECK(out3.is_alias_of(out) && out3.data_ptr() == out.data_ptr(), op,
              "out's last two dimensions must be contiguous (got strides ", out.strides(), ")");
  }
  return make_rope_params(op, out3, x3, cos, sin, per_head, std::nullopt, false, 0.0,
                          RopeShape{B, S, C, d, !interleaved});
}

}  // namespace

void rms_norm_rope_cpu(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                       const std::optional<at::Tensor>& weight, double eps) {
  run_cpu(make_norm_rope_params("rms_norm_rope", false, out, x, cos, sin, weight, eps), cpu::rms_norm_rope);
}

void rms_norm_split_rope_cpu(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                             const std::optional<at::Tensor>& weight, double eps) {
  run_cpu(make_norm_rope_params("rms_norm_split_rope", true, out, x, cos, sin, weight, eps), cpu::rms_norm_split_rope);
}

void apply_rope_cpu(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    bool interleaved) {
  run_cpu(make_apply_rope_params(out, x, cos, sin, interleaved), cpu::apply_rope);
}

#ifdef LTX_KERNELS_WITH_CUDA
void rms_norm_rope_cuda(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                        const std::optional<at::Tensor>& weight, double eps) {
  run_cuda(make_norm_rope_params("rms_norm_rope", false, out, x, cos, sin, weight, eps), x, "rms_norm_rope", ltx_kernels::rms_norm_rope);
}

void rms_norm_split_rope_cuda(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                              const std::optional<at::Tensor>& weight, double eps) {
  run_cuda(make_norm_rope_params("rms_norm_split_rope", true, out, x, cos, sin, weight, eps), x, "rms_norm_split_rope",
           ltx_kernels::rms_norm_split_rope);
}

void apply_rope_cuda(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                     bool interleaved) {
  run_cuda(make_apply_rope_params(out, x, cos, sin, interleaved), x, "apply_rope", ltx_kernels::apply_rope);
}
#endif
