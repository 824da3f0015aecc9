// The one layout every row-wise op takes: `rows` rows of `cols` contiguous elements, row r
// starting at base + r * stride (elements). The params structs hold each row-wise operand as a
// base pointer with its RowLayout (InRows / OutRows); element type from the params' DType.
// Host and device; no torch.
#pragma once

#include <cstdint>

namespace ltx_kernels {

struct RowLayout {
  int64_t rows;    // number of rows (any leading shape collapsed)
  int64_t cols;    // elements per row, innermost stride 1
  int64_t stride;  // elements between row starts (>= cols unless rows <= 1)
};

// A row-wise input: `layout.rows` rows of `layout.cols` elements at data + r * layout.stride.
struct InRows {
  const void* data;
  RowLayout layout;
  template <class T>
  const T* ptr() const { return static_cast<const T*>(data); }
};

// A row-wise output.
struct OutRows {
  void* data;
  RowLayout layout;
  template <class T>
  T* ptr() const { return static_cast<T*>(data); }
};

}  // namespace ltx_kernels
