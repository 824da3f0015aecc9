// Torch adapter for the fused-norm family: checks (naming the op and the rule), row layouts,
// modulation tables, dtype dispatch, then the CPU backend or the CUDA core. One function per
// op, registered for both dispatch keys (torch-ext/torch_binding.cpp).
#include "common.h"
#include "ltx_kernels/common/fused_norm_util.h"
#include "ltx_kernels/cpu/fused_norm.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/norm/fused_norm.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kCpuGrain = 16;  // rows per CPU task

// x: float type, at least `min_dim` dimensions; eps >= 0.
void check_x(const at::Tensor& x, const char* op, const char* name, int64_t min_dim, double eps) {
  check_float_type(x, op, name);
  if (min_dim == 1) {
    LTX_CHECK(x.dim() >= 1, op, name, " must have at least one dimension (got a scalar)");
  } else {
    LTX_CHECK(x.dim() >= min_dim, op, name, " must have at least ", min_dim,
              " dimensions [B, ..., C] (got shape ", x.sizes(), ")");
  }
  LTX_CHECK(eps >= 0.0, op, "eps must be >= 0 (got ", eps, ")");
}

// A row input of the shape of x (residual, y): same dtype, device and shape.
void check_like(const at::Tensor& t, const at::Tensor& x, const char* op, const char* tn,
                const char* xn) {
  check_same_device(t, x, op, tn, xn);
  check_same_dtype(t, x, op, tn, xn);
  LTX_CHECK(t.sizes() == x.sizes(), op, tn, " must have the shape of ", xn, " (got ", t.sizes(),
            " and ", x.sizes(), ")");
}

// An output of the shape of x.
void check_out(const at::Tensor& out, const at::Tensor& x, const char* op, const char* on,
               const char* xn) {
  check_same_dtype(out, x, op, on, xn);
  check_same_device(out, x, op, on, xn);
  LTX_CHECK(out.sizes() == x.sizes(), op, on, " must have the shape of ", xn, " (got ",
            out.sizes(), " and ", x.sizes(), ")");
}

// weight / bias: 1-D with x.shape[-1] elements, x's dtype and device; contiguous copy.
at::Tensor vector_arg(const std::optional<at::Tensor>& t, const at::Tensor& x, const char* op,
                      const char* name) {
  if (!t.has_value()) return at::Tensor();
  const int64_t cols = x.size(-1);
  check_same_device(*t, x, op, name, "x");
  check_same_dtype(*t, x, op, name, "x");
  LTX_CHECK(t->dim() == 1 && t->size(0) == cols, op, name,
            " must be 1-D with x.shape[-1] = ", cols, " elements (got shape ", t->sizes(), ")");
  return t->contiguous();
}

// Two outputs written by one call must not share any byte.
void check_disjoint(const at::Tensor& a, const at::Tensor& b, const char* op, const char* an,
                    const char* bn) {
  LTX_CHECK(!bytes_overlap(a, b), op, an, " and ", bn, " must not overlap");
}

// A modulation table (scale, shift, gate) for x [B, ..., C]: per sample [B, C] (or [B, 1, ..,
// 1, C]) or per token (x.shape). Shapes are checked here; rows after the empty check.
struct Table {
  at::Tensor holder;
  RowLayout layout;
  int64_t rows_per_entry = 1;
};

void check_table_shape(const at::Tensor& t, const at::Tensor& x, const char* op,
                       const char* name) {
  check_same_device(t, x, op, name, "x");
  check_same_dtype(t, x, op, name, "x");
  const int64_t B = x.size(0), C = x.size(-1);
  bool per_sample = t.dim() >= 2 && t.size(0) == B && t.size(-1) == C &&
                    (t.dim() == 2 || t.dim() == x.dim());
  for (int64_t d = 1; per_sample && d + 1 < t.dim(); ++d) per_sample = t.size(d) == 1;
  const bool per_token = t.sizes() == x.sizes();
  LTX_CHECK(per_sample || per_token, op, name,
            " must be [B, C] (per sample) or [B, S, C] = x.shape (per token), with B = "
            "x.shape[0] = ",
            B, " and C = x.shape[-1] = ", C, " (got ", name, " ", t.sizes(), " for x ",
            x.sizes(), ")");
}

Table table_arg(const at::Tensor& t, const at::Tensor& x, const at::Tensor& out, const char* op,
                const char* name) {
  Table tb;
  tb.layout = input_rows(t, tb.holder);
  const int64_t rows = x.numel() / x.size(-1);
  const bool per_token = t.sizes() == x.sizes();
  tb.rows_per_entry = per_token ? 1 : rows / x.size(0);
  check_no_partial_overlap(out, tb.holder, op, name);
  return tb;
}

template <typename U>
ModTable<U> mod_table(const Table& t) {
  return ModTable<U>{reinterpret_cast<const U*>(t.holder.data_ptr()), t.layout.stride,
                     t.rows_per_entry};
}

template <typename U>
const U* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? reinterpret_cast<const U*>(t.data_ptr()) : nullptr;
}

}  // namespace

