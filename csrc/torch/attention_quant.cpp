// Torch adapter for the FP8 operands of attention (attention/attention_quant.h):
// quantize_attention_fp8 (q, k and v), attention_values_fp8 (v alone) and attention_keys_fp8 (k
// from the key projection's output, through the RMSNorm + RoPE of rms_norm_rope): checks in the
// order tests/test_attention_quant.py expects their messages, then the params for the CPU backend
// or the CUDA kernels. Inputs are read in
// place when the backend can address them (head-dim stride 1; on CUDA also a 16-byte aligned base
// and (b, s, h) strides), else through a contiguous copy; outputs must be contiguous (the Python
// wrapper allocates them).
#include "attention_common.h"
#include "fused_fp8.h"
#include "ltx_kernels/attention/attention_quant.h"
#include "rope_common.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr const char* kQuantOp = "quantize_attention_fp8";

void check_quant_output(const at::Tensor& t, at::ScalarType dtype, std::initializer_list<int64_t> shape,
                        const at::Tensor& in, const char* name, const char* rule, const char* op = kQuantOp,
                        const char* in_name = "q") {
  LTX_CHECK(t.scalar_type() == dtype, op, name, " must be ", dtype, " (got ", t.scalar_type(), ")");
  check_same_device(t, in, op, name, in_name);
  LTX_CHECK(t.sizes() == c10::IntArrayRef(shape), op, name, " must have shape ", rule, " = ",
            shape_str(c10::IntArrayRef(shape)), " (got ", shape_str(t.sizes()), ")");
  LTX_CHECK(t.is_contiguous(), op, name, " must be contiguous (got strides ", shape_str(t.strides()), ")");
}

Prepared<AttnQuantParams> make_quantize_attention_fp8_params(
    at::Tensor& q8, at::Tensor& k8, at::Tensor& v8, at::Tensor& q_descale, at::Tensor& k_descale,
    at::Tensor& v_descale, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, c10::string_view layout,
    bool smooth_k, int64_t smooth_keys, int64_t k_block, bool cuda) {
  const char* op = kQuantOp;
  const QkvSizes s = check_qkv(q, k, v, layout, false, "bfloat16, float16 or float32", op);
  const bool bhsd = s.bhsd;
  const int64_t B = s.B, Sq = s.Sq, H = s.H, D = s.D, Skv = s.Skv, Hk = s.Hk;
  LTX_CHECK(D >= 8 && D <= kAttnQuantMaxHeadDim && D % 8 == 0, op,
            "the head dim must be a multiple of 8 in [8, 256] (got ", D, ")");
  LTX_CHECK(k_block == 1 || k_block == 128, op, "k_block must be 1 (a k factor per key) or 128 (got ", k_block,
            ")");
  LTX_CHECK(smooth_keys >= 0 && smooth_keys % kAttnQuantSumKeys == 0, op,
            "smooth_keys must be 0 (the mean of all keys) or a positive multiple of ", kAttnQuantSumKeys,
            " (got ", smooth_keys, ")");
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
  auto input = [&](const at::Tensor& t) -> const at::Tensor& { return pr.keep(cuda ? addressable(t) : rows(t)); };
  const at::Tensor& qi = input(q);
  const at::Tensor& ki = input(k);
  const at::Tensor& vi = input(v);
  set_sizes(p, s);
  p.dtype = attn_dtype(q.scalar_type());
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
  p.smooth_keys = smooth_keys;
  p.k_block = k_block;
  if (cuda) {  // the first pass's partial sums and maxima, on q's device (caching allocator, no sync)
    const int64_t bytes = attention_quant_workspace_bytes(p);
    if (bytes > 0) p.workspace = pr.keep(at::empty({bytes}, q.options().dtype(at::kByte))).data_ptr();
  }
  return pr;
}

