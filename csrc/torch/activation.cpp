// Torch adapter for the activation family: checks, then one params struct (activation/
// activation_params.h) for the CPU backend (cpu/ops.h) or the CUDA core
// (cuda/ops.h).
#include <string>
#include <vector>

#include "common.h"
#include "ltx_kernels/cpu/ops.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

// gelu, gelu_tanh, silu: out = act(x), elementwise, same shape and dtype.
Prepared<ActivationParams> make_activation_params(at::Tensor& out, const at::Tensor& x, const char* op) {
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  LTX_CHECK(out.sizes() == x.sizes(), op, "out must have the shape of x (got ", out.sizes(),
            " and ", x.sizes(), ")");
  Prepared<ActivationParams> pr;
  if (x.numel() == 0) return pr;
  set_rows(pr, pr.emplace(), out, x, op);
  return pr;
}

// gelu_and_mul, silu_and_mul: out[..., d] = act(a) * b, (a, b) the halves of x[..., 2d].
Prepared<AndMulParams> make_and_mul_params(at::Tensor& out, const at::Tensor& x, bool act_first,
                                           bool tanh_approx, const char* op) {
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  const int64_t two_d = x.size(-1);
  LTX_CHECK(two_d % 2 == 0, op, "x's last dimension must be even, [..., 2d] (got ", two_d, ")");
  std::vector<int64_t> want(x.sizes().begin(), x.sizes().end());
  want.back() = two_d / 2;
  LTX_CHECK(out.sizes() == at::IntArrayRef(want), op,
            "out must have shape x.shape[:-1] + [x.shape[-1] / 2] = ", at::IntArrayRef(want),
            " (got ", out.sizes(), ")");
  Prepared<AndMulParams> pr;
  if (out.numel() == 0) return pr;
  AndMulParams& p = pr.emplace();
  set_rows(pr, p, out, x, op);
  p.act_first = act_first;
  p.tanh_approx = tanh_approx;
  return pr;
}

bool gelu_tanh_approx(c10::string_view approximate, const char* op) {
  LTX_CHECK(approximate == "none" || approximate == "tanh", op,
            "approximate must be 'none' or 'tanh' (got '", std::string(approximate), "')");
  return approximate == "tanh";
}

Prepared<GatedAttentionParams> make_gated_attention_params(at::Tensor& out, const at::Tensor& x,
                                                           const at::Tensor& g) {
  constexpr const char* op = "gated_attention";
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
  Prepared<GatedAttentionParams> pr;
  if (x.numel() == 0) return pr;
  const at::Tensor& xh = pr.rows_source(x);
  const at::Tensor& gh = pr.rows_source(g);
  check_no_partial_overlap(out, xh, op, "x");
  check_no_partial_overlap(out, gh, op, "gate_logits");
  GatedAttentionParams& p = pr.emplace();
  p.dtype = dtype_of(x);
  p.x = in_rows(xh);
  p.gate = in_rows(gh);
  p.out = out_rows(out, op);
  check_rows_fit(p.x.layout, op);
  p.heads = heads;
  p.head_dim = cols / heads;
  return pr;
}

}  // namespace

void gelu_cpu(at::Tensor& out, const at::Tensor& x) { run_cpu(make_activation_params(out, x, "gelu"), cpu::gelu); }
void gelu_tanh_cpu(at::Tensor& out, const at::Tensor& x) {
  run_cpu(make_activation_params(out, x, "gelu_tanh"), cpu::gelu_tanh);
}
void silu_cpu(at::Tensor& out, const at::Tensor& x) { run_cpu(make_activation_params(out, x, "silu"), cpu::silu); }

void gelu_and_mul_cpu(at::Tensor& out, const at::Tensor& x, c10::string_view approximate, bool act_first) {
  const bool tanh_approx = gelu_tanh_approx(approximate, "gelu_and_mul");
  run_cpu(make_and_mul_params(out, x, act_first, tanh_approx, "gelu_and_mul"), cpu::gelu_and_mul);
}

void silu_and_mul_cpu(at::Tensor& out, const at::Tensor& x, bool act_first) {
  run_cpu(make_and_mul_params(out, x, act_first, false, "silu_and_mul"), cpu::silu_and_mul);
}

void gated_attention_cpu(at::Tensor& out, const at::Tensor& x, const at::Tensor& gate_logits) {
  run_cpu(make_gated_attention_params(out, x, gate_logits), cpu::gated_attention);
}

#ifdef LTX_KERNELS_WITH_CUDA
void gelu_cuda(at::Tensor& out, const at::Tensor& x) {
  run_cuda(make_activation_params(out, x, "gelu"), x, "gelu", ltx_kernels::gelu);
}
void gelu_tanh_cuda(at::Tensor& out, const at::Tensor& x) {
  run_cuda(make_activation_params(out, x, "gelu_tanh"), x, "gelu_tanh", ltx_kernels::gelu_tanh);
}
void silu_cuda(at::Tensor& out, const at::Tensor& x) {
  run_cuda(make_activation_params(out, x, "silu"), x, "silu", ltx_kernels::silu);
}

void gelu_and_mul_cuda(at::Tensor& out, const at::Tensor& x, c10::string_view approximate, bool act_first) {
  const bool tanh_approx = gelu_tanh_approx(approximate, "gelu_and_mul");
  run_cuda(make_and_mul_params(out, x, act_first, tanh_approx, "gelu_and_mul"), x, "gelu_and_mul",
           ltx_kernels::gelu_and_mul);
}

void silu_and_mul_cuda(at::Tensor& out, const at::Tensor& x, bool act_first) {
  run_cuda(make_and_mul_params(out, x, act_first, false, "silu_and_mul"), x, "silu_and_mul",
           ltx_kernels::silu_and_mul);
}

void gated_attention_cuda(at::Tensor& out, const at::Tensor& x, const at::Tensor& gate_logits) {
  run_cuda(make_gated_attention_params(out, x, gate_logits), x, "gated_attention", ltx_kernels::gated_attention);
}
#endif
