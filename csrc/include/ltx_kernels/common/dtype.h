// The storage type of a floating-point operand, as the params structs carry it, and the one
// place that turns it into an element type. No torch; the CUDA half is compiled by nvcc only.
//
//   DType        CPU backend     CUDA core
//   kFloat32     float           float
//   kFloat16     half_t          __half
//   kBFloat16    bfloat16_t      __nv_bfloat16
//
// Usage (a core entry point):
//   return dispatch_cuda(p.dtype, [&](auto tag) {
//     using T = type_of<decltype(tag)>;
//     return launch<T>(p, stream);
//   });
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace ltx_kernels {

enum class DType : int8_t { kFloat32, kFloat16, kBFloat16 };

// Bytes per element.
inline int dtype_size(DType dt) { return dt == DType::kFloat32 ? 4 : 2; }

// An empty value that names a type: what the dispatchers pass to their callback.
template <class T>
struct TypeTag {
  using type = T;
};
template <class Tag>
using type_of = typename Tag::type;

// fn(TypeTag<F32>{}), fn(TypeTag<F16>{}) or fn(TypeTag<BF16>{}) as dt says; returns its result.
template <class F32, class F16, class BF16, class Fn>
inline auto dispatch_dtype(DType dt, Fn&& fn) -> decltype(fn(TypeTag<F32>{})) {
  switch (dt) {
    case DType::kFloat16: return fn(TypeTag<F16>{});
    case DType::kBFloat16: return fn(TypeTag<BF16>{});
    case DType::kFloat32: break;
  }
  return fn(TypeTag<F32>{});
}

// The CPU backend's element types (common/host_types.h).
template <class Fn>
inline auto dispatch_cpu(DType dt, Fn&& fn) -> decltype(fn(TypeTag<float>{})) {
  return dispatch_dtype<float, half_t, bfloat16_t>(dt, static_cast<Fn&&>(fn));
}

#ifdef __CUDACC__
// The CUDA core's element types.
template <class Fn>
inline auto dispatch_cuda(DType dt, Fn&& fn) -> decltype(fn(TypeTag<float>{})) {
  return dispatch_dtype<float, __half, __nv_bfloat16>(dt, static_cast<Fn&&>(fn));
}
#endif

}  // namespace ltx_kernels
