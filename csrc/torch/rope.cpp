// Torch adapter for the RoPE family: checks, row and table layouts, dtype dispatch (x's dtype
// T, and the cos/sin dtype TT = float32 or T), then the CPU backend or the CUDA core. One
// function per op, registered for both dispatch keys.
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
#include "ltx_kernels/common/rope_util.h"
#include "ltx_kernels/cpu/rope.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/rope/rope.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kCpuGrain = 16;  // rows per CPU task

void check_x_out(const at::Tensor& out, const at::Tensor& x, const char* op) {
  check_float_type(x, op, "x");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  LTX_CHECK(out.sizes() == x.sizes(), op, "out must have the shape of x (got ", out.sizes(),
            " and ", x.sizes(), ")");
}

// x3 / out3: [B, S, C] views (4-D x flattened); everything else already checked.
void run(const char* op, at::Tensor& out3, const at::Tensor& x3, const at::Tensor& cos0,
         const at::Tensor& sin0, bool per_head, const std::optional<at::Tensor>& weight,
         bool norm, double eps, const RopeShape& shape) {
  at::Tensor xh;
  const RowLayout xl = input_rows(x3, xh);
  check_no_partial_overlap(out3, xh, op, "x");
  const RowLayout ol = output_rows(out3, op);
  check_rows_fit(xl, op);
  const Table ct = table_of(cos0, per_head);
  const Table sn = table_of(sin0, per_head);
  check_no_partial_overlap(out3, ct.t, op, "cos");
  check_no_partial_overlap(out3, sn.t, op, "sin");
  at::Tensor wc = (norm && weight.has_value()) ? weight->contiguous() : at::Tensor();
  if (wc.defined()) check_no_partial_overlap(out3, wc, op, "weight");
  const float feps = static_cast<float>(eps);
  const bool f32_table = ct.t.scalar_type() == at::kFloat;

  if (x3.is_cpu()) {
    LTX_DISPATCH_FLOAT(x3.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out3.data_ptr());
      auto* xp = reinterpret_cast<const scalar_t*>(xh.data_ptr());
      auto* wp = wc.defined() ? reinterpret_cast<const scalar_t*>(wc.data_ptr()) : nullptr;
      auto go = [&](auto* tab_tag) {
        using tab_t = std::remove_pointer_t<decltype(tab_tag)>;
        auto* cp = reinterpret_cast<const tab_t*>(ct.t.data_ptr());
        auto* sp = reinterpret_cast<const tab_t*>(sn.t.data_ptr());
        at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
          cpu::rope_rows<scalar_t, tab_t>(o, ol.stride, xp, xl.stride, wp, norm, feps, cp, ct.st,
                                          sp, sn.st, shape, b, e);
        });
      };
      if (f32_table) go(static_cast<float*>(nullptr));
      else go(static_cast<scalar_t*>(nullptr));
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x3, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x3.scalar_type(), op, {
    auto* o = reinterpret_cast<cuda_t*>(out3.data_ptr());
    auto* xp = reinterpret_cast<const cuda_t*>(xh.data_ptr());
    auto* wp = wc.defined() ? reinterpret_cast<const cuda_t*>(wc.data_ptr()) : nullptr;
    auto go = [&](auto* tab_tag) {
      using tab_t = std::remove_pointer_t<decltype(tab_tag)>;
      auto* cp = reinterpret_cast<const tab_t*>(ct.t.data_ptr());
      auto* sp = reinterpret_cast<const tab_t*>(sn.t.data_ptr());
      cudaError_t err;
      if (!norm)
        err = ltx_kernels::apply_rope<cuda_t, tab_t>(o, ol.stride, xp, xl.stride, cp, ct.st, sp,
                                                     sn.st, shape, stream);
      else if (shape.split)
        err = ltx_kernels::rms_norm_split_rope<cuda_t, tab_t>(
            o, ol.stride, xp, xl.stride, wp, cp, ct.st, sp, sn.st, shape.batch, shape.seq,
            shape.cols, shape.head_dim, feps, stream);
      else
        err = ltx_kernels::rms_norm_rope<cuda_t, tab_t>(o, ol.stride, xp, xl.stride, wp, cp,
                                                        ct.st, sp, sn.st, shape.batch, shape.seq,
                                                        shape.cols, feps, stream);
      check_cuda(err, op);
    };
    if (f32_table) go(static_cast<float*>(nullptr));
    else go(static_cast<cuda_t*>(nullptr));
  });
#else
  no_cuda_backend(x3, op);
#endif
}

}  // namespace

void rms_norm_rope(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                   const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps) {
  constexpr const char* op = "rms_norm_rope";
  check_x_out(out, x, op);
  const RopeShape shape = check_norm_rope(x, cos, sin, weight, eps, op);
  if (x.numel() == 0) return;
  run(op, out, x, cos, sin, false, weight, true, eps, shape);
}

void rms_norm_split_rope(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                         const at::Tensor& sin, const std::optional<at::Tensor>& weight,
                         double eps) {
  constexpr const char* op = "rms_norm_split_rope";
  check_x_out(out, x, op);
  const RopeShape shape = check_norm_split_rope(x, cos, sin, weight, eps, op);
  if (x.numel() == 0) return;
  run(op, out, x, cos, sin, true, weight, true, eps, shape);
}

void apply_rope(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                bool interleaved) {
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
  if (x.numel() == 0) return;
  const at::Tensor x3 = x.dim() == 4 ? x.flatten(2) : x;
  at::Tensor out3 = out;
  if (out.dim() == 4) {
    out3 = out.flatten(2);
    LTX_CHECK(out3.is_alias_of(out) && out3.data_ptr() == out.data_ptr(), op,
              "out's last two dimensions must be contiguous (got strides ", out.strides(), ")");
  }
  run(op, out3, x3, cos, sin, per_head, std::nullopt, false, 0.0,
      RopeShape{B, S, C, d, !interleaved});
}
