// Torch adapter for quantize_attention_fp8, the FP8 operands of attention
// (attention/attention_quant.h): checks in the order tests/test_attention_quant.py expects their
// messages, then one AttnQuantParams for the CPU backend or the CUDA kernels. Inputs are read in
// place when the backend can address them (head-dim stride 1; on CUDA also a 16-byte aligned base
// and (b, s, h) strides), else through a contiguous copy; outputs must be contiguous (the Python
// wrapper allocates them).
#include "attention_common.h"
#include "ltx_kernels/attention/attention_quant.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

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
