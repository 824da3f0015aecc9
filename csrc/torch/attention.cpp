// Torch adapter for dense attention: checks (naming the op and the rule), one AttentionParams,
// then a backend:
//   "cpu"   the C++ CPU backend (csrc/cpu/attention), (batch, head) pairs in parallel;
//   "sm90"  the sm_90a TMA + wgmma kernel (built with LTX_KERNELS_HAS_SM90, device cc 9.0);
//   "torch" the inputs dequantized to fp32 and PyTorch's scaled_dot_product_attention with the
//           key mask as an additive bias (any device: the correct path for other GPUs).
// "auto" takes sm90 when it can run the call, else torch on CUDA, cpu on the CPU. Inputs the
// kernel cannot address (head-dim stride != 1, strides or bases not 16-byte aligned) are copied
// once; an `out` it cannot address is computed into a temporary and copied.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "common.h"
#include "ltx_kernels/attention/attention.h"
#include "ltx_kernels/attention/attention_quant.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/attention/attention_cuda.h"
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

enum class Backend : int64_t { kCpu = 0, kTorch = 1, kSm90 = 2 };

Backend parse_backend(c10::string_view s, const char* op) {
  const std::string b(s.data(), s.size());
  if (b == "auto" || b == "cpu") return Backend::kCpu;
  if (b == "torch") return Backend::kTorch;
  if (b == "sm90") return Backend::kSm90;
  LTX_CHECK(false, op, "backend must be 'auto', 'sm90', 'torch' or 'cpu' (got '", b, "')");
  return Backend::kCpu;
}

AttnDtype attn_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return AttnDtype::kBF16;
    case at::kHalf: return AttnDtype::kFP16;
    case at::kFloat8_e4m3fn: return AttnDtype::kE4M3;
    default: return AttnDtype::kFP32;
  }
}

// (b, s, h) strides of a [B, S, H, D] ("bshd") or [B, H, S, D] ("bhsd") tensor.
AttnStrides bsh_strides(const at::Tensor& t, bool bhsd) {
  return bhsd ? AttnStrides{t.stride(0), t.stride(2), t.stride(1)} : AttnStrides{t.stride(0), t.stride(1), t.stride(2)};
}

// What a TMA tensor map of a 4-D tensor reads: the last dimension contiguous, the other strides
// positive multiples of 16 bytes (no zero strides: expanded dimensions are not addressable), a
// 16-byte aligned base.
bool out_addressable(const at::Tensor& t) {
  const int64_t es = t.element_size();
  bool ok = (t.size(3) <= 1 || t.stride(3) == 1) && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
  for (int d = 0; ok && d < 3; ++d) ok = t.size(d) <= 1 || (t.stride(d) > 0 && (t.stride(d) * es) % 16 == 0);
  return ok;
}

// An input as such a tensor: itself, else a contiguous copy (a fresh allocation: `contiguous()`
// would return a contiguous tensor on a misaligned base unchanged).
at::Tensor addressable(const at::Tensor& t) {
  return t.dim() == 4 && out_addressable(t) ? t : t.clone(at::MemoryFormat::Contiguous);
}

struct Problem {
  AttentionParams p;
  bool bhsd = false;
  bool fp8 = false;
  at::Tensor q, k, v, out, kv_lengths, key_bias, q_descale, k_descale, v_descale;
};

void check_descale(const at::Tensor& t, std::initializer_list<int64_t> shape, const at::Tensor& q, const char* op,
                   const char* name, const char* rule) {
  LTX_CHECK(t.scalar_type() == at::kFloat, op, name, " must be float32 (got ", t.scalar_type(), ")");
  check_same_device(t, q, op, name, "q");
  LTX_CHECK(t.sizes() == c10::IntArrayRef(shape), op, name, " must have shape ", rule, " = ",
            shape_str(c10::IntArrayRef(shape)), " (got ", shape_str(t.sizes()), ")");
}

