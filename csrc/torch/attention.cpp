// Torch adapter for dense attention: every check of the arguments (naming the op and the rule),
// one AttentionParams, the backend chosen once (choose_attn_backend, attention/heuristics.h),
// then that backend:
//   "cpu"   the C++ CPU backend (csrc/cpu/attention), (batch, head) pairs in parallel;
//   "sm90"  the sm_90a TMA + wgmma kernel (csrc/cuda/attention, builds with LTX_KERNELS_HAS_SM90);
//   "torch" the op attention_torch, which torch-ext/ltx_kernels/attention.py implements (the
//           inputs dequantized to fp32 through PyTorch's scaled_dot_product_attention).
// Inputs a backend cannot address (CPU: head-dim stride != 1; sm90: also strides or bases not
// 16-byte aligned) are copied once; an `out` it cannot address is computed into a temporary and
// copied. quantize_attention_fp8 is in attention_quant.cpp.
#include <ATen/core/dispatch/Dispatcher.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention_common.h"
#include "ltx_kernels/attention/heuristics.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/attention/attention_cuda.h"
#endif

#define LTX_ATTN_STR_(x) #x
#define LTX_ATTN_STR(x) LTX_ATTN_STR_(x)

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr const char* kOp = "attention";

// One checked call: sizes, dtypes and options in p (pointers and strides are bound by the backend
// that runs it, on the tensors it can address).
struct Problem {
  AttentionParams p;
  bool bhsd = false;
  bool fp8 = false;
  at::Tensor q, k, v, out, kv_lengths, key_bias, q_descale, k_descale, v_descale;
};

void check_descale(const at::Tensor& t, std::initializer_list<int64_t> shape, const at::Tensor& q, const char* name,
                   const char* rule) {
  const char* op = kOp;
  LTX_CHECK(t.scalar_type() == at::kFloat, op, name, " must be float32 (got ", t.scalar_type(), ")");
  check_same_device(t, q, op, name, "q");
  LTX_CHECK(t.sizes() == c10::IntArrayRef(shape), op, name, " must have shape ", rule, " = ",
            shape_str(c10::IntArrayRef(shape)), " (got ", shape_str(t.sizes()), ")");
}

