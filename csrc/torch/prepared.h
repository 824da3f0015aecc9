// What make_<op>_params returns: Prepared<Params>, the params of one call and the tensors made
// for it; set_rows, the common start of a row-wise op's params.
#pragma once

#include <ATen/core/Tensor.h>

#include <forward_list>
#include <optional>
#include <utility>

#include "tensor_rows.h"

namespace ltx_kernels {
namespace torch_adapter {

// The params of one call (none when the problem is empty and every check passed: nothing to
// run), and the tensors the adapter made for it (contiguous or aligned copies of inputs), kept
// alive until the core returns.
template <class P>
struct Prepared {
  std::optional<P> params;
  std::forward_list<at::Tensor> held;

  // Keeps t alive with the params; returns it.
  const at::Tensor& keep(at::Tensor t) { return held.emplace_front(std::move(t)); }
  // Input rows: t itself when row-addressable, else a contiguous copy kept here.
  const at::Tensor& rows_source(const at::Tensor& t) { return keep(as_rows(t) ? t : t.contiguous()); }
  P& emplace() { return params.emplace(); }
};

// The common start of a row-wise op's params: x read as rows (x itself when row-addressable,
// else a contiguous copy kept in pr), out written as rows (exactly x, or disjoint from it), rows
// of at most 2^31-1 elements. Fills p.dtype, p.out and p.x.
template <class P, class Params>
void set_rows(Prepared<P>& pr, Params& p, const at::Tensor& out, const at::Tensor& x, const char* op) {
  const at::Tensor& xh = pr.rows_source(x);
  check_no_partial_overlap(out, xh, op, "x");
  p.dtype = dtype_of(x);
  p.out = out_rows(out, op);
  p.x = in_rows(xh);
  check_rows_fit(p.x.layout, op);
}

}  // namespace torch_adapter
}  // namespace ltx_kernels
