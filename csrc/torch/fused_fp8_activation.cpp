// Torch adapter for the activations with FP8 E4M3 per-token-group output (silu_and_mul_fp8,
// gelu_and_mul_fp8, gelu_tanh_fp8, gated_attention_fp8): checks and row layouts, then one
// Fp8OutParams (quant/fused_fp8_params.h) for the CPU backend (cpu/ops.h) or the CUDA core
// (cuda/ops.h). q is float8_e4m3fn of the output's shape; what the FP8-output adapters share:
// fused_fp8.h.
#include <string>
#include <vector>

#include "checks.h"
#include "fused_fp8.h"
#include "ltx_kernels/cpu/ops.h"
#include "prepared.h"
#include "run.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

// silu_and_mul_fp8 / gelu_and_mul_fp8: x [..., 2d] -> y [..., d].
Prepared<AndMulFp8Params> make_and_mul_fp8_params(const char* op, at::Tensor& q, at::Tensor& scales,
                                                  const at::Tensor& x, bool tanh_approx, bool act_first,
                                                  int64_t group_size) {
  check_x(x, op, "x", 1);
  LTX_CHECK(x.size(-1) % 2 == 0, op, "x.shape[-1] must be even (got ", x.size(-1), ")");
  std::vector<int64_t> ysh(x.sizes().begin(), x.sizes().end());
  ysh.back() /= 2;
  check_fp8_out(q, scales, x, ysh, group_size, op);
  Prepared<AndMulFp8Params> pr;
  if (q.numel() == 0) return pr;
  AndMulFp8Params& p = pr.emplace();
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  p.op.act_first = act_first;
  p.op.tanh_approx = tanh_approx;
  return pr;
}

bool gelu_tanh_approx(c10::string_view approximate, const char* op) {
  const std::string a(approximate.data(), approximate.size());
  LTX_CHECK(a == "none" || a == "tanh", op, "approximate must be 'none' or 'tanh' (got '", a, "')");
  return a == "tanh";
}

Prepared<ActivationFp8Params> make_gelu_tanh_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                        int64_t group_size) {
  constexpr const char* op = "gelu_tanh_fp8";
  check_x(x, op, "x", 1);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  Prepared<ActivationFp8Params> pr;
  if (x.numel() > 0) set_fp8_rows(pr, pr.emplace(), x, q, scales, group_size, op);
  return pr;
}

Prepared<GatedAttentionFp8Params> make_gated_attention_fp8_params(at::Tensor& q, at::Tensor& scales,
                                                                  const at::Tensor& x, const at::Tensor& gate_logits,
                                                                  int64_t group_size) {
  constexpr const char* op = "gated_attention_fp8";
  check_x(x, op, "x", 1);
  check_same_device(gate_logits, x, op, "gate_logits", "x");
  check_same_dtype(gate_logits, x, op, "gate_logits", "x");
  LTX_CHECK(gate_logits.dim() == x.dim() && gate_logits.size(-1) >= 1 &&
                gate_logits.sizes().slice(0, x.dim() - 1) == x.sizes().slice(0, x.dim() - 1) &&
                x.size(-1) % gate_logits.size(-1) == 0,
            op, "gate_logits must be [..., H] with x's leading shape and H dividing x.shape[-1] (got ",
            shape_str(gate_logits.sizes()), " for x ", shape_str(x.sizes()), ")");
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  Prepared<GatedAttentionFp8Params> pr;
  if (x.numel() == 0) return pr;
  GatedAttentionFp8Params& p = pr.emplace();
  p.op.heads = gate_logits.size(-1);
  p.op.head_dim = x.size(-1) / p.op.heads;
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  p.op.gate = in_rows(pr.rows_source(gate_logits));
  return pr;
}

}  // namespace

void silu_and_mul_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, bool act_first, int64_t group_size) {
  run_cpu(make_and_mul_fp8_params("silu_and_mul_fp8", q, scales, x, false, act_first, group_size),
          cpu::silu_and_mul_fp8);
}

void gelu_and_mul_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, c10::string_view approximate,
                          bool act_first, int64_t group_size) {
  const bool tanh_approx = gelu_tanh_approx(approximate, "gelu_and_mul_fp8");
  run_cpu(make_and_mul_fp8_params("gelu_and_mul_fp8", q, scales, x, tanh_approx, act_first, group_size),
          cpu::gelu_and_mul_fp8);
}

void gelu_tanh_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size) {
  run_cpu(make_gelu_tanh_fp8_params(q, scales, x, group_size), cpu::gelu_tanh_fp8);
}

void gated_attention_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& gate_logits,
                             int64_t group_size) {
  run_cpu(make_gated_attention_fp8_params(q, scales, x, gate_logits, group_size), cpu::gated_attention_fp8);
}

#ifdef LTX_KERNELS_WITH_CUDA
void silu_and_mul_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, bool act_first,
                           int64_t group_size) {
  run_fp8_cuda(make_and_mul_fp8_params("silu_and_mul_fp8", q, scales, x, false, act_first, group_size), x,
               "silu_and_mul_fp8", ltx_kernels::silu_and_mul_fp8);
}

void gelu_and_mul_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, c10::string_view approximate,
                           bool act_first, int64_t group_size) {
  const bool tanh_approx = gelu_tanh_approx(approximate, "gelu_and_mul_fp8");
  run_fp8_cuda(make_and_mul_fp8_params("gelu_and_mul_fp8", q, scales, x, tanh_approx, act_first, group_size), x,
               "gelu_and_mul_fp8", ltx_kernels::gelu_and_mul_fp8);
}

void gelu_tanh_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size) {
  run_fp8_cuda(make_gelu_tanh_fp8_params(q, scales, x, group_size), x, "gelu_tanh_fp8", ltx_kernels::gelu_tanh_fp8);
}

void gated_attention_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& gate_logits,
                              int64_t group_size) {
  run_fp8_cuda(make_gated_attention_fp8_params(q, scales, x, gate_logits, group_size), x, "gated_attention_fp8",
               ltx_kernels::gated_attention_fp8);
}
#endif
