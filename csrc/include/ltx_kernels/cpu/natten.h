// CPU reference backend for neighborhood attention (see attention/natten.h for the semantics).
// Plain C++, no torch: queries [q_begin, q_end) of the flattened (batch, head, S0, S1, S2)
// index space, fp32 scores, double softmax sums, so the adapter can split queries over threads.
#pragma once

#include <cstdint>

#include "ltx_kernels/attention/natten_problem.h"
#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {

namespace cpu {

// T in {float, half_t, bfloat16_t}.
template <typename T>
void na_forward(T* out, const NaStrides& os, const T* q, const NaStrides& qs, const T* k,
                const NaStrides& ks, const T* v, const NaStrides& vs, const NaProblem& p,
                int64_t q_begin, int64_t q_end);

}  // namespace cpu
}  // namespace ltx_kernels
