// The row norms' launch shape forced by the developer setting LTX_KERNELS_NORM_SHAPE (for tests
// and sweeps; grammar: common/rowwise_launch.h's parse_norm_shape), and run_cuda for the row
// norms, which names a forced shape that cannot run the call's rows. Used by norm.cpp and
// fused_norm.cpp.
#pragma once

#include <string>

#include "checks.h"
#include "ltx_kernels/common/dev_config.h"
#include "ltx_kernels/common/rowwise_launch.h"
#include "run.h"

namespace ltx_kernels {
namespace torch_adapter {

// LTX_KERNELS_NORM_SHAPE (common/dev_config.h): "auto" (or unset), "w<nv>" (a warp per row, nv
// 16-byte accesses per lane), "b<nv>" (a CTA per row), either with a "p" suffix (epilogue
// operands preloaded), or "loop". A shape that cannot run the call's row is refused by the core.
inline NormShape env_norm_shape(const char* op) {
  NormShape s;
  const std::string v = dev_setting("LTX_KERNELS_NORM_SHAPE");
  LTX_CHECK(parse_norm_shape(v.c_str(), &s), op,
            "LTX_KERNELS_NORM_SHAPE must be 'auto', 'loop', or 'w' / 'b' followed by 1, 2, 4, 8 or 16 and "
            "optionally 'p' (got '", v, "')");
  return s;
}

#ifdef LTX_KERNELS_WITH_CUDA
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
#endif

}  // namespace torch_adapter
}  // namespace ltx_kernels
