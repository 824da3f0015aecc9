// What every torch adapter shares: argument checks that name the op and the rule, tensors as
// row layouts, the DType of a tensor, the Prepared<Params> a make_<op>_params returns, and
// running a core on the CPU (at::parallel_for) or on CUDA (device guard, current stream,
// error check). With the adapters, the only C++ that sees at::Tensor.
//
// An adapter file holds, per op: make_<op>_params (every check, in the order the error
// messages are tested, then ONE params struct) and two thin impls, <op>_cpu and <op>_cuda,
// registered per dispatch key in torch-ext/torch_binding.cpp.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <forward_list>
#include <optional>
#include <string>

#include "ltx_kernels/common/dev_config.h"
#include "ltx_kernels/common/dtype.h"
#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/common/rows.h"
#include "ltx_kernels/common/rowwise_launch.h"
#include "ltx_kernels/cpu/parallel.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ltx_kernels/common/device.h"
#endif

// TORCH_CHECK with the op's name in front: "ltx_kernels.rms_norm: <rule> (got <values>)".
#define LTX_CHECK(cond, op, ...) TORCH_CHECK((cond), "ltx_kernels.", op, ": ", __VA_ARGS__)

namespace ltx_kernels {
namespace torch_adapter {

// "[2, 3, 4]": shapes and strides for error messages, formatted here rather than through
// c10's ArrayRef stream operator.
inline std::string shape_str(c10::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

inline bool is_float_type(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

inline void check_float_type(const at::Tensor& t, const char* op, const char* name) {
  LTX_CHECK(is_float_type(t.scalar_type()), op, name,
            " must be float32, float16 or bfloat16 (got ", t.scalar_type(), ")");
}

inline void check_same_device(const at::Tensor& a, const at::Tensor& b, const char* op,
                              const char* an, const char* bn) {
  LTX_CHECK(a.device() == b.device(), op, an, " and ", bn, " must be on the same device (got ",
            a.device(), " and ", b.device(), ")");
}

inline void check_same_dtype(const at::Tensor& a, const at::Tensor& b, const char* op,
                             const char* an, const char* bn) {
  LTX_CHECK(a.scalar_type() == b.scalar_type(), op, an, " and ", bn,
            " must have the same dtype (got ", a.scalar_type(), " and ", b.scalar_type(), ")");
}

// The tensor as rows of its last dimension, when its memory allows: last stride 1 and the
// leading dimensions collapsible to one stride. nullopt otherwise.
inline std::optional<RowLayout> as_rows(const at::Tensor& t) {
  const int64_t nd = t.dim();
  if (nd == 0) return std::nullopt;
  const int64_t cols = t.size(nd - 1);
  if (cols > 1 && t.stride(nd - 1) != 1) return std::nullopt;
  int64_t rows = 1;
  int64_t row_stride = cols;
  bool have_stride = false;
  int64_t expect = 0;  // stride the next-outer non-trivial dimension must have
  for (int64_t d = nd - 2; d >= 0; --d) {
    const int64_t s = t.size(d);
    rows *= s;
    if (s == 1) continue;
    if (!have_stride) {
      row_stride = t.stride(d);
      have_stride = true;
    } else if (t.stride(d) != expect) {
      return std::nullopt;
    }
    expect = t.stride(d) * s;
  }
  if (rows > 1 && row_stride < cols) return std::nullopt;  // rows would overlap
  return RowLayout{rows, cols, row_stride};
}

// Input rows: the tensor as it is when row-addressable, else a contiguous copy (kept alive by
// `holder`).
inline RowLayout input_rows(const at::Tensor& t, at::Tensor& holder) {
  if (auto l = as_rows(t)) {
    holder = t;
    return *l;
  }
  holder = t.contiguous();
  return *as_rows(holder);
}

// Output rows: must be row-addressable; we never write through a temporary silently.
inline RowLayout output_rows(const at::Tensor& out, const char* op) {
  auto l = as_rows(out);
  LTX_CHECK(l.has_value(), op,
            "out must have stride 1 in its last dimension and leading dimensions that collapse "
            "to one row stride (got strides ",
            shape_str(out.strides()), ")");
  return *l;
}

// Whether two tensors may share bytes (conservatively, by the address ranges they span).
inline bool bytes_overlap(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  if (!a.storage().is_alias_of(b.storage())) return false;
  auto range = [](const at::Tensor& t) {
    int64_t last = 0;
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    const auto* p = static_cast<const char*>(t.data_ptr());
    return std::make_pair(p, p + (last + 1) * t.element_size());
  };
  const auto [a0, a1] = range(a);
  const auto [b0, b1] = range(b);
  return !(a1 <= b0 || b1 <= a0);
}

// out may be exactly `in` (same address and strides: an in-place op) or disjoint from it.
// Anything else that shares bytes is refused (conservatively, by address range).
inline void check_no_partial_overlap(const at::Tensor& out, const at::Tensor& in, const char* op,
                                     const char* in_name) {
  if (out.numel() > 0 && out.data_ptr() == in.data_ptr() && out.sizes() == in.sizes() &&
      out.strides() == in.strides())
    return;
  LTX_CHECK(!bytes_overlap(out, in), op, "out partially overlaps ", in_name,
            "; use a separate out or exactly the same tensor");
}

inline void check_rows_fit(const RowLayout& l, const char* op) {
  LTX_CHECK(l.cols <= int64_t(INT32_MAX), op, "rows wider than 2^31-1 elements are not supported (got ",
            l.cols, ")");
}

// The DType of a float32, float16 or bfloat16 tensor (checked before with check_float_type).
inline DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kHalf: return DType::kFloat16;
    case at::kBFloat16: return DType::kBFloat16;
    case at::kFloat: return DType::kFloat32;
    default: TORCH_CHECK(false, "ltx_kernels: no DType for ", t.scalar_type());
  }
}

// The rows of a tensor `as_rows` accepted (a checked input, or a tensor input_rows kept).
inline InRows in_rows(const at::Tensor& t) { return InRows{t.data_ptr(), *as_rows(t)}; }

// An output's rows; the rule output_rows checks.
inline OutRows out_rows(const at::Tensor& out, const char* op) {
  return OutRows{out.data_ptr(), output_rows(out, op)};
}

// What make_<op>_params returns: the params of one call (none when the problem is empty and
// every check passed: nothing to run), and the tensors the adapter made for it (contiguous or
// aligned copies of inputs), kept alive until the core returns.
template <class P>
struct Prepared {
  std::optional<P> params;
  std::forward_list<at::Tensor> held;