Problem prepare(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                const std::optional<at::Tensor>& kv_lengths, const std::optional<at::Tensor>& key_bias,
                const std::optional<at::Tensor>& q_descale, const std::optional<at::Tensor>& k_descale,
                const std::optional<at::Tensor>& v_descale, int64_t k_block, c10::string_view layout,
                const char* op) {
  Problem pr;
  const std::string lay(layout.data(), layout.size());
  LTX_CHECK(lay == "bshd" || lay == "bhsd", op, "layout must be 'bshd' ([B, S, H, D]) or 'bhsd' ([B, H, S, D]) (got '",
            lay, "')");
  pr.bhsd = lay == "bhsd";
  const char* shp = pr.bhsd ? "[B, H, S, D]" : "[B, S, H, D]";
  LTX_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op, "q, k and v must be 4-D ", shp, " (got shapes ",
            shape_str(q.sizes()), ", ", shape_str(k.sizes()), ", ", shape_str(v.sizes()), ")");
  const at::ScalarType qt = q.scalar_type();
  pr.fp8 = qt == at::kFloat8_e4m3fn;
  LTX_CHECK(qt == at::kBFloat16 || qt == at::kHalf || qt == at::kFloat || pr.fp8, op,
            "q must be bfloat16, float16, float32 or float8_e4m3fn (got ", qt, ")");
  check_same_dtype(k, q, op, "k", "q");
  check_same_dtype(v, q, op, "v", "q");
  check_same_device(k, q, op, "k", "q");
  check_same_device(v, q, op, "v", "q");
  check_same_device(out, q, op, "out", "q");
  LTX_CHECK(q.is_cpu() || q.is_cuda(), op, "tensors must be on the CPU or a CUDA device (got ", q.device(), ")");
  const int64_t B = q.size(0), Sq = q.size(pr.bhsd ? 2 : 1), H = q.size(pr.bhsd ? 1 : 2), D = q.size(3);
  const int64_t Skv = k.size(pr.bhsd ? 2 : 1), Hk = k.size(pr.bhsd ? 1 : 2);
  LTX_CHECK(k.size(0) == B && k.size(3) == D, op, "k must be ", shp, " with q's batch and head dim (got q ",
            shape_str(q.sizes()), ", k ", shape_str(k.sizes()), ")");
  LTX_CHECK(Hk > 0 ? H % Hk == 0 : H == 0, op, "q's heads must be a multiple of k's heads (got ", H, " and ", Hk, ")");
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
    check_descale(*q_descale, {B, Sq, H}, q, op, "q_descale", "[B, Sq, H]");
    check_descale(*k_descale, {B, k_block == 1 ? Skv : (Skv + 127) / 128, Hk}, q, op, "k_descale",
                  k_block == 1 ? "[B, Skv, Hkv]" : "[B, ceil(Skv / 128), Hkv]");
    check_descale(*v_descale, {B, Hk, D}, q, op, "v_descale", "[B, Hkv, D]");
  } else {
    LTX_CHECK(v.sizes() == k.sizes(), op, "v must have k's shape (got k ", shape_str(k.sizes()), ", v ",
              shape_str(v.sizes()), ")");
    LTX_CHECK(out.scalar_type() == qt, op, "out must have q's dtype (got ", out.scalar_type(), " and ", qt, ")");
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
  p.batch = B;
  p.seqlen_q = Sq;
  p.seqlen_kv = Skv;
  p.heads = H;
  p.heads_kv = Hk;
  p.head_dim = D;
  p.dtype = attn_dtype(qt);
  p.out_dtype = attn_dtype(out.scalar_type());
  p.scale = float(scale);
  p.k_block = k_block;
  // developer settings (common/dev_config.h): the sm_90 kernel's warpgroup schedule forced (0 / 1),
  // a configuration under study (tuning builds)
  if (const std::string e = dev_setting("LTX_KERNELS_ATTENTION_PINGPONG"); !e.empty())
    p.pingpong = std::atoi(e.c_str()) != 0 ? 1 : 0;
  if (const std::string e = dev_setting("LTX_KERNELS_ATTENTION_TILE"); !e.empty()) p.tile = std::atoi(e.c_str());
  // every backend reads rows of D contiguous elements (FP8 V^T: rows of keys, checked above)
  auto rows = [](const at::Tensor& t) { return t.size(3) <= 1 || t.stride(3) == 1 ? t : t.contiguous(); };
  pr.q = rows(q);
  pr.k = rows(k);
  pr.v = pr.fp8 ? v : rows(v);
  pr.out = out;
  if (pr.fp8) {
    pr.q_descale = *q_descale;
    pr.k_descale = *k_descale;
    pr.v_descale = *v_descale;
    p.q_descale = pr.q_descale.data_ptr<float>();
    p.k_descale = pr.k_descale.data_ptr<float>();
    p.v_descale = pr.v_descale.data_ptr<float>();
    p.v_keys_padded = v.size(3);
  }
  const char* why = attention_check(p);
  LTX_CHECK(why == nullptr, op, why);
  return pr;
}