// attention_values_fp8: v alone (quantize_attention_fp8's v operand), the params without q and k.
Prepared<AttnQuantParams> make_attention_values_fp8_params(at::Tensor& v8, at::Tensor& v_descale, const at::Tensor& v,
                                                           c10::string_view layout, bool cuda) {
  const char* op = "attention_values_fp8";
  const bool bhsd = check_layout_bhsd(layout, op);
  LTX_CHECK(v.dim() == 4, op, "v must be 4-D ", bhsd ? "[B, H, S, D]" : "[B, S, H, D]", " (got shape ",
            shape_str(v.sizes()), ")");
  const at::ScalarType vt = v.scalar_type();
  LTX_CHECK(vt == at::kBFloat16 || vt == at::kHalf || vt == at::kFloat, op,
            "v must be bfloat16, float16 or float32 (got ", vt, ")");
  LTX_CHECK(v.is_cpu() || v.is_cuda(), op, "v must be on the CPU or a CUDA device (got ", v.device(), ")");
  const int64_t B = v.size(0), Skv = v.size(bhsd ? 2 : 1), Hk = v.size(bhsd ? 1 : 2), D = v.size(3);
  LTX_CHECK(D >= 8 && D <= kAttnQuantMaxHeadDim && D % 8 == 0, op,
            "the head dim must be a multiple of 8 in [8, 256] (got ", D, ")");
  const int64_t pad = attention_quant_keys_padded(Skv);
  check_quant_output(v8, at::kFloat8_e4m3fn, {B, Hk, D, pad}, v, "v8",
                     "[B, Hkv, D, Skv_pad] (Skv_pad = 32 ceil(max(Skv, 1) / 32))", op, "v");
  check_quant_output(v_descale, at::kFloat, {B, Hk, D}, v, "v_descale", "[B, Hkv, D]", op, "v");
  for (const at::Tensor* o : {&v8, &v_descale})
    LTX_CHECK(!bytes_overlap(*o, v), op, "the outputs must not overlap v");
  Prepared<AttnQuantParams> pr;
  if (v8.numel() + v_descale.numel() == 0) return pr;
  AttnQuantParams& p = pr.emplace();
  const at::Tensor& vi = pr.keep(cuda ? addressable(v) : rows(v));
  p.batch = B;
  p.seqlen_kv = Skv;
  p.heads = p.heads_kv = Hk;
  p.head_dim = D;
  p.dtype = attn_dtype(vt);
  p.v = vi.data_ptr();
  p.v_stride = bsh_strides(vi, bhsd);
  p.v8 = static_cast<uint8_t*>(v8.data_ptr());
  p.v_keys_padded = pad;
  p.v_descale = v_descale.data_ptr<float>();
  p.smooth_k = false;
  if (cuda) {
    const int64_t bytes = attention_quant_workspace_bytes(p);
    if (bytes > 0) p.workspace = pr.keep(at::empty({bytes}, v.options().dtype(at::kByte))).data_ptr();
  }
  return pr;
}

// attention_keys_fp8: x [B, S, C] and cos / sin as rms_norm_rope / rms_norm_split_rope take them
// (rope_common.h's checks), heads dividing C, k8 [B, S, C] float8 and k_descale [B, ceil(S / 128),
// heads] fp32, both contiguous.
Prepared<AttnKeysParams> make_attention_keys_fp8_params(at::Tensor& k8, at::Tensor& k_descale, const at::Tensor& x,
                                                        const at::Tensor& cos, const at::Tensor& sin,
                                                        const std::optional<at::Tensor>& weight, double eps,
                                                        int64_t heads, bool split, int64_t smooth_keys, bool cuda) {
  const char* op = "attention_keys_fp8";
  check_float_type(x, op, "x");
  const RopeShape shape = split ? check_norm_split_rope(x, cos, sin, weight, eps, op)
                                : check_norm_rope(x, cos, sin, weight, eps, op);
  LTX_CHECK(heads > 0 && shape.cols % heads == 0, op, "heads must be positive and divide x.shape[-1] = ", shape.cols,
            " (got ", heads, ")");
  const int64_t D = shape.cols / heads;
  LTX_CHECK(D >= 8 && D <= kAttnQuantMaxHeadDim && D % 8 == 0, op,
            "the head dim x.shape[-1] / heads must be a multiple of 8 in [8, 256] (got ", D, ")");
  LTX_CHECK(!split || shape.head_dim == D, op, "the split RoPE's head dim (", shape.head_dim,
            ", from cos / sin) must be the attention head dim x.shape[-1] / heads = ", D);
  LTX_CHECK(smooth_keys >= 0 && smooth_keys % kAttnQuantSumKeys == 0, op,
            "smooth_keys must be 0 (no smoothing) or a positive multiple of ", kAttnQuantSumKeys, " (got ", smooth_keys,
            ")");
  const int64_t nb = (shape.seq + kAttnKeysBlock - 1) / kAttnKeysBlock;
  check_quant_output(k8, at::kFloat8_e4m3fn, {shape.batch, shape.seq, shape.cols}, x, "k8", "x's shape", op, "x");
  check_quant_output(k_descale, at::kFloat, {shape.batch, nb, heads}, x, "k_descale", "[B, ceil(S / 128), heads]", op, "x");
  for (const at::Tensor* o : {&k8, &k_descale})
    LTX_CHECK(!bytes_overlap(*o, x) && !bytes_overlap(*o, cos) && !bytes_overlap(*o, sin), op,
              "the outputs must not overlap x, cos or sin");
#ifdef LTX_KERNELS_WITH_CUDA
  if (cuda && split) {
    const char* why = split_rope_fp8_cuda_unsupported(int(x.element_size()), shape.head_dim);
    LTX_CHECK(why == nullptr, op, "on CUDA, ", why, " (got head dim ", shape.head_dim, ", dtype ", x.scalar_type(), ")");
  }
#endif
  Prepared<AttnKeysParams> pr;
  if (x.numel() == 0) return pr;
  AttnKeysParams& p = pr.emplace();
  p.op.x = in_rows(rows_for(pr, x));
  check_rows_fit(p.op.x.layout, op);
  p.op.dtype = dtype_of(x);
  p.op.weight = weight_arg(pr, weight);
  const Table cs = fp8_table(cos, split), sn = fp8_table(sin, split);
  pr.keep(cs.t);
  pr.keep(sn.t);
  p.op.tables = rope_tables(cs, sn);
  p.op.shape = shape;
  p.op.eps = static_cast<float>(eps);
  p.heads = heads;
  p.smooth_keys = smooth_keys;
  p.k8 = static_cast<uint8_t*>(k8.data_ptr());
  p.k_descale = k_descale.data_ptr<float>();
  if (cuda) p.workspace = pr.keep(at::empty({attention_keys_workspace_bytes(p)}, x.options().dtype(at::kByte))).data_ptr();
  return pr;
}

}  // namespace