void add_rms_norm(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& x,
                  const at::Tensor& residual, const std::optional<at::Tensor>& weight,
                  double eps) {
  constexpr const char* op = "add_rms_norm";
  check_x(x, op, "x", 1, eps);
  check_like(residual, x, op, "residual", "x");
  check_out(out, x, op, "out", "x");
  check_out(residual_out, x, op, "residual_out", "x");
  at::Tensor wc = vector_arg(weight, x, op, "weight");
  if (x.numel() == 0) return;
  check_disjoint(out, residual_out, op, "out", "residual_out");
  at::Tensor xh, rh;
  const RowLayout xl = input_rows(x, xh);
  const RowLayout rl = input_rows(residual, rh);
  for (at::Tensor* o : {&out, &residual_out}) {
    check_no_partial_overlap(*o, xh, op, "x");
    check_no_partial_overlap(*o, rh, op, "residual");
    if (wc.defined()) check_no_partial_overlap(*o, wc, op, "weight");
  }
  const RowLayout ol = output_rows(out, op);
  const RowLayout rol = output_rows(residual_out, op);
  check_rows_fit(xl, op);
  const float feps = static_cast<float>(eps);
  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* ro = reinterpret_cast<scalar_t*>(residual_out.data_ptr());
      auto* xp = ptr_or_null<scalar_t>(xh);
      auto* rp = ptr_or_null<scalar_t>(rh);
      auto* wp = ptr_or_null<scalar_t>(wc);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::add_rms_norm<scalar_t>(o, ol.stride, ro, rol.stride, xp, xl.stride, rp, rl.stride,
                                    wp, b, e, xl.cols, feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    check_cuda(ltx_kernels::add_rms_norm<cuda_t>(
                   reinterpret_cast<cuda_t*>(out.data_ptr()), ol.stride,
                   reinterpret_cast<cuda_t*>(residual_out.data_ptr()), rol.stride,
                   ptr_or_null<cuda_t>(xh), xl.stride, ptr_or_null<cuda_t>(rh), rl.stride,
                   ptr_or_null<cuda_t>(wc), xl.rows, xl.cols, feps, stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

void layer_norm(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                const std::optional<at::Tensor>& bias, double eps) {
  constexpr const char* op = "layer_norm";
  check_x(x, op, "x", 1, eps);
  check_out(out, x, op, "out", "x");
  at::Tensor wc = vector_arg(weight, x, op, "weight");
  at::Tensor bc = vector_arg(bias, x, op, "bias");
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = input_rows(x, xh);
  check_no_partial_overlap(out, xh, op, "x");
  if (wc.defined()) check_no_partial_overlap(out, wc, op, "weight");
  if (bc.defined()) check_no_partial_overlap(out, bc, op, "bias");
  const RowLayout ol = output_rows(out, op);
  check_rows_fit(xl, op);
  const float feps = static_cast<float>(eps);
  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* xp = ptr_or_null<scalar_t>(xh);
      auto* wp = ptr_or_null<scalar_t>(wc);
      auto* bp = ptr_or_null<scalar_t>(bc);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::layer_norm<scalar_t>(o, ol.stride, xp, xl.stride, wp, bp, b, e, xl.cols, feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    check_cuda(ltx_kernels::layer_norm<cuda_t>(reinterpret_cast<cuda_t*>(out.data_ptr()),
                                               ol.stride, ptr_or_null<cuda_t>(xh), xl.stride,
                                               ptr_or_null<cuda_t>(wc), ptr_or_null<cuda_t>(bc),
                                               xl.rows, xl.cols, feps, stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

namespace {

// adaln_rms_norm and adaln_layer_norm share everything but the norm.
void adaln_impl(const char* op, bool layer, at::Tensor& out, const at::Tensor& x,
                const at::Tensor& scale, const at::Tensor& shift,
                const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                double eps) {
  check_x(x, op, "x", 2, eps);
  check_out(out, x, op, "out", "x");
  check_table_shape(scale, x, op, "scale");
  check_table_shape(shift, x, op, "shift");
  at::Tensor wc = vector_arg(weight, x, op, "weight");
  at::Tensor bc = vector_arg(bias, x, op, "bias");
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = input_rows(x, xh);
  check_no_partial_overlap(out, xh, op, "x");
  if (wc.defined()) check_no_partial_overlap(out, wc, op, "weight");
  if (bc.defined()) check_no_partial_overlap(out, bc, op, "bias");
  const Table sc = table_arg(scale, x, out, op, "scale");
  const Table sh = table_arg(shift, x, out, op, "shift");
  const RowLayout ol = output_rows(out, op);
  check_rows_fit(xl, op);
  const float feps = static_cast<float>(eps);
  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* xp = ptr_or_null<scalar_t>(xh);
      auto* wp = ptr_or_null<scalar_t>(wc);
      auto* bp = ptr_or_null<scalar_t>(bc);
      const auto st = mod_table<scalar_t>(sc), ht = mod_table<scalar_t>(sh);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        if (layer)
          cpu::adaln_layer_norm<scalar_t>(o, ol.stride, xp, xl.stride, st, ht, wp, bp, b, e,
                                          xl.cols, feps);
        else
          cpu::adaln_rms_norm<scalar_t>(o, ol.stride, xp, xl.stride, st, ht, wp, b, e, xl.cols,
                                        feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto* o = reinterpret_cast<cuda_t*>(out.data_ptr());
    const auto st = mod_table<cuda_t>(sc), ht = mod_table<cuda_t>(sh);
    check_cuda(layer ? ltx_kernels::adaln_layer_norm<cuda_t>(
                           o, ol.stride, ptr_or_null<cuda_t>(xh), xl.stride, st, ht,
                           ptr_or_null<cuda_t>(wc), ptr_or_null<cuda_t>(bc), xl.rows, xl.cols,
                           feps, stream)
                     : ltx_kernels::adaln_rms_norm<cuda_t>(
                           o, ol.stride, ptr_or_null<cuda_t>(xh), xl.stride, st, ht,
                           ptr_or_null<cuda_t>(wc), xl.rows, xl.cols, feps, stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

}  // namespace

void adaln_rms_norm(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale,
                    const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps) {
  adaln_impl("adaln_rms_norm", false, out, x, scale, shift, weight, std::nullopt, eps);
}

void adaln_layer_norm(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale,
                      const at::Tensor& shift, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, double eps) {
  adaln_impl("adaln_layer_norm", true, out, x, scale, shift, weight, bias, eps);
}

void gated_residual_adaln_rms_norm(at::Tensor& out, at::Tensor& h_out, const at::Tensor& h,
                                   const at::Tensor& y, const at::Tensor& gate,
                                   const at::Tensor& scale, const at::Tensor& shift,
                                   const std::optional<at::Tensor>& weight, double eps) {
  constexpr const char* op = "gated_residual_adaln_rms_norm";
  check_x(h, op, "h", 2, eps);
  check_like(y, h, op, "y", "h");
  check_out(out, h, op, "out", "h");
  check_out(h_out, h, op, "h_out", "h");
  // Tables are checked against x = h (messages say "x.shape" for the activation's shape).
  check_table_shape(gate, h, op, "gate");
  check_table_shape(scale, h, op, "scale");
  check_table_shape(shift, h, op, "shift");
  at::Tensor wc = vector_arg(weight, h, op, "weight");
  if (h.numel() == 0) return;
  check_disjoint(out, h_out, op, "out", "h_out");
  at::Tensor hh, yh;
  const RowLayout hl = input_rows(h, hh);
  const RowLayout yl = input_rows(y, yh);
  for (at::Tensor* o : {&out, &h_out}) {
    check_no_partial_overlap(*o, hh, op, "h");
    check_no_partial_overlap(*o, yh, op, "y");
    if (wc.defined()) check_no_partial_overlap(*o, wc, op, "weight");
  }
  const Table gt = table_arg(gate, h, out, op, "gate");
  const Table sc = table_arg(scale, h, out, op, "scale");
  const Table sh = table_arg(shift, h, out, op, "shift");
  // h_out is written before scale / shift are read: it may not share bytes with any table.
  check_disjoint(h_out, gt.holder, op, "h_out", "gate");
  check_disjoint(h_out, sc.holder, op, "h_out", "scale");
  check_disjoint(h_out, sh.holder, op, "h_out", "shift");
  const RowLayout ol = output_rows(out, op);
  const RowLayout hol = output_rows(h_out, op);
  check_rows_fit(hl, op);
  const float feps = static_cast<float>(eps);
  if (h.is_cpu()) {
    LTX_DISPATCH_FLOAT(h.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* ho = reinterpret_cast<scalar_t*>(h_out.data_ptr());
      auto* hp = ptr_or_null<scalar_t>(hh);
      auto* yp = ptr_or_null<scalar_t>(yh);
      auto* wp = ptr_or_null<scalar_t>(wc);
      const auto gtt = mod_table<scalar_t>(gt), st = mod_table<scalar_t>(sc),
                 ht = mod_table<scalar_t>(sh);
      at::parallel_for(0, hl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::gated_residual_adaln_rms_norm<scalar_t>(o, ol.stride, ho, hol.stride, hp, hl.stride,
                                                     yp, yl.stride, gtt, st, ht, wp, b, e,
                                                     hl.cols, feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(h, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(h.scalar_type(), op, {
    check_cuda(ltx_kernels::gated_residual_adaln_rms_norm<cuda_t>(
                   reinterpret_cast<cuda_t*>(out.data_ptr()), ol.stride,
                   reinterpret_cast<cuda_t*>(h_out.data_ptr()), hol.stride,
                   ptr_or_null<cuda_t>(hh), hl.stride, ptr_or_null<cuda_t>(yh), yl.stride,
                   mod_table<cuda_t>(gt), mod_table<cuda_t>(sc), mod_table<cuda_t>(sh),
                   ptr_or_null<cuda_t>(wc), hl.rows, hl.cols, feps, stream),
               op);
  });
#else
  no_cuda_backend(h, op);
#endif
}