// Pointers and strides of the (possibly copied) tensors into p.
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
    p.v_keys_padded = pr.v.size(3);
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

// ---- "torch": dequantize to fp32, PyTorch SDPA, rows without a valid key set to 0.
at::Tensor to_bhsd(const at::Tensor& t, bool bhsd) { return bhsd ? t : t.transpose(1, 2); }

void run_torch(Problem& pr) {
  const AttentionParams& p = pr.p;
  const int64_t group = p.heads / p.heads_kv;
  at::Tensor q = to_bhsd(pr.q, pr.bhsd).to(at::kFloat);  // [B, H, Sq, D]
  at::Tensor k = to_bhsd(pr.k, pr.bhsd).to(at::kFloat);  // [B, Hk, Skv, D]
  at::Tensor v;
  if (pr.fp8) {
    q = q * pr.q_descale.transpose(1, 2).unsqueeze(-1);
    at::Tensor kd = pr.k_descale;  // [B, Skv or nb, Hk]
    if (p.k_block != 1) kd = kd.repeat_interleave(p.k_block, 1).narrow(1, 0, p.seqlen_kv);
    k = k * kd.transpose(1, 2).unsqueeze(-1);
    // keys of each 32-key block of V^T are in fp8_v_key_order: gather them back
    std::vector<int64_t> pos(size_t(p.seqlen_kv));
    int inv[32];
    for (int i = 0; i < 32; ++i) inv[fp8_v_key_order(i)] = i;
    for (int64_t j = 0; j < p.seqlen_kv; ++j) pos[size_t(j)] = (j / 32) * 32 + inv[j % 32];
    const at::Tensor idx = at::tensor(pos, at::TensorOptions().dtype(at::kLong)).to(pr.v.device());
    v = (pr.v.to(at::kFloat) * pr.v_descale.unsqueeze(-1)).index_select(3, idx).transpose(2, 3);  // [B,Hk,Skv,D]
  } else {
    v = to_bhsd(pr.v, pr.bhsd).to(at::kFloat);
  }
  if (group > 1) {
    k = k.repeat_interleave(group, 1);
    v = v.repeat_interleave(group, 1);
  }
  at::Tensor mask = at::zeros({p.batch, 1, 1, p.seqlen_kv}, q.options());
  if (pr.key_bias.defined()) mask = mask + pr.key_bias.view({p.batch, 1, 1, p.seqlen_kv});
  if (pr.kv_lengths.defined()) {
    const at::Tensor j = at::arange(p.seqlen_kv, q.options().dtype(at::kLong)).view({1, 1, 1, p.seqlen_kv});
    const at::Tensor beyond = j >= pr.kv_lengths.to(at::kLong).view({p.batch, 1, 1, 1});
    mask = mask.masked_fill(beyond, -std::numeric_limits<float>::infinity());
  }
  at::Tensor o;
  if (p.seqlen_kv == 0) {
    o = at::zeros_like(q);
  } else {
    o = at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, double(p.scale));
    const at::Tensor any_valid = (mask > -std::numeric_limits<float>::infinity()).any(-1, true);  // [B,1,1,1]
    o = at::where(any_valid, o, at::zeros({}, o.options()));
  }
  to_bhsd(pr.out, pr.bhsd).copy_(o);
}

