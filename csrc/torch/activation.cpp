// Torch adapter for the activation family: checks, row layouts, dtype dispatch, then the CPU
// backend or the CUDA core. One function per op, registered for both dispatch keys.
#include <algorithm>
#include <string>
#include <vector>

#include "common.h"
#include "ltx_kernels/cpu/activation.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/activation/activation.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

enum class Act { kGelu, kGeluTanh, kSilu };

// out = act(x), elementwise, same shape and dtype.
void elementwise(at::Tensor& out, const at::Tensor& x, Act act, const char* op) {
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  LTX_CHECK(out.sizes() == x.sizes(), op, "out must have the shape of x (got ", out.sizes(),
            " and ", x.sizes(), ")");
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = input_rows(x, xh);
  check_no_partial_overlap(out, xh, op, "x");
  const RowLayout ol = output_rows(out, op);
  check_rows_fit(xl, op);

  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* xp = reinterpret_cast<const scalar_t*>(xh.data_ptr());
      const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(xl.cols, 1));
      at::parallel_for(0, xl.rows, grain, [&](int64_t b, int64_t e) {
        switch (act) {
          case Act::kGelu: cpu::gelu<scalar_t>(o, ol.stride, xp, xl.stride, b, e, xl.cols); break;
          case Act::kGeluTanh:
            cpu::gelu_tanh<scalar_t>(o, ol.stride, xp, xl.stride, b, e, xl.cols);
            break;
          case Act::kSilu: cpu::silu<scalar_t>(o, ol.stride, xp, xl.stride, b, e, xl.cols); break;
        }
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto* o = reinterpret_cast<cuda_t*>(out.data_ptr());
    auto* xp = reinterpret_cast<const cuda_t*>(xh.data_ptr());
    cudaError_t err = cudaSuccess;
    switch (act) {
      case Act::kGelu:
        err = ltx_kernels::gelu<cuda_t>(o, ol.stride, xp, xl.stride, xl.rows, xl.cols, stream);
        break;
      case Act::kGeluTanh:
        err = ltx_kernels::gelu_tanh<cuda_t>(o, ol.stride, xp, xl.stride, xl.rows, xl.cols, stream);
        break;
      case Act::kSilu:
        err = ltx_kernels::silu<cuda_t>(o, ol.stride, xp, xl.stride, xl.rows, xl.cols, stream);
        break;
    }
    check_cuda(err, op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

// out[..., d] = act(a) * b with (a, b) the halves of x[..., 2d] in the order act_first says.
void and_mul(at::Tensor& out, const at::Tensor& x, Act act, bool act_first, const char* op) {
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  const int64_t two_d = x.size(-1);
  LTX_CHECK(two_d % 2 == 0, op, "x's last dimension must be even, [..., 2d] (got ", two_d, ")");
  const int64_t d = two_d / 2;
  std::vector<int64_t> want(x.sizes().begin(), x.sizes().end());
  want.back() = d;
  LTX_CHECK(out.sizes() == at::IntArrayRef(want), op,
            "out must have shape x.shape[:-1] + [x.shape[-1] / 2] = ", at::IntArrayRef(want),
            " (got ", out.sizes(), ")");
  if (out.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = input_rows(x, xh);
  check_no_partial_overlap(out, xh, op, "x");
  const RowLayout ol = output_rows(out, op);
  check_rows_fit(xl, op);
  const bool tanh_approx = act == Act::kGeluTanh;

  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* xp = reinterpret_cast<const scalar_t*>(xh.data_ptr());
      const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(d, 1));
      at::parallel_for(0, xl.rows, grain, [&](int64_t b, int64_t e) {
        if (act == Act::kSilu)
          cpu::silu_and_mul<scalar_t>(o, ol.stride, xp, xl.stride, b, e, d, act_first);
        else
          cpu::gelu_and_mul<scalar_t>(o, ol.stride, xp, xl.stride, b, e, d, tanh_approx, act_first);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto* o = reinterpret_cast<cuda_t*>(out.data_ptr());
    auto* xp = reinterpret_cast<const cuda_t*>(xh.data_ptr());
    const cudaError_t err =
        act == Act::kSilu
            ? ltx_kernels::silu_and_mul<cuda_t>(o, ol.stride, xp, xl.stride, xl.rows, d, act_first,
                                                stream)
            : ltx_kernels::gelu_and_mul<cuda_t>(o, ol.stride, xp, xl.stride, xl.rows, d,
                                                tanh_approx, act_first, stream);
    check_cuda(err, op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

}  // namespace

void gelu(at::Tensor& out, const at::Tensor& x) { elementwise(out, x, Act::kGelu, "gelu"); }

void gelu_tanh(at::Tensor& out, const at::Tensor& x) {
  elementwise(out, x, Act::kGeluTanh, "gelu_tanh");
}

void silu(at::Tensor& out, const at::Tensor& x) { elementwise(out, x, Act::kSilu, "silu"); }

void gelu_and_mul(at::Tensor& out, const at::Tensor& x, c10::string_view approximate,
                  bool act_first) {
  constexpr const char* op = "gelu_and_mul";
  LTX_CHECK(approximate == "none" || approximate == "tanh", op,
            "approximate must be 'none' or 'tanh' (got '", std::string(approximate), "')");
  and_mul(out, x, approximate == "tanh" ? Act::kGeluTanh : Act::kGelu, act_first, op);
}

void silu_and_mul(at::Tensor& out, const at::Tensor& x, bool act_first) {
  and_mul(out, x, Act::kSilu, act_first, "silu_and_mul");
}

void gated_attention(at::Tensor& out, const at::Tensor& x, const at::Tensor& gate_logits) {
  constexpr const char* op = "gated_attention";
  const at::Tensor& g = gate_logits;
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  check_same_dtype(g, x, op, "gate_logits", "x");
  check_same_device(g, x, op, "gate_logits", "x");
  LTX_CHECK(out.sizes() == x.sizes(), op, "out must have the shape of x (got ", out.sizes(),
            " and ", x.sizes(), ")");
  LTX_CHECK(g.dim() == x.dim() && g.sizes().slice(0, g.dim() - 1) == x.sizes().slice(0, x.dim() - 1),
            op, "gate_logits must be [..., heads] with the leading shape of x [..., heads * head_dim] (got ",
            g.sizes(), " and ", x.sizes(), ")");
  const int64_t cols = x.size(-1);
  const int64_t heads = g.size(-1);
  LTX_CHECK(heads > 0 ? cols % heads == 0 : cols == 0, op,
            "x's last dimension must be a multiple of the number of heads gate_logits.shape[-1] (got ",
            cols, " and ", heads, ")");
  if (x.numel() == 0) return;
  const int64_t head_dim = cols / heads;
  at::Tensor xh, gh;
  const RowLayout xl = input_rows(x, xh);
  const RowLayout gl = input_rows(g, gh);
  check_no_partial_overlap(out, xh, op, "x");
  check_no_partial_overlap(out, gh, op, "gate_logits");
  const RowLayout ol = output_rows(out, op);
  check_rows_fit(xl, op);

  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* xp = reinterpret_cast<const scalar_t*>(xh.data_ptr());
      auto* gp = reinterpret_cast<const scalar_t*>(gh.data_ptr());
      const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / cols);
      at::parallel_for(0, xl.rows, grain, [&](int64_t b, int64_t e) {
        cpu::gated_attention<scalar_t>(o, ol.stride, xp, xl.stride, gp, gl.stride, b, e, heads,
                                       head_dim);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto* o = reinterpret_cast<cuda_t*>(out.data_ptr());
    auto* xp = reinterpret_cast<const cuda_t*>(xh.data_ptr());
    auto* gp = reinterpret_cast<const cuda_t*>(gh.data_ptr());
    check_cuda(ltx_kernels::gated_attention<cuda_t>(o, ol.stride, xp, xl.stride, gp, gl.stride,
                                                    xl.rows, heads, head_dim, stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}
