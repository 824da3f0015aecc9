// Torch adapter for neighborhood attention (natten_forward): checks, the CUDA path's copies of
// inputs it cannot address, the kernel knobs, then one NattenParams (natten/natten_params.h)
// for the CPU backend or the CUDA core (natten_forward in cpu/ops.h / cuda/ops.h).
//
// Knobs (read here only, passed through the params):
//   LTX_KERNELS_NATTEN_TILE=i   force query box i (tests, sweeps): 0 .. kNattenNumTiles - 1 the
//                               portable kernel's, kNattenNumTiles + j the sm_90 kernel's box j
//   LTX_KERNELS_NATTEN_SM90=0   keep the automatic choice on the portable kernel (benchmarks)
#include <cmath>
#include <cstdlib>
#include <string>

#include <ATen/ops/empty_like.h>

#include "common.h"
#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/natten/natten_heuristics.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr const char* kOp = "natten_forward";

// [B, S0, S1, S2, heads, d] strides of a 6-D view.
NattenStrides strides6(const at::Tensor& t) {
  return NattenStrides{t.stride(0), t.stride(1), t.stride(2), t.stride(3), t.stride(4)};
}

// 1-D / 2-D problems as 3-D ones with leading spatial extents of 1.
at::Tensor as6d(const at::Tensor& t) {
  at::Tensor r = t;
  while (r.dim() < 6) r = r.unsqueeze(1);
  return r;
}

// What the CUDA kernels address directly: innermost stride 1, 16-byte aligned, strides of whole
// 8-element multiples.
bool cuda_friendly(const at::Tensor& t) {
  if (t.stride(-1) != 1 || !(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0)) return false;
  for (int64_t d = 0; d + 1 < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) % 8 != 0) return false;
  return true;
}

int tile_knob() {
  const std::string s = dev_setting("LTX_KERNELS_NATTEN_TILE");  // common/dev_config.h
  if (s.empty()) return -1;
  return std::atoi(s.c_str());
}

bool sm90_knob() {
  return dev_setting("LTX_KERNELS_NATTEN_SM90") != "0";
}

// The params, and on CUDA the output the kernels write when `out` is not addressable by them
// (copied back after the launch).
struct NattenPrepared : Prepared<NattenParams> {
  at::Tensor staged_out;
};

NattenPrepared make_natten_params(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  c10::IntArrayRef kernel_size, c10::IntArrayRef dilation,
                                  const c10::List<bool>& is_causal, double scale) {
  constexpr const char* op = kOp;
  check_float_type(q, op, "q");
  const int64_t nd = q.dim() - 3;
  LTX_CHECK(nd >= 1 && nd <= 3, op,
            "q must be [B, L, heads, d], [B, H, W, heads, d] or [B, T, H, W, heads, d] (got shape ",
            shape_str(q.sizes()), ")");
  LTX_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(), op,
            "q, k and v must have the same shape (got ", shape_str(q.sizes()), ", ", shape_str(k.sizes()),
            " and ", shape_str(v.sizes()), ")");
  check_same_dtype(k, q, op, "k", "q");
  check_same_dtype(v, q, op, "v", "q");
  check_same_dtype(out, q, op, "out", "q");
  check_same_device(k, q, op, "k", "q");
  check_same_device(v, q, op, "v", "q");
  check_same_device(out, q, op, "out", "q");
  LTX_CHECK(out.sizes() == q.sizes(), op, "out must have the shape of q (got ", shape_str(out.sizes()),
            " and ", shape_str(q.sizes()), ")");
  LTX_CHECK(int64_t(kernel_size.size()) == nd && int64_t(dilation.size()) == nd &&
                int64_t(is_causal.size()) == nd,
            op, "kernel_size, dilation and is_causal must have one entry per spatial dim (", nd, ") (got ",
            kernel_size.size(), ", ", dilation.size(), " and ", is_causal.size(), ")");
  for (int64_t a = 0; a < nd; ++a) {
    LTX_CHECK(kernel_size[a] >= 1 && kernel_size[a] % 2 == 1, op,
              "kernel_size must be odd and >= 1 on every axis (got ", shape_str(kernel_size), ")");
    LTX_CHECK(dilation[a] >= 1, op, "dilation must be >= 1 on every axis (got ", shape_str(dilation), ")");
  }
  LTX_CHECK(std::isfinite(scale), op, "scale must be finite (got ", scale, ")");
  NattenPrepared pr;
  if (q.numel() == 0) return pr;
  for (int64_t a = 0; a < nd; ++a) {
    LTX_CHECK(q.size(1 + a) >= kernel_size[a] * dilation[a], op,
              "every spatial extent must be >= kernel_size * dilation (got extents ",
              shape_str(q.sizes().slice(1, nd)), ", kernel_size ", shape_str(kernel_size), ", dilation ",
              shape_str(dilation), ")");
  }
  LTX_CHECK(out.stride(-1) == 1, op, "out must have stride 1 in its last dimension (got strides ",
            shape_str(out.strides()), ")");
  for (const at::Tensor* t : {&q, &k, &v})
    LTX_CHECK(!bytes_overlap(out, *t), op, "out must not overlap q, k or v");

  const int64_t d = q.size(-1);
  at::Tensor qh = q.stride(-1) == 1 ? q : q.contiguous();
  at::Tensor kh = k.stride(-1) == 1 ? k : k.contiguous();
  at::Tensor vh = v.stride(-1) == 1 ? v : v.contiguous();
  at::Tensor oh = out;
  int tile = -1;
  if (q.is_cuda()) {
    LTX_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16, op,
              "the CUDA kernel takes float16 or bfloat16 (got ", q.scalar_type(), ")");
    LTX_CHECK(d == 32 || d == 64 || d == 128, op, "the CUDA kernel takes head dim 32, 64 or 128 (got ", d, ")");