void run_cpu(Problem& pr) {
  at::Tensor final_out = pr.out;
  if (pr.out.size(3) > 1 && pr.out.stride(3) != 1) pr.out = at::empty_like(pr.out, at::MemoryFormat::Contiguous);
  bind(pr);
  const AttentionParams p = pr.p;
  at::parallel_for(0, p.batch * p.heads, 1, [&](int64_t b, int64_t e) { cpu::attention_forward(p, b, e); });
  if (!pr.out.is_same(final_out)) final_out.copy_(pr.out);
}

#ifdef LTX_KERNELS_WITH_CUDA
// The sm_90a kernel's addressing requirements met by copies ("" on success, else why not).
std::string sm90_why_not(Problem& pr) {
#ifdef LTX_KERNELS_HAS_SM90
  pr.q = addressable(pr.q);
  pr.k = addressable(pr.k);
  pr.v = addressable(pr.v);  // (FP8: V^T [B, Hkv, D, keys], its key stride 1 checked by prepare)
  if (pr.fp8 && pr.p.k_block == 1) {  // per-key factors are loaded by TMA: (heads, keys, batch), heads contiguous
    const at::Tensor& kd = pr.k_descale;
    const bool ok = reinterpret_cast<uintptr_t>(kd.data_ptr()) % 16 == 0 && (kd.size(2) <= 1 || kd.stride(2) == 1) &&
                    (kd.size(1) <= 1 || (kd.stride(1) > 0 && kd.stride(1) % 4 == 0)) &&
                    (kd.size(0) <= 1 || (kd.stride(0) > 0 && kd.stride(0) % 4 == 0));
    if (!ok) {  // heads padded to a multiple of 4 (the padding is never read: the tensor map ends at Hkv)
      at::Tensor t = at::empty({kd.size(0), kd.size(1), (kd.size(2) + 3) / 4 * 4}, kd.options());
      pr.k_descale = t.narrow(2, 0, kd.size(2)).copy_(kd);
    }
  }
  bind(pr);
  AttentionParams p = pr.p;
  at::Tensor tmp;
  if (!out_addressable(pr.out)) {  // checked with a stand-in of the right layout
    tmp = at::empty_like(pr.out, at::MemoryFormat::Contiguous);
    p.out = tmp.data_ptr();
    p.out_stride = bsh_strides(tmp, pr.bhsd);
  }
  const char* why = attention_sm90_why_not(p, device_cc(pr.q));
  return why == nullptr ? "" : why;
#else
  (void)pr;
  return "this build has no sm_90a kernels (TORCH_CUDA_ARCH_LIST without 9.0a)";
#endif
}

void run_sm90(Problem& pr, const char* op) {
#ifdef LTX_KERNELS_HAS_SM90
  const CudaScope scope(pr.q, op);
  at::Tensor final_out = pr.out;
  if (!out_addressable(pr.out)) pr.out = at::empty_like(pr.out, at::MemoryFormat::Contiguous);
  bind(pr);
  check_cuda(attention_forward_sm90(pr.p, scope.stream), op);
  if (!pr.out.is_same(final_out)) final_out.copy_(pr.out);
#else
  (void)pr;
  LTX_CHECK(false, op, "this build has no sm_90a kernels");
#endif
}
#endif

Backend select(Problem& pr, Backend requested, bool is_auto, const char* op) {
  if (pr.q.is_cpu()) {
    LTX_CHECK(is_auto || requested != Backend::kSm90, op,
              "backend 'sm90' cannot run this call (the tensors are on the CPU)");
    return is_auto ? Backend::kCpu : requested;
  }
  LTX_CHECK(is_auto || requested != Backend::kCpu, op, "backend 'cpu' cannot run this call (the tensors are on ",
            pr.q.device(), ")");
  if (requested == Backend::kTorch && !is_auto) return Backend::kTorch;
#ifdef LTX_KERNELS_WITH_CUDA
  const std::string why = sm90_why_not(pr);
  if (why.empty()) return Backend::kSm90;
  LTX_CHECK(is_auto, op, "backend 'sm90' cannot run this call (", why, ")");
#endif
  return Backend::kTorch;
}