  // Keeps t alive with the params; returns it.
  const at::Tensor& keep(at::Tensor t) { return held.emplace_front(std::move(t)); }
  // Input rows: t itself when row-addressable, else a contiguous copy kept here.
  const at::Tensor& rows_source(const at::Tensor& t) { return keep(as_rows(t) ? t : t.contiguous()); }
  P& emplace() { return params.emplace(); }
};

// The common start of a row-wise op's params: x read as rows (x itself when row-addressable,
// else a contiguous copy kept in pr), out written as rows (exactly x, or disjoint from it), rows
// of at most 2^31-1 elements. Fills p.dtype, p.out and p.x.
template <class P, class Params>
void set_rows(Prepared<P>& pr, Params& p, const at::Tensor& out, const at::Tensor& x, const char* op) {
  const at::Tensor& xh = pr.rows_source(x);
  check_no_partial_overlap(out, xh, op, "x");
  p.dtype = dtype_of(x);
  p.out = out_rows(out, op);
  p.x = in_rows(xh);
  check_rows_fit(p.x.layout, op);
}

// LTX_KERNELS_NORM_SHAPE (read per call, for tests and sweeps) forces the launch shape of the row
// norms' CUDA kernels (common/rowwise_launch.h): "auto" (or unset), "w<nv>" (a warp per row,
// nv 16-byte accesses per lane), "b<nv>" (a CTA per row), either with a "p" suffix (epilogue
// operands preloaded), or "loop". A shape that cannot run the call's row is refused by the core.
inline NormShape env_norm_shape(const char* op) {
  NormShape s;
  std::string v = dev_setting("LTX_KERNELS_NORM_SHAPE");  // common/dev_config.h
  if (v.empty()) return s;
  if (v == "auto") return s;
  if (v == "loop") {
    s.kind = NormShape::kLoop;
    return s;
  }
  bool ok = v.size() >= 2 && (v[0] == 'w' || v[0] == 'b');
  if (ok && v.back() == 'p') {
    s.preload = true;
    v.pop_back();
  }
  int nv = 0;
  if (ok) {
    try {
      size_t used = 0;
      nv = std::stoi(v.substr(1), &used);
      ok = used == v.size() - 1 && (nv == 1 || nv == 2 || nv == 4 || nv == 8 || nv == 16);
    } catch (...) {
      ok = false;
    }
  }
  LTX_CHECK(ok, op, "LTX_KERNELS_NORM_SHAPE must be 'auto', 'loop', or 'w' / 'b' followed by 1, 2, 4, 8 or 16 and "
            "optionally 'p' (got '", dev_setting("LTX_KERNELS_NORM_SHAPE"), "')");
  s.kind = v[0] == 'w' ? NormShape::kWarp : NormShape::kBlock;
  s.nv = nv;
  return s;
}

// The CPU backend's ParallelFor on ATen's thread pool.
inline void torch_parallel_for(int64_t n, int64_t grain, const cpu::RangeFn& body) {
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { body(b, e); });
}

// <op>_cpu: the CPU backend on the prepared params, if there is anything to do.
template <class P>
void run_cpu(const Prepared<P>& pr, void (*core)(const P&, const cpu::ParallelFor&)) {
  if (pr.params) core(*pr.params, torch_parallel_for);
}

#ifdef LTX_KERNELS_WITH_CUDA
inline void check_cuda(cudaError_t err, const char* op) {
  LTX_CHECK(err == cudaSuccess, op, "CUDA error: ", cudaGetErrorString(err));
}

// Compute capability of the tensor's device as major * 10 + minor (90 = sm_90).
inline int device_cc(const at::Tensor& t) { return device_props(t.device().index()).cc; }

inline const at::Tensor& checked_cuda(const at::Tensor& t, const char* op) {
  LTX_CHECK(t.is_cuda(), op, "x must be a CPU or CUDA tensor (got ", t.device(), ")");
  return t;
}

// For a CUDA impl: checks the tensor is on a CUDA device, makes that device
// current for the scope, and names the stream to launch on (PyTorch's current stream).
struct CudaScope {
  c10::cuda::CUDAGuard guard;
  cudaStream_t stream;
  CudaScope(const at::Tensor& t, const char* op)
      : guard(checked_cuda(t, op).device()),
        stream(c10::cuda::getCurrentCUDAStream(t.device().index()).stream()) {}
};

// <op>_cuda: the CUDA core on the prepared params, if there is anything to do, on `on`'s device
// and current stream; a launch error raises naming the op.
template <class P>
void run_cuda(const Prepared<P>& pr, const at::Tensor& on, const char* op,
              cudaError_t (*core)(const P&, cudaStream_t)) {
  if (!pr.params) return;
  const CudaScope scope(on, op);
  check_cuda(core(*pr.params, scope.stream), op);
}

// run_cuda for the row norms: a launch shape forced by LTX_KERNELS_NORM_SHAPE that cannot run
// the call's rows (the core's cudaErrorInvalidConfiguration) is named as such.
template <class P>
void run_norm_cuda(const Prepared<P>& pr, const at::Tensor& on, const char* op,
                   cudaError_t (*core)(const P&, cudaStream_t)) {
  if (!pr.params) return;
  const CudaScope scope(on, op);
  const cudaError_t err = core(*pr.params, scope.stream);
  LTX_CHECK(err != cudaErrorInvalidConfiguration || pr.params->shape.kind == NormShape::kAuto, op,
            "LTX_KERNELS_NORM_SHAPE=", dev_setting("LTX_KERNELS_NORM_SHAPE"), " cannot run rows of ",
            pr.params->x.layout.cols, " elements here (threads per CTA over the limit, or a shape the scalar "
            "path of unaligned rows does not compile)");
  check_cuda(err, op);
}
#else
// The CUDA branch of an adapter that serves both dispatch keys (the gemm family), in a build
// without CUDA.
[[noreturn]] inline void no_cuda_backend(const at::Tensor& t, const char* op) {
  LTX_CHECK(false, op, "this build has no CUDA backend (got a tensor on ", t.device(), ")");
  throw;  // unreachable: LTX_CHECK(false, ...) throws
}
#endif

}  // namespace torch_adapter
}  // namespace ltx_kernels
