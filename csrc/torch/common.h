// What every torch adapter shares, by concern (include the ones an adapter uses, or this file
// for all of them):
//   checks.h       argument checks that name the op and the rule; the DType of a tensor
//   tensor_rows.h  tensors as row layouts; overlap checks
//   prepared.h     the Prepared<Params> a make_<op>_params returns; set_rows
//   run.h          running a core on the CPU (at::parallel_for) or on CUDA (device guard,
//                  current stream, error check)
//   norm_shape.h   the row norms' forced launch shape (norm.cpp, fused_norm.cpp)
// With the adapters, the only C++ that sees at::Tensor; the rules that need no tensor (row
// layouts, launch shapes) live in the core (common/rows.h, common/rowwise_launch.h).
//
// An adapter file holds, per op: make_<op>_params (every check, in the order the error
// messages are tested, then ONE params struct) and two thin impls, <op>_cpu and <op>_cuda,
// registered per dispatch key in torch-ext/torch_binding.cpp.
#pragma once

#include "checks.h"
#include "ltx_kernels/common/dev_config.h"  // dev_setting: the adapters' developer settings
#include "prepared.h"
#include "run.h"
#include "tensor_rows.h"
