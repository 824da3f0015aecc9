// Torch adapter for neighborhood attention: checks, dilation (each dilated axis is split into its
// residue groups, strided views that the dilation-1 core runs on), then the CPU backend or the
// CUDA core on the current stream.
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include <ATen/ops/empty_like.h>

#include "common.h"
#include "ltx_kernels/attention/natten_problem.h"
#include "ltx_kernels/cpu/natten.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/attention/natten.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kCpuGrain = 16;  // queries per CPU task

// [B, S0, S1, S2, heads, d] strides of a 6-D view.
NaStrides strides6(const at::Tensor& t) {
  return NaStrides{t.stride(0), t.stride(1), t.stride(2), t.stride(3), t.stride(4)};
}

// 1-D / 2-D problems as 3-D ones with leading spatial extents of 1.
at::Tensor as6d(const at::Tensor& t) {
  at::Tensor r = t;
  while (r.dim() < 6) r = r.unsqueeze(1);
  return r;
}

#ifdef LTX_KERNELS_WITH_CUDA
bool cuda_friendly(const at::Tensor& t) {
  if (t.stride(-1) != 1 || !(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0)) return false;
  for (int64_t d = 0; d + 1 < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) % 8 != 0) return false;
  return true;
}

#ifdef LTX_KERNELS_HAS_SM90
// LTX_NATTEN_SM90=0 keeps the automatic choice on the portable mma.sync kernel (benchmarks).
bool sm90_enabled() {
  const char* s = std::getenv("LTX_NATTEN_SM90");
  return s == nullptr || std::string(s) != "0";
}
#endif

int tile_override() {
  const char* s = std::getenv("LTX_NATTEN_TILE");  // tests force each tile configuration
  if (s == nullptr || *s == '\0') return -1;
  return std::atoi(s);
}
#endif

}  // namespace

void na_forward(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                c10::IntArrayRef kernel_size, c10::IntArrayRef dilation, const c10::List<bool>& is_causal,
                double scale) {
  constexpr const char* op = "na_forward";
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
  if (q.numel() == 0) return;
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
#ifdef LTX_KERNELS_WITH_CUDA
  int cc = 0;  // compute capability of q's device
  if (q.is_cuda()) {
    LTX_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16, op,
              "the CUDA kernel takes float16 or bfloat16 (got ", q.scalar_type(), ")");
    LTX_CHECK(d == 32 || d == 64 || d == 128, op, "the CUDA kernel takes head dim 32, 64 or 128 (got ", d, ")");
    cc = device_cc(q);
    LTX_CHECK(cc >= 80, op, "the CUDA kernel needs compute capability 8.0 or newer (got ", cc / 10, ".", cc % 10,
              ")");
    for (int64_t a = 0; a < nd; ++a)
      LTX_CHECK(kernel_size[a] <= 511, op, "the CUDA kernel takes kernel sizes <= 511 (got ",
                shape_str(kernel_size), ")");
    // clone, not contiguous(): a contiguous but misaligned view (an offset storage) would come
    // back as itself
    if (!cuda_friendly(qh)) qh = q.clone(at::MemoryFormat::Contiguous);
    if (!cuda_friendly(kh)) kh = k.clone(at::MemoryFormat::Contiguous);
    if (!cuda_friendly(vh)) vh = v.clone(at::MemoryFormat::Contiguous);
    if (!cuda_friendly(oh)) oh = at::empty_like(q, at::MemoryFormat::Contiguous);
  }
