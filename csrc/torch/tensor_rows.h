// Tensors as row layouts (common/rows.h): a tensor read as rows of its last dimension when its
// memory allows (the rule: strided_rows), else a contiguous copy for inputs and an error for
// outputs; overlap checks between an output and the inputs it is computed from.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "checks.h"
#include "ltx_kernels/common/rows.h"

namespace ltx_kernels {
namespace torch_adapter {

// The tensor as rows of its last dimension, when its memory allows: last stride 1 and the
// leading dimensions collapsible to one stride. nullopt otherwise.
inline std::optional<RowLayout> as_rows(const at::Tensor& t) {
  RowLayout l{};
  if (!strided_rows(t.dim(), t.sizes().data(), t.strides().data(), &l)) return std::nullopt;
  return l;
}

// Input rows: the tensor as it is when row-addressable, else a contiguous copy (kept alive by
// `holder`).
inline RowLayout input_rows(const at::Tensor& t, at::Tensor& holder) {
  if (auto l = as_rows(t)) {
    holder = t;
    return *l;
  }
  holder = t.contiguous();
  return *as_rows(holder);
}

// Output rows: must be row-addressable; we never write through a temporary silently.
inline RowLayout output_rows(const at::Tensor& out, const char* op) {
  auto l = as_rows(out);
  LTX_CHECK(l.has_value(), op,
            "out must have stride 1 in its last dimension and leading dimensions that collapse "
            "to one row stride (got strides ",
            shape_str(out.strides()), ")");
  return *l;
}

// Whether two tensors may share bytes (conservatively, by the address ranges they span).
inline bool bytes_overlap(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  if (!a.storage().is_alias_of(b.storage())) return false;
  auto range = [](const at::Tensor& t) {
    const auto* p = static_cast<const char*>(t.data_ptr());
    return std::make_pair(p, p + strided_span(t.dim(), t.sizes().data(), t.strides().data()) * t.element_size());
  };
  const auto [a0, a1] = range(a);
  const auto [b0, b1] = range(b);
  return !(a1 <= b0 || b1 <= a0);
}

// out may be exactly `in` (same address and strides: an in-place op) or disjoint from it.
// Anything else that shares bytes is refused (conservatively, by address range).
inline void check_no_partial_overlap(const at::Tensor& out, const at::Tensor& in, const char* op,
                                     const char* in_name) {
  if (out.numel() > 0 && out.data_ptr() == in.data_ptr() && out.sizes() == in.sizes() &&
      out.strides() == in.strides())
    return;
  LTX_CHECK(!bytes_overlap(out, in), op, "out partially overlaps ", in_name,
            "; use a separate out or exactly the same tensor");
}

inline void check_rows_fit(const RowLayout& l, const char* op) {
  LTX_CHECK(l.cols <= int64_t(INT32_MAX), op, "rows wider than 2^31-1 elements are not supported (got ",
            l.cols, ")");
}

// The rows of a tensor `as_rows` accepted (a checked input, or a tensor input_rows kept).
inline InRows in_rows(const at::Tensor& t) { return InRows{t.data_ptr(), *as_rows(t)}; }

// An output's rows; the rule output_rows checks.
inline OutRows out_rows(const at::Tensor& out, const char* op) {
  return OutRows{out.data_ptr(), output_rows(out, op)};
}

}  // namespace torch_adapter
}  // namespace ltx_kernels
