// The one layout every row-wise op takes: `rows` rows of `cols` contiguous elements, row r
// starting at base + r * stride (elements). The params structs hold each row-wise operand as a
// base pointer with its RowLayout (InRows / OutRows); element type from the params' DType.
// Host and device; no torch. strided_rows / strided_span: the rule by which a strided array
// (a tensor's sizes and strides) is read as rows, for the adapters.
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

// The strided array of `nd` dimensions (sizes and strides in elements) as rows of its last
// dimension, when its memory allows: last stride 1 (or at most one element per row) and the
// leading dimensions collapsible to one row stride (dimensions of size 1 do not count); rows
// that would overlap are refused. False when it cannot be read as rows (and for nd == 0).
inline bool strided_rows(int64_t nd, const int64_t* sizes, const int64_t* strides, RowLayout* out) {
  if (nd == 0) return false;
  const int64_t cols = sizes[nd - 1];
  if (cols > 1 && strides[nd - 1] != 1) return false;
  int64_t rows = 1;
  int64_t row_stride = cols;
  bool have_stride = false;
  int64_t expect = 0;  // stride the next-outer non-trivial dimension must have
  for (int64_t d = nd - 2; d >= 0; --d) {
    const int64_t s = sizes[d];
    rows *= s;
    if (s == 1) continue;
    if (!have_stride) {
      row_stride = strides[d];
      have_stride = true;
    } else if (strides[d] != expect) {
      return false;
    }
    expect = strides[d] * s;
  }
  if (rows > 1 && row_stride < cols) return false;  // rows would overlap
  *out = RowLayout{rows, cols, row_stride};
  return true;
}

// Elements from a non-empty strided array's first element to one past its last (non-negative
// strides): the address range it spans is [base, base + span * element size).
inline int64_t strided_span(int64_t nd, const int64_t* sizes, const int64_t* strides) {
  int64_t last = 0;
  for (int64_t d = 0; d < nd; ++d) last += (sizes[d] - 1) * strides[d];
  return last + 1;
}

}  // namespace ltx_kernels
