// Parameters of the fused-norm family, built once by the torch adapter and taken by both
// backends: cpu/ops.h and cuda/ops.h. No CUDA, no torch. fp32 arithmetic inside;
// every element is of the params' dtype; each call reads every input once and writes every
// output once. Semantics in full: docs/semantics.md, section "Norms, RoPE and DiT glue".
//
//   add_rms_norm:     residual_out = round(x + residual)
//                     out          = rms_norm(residual_out) * w      (from the ROUNDED residual_out)
//   layer_norm:       out = (x - mean) * rsqrt(var + eps) * w + b    (biased var, two-pass)
//   adaln_rms_norm:   out = rms_norm(x) * w * (1 + scale) + shift
//   adaln_layer_norm: out = layer_norm(x, w, b) * (1 + scale) + shift
//   gated_residual_adaln_rms_norm:
//                     h_out = round(h + y * gate)                     (fp32 product, fp32 sum, one rounding)
//                     out   = rms_norm(h_out) * w * (1 + scale) + shift (from the ROUNDED h_out)
//
// Aliasing: an output may be exactly one of the row inputs (same pointer and stride: in place,
// e.g. residual_out == residual, h_out == h, out == x); the two outputs must not overlap.
#pragma once

#include "ltx_kernels/common/dtype.h"
#include "ltx_kernels/common/fused_norm_util.h"
#include "ltx_kernels/common/rows.h"
#include "ltx_kernels/common/rowwise_launch.h"

namespace ltx_kernels {

// One struct for the five ops; what an op does not use is null (data nullptr).
struct FusedNormParams {
  DType dtype;
  OutRows out;           // [rows, cols]
  OutRows residual_out;  // add_rms_norm: residual_out; gated_residual_*: h_out
  InRows x;              // x; gated_residual_*: h
  InRows x2;             // add_rms_norm: residual; gated_residual_*: y
  const void* weight;    // [cols] contiguous, or nullptr
  const void* bias;      // [cols] contiguous, or nullptr (layer norms)
  AnyModTable gate;      // gated_residual_*
  AnyModTable scale;     // adaln_*, gated_residual_*
  AnyModTable shift;     // adaln_*, gated_residual_*
  float eps;
  NormShape shape;       // launch shape to force (kind kAuto: the heuristic's, rowwise_launch.h)
};

// The params as a backend's typed argument struct A holds them (the CPU backend's and the CUDA
// kernels' Args: fields out, out_stride, res_out, res_out_stride, x, x_stride, x2, x2_stride,
// weight, bias, gate, scale, shift, eps); the sizes each backend sets itself.
template <typename T, class A>
inline A fused_norm_args(const FusedNormParams& p) {
  A a{};
  a.out = p.out.ptr<T>();
  a.out_stride = p.out.layout.stride;
  a.res_out = p.residual_out.ptr<T>();
  a.res_out_stride = p.residual_out.layout.stride;
  a.x = p.x.ptr<T>();
  a.x_stride = p.x.layout.stride;
  a.x2 = p.x2.ptr<T>();
  a.x2_stride = p.x2.layout.stride;
  a.weight = static_cast<const T*>(p.weight);
  a.bias = static_cast<const T*>(p.bias);
  a.gate = typed<T>(p.gate);
  a.scale = typed<T>(p.scale);
  a.shift = typed<T>(p.shift);
  a.eps = p.eps;
  return a;
}

}  // namespace ltx_kernels
