// Every op's adapter entry point. The names match the schemas in torch_binding.cpp, the
// core functions in csrc/include/ltx_kernels/ and the Python API in ltx_kernels/__init__.py.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

// norm family (csrc/torch/norm.cpp)
void rms_norm(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
              double eps);

// activation family (csrc/torch/activation.cpp)
// @family:activation

// fused norm family (csrc/torch/fused_norm.cpp)
// @family:fused_norm

// rope family (csrc/torch/rope.cpp)
// @family:rope
