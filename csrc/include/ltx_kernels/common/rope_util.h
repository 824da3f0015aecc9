// Layout of a RoPE problem, shared by the RoPE ops and their FP8-output variants (params
// structs, CUDA core, CPU backend). Host and device; no CUDA runtime and no torch.
//
//   x, out: rows = batch * seq rows of `cols` elements (innermost stride 1, row stride given
//           separately); row r is token (b, s) = (r / seq, r % seq).
//   A row holds cols / head_dim heads of `head_dim` (even) elements. Rotation pairs:
//     interleaved: (2i, 2i+1) inside a head, table width head_dim   (diffusers LTX-Video)
//     split:       (j, j + head_dim/2),       table width head_dim/2 (LTX-2)
//   cos/sin entry j of head h of token (b, s) is at  t + b*stride.b + h*stride.h + s*stride.s + j
//   (innermost stride 1). stride.b == 0 broadcasts one table over the batch, stride.h == 0
//   shares one table between the heads.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/dtype.h"

namespace ltx_kernels {

struct RopeShape {
  int64_t batch;     // B
  int64_t seq;       // S
  int64_t cols;      // C = heads * head_dim
  int64_t head_dim;  // d, even; d == C for one whole-row (LTX-Video) rotation
  bool split;        // false: interleaved pairs; true: halves
};

struct RopeTableStrides {  // elements
  int64_t b;
  int64_t h;
  int64_t s;
};

// The cos and sin tables of a call: float32, or the element type of the activation.
struct RopeTables {
  const void* cos;
  const void* sin;
  RopeTableStrides cos_strides;
  RopeTableStrides sin_strides;
  bool f32;  // float32 tables (else of the params' dtype)
};

// fn(TypeTag<float>{}) for float32 tables, else fn(TypeTag<T>{}) (T: the activation's type).
template <typename T, class Fn>
inline auto dispatch_tables(const RopeTables& t, Fn&& fn) -> decltype(fn(TypeTag<float>{})) {
  if (t.f32) return fn(TypeTag<float>{});
  return fn(TypeTag<T>{});
}

}  // namespace ltx_kernels
