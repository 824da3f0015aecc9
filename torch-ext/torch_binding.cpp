// Op schemas and their registrations. Every op is an out-variant ("Tensor! out" first, returns
// nothing); the Python wrapper allocates `out`. The same adapter function serves the CPU and
// CUDA dispatch keys and routes on the tensors' device.
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // y = x * rsqrt(mean(x^2, -1) + eps) * weight
  ops.def("rms_norm(Tensor! out, Tensor x, Tensor? weight, float eps) -> ()");
  ops.impl("rms_norm", c10::DeviceType::CPU, &rms_norm);
#ifdef LTX_KERNELS_WITH_CUDA
  ops.impl("rms_norm", c10::DeviceType::CUDA, &rms_norm);
#endif

  // ---- activation family
  // @family:activation

  // ---- fused norm family
  // @family:fused_norm

  // ---- rope family
  // @family:rope
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