// The op's entry points (torch_binding.h): T is at::Tensor.
using T = at::Tensor;

void quantize_attention_fp8_cpu(T& q8, T& k8, T& v8, T& q_descale, T& k_descale, T& v_descale, const T& q, const T& k,
                                const T& v, c10::string_view layout, bool smooth_k, int64_t smooth_keys, int64_t k_block) {
  torch_adapter::run_cpu(make_quantize_attention_fp8_params(q8, k8, v8, q_descale, k_descale, v_descale, q, k, v,
                                                            layout, smooth_k, smooth_keys, k_block, false),
                         &ltx_kernels::cpu::quantize_attention_fp8);
}

#ifdef LTX_KERNELS_WITH_CUDA
void quantize_attention_fp8_cuda(T& q8, T& k8, T& v8, T& q_descale, T& k_descale, T& v_descale, const T& q, const T& k,
                                 const T& v, c10::string_view layout, bool smooth_k, int64_t smooth_keys, int64_t k_block) {
  torch_adapter::run_cuda(make_quantize_attention_fp8_params(q8, k8, v8, q_descale, k_descale, v_descale, q, k, v,
                                                             layout, smooth_k, smooth_keys, k_block, true),
                          q, kQuantOp, &ltx_kernels::quantize_attention_fp8);
}
#endif

void attention_values_fp8_cpu(T& v8, T& v_descale, const T& v, c10::string_view layout) {
  torch_adapter::run_cpu(make_attention_values_fp8_params(v8, v_descale, v, layout, false),
                         &ltx_kernels::cpu::quantize_attention_fp8);
}

void attention_keys_fp8_cpu(T& k8, T& k_descale, const T& x, const T& cos, const T& sin,
                            const std::optional<T>& weight, double eps, int64_t heads, bool split, int64_t smooth_keys) {
  torch_adapter::run_cpu(
      make_attention_keys_fp8_params(k8, k_descale, x, cos, sin, weight, eps, heads, split, smooth_keys, false),
      &ltx_kernels::cpu::attention_keys_fp8);
}

#ifdef LTX_KERNELS_WITH_CUDA
void attention_values_fp8_cuda(T& v8, T& v_descale, const T& v, c10::string_view layout) {
  torch_adapter::run_cuda(make_attention_values_fp8_params(v8, v_descale, v, layout, true), v, "attention_values_fp8",
                          &ltx_kernels::quantize_attention_fp8);
}

void attention_keys_fp8_cuda(T& k8, T& k_descale, const T& x, const T& cos, const T& sin,
                             const std::optional<T>& weight, double eps, int64_t heads, bool split, int64_t smooth_keys) {
  torch_adapter::run_cuda(
      make_attention_keys_fp8_params(k8, k_descale, x, cos, sin, weight, eps, heads, split, smooth_keys, true), x,
      "attention_keys_fp8", &ltx_kernels::attention_keys_fp8);
}
#endif