Problem make_problem(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     double scale, const std::optional<at::Tensor>& kv_lengths,
                     const std::optional<at::Tensor>& key_bias, const std::optional<at::Tensor>& q_descale,
                     const std::optional<at::Tensor>& k_descale, const std::optional<at::Tensor>& v_descale,
                     int64_t k_block, c10::string_view layout) {
  const char* op = kOp;
  const QkvSizes s = check_qkv(q, k, v, layout, true, "bfloat16, float16, float32 or float8_e4m3fn", op);
  const int64_t B = s.B, Sq = s.Sq, H = s.H, D = s.D, Skv = s.Skv, Hk = s.Hk;
  check_same_device(out, q, op, "out", "q");
  Problem pr;
  pr.bhsd = s.bhsd;
  pr.fp8 = q.scalar_type() == at::kFloat8_e4m3fn;
  if (pr.fp8) {
    LTX_CHECK(v.size(0) == B && v.size(1) == Hk && v.size(2) == D && v.size(3) >= Skv && v.size(3) % 32 == 0 &&
                  v.stride(3) == 1,
              op,
              "float8 v must be the transposed layout quantize_attention_fp8 writes, [B, Hkv, D, Skv_pad] with "
              "Skv_pad >= Skv a multiple of 32 and keys contiguous (got shape ",
              shape_str(v.sizes()), " for Skv = ", Skv, ")");
    LTX_CHECK(out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kHalf, op,
              "out must be bfloat16 or float16 for float8 inputs (got ", out.scalar_type(), ")");
    LTX_CHECK(q_descale.has_value() && k_descale.has_value() && v_descale.has_value(), op,
              "float8_e4m3fn inputs need q_descale, k_descale and v_descale");
    LTX_CHECK(k_block == 1 || k_block == 128, op, "k_block must be 1 (a k factor per key) or 128 (got ", k_block, ")");
    check_descale(*q_descale, {B, Sq, H}, q, "q_descale", "[B, Sq, H]");
    check_descale(*k_descale, {B, k_block == 1 ? Skv : (Skv + 127) / 128, Hk}, q, "k_descale",
                  k_block == 1 ? "[B, Skv, Hkv]" : "[B, ceil(Skv / 128), Hkv]");
    check_descale(*v_descale, {B, Hk, D}, q, "v_descale", "[B, Hkv, D]");
    pr.q_descale = *q_descale;
    pr.k_descale = *k_descale;
    pr.v_descale = *v_descale;
  } else {
    LTX_CHECK(out.scalar_type() == q.scalar_type(), op, "out must have q's dtype (got ", out.scalar_type(), " and ",
              q.scalar_type(), ")");
    LTX_CHECK(!q_descale.has_value() && !k_descale.has_value() && !v_descale.has_value(), op,
              "q_descale, k_descale and v_descale are for float8_e4m3fn inputs only");
  }
  LTX_CHECK(out.sizes() == q.sizes(), op, "out must have q's shape (got ", shape_str(out.sizes()), " and ",
            shape_str(q.sizes()), ")");
  LTX_CHECK(scale > 0.0 && std::isfinite(scale), op, "scale must be finite and > 0 (got ", scale, ")");
  LTX_CHECK(Sq < INT32_MAX && Skv < INT32_MAX, op, "sequence lengths must be < 2^31 (got ", Sq, " and ", Skv, ")");
  if (kv_lengths.has_value()) {
    const at::Tensor& t = *kv_lengths;
    LTX_CHECK(t.scalar_type() == at::kInt || t.scalar_type() == at::kLong, op,
              "kv_lengths must be int32 or int64 (got ", t.scalar_type(), ")");
    check_same_device(t, q, op, "kv_lengths", "q");
    LTX_CHECK(t.dim() == 1 && t.size(0) == B, op, "kv_lengths must have shape [B] = [", B, "] (got ",
              shape_str(t.sizes()), ")");
    pr.kv_lengths = t.to(at::kInt).contiguous();
  }
  if (key_bias.has_value()) {
    const at::Tensor& t = *key_bias;
    LTX_CHECK(t.scalar_type() == at::kFloat, op, "key_bias must be float32 (got ", t.scalar_type(), ")");
    check_same_device(t, q, op, "key_bias", "q");
    LTX_CHECK(t.dim() == 2 && t.size(0) == B && t.size(1) == Skv, op, "key_bias must have shape [B, Skv] = [", B,
              ", ", Skv, "] (got ", shape_str(t.sizes()), ")");
    pr.key_bias = t.stride(1) == 1 ? t : t.contiguous();
  }
  check_no_partial_overlap(out, q, op, "q");
  LTX_CHECK(!bytes_overlap(out, k) && !bytes_overlap(out, v), op, "out must not overlap k or v");

  AttentionParams& p = pr.p;
  set_sizes(p, s);
  p.dtype = attn_dtype(q.scalar_type());
  p.out_dtype = attn_dtype(out.scalar_type());
  p.scale = float(scale);
  p.k_block = k_block;
  p.v_keys_padded = pr.fp8 ? v.size(3) : 0;
  // developer setting (common/dev_config.h): the sm_90 kernel's warpgroup schedule forced (0 / 1)
  if (const std::string e = dev_setting("LTX_KERNELS_ATTENTION_PINGPONG"); !e.empty())
    p.pingpong = std::atoi(e.c_str()) != 0 ? 1 : 0;
  // developer setting: the 16-bit kernels' persistent schedule forced (1) or refused (0)
  if (const std::string e = dev_setting("LTX_KERNELS_ATTENTION_PERSISTENT"); !e.empty())
    p.persistent = std::atoi(e.c_str()) != 0 ? 1 : 0;
  pr.q = q;
  pr.k = k;
  pr.v = v;
  pr.out = out;
  return pr;
}

AttnBackend parse_backend(c10::string_view backend) {
  const std::string_view name(backend.data(), backend.size());
  AttnBackend requested = AttnBackend::kAuto;
  if (!parse_attn_backend(name, &requested)) {
    std::string names;  // the registry's names (attention/heuristics.h)
    const size_t n = std::size(kAttnBackendChoices);
    for (size_t i = 0; i < n; ++i)
      names += std::string(i == 0 ? "'" : i + 1 == n ? " or '" : ", '") + attn_backend_name(kAttnBackendChoices[i]) + "'";
    LTX_CHECK(false, kOp, "backend must be ", names, " (got '", std::string(name), "')");
  }
  return requested;
}

