// The one layout every row-wise op takes: `rows` rows of `cols` contiguous elements, row r
// starting at base + r * stride (elements). Host and device; no torch.
#pragma once

#include <cstdint>

namespace ltx_kernels {

struct RowLayout {
  int64_t rows;    // number of rows (any leading shape collapsed)
  int64_t cols;    // elements per row, innermost stride 1
  int64_t stride;  // elements between row starts (>= cols unless rows <= 1)
};

}  // namespace ltx_kernels
