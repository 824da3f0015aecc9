// Argument checks of the torch adapters: TORCH_CHECK with the op's name in front, shapes in
// messages, the float types the row-wise ops take, and the DType of a tensor.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <string>

#include "ltx_kernels/common/dtype.h"

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

// The DType of a float32, float16 or bfloat16 tensor (checked before with check_float_type).
inline DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kHalf: return DType::kFloat16;
    case at::kBFloat16: return DType::kBFloat16;
    case at::kFloat: return DType::kFloat32;
    default: TORCH_CHECK(false, "ltx_kernels: no DType for ", t.scalar_type());
  }
}

}  // namespace torch_adapter
}  // namespace ltx_kernels