#endif
  at::Tensor q6 = as6d(qh), k6 = as6d(kh), v6 = as6d(vh), o6 = as6d(oh);
  int dil[3] = {1, 1, 1}, ker[3] = {1, 1, 1};
  bool causal[3] = {false, false, false};
  for (int64_t a = 0; a < nd; ++a) {
    dil[3 - nd + a] = int(dilation[a]);
    ker[3 - nd + a] = int(kernel_size[a]);
    causal[3 - nd + a] = is_causal[a];
  }
  // One dilation-1 problem per residue group (g0, g1, g2): positions g, g + dil, g + 2 dil, ...
  for (int g0 = 0; g0 < dil[0]; ++g0)
    for (int g1 = 0; g1 < dil[1]; ++g1)
      for (int g2 = 0; g2 < dil[2]; ++g2) {
        const int g[3] = {g0, g1, g2};
        auto group = [&](const at::Tensor& t) {
          at::Tensor r = t;
          for (int a = 0; a < 3; ++a)
            if (dil[a] > 1) r = r.slice(1 + a, g[a], c10::nullopt, dil[a]);
          return r;
        };
        at::Tensor qg = group(q6), kg = group(k6), vg = group(v6), og = group(o6);
        NaProblem p{};
        p.batch = qg.size(0);
        p.heads = qg.size(4);
        for (int a = 0; a < 3; ++a) {
          p.size[a] = int(qg.size(1 + a));
          p.kernel[a] = ker[a];
          p.causal[a] = causal[a];
        }
        p.dim = int(d);
        p.scale = float(scale);
        const NaStrides qs = strides6(qg), ks = strides6(kg), vs = strides6(vg), os = strides6(og);
        if (q.is_cpu()) {
          const int64_t total = p.batch * p.heads * int64_t(p.size[0]) * p.size[1] * p.size[2];
          LTX_DISPATCH_FLOAT(q.scalar_type(), op, {
            auto* o = reinterpret_cast<scalar_t*>(og.data_ptr());
            auto* qp = reinterpret_cast<const scalar_t*>(qg.data_ptr());
            auto* kp = reinterpret_cast<const scalar_t*>(kg.data_ptr());
            auto* vp = reinterpret_cast<const scalar_t*>(vg.data_ptr());
            at::parallel_for(0, total, kCpuGrain, [&](int64_t b, int64_t e) {
              cpu::na_forward<scalar_t>(o, os, qp, qs, kp, ks, vp, vs, p, b, e);
            });
          });
          continue;
        }
#ifdef LTX_KERNELS_WITH_CUDA
        const CudaScope scope(q, op);
        const int tile = tile_override();
        LTX_CHECK(tile >= -1 && tile < kNaNumTiles + kNaSm90Boxes, op, "LTX_NATTEN_TILE must be in [0, ",
                  kNaNumTiles + kNaSm90Boxes, ") (got ", tile, ")");
        auto run = [&](auto* type_tag) {
          using T = std::remove_pointer_t<decltype(type_tag)>;
          T* o = reinterpret_cast<T*>(og.data_ptr());
          const T* qp = reinterpret_cast<const T*>(qg.data_ptr());
          const T* kp = reinterpret_cast<const T*>(kg.data_ptr());
          const T* vp = reinterpret_cast<const T*>(vg.data_ptr());
#ifdef LTX_KERNELS_HAS_SM90
          if (tile >= kNaNumTiles || (tile == -1 && sm90_enabled())) {
            const cudaError_t err =
                cc == 90
                    ? na_forward_sm90<T>(o, os, qp, qs, kp, ks, vp, vs, p, tile >= 0 ? tile - kNaNumTiles : -1,
                                         scope.stream)
                    : cudaErrorNotSupported;
            if (err != cudaErrorNotSupported) return check_cuda(err, op);
          }
#endif
          LTX_CHECK(tile < kNaNumTiles, op, "LTX_NATTEN_TILE=", tile,
                    " forces the sm_90 kernel, which does not take this problem (it needs an sm_90 GPU and a "
                    "build with sm_90a, head dim 64, a w window <= 25, scale > 0 and TMA-compatible strides)");
          check_cuda(ltx_kernels::na_forward<T>(o, os, qp, qs, kp, ks, vp, vs, p, tile, scope.stream), op);
        };
        if (q.scalar_type() == at::kHalf) {
          run(static_cast<__half*>(nullptr));
        } else {
          run(static_cast<__nv_bfloat16*>(nullptr));
        }
#else
        no_cuda_backend(q, op);
#endif
      }
  if (!oh.is_same(out)) out.copy_(oh);
}