#ifdef LTX_KERNELS_WITH_CUDA
    const int cc = device_cc(q);
    LTX_CHECK(cc >= 80, op, "the CUDA kernel needs compute capability 8.0 or newer (got ", cc / 10, ".", cc % 10,
              ")");
#endif
    for (int64_t a = 0; a < nd; ++a)
      LTX_CHECK(kernel_size[a] <= 511, op, "the CUDA kernel takes kernel sizes <= 511 (got ",
                shape_str(kernel_size), ")");
    // clone, not contiguous(): a contiguous but misaligned view (an offset storage) would come
    // back as itself
    if (!cuda_friendly(qh)) qh = q.clone(at::MemoryFormat::Contiguous);
    if (!cuda_friendly(kh)) kh = k.clone(at::MemoryFormat::Contiguous);
    if (!cuda_friendly(vh)) vh = v.clone(at::MemoryFormat::Contiguous);
    if (!cuda_friendly(oh)) oh = pr.staged_out = at::empty_like(q, at::MemoryFormat::Contiguous);
    tile = tile_knob();
    LTX_CHECK(tile >= -1 && tile < kNattenNumTiles + kNattenSm90Boxes, op,
              "LTX_KERNELS_NATTEN_TILE must be in [0, ", kNattenNumTiles + kNattenSm90Boxes, ") (got ", tile, ")");
  }
  const at::Tensor& q6 = pr.keep(as6d(qh));
  const at::Tensor& k6 = pr.keep(as6d(kh));
  const at::Tensor& v6 = pr.keep(as6d(vh));
  const at::Tensor o6 = as6d(oh);
  NattenParams& p = pr.emplace();
  p.dtype = dtype_of(q);
  p.out = o6.data_ptr();
  p.q = q6.data_ptr();
  p.k = k6.data_ptr();
  p.v = v6.data_ptr();
  p.os = strides6(o6);
  p.qs = strides6(q6);
  p.ks = strides6(k6);
  p.vs = strides6(v6);
  p.problem.batch = q6.size(0);
  p.problem.heads = q6.size(4);
  for (int a = 0; a < 3; ++a) {  // leading axes of a 1-D / 2-D problem: extent 1, kernel 1
    const int64_t src = a - (3 - nd);
    p.problem.size[a] = int(q6.size(1 + a));
    p.problem.kernel[a] = src >= 0 ? int(kernel_size[src]) : 1;
    p.problem.causal[a] = src >= 0 ? bool(is_causal[src]) : false;
    p.dilation[a] = src >= 0 ? int(dilation[src]) : 1;
  }
  p.problem.dim = int(d);
  p.problem.scale = float(scale);
  p.tile = tile;
  p.allow_sm90 = sm90_knob();
  return pr;
}

}  // namespace

void natten_forward_cpu(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        c10::IntArrayRef kernel_size, c10::IntArrayRef dilation, const c10::List<bool>& is_causal,
                        double scale) {
  run_cpu(make_natten_params(out, q, k, v, kernel_size, dilation, is_causal, scale), cpu::natten_forward);
}

#ifdef LTX_KERNELS_WITH_CUDA
void natten_forward_cuda(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         c10::IntArrayRef kernel_size, c10::IntArrayRef dilation, const c10::List<bool>& is_causal,
                         double scale) {
  const NattenPrepared pr = make_natten_params(out, q, k, v, kernel_size, dilation, is_causal, scale);
  if (!pr.params) return;
  const CudaScope scope(q, kOp);
  const cudaError_t err = ltx_kernels::natten_forward(*pr.params, scope.stream);
  LTX_CHECK(err != cudaErrorNotSupported, kOp, "LTX_KERNELS_NATTEN_TILE=", pr.params->tile,
            " forces the sm_90 kernel, which does not take this problem (it needs an sm_90 GPU and a "
            "build with sm_90a, head dim 64, a w window <= 25, scale > 0 and TMA-compatible strides)");
  check_cuda(err, kOp);
  if (pr.staged_out.defined()) out.copy_(pr.staged_out);
}
#endif