Backend resolve(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                const std::optional<at::Tensor>& kv_lengths, const std::optional<at::Tensor>& key_bias,
                const std::optional<at::Tensor>& q_descale, const std::optional<at::Tensor>& k_descale,
                const std::optional<at::Tensor>& v_descale, int64_t k_block, c10::string_view layout,
                c10::string_view backend, Problem& pr, const char* op) {
  const Backend requested = parse_backend(backend, op);
  pr = prepare(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block, layout, op);
  return select(pr, requested, backend == "auto", op);
}

}  // namespace

// Both dispatch keys (prepare() has put every tensor on q's device): on the CPU the C++ backend,
// or "torch" when forced; on CUDA the sm_90a kernel when it can run the call, else "torch".
void attention(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
               const std::optional<at::Tensor>& kv_lengths, const std::optional<at::Tensor>& key_bias,
               const std::optional<at::Tensor>& q_descale, const std::optional<at::Tensor>& k_descale,
               const std::optional<at::Tensor>& v_descale, int64_t k_block, c10::string_view layout,
               c10::string_view backend) {
  Problem pr;
  const Backend be = resolve(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block,
                             layout, backend, pr, "attention");
  if (out.numel() == 0) return;
#ifdef LTX_KERNELS_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  if (q.is_cuda()) guard.emplace(q.device());
#endif
  if (pr.p.seqlen_kv == 0) {
    out.zero_();
    return;
  }
  if (be == Backend::kTorch) return run_torch(pr);
  if (be == Backend::kCpu) return run_cpu(pr);
#ifdef LTX_KERNELS_WITH_CUDA
  if (be == Backend::kSm90) return run_sm90(pr, "attention");  // only for CUDA tensors (select())
#endif
  LTX_CHECK(false, "attention", "backend ", int(be), " cannot run in this build (internal error)");
}

int64_t attention_backend(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          double scale, const std::optional<at::Tensor>& kv_lengths,
                          const std::optional<at::Tensor>& key_bias, const std::optional<at::Tensor>& q_descale,
                          const std::optional<at::Tensor>& k_descale, const std::optional<at::Tensor>& v_descale,
                          int64_t k_block, c10::string_view layout, c10::string_view backend) {
  Problem pr;
  at::Tensor o = out;
  return int64_t(resolve(o, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block, layout,
                         backend, pr, "attention"));
}

