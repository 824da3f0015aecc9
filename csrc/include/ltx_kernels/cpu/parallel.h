// How the CPU backend runs independent work items: every CPU entry point takes a ParallelFor
// and calls it with the number of items and the smallest chunk worth a task. The torch adapter
// passes one built on at::parallel_for; GoogleTest passes serial_for. No torch.
#pragma once

#include <cstdint>
#include <functional>

namespace ltx_kernels {
namespace cpu {

// body(begin, end) over disjoint chunks that together cover [0, n).
using RangeFn = std::function<void(int64_t begin, int64_t end)>;
using ParallelFor = std::function<void(int64_t n, int64_t grain, const RangeFn& body)>;

// One chunk on the calling thread.
inline void serial_for(int64_t n, int64_t /*grain*/, const RangeFn& body) {
  if (n > 0) body(0, n);
}

}  // namespace cpu
}  // namespace ltx_kernels
