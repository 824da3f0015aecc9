// The IPC exchanges' plans (distributed/sp_ipc_plan.h): the checks of a call against the
// communicator, in the order the adapter raises them after its tensor checks, then the layouts.
#include "ltx_kernels/distributed/sp_ipc_plan.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "ltx_kernels/distributed/sp_layout.h"

namespace ltx_kernels {
namespace {

template <class... A>
std::string str(const A&... a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}

// "[2, 3, 4]", as the adapters print shapes.
std::string shape(const int64_t* v, int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t numel(const SpStrided& a) {
  int64_t n = 1;
  for (int64_t d = 0; d < a.nd; ++d) n *= a.size[d];
  return n;
}

// at::Tensor::is_contiguous: dimensions of size 1 in any stride; an empty array is contiguous.
bool contiguous(const SpStrided& a) {
  if (numel(a) == 0) return true;
  int64_t expect = 1;
  for (int64_t d = a.nd - 1; d >= 0; --d) {
    if (a.size[d] == 1) continue;
    if (a.stride[d] != expect) return false;
    expect *= a.size[d];
  }
  return true;
}

SpArray array4(const SpStrided& a) {
  return SpArray{a.data, a.elem_size, {a.size[0], a.size[1], a.size[2], a.size[3]},
                 {a.stride[0], a.stride[1], a.stride[2], a.stride[3]}};
}

// What every exchange checks first and fills: one count per rank, the timeout, the prefix sums.
std::string plan_common(const SpStrided& in, const int64_t* tokens, int64_t n, double timeout_s, SpIpcParams* p) {
  if (n != p->comm.world) return str("tokens must list one count per rank (", p->comm.world, ") (got ", n, ")");
  if (!(timeout_s > 0)) return str("timeout must be > 0 s (got ", timeout_s, ")");
  if (n < 1 || n > kSpMaxWorld)
    return str("tokens must list one count per rank, 1 to ", kSpMaxWorld, " ranks (got ", n, ")");
  if (!sp_prefix(tokens, n, p->prefix)) return str("token counts must be >= 0 (got ", shape(tokens, n), ")");
  p->timeout_ns = uint64_t(timeout_s * 1e9);
  p->elem_size = in.elem_size;
  return "";
}

// x.shape[1] is this rank's count.
std::string check_rank_tokens(const SpStrided& x, const int64_t* tokens, const SpIpcParams& p) {
  const int64_t want = tokens[p.comm.rank];
  if (x.size[1] != want) return str("x.shape[1] must be this rank's token count ", want, " (got ", x.size[1], ")");
  return "";
}

// out has shape `want` (4-D, named `what`, with a contiguous last dimension; or, what == nullptr,
// contiguous), and the call's receive buffer of `need` bytes fits the communicator's.
std::string check_out(const SpStrided& out, const int64_t* want, int64_t nd, const char* what, int64_t need,
                      const SpIpcParams& p) {
  if (what != nullptr && out.nd != 4)
    return str("out must be 4-D ", what, " (got shape ", shape(out.size, out.nd), ")");
  if (out.nd != nd || !std::equal(want, want + nd, out.size))
    return str("out must have shape ", shape(want, nd), " (got ", shape(out.size, out.nd), ")");
  if (what != nullptr && out.size[3] > 1 && out.stride[3] != 1)
    return str("out must have stride 1 in its last dimension (got strides ", shape(out.stride, out.nd), ")");
  if (what == nullptr && !contiguous(out))
    return str("out must be contiguous (got strides ", shape(out.stride, out.nd), ")");
  if (need > p.comm.nbytes)
    return str("the call needs a receive buffer of ", need, " bytes but the communicator holds ", p.comm.nbytes,
               " (raise max_tokens)");
  return "";
}

// out as the exchange's final copy reads it: [B, T, R, D] with one segment (our buffer).
void set_out(const SpArray& out, SpIpcParams* p) {
  const int64_t one_segment[2] = {0, out.size[1]};
  p->out = sp_tokens_layout(out, one_segment, 1);
  p->out_base = out.data;
}

}  // namespace

std::string sp_ipc_plan_send_recv_heads(const SpStrided& x, const SpStrided& out, const int64_t* tokens,
                                        int64_t n, double timeout_s, SpIpcParams* p) {
  std::string why = plan_common(x, tokens, n, timeout_s, p);
  if (!why.empty()) return why;
  const int64_t W = p->comm.world, B = x.size[0], H = x.size[2], D = x.size[3], Tt = p->prefix[W];
  if (H % W != 0) return str("heads H = x.shape[2] must be divisible by world (got H = ", H, ", world = ", W, ")");
  if (!(why = check_rank_tokens(x, tokens, *p)).empty()) return why;
  const int64_t want[4] = {B, Tt, H / W, D};
  why = check_out(out, want, 4, "[B, T_total, H / world, D]", B * Tt * (H / W) * D * x.elem_size, *p);
  if (!why.empty()) return why;
  p->in_heads = sp_heads_layout(array4(x), W);
  p->in = x.data;
  set_out(array4(out), p);
  return "";
}

std::string sp_ipc_plan_gather_heads(const SpStrided& y, const SpStrided& out, const int64_t* tokens, int64_t n,
                                     double timeout_s, SpIpcParams* p) {
  std::string why = plan_common(y, tokens, n, timeout_s, p);
  if (!why.empty()) return why;
  const int64_t W = p->comm.world, B = y.size[0], H = y.size[2] * W, D = y.size[3], Tt = p->prefix[W];
  if (y.size[1] != Tt) return str("y.shape[1] must be sum(tokens) = ", Tt, " (got ", y.size[1], ")");
  const int64_t Tmax = *std::max_element(tokens, tokens + n);
  const int64_t want[4] = {B, tokens[p->comm.rank], H, D};
  why = check_out(out, want, 4, "[B, T, H, D]", B * Tmax * H * D * y.elem_size, *p);
  if (!why.empty()) return why;
  p->in_tokens = sp_tokens_layout(array4(y), p->prefix, W);
  p->in = y.data;
  set_out(array4(out), p);
  return "";
}

std::string sp_ipc_plan_all_gather(const SpStrided& x, const SpStrided& out, const int64_t* tokens, int64_t n,
                                   double timeout_s, SpIpcParams* p) {
  std::string why = plan_common(x, tokens, n, timeout_s, p);
  if (!why.empty()) return why;
  const int64_t W = p->comm.world, B = x.size[0], T = x.size[1], Tt = p->prefix[W];
  if (!(why = check_rank_tokens(x, tokens, *p)).empty()) return why;
  std::vector<int64_t> want(x.size, x.size + x.nd);
  want[1] = Tt;
  const int64_t out_numel = numel(out);
  why = check_out(out, want.data(), x.nd, nullptr, out_numel * x.elem_size, *p);
  if (!why.empty()) return why;
  const int64_t F = B == 0 || T == 0 ? 0 : numel(x) / (B * T);
  const int64_t one_segment[2] = {0, T};
  p->in_tokens = sp_tokens_layout(sp_contiguous(x.data, x.elem_size, B, T, 1, F), one_segment, 1);
  p->in = x.data;
  set_out(sp_contiguous(out.data, out.elem_size, B, Tt, 1, out_numel / std::max<int64_t>(B * Tt, 1)), p);
  return "";
}

}  // namespace ltx_kernels