// ---- quantize_attention_fp8: the FP8 operands of attention (attention/attention_quant.h) -------
// Checks in the order tests/test_attention_quant.py expects their messages, then one
// AttnQuantParams for the CPU backend or the CUDA kernels. Inputs are read in place when the
// backend can address them (head-dim stride 1; on CUDA also a 16-byte aligned base and (b, s, h)
// strides), else through a contiguous copy; outputs must be contiguous (the Python wrapper
// allocates them).
namespace {

constexpr const char* kQuantOp = "quantize_attention_fp8";

void check_quant_output(const at::Tensor& t, at::ScalarType dtype, std::initializer_list<int64_t> shape,
                        const at::Tensor& q, const char* name, const char* rule) {
  const char* op = kQuantOp;
  LTX_CHECK(t.scalar_type() == dtype, op, name, " must be ", dtype, " (got ", t.scalar_type(), ")");
  check_same_device(t, q, op, name, "q");
  LTX_CHECK(t.sizes() == c10::IntArrayRef(shape), op, name, " must have shape ", rule, " = ",
            shape_str(c10::IntArrayRef(shape)), " (got ", shape_str(t.sizes()), ")");
  LTX_CHECK(t.is_contiguous(), op, name, " must be contiguous (got strides ", shape_str(t.strides()), ")");
}

Prepared<AttnQuantParams> make_quantize_attention_fp8_params(
    at::Tensor& q8, at::Tensor& k8, at::Tensor& v8, at::Tensor& q_descale, at::Tensor& k_descale,
    at::Tensor& v_descale, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, c10::string_view layout,
    bool smooth_k, int64_t k_block, bool cuda) {
  const char* op = kQuantOp;
  const std::string lay(layout.data(), layout.size());
  LTX_CHECK(lay == "bshd" || lay == "bhsd", op, "layout must be 'bshd' ([B, S, H, D]) or 'bhsd' ([B, H, S, D]) (got '",
            lay, "')");
  const bool bhsd = lay == "bhsd";
  const char* shp = bhsd ? "[B, H, S, D]" : "[B, S, H, D]";
  LTX_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op, "q, k and v must be 4-D ", shp, " (got shapes ",
            shape_str(q.sizes()), ", ", shape_str(k.sizes()), ", ", shape_str(v.sizes()), ")");
  const at::ScalarType qt = q.scalar_type();
  LTX_CHECK(qt == at::kBFloat16 || qt == at::kHalf || qt == at::kFloat, op,
            "q must be bfloat16, float16 or float32 (got ", qt, ")");
  check_same_dtype(k, q, op, "k", "q");
  check_same_dtype(v, q, op, "v", "q");
  check_same_device(k, q, op, "k", "q");
  check_same_device(v, q, op, "v", "q");
  LTX_CHECK(cuda ? q.is_cuda() : q.is_cpu(), op, "tensors must be on the CPU or a CUDA device (got ", q.device(),
            ")");
  const int64_t B = q.size(0), Sq = q.size(bhsd ? 2 : 1), H = q.size(bhsd ? 1 : 2), D = q.size(3);
  const int64_t Skv = k.size(bhsd ? 2 : 1), Hk = k.size(bhsd ? 1 : 2);
  LTX_CHECK(k.size(0) == B && k.size(3) == D, op, "k must be ", shp, " with q's batch and head dim (got q ",
            shape_str(q.sizes()), ", k ", shape_str(k.sizes()), ")");
  LTX_CHECK(v.sizes() == k.sizes(), op, "v must have k's shape (got k ", shape_str(k.sizes()), ", v ",
            shape_str(v.sizes()), ")");
  LTX_CHECK(Hk > 0 ? H % Hk == 0 : H == 0, op, "q's heads must be a multiple of k's heads (got ", H, " and ", Hk,
            ")");
  LTX_CHECK(D >= 8 && D <= kAttnQuantMaxHeadDim && D % 8 == 0, op,
            "the head dim must be a multiple of 8 in [8, 256] (got ", D, ")");
  LTX_CHECK(k_block == 1 || k_block == 128, op, "k_block must be 1 (a k factor per key) or 128 (got ", k_block,
            ")");
  const int64_t pad = attention_quant_keys_padded(Skv), nb = k_block == 1 ? Skv : (Skv + 127) / 128;
  check_quant_output(q8, at::kFloat8_e4m3fn, {q.size(0), q.size(1), q.size(2), D}, q, "q8", "q's shape");
  check_quant_output(k8, at::kFloat8_e4m3fn, {k.size(0), k.size(1), k.size(2), D}, q, "k8", "k's shape");
  check_quant_output(v8, at::kFloat8_e4m3fn, {B, Hk, D, pad}, q, "v8",
                     "[B, Hkv, D, Skv_pad] (Skv_pad = 32 ceil(max(Skv, 1) / 32))");
  check_quant_output(q_descale, at::kFloat, {B, Sq, H}, q, "q_descale", "[B, Sq, H]");
  check_quant_output(k_descale, at::kFloat, {B, nb, Hk}, q, "k_descale",
                     k_block == 1 ? "[B, Skv, Hkv]" : "[B, ceil(Skv / 128), Hkv]");
  check_quant_output(v_descale, at::kFloat, {B, Hk, D}, q, "v_descale", "[B, Hkv, D]");
  for (const at::Tensor* o : {&q8, &k8, &v8, &q_descale, &k_descale, &v_descale})
    LTX_CHECK(!bytes_overlap(*o, q) && !bytes_overlap(*o, k) && !bytes_overlap(*o, v), op,
              "the outputs must not overlap q, k or v");