// The backend that runs the call: the requested one, or "auto"'s choice (attention/heuristics.h).
AttnBackend choose_backend(const Problem& pr, AttnBackend requested) {
  AttnBackendFacts facts;
  facts.cuda = pr.q.is_cuda();
#ifdef LTX_KERNELS_HAS_SM90
  facts.sm90_built = true;
  if (facts.cuda) facts.sm90_why_not = attention_sm90_why_not(pr.p, device_cc(pr.q));
#endif
  const AttnBackendChoice c = choose_attn_backend(requested, facts);
  LTX_CHECK(c.why_not == nullptr, kOp, "backend '", attn_backend_name(requested), "' cannot run this call (",
            c.why_not, ")");
  return c.backend;
}

// Pointers and strides of the tensors in pr (inputs the backend can address) into p.
void bind(Problem& pr) {
  AttentionParams& p = pr.p;
  p.q = pr.q.data_ptr();
  p.k = pr.k.data_ptr();
  p.v = pr.v.data_ptr();
  p.out = pr.out.data_ptr();
  p.q_stride = bsh_strides(pr.q, pr.bhsd);
  p.k_stride = bsh_strides(pr.k, pr.bhsd);
  p.out_stride = bsh_strides(pr.out, pr.bhsd);
  if (pr.fp8) {
    p.v_stride = AttnStrides{pr.v.stride(0), pr.v.stride(2), pr.v.stride(1)};  // (b, channel, h)
    p.q_descale = pr.q_descale.data_ptr<float>();
    p.k_descale = pr.k_descale.data_ptr<float>();
    p.v_descale = pr.v_descale.data_ptr<float>();
    p.q_descale_stride = {pr.q_descale.stride(0), pr.q_descale.stride(1), pr.q_descale.stride(2)};
    p.k_descale_stride = {pr.k_descale.stride(0), pr.k_descale.stride(1), pr.k_descale.stride(2)};
    p.v_descale_stride = {pr.v_descale.stride(0), pr.v_descale.stride(2), pr.v_descale.stride(1)};
  } else {
    p.v_stride = bsh_strides(pr.v, pr.bhsd);
  }
  p.kv_lengths = pr.kv_lengths.defined() ? pr.kv_lengths.data_ptr<int32_t>() : nullptr;
  p.key_bias = pr.key_bias.defined() ? pr.key_bias.data_ptr<float>() : nullptr;
  p.key_bias_stride_b = pr.key_bias.defined() ? pr.key_bias.stride(0) : 0;
}

void run_cpu_backend(Problem& pr) {
  pr.q = rows(pr.q);
  pr.k = rows(pr.k);
  if (!pr.fp8) pr.v = rows(pr.v);  // (FP8: V^T rows of keys, contiguous: checked)
  const at::Tensor final_out = pr.out;
  if (pr.out.size(3) > 1 && pr.out.stride(3) != 1) pr.out = at::empty_like(pr.out, at::MemoryFormat::Contiguous);
  bind(pr);
  const AttentionParams p = pr.p;
  at::parallel_for(0, p.batch * p.heads, 1, [&](int64_t b, int64_t e) { cpu::attention_forward(p, b, e); });
  if (!pr.out.is_same(final_out)) final_out.copy_(pr.out);
}

#ifdef LTX_KERNELS_HAS_SM90
// A copy of t (4-byte elements) whose rows of the last dimension start 16 bytes apart: that
// dimension padded to a multiple of 4 elements, the copy a view of its first size(-1).
at::Tensor padded_rows(const at::Tensor& t) {
  std::vector<int64_t> sizes = t.sizes().vec();
  const int64_t n = sizes.back();
  sizes.back() = (n + 3) / 4 * 4;
  return at::empty(sizes, t.options()).narrow(-1, 0, n).copy_(t);
}
#endif

void run_sm90(Problem& pr) {
#ifdef LTX_KERNELS_HAS_SM90
  const CudaScope scope(pr.q, kOp);
  pr.q = addressable(pr.q);
  pr.k = addressable(pr.k);
  pr.v = addressable(pr.v);  // (FP8: V^T [B, Hkv, D, keys], keys contiguous)
  if (pr.fp8 && pr.p.k_block == 1) {  // per-key factors are loaded by TMA: (heads, keys, batch), heads contiguous
    const at::Tensor& kd = pr.k_descale;
    const bool ok = reinterpret_cast<uintptr_t>(kd.data_ptr()) % 16 == 0 && (kd.size(2) <= 1 || kd.stride(2) == 1) &&
                    (kd.size(1) <= 1 || (kd.stride(1) > 0 && kd.stride(1) % 4 == 0)) &&
                    (kd.size(0) <= 1 || (kd.stride(0) > 0 && kd.stride(0) % 4 == 0));
    if (!ok) pr.k_descale = padded_rows(kd);  // heads padded to 4 (never read: the tensor map ends at Hkv)
  }
  if (pr.key_bias.defined()) {  // loaded by TMA: 16-byte aligned rows (ltx_kernels.attention makes them so)
    const at::Tensor& kb = pr.key_bias;
    const bool ok = reinterpret_cast<uintptr_t>(kb.data_ptr()) % 16 == 0 &&
                    (kb.size(0) <= 1 || (kb.stride(0) > 0 && kb.stride(0) % 4 == 0));
    if (!ok) pr.key_bias = padded_rows(kb);  // keys padded to 4 (never read: the tensor map ends at Skv)
  }
  const at::Tensor final_out = pr.out;
  if (!out_addressable(pr.out)) pr.out = at::empty_like(pr.out, at::MemoryFormat::Contiguous);
  bind(pr);
  check_cuda(attention_forward_sm90(pr.p, scope.stream), kOp);
  if (!pr.out.is_same(final_out)) final_out.copy_(pr.out);
#else
  LTX_CHECK(false, kOp, "this build has no sm_90a kernels (internal error: chosen for ", pr.q.device(), ")");
#endif
}

std::optional<at::Tensor> opt(const at::Tensor& t) { return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt; }

// "torch": the op attention_torch, whose implementation the Python package registers (written
// once, in torch-ext/ltx_kernels/attention.py), on the checked arguments.
void run_torch(Problem& pr) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow(LTX_ATTN_STR(TORCH_EXTENSION_NAME) "::attention_torch", "")
          .typed<void(at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, double,
                      const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                      const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                      const std::optional<at::Tensor>&, int64_t, c10::string_view)>();
  op.call(pr.out, pr.q, pr.k, pr.v, double(pr.p.scale), opt(pr.kv_lengths), opt(pr.key_bias), opt(pr.q_descale),
          opt(pr.k_descale), opt(pr.v_descale), pr.p.k_block, pr.bhsd ? "bhsd" : "bshd");
}

}  // namespace

// Both dispatch keys (every tensor is on q's device, checked).
void attention(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
               const std::optional<at::Tensor>& kv_lengths, const std::optional<at::Tensor>& key_bias,
               const std::optional<at::Tensor>& q_descale, const std::optional<at::Tensor>& k_descale,
               const std::optional<at::Tensor>& v_descale, int64_t k_block, c10::string_view layout,
               c10::string_view backend) {
  const AttnBackend requested = parse_backend(backend);
  Problem pr = make_problem(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block, layout);
  const AttnBackend be = choose_backend(pr, requested);
  if (out.numel() == 0) return;
  if (pr.p.seqlen_kv == 0) {  // no keys: every row is 0
    out.zero_();
    return;
  }
  switch (be) {
    case AttnBackend::kCpu: return run_cpu_backend(pr);
    case AttnBackend::kSm90: return run_sm90(pr);
    default: return run_torch(pr);
  }
}

std::string attention_backend(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              double scale, const std::optional<at::Tensor>& kv_lengths,
                              const std::optional<at::Tensor>& key_bias, const std::optional<at::Tensor>& q_descale,
                              const std::optional<at::Tensor>& k_descale, const std::optional<at::Tensor>& v_descale,
                              int64_t k_block, c10::string_view layout, c10::string_view backend) {
  const AttnBackend requested = parse_backend(backend);
  const Problem pr =
      make_problem(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block, layout);
  return attn_backend_name(choose_backend(pr, requested));
}