  Prepared<AttnQuantParams> pr;
  if (q8.numel() + k8.numel() + v8.numel() + q_descale.numel() + k_descale.numel() + v_descale.numel() == 0)
    return pr;
  AttnQuantParams& p = pr.emplace();
  // the kernels read rows of D contiguous elements (CUDA: 16-byte aligned rows)
  auto input = [&](const at::Tensor& t) -> const at::Tensor& {
    if (cuda) return pr.keep(addressable(t));
    return pr.keep(t.size(3) <= 1 || t.stride(3) == 1 ? t : t.contiguous());
  };
  const at::Tensor& qi = input(q);
  const at::Tensor& ki = input(k);
  const at::Tensor& vi = input(v);
  p.batch = B;
  p.seqlen_q = Sq;
  p.seqlen_kv = Skv;
  p.heads = H;
  p.heads_kv = Hk;
  p.head_dim = D;
  p.dtype = attn_dtype(qt);
  p.q = qi.data_ptr();
  p.k = ki.data_ptr();
  p.v = vi.data_ptr();
  p.q_stride = bsh_strides(qi, bhsd);
  p.k_stride = bsh_strides(ki, bhsd);
  p.v_stride = bsh_strides(vi, bhsd);
  p.q8 = static_cast<uint8_t*>(q8.data_ptr());
  p.k8 = static_cast<uint8_t*>(k8.data_ptr());
  p.v8 = static_cast<uint8_t*>(v8.data_ptr());
  p.q8_stride = bsh_strides(q8, bhsd);
  p.k8_stride = bsh_strides(k8, bhsd);
  p.v_keys_padded = pad;
  p.q_descale = q_descale.data_ptr<float>();
  p.k_descale = k_descale.data_ptr<float>();
  p.v_descale = v_descale.data_ptr<float>();
  p.smooth_k = smooth_k;
  p.k_block = k_block;
  const char* why = attention_quant_check(p);
  LTX_CHECK(why == nullptr, op, why);
  if (cuda) {  // the first pass's partial sums and maxima, on q's device (caching allocator, no sync)
    const int64_t bytes = attention_quant_workspace_bytes(p);
    if (bytes > 0) p.workspace = pr.keep(at::empty({bytes}, q.options().dtype(at::kByte))).data_ptr();
  }
  return pr;
}

}  // namespace

void quantize_attention_fp8_cpu(at::Tensor& q8, at::Tensor& k8, at::Tensor& v8, at::Tensor& q_descale,
                                at::Tensor& k_descale, at::Tensor& v_descale, const at::Tensor& q, const at::Tensor& k,
                                const at::Tensor& v, c10::string_view layout, bool smooth_k, int64_t k_block) {
  torch_adapter::run_cpu(make_quantize_attention_fp8_params(q8, k8, v8, q_descale, k_descale, v_descale, q, k, v,
                                                            layout, smooth_k, k_block, false),
                         &ltx_kernels::cpu::quantize_attention_fp8);
}

#ifdef LTX_KERNELS_WITH_CUDA
void quantize_attention_fp8_cuda(at::Tensor& q8, at::Tensor& k8, at::Tensor& v8, at::Tensor& q_descale,
                                 at::Tensor& k_descale, at::Tensor& v_descale, const at::Tensor& q, const at::Tensor& k,
                                 const at::Tensor& v, c10::string_view layout, bool smooth_k, int64_t k_block) {
  torch_adapter::run_cuda(make_quantize_attention_fp8_params(q8, k8, v8, q_descale, k_descale, v_descale, q, k, v,
                                                             layout, smooth_k, k_block, true),
                          q, kQuantOp, &ltx_kernels::quantize_attention_fp8);
}
#endif
