// Torch adapter for the distributed family: sequence-parallel pack/unpack around an all_to_all
// or all_gather (one SpHeadsParams / SpTokensParams for the CPU backend or the CUDA core), and
// the CUDA IPC transport (distributed/sp_ipc.h: the registry and the exchanges live in the core;
// here, checks and the tensors' layouts). Every copy moves bytes: any dtype of 1, 2, 4 or 8
// bytes, byte-exact.
#include <algorithm>
#include <string>
#include <vector>

#include "common.h"
#include "ltx_kernels/cpu/ops.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#include "ltx_kernels/distributed/sp_ipc.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

void check_bytes_dtype(const at::Tensor& t, const char* op, const char* name) {
  const int64_t es = t.element_size();
  LTX_CHECK(es == 1 || es == 2 || es == 4 || es == 8, op, name,
            " must have 1, 2, 4 or 8-byte elements (got ", t.scalar_type(), ")");
  LTX_CHECK(!t.is_complex() && t.scalar_type() != at::kBool, op, name,
            " must be a real dtype (got ", t.scalar_type(), ")");
}

// out and in share no bytes (these copies change the layout: in place is impossible).
void check_disjoint(const at::Tensor& out, const at::Tensor& in, const char* op, const char* name) {
  LTX_CHECK(!bytes_overlap(out, in), op, "out must not overlap ", name);
}

// A [B, T, H, D] tensor whose last dimension is contiguous: the tensor itself, else a copy.
at::Tensor last_contig(const at::Tensor& t) {
  return (t.size(-1) <= 1 || t.stride(-1) == 1) ? t : t.contiguous();
}

void check_4d(const at::Tensor& t, const char* op, const char* name, const char* what) {
  LTX_CHECK(t.dim() == 4, op, name, " must be 4-D ", what, " (got shape ", shape_str(t.sizes()),
            ")");
}

void check_out_4d(const at::Tensor& out, const char* op) {
  LTX_CHECK(out.size(3) <= 1 || out.stride(3) == 1, op,
            "out must have stride 1 in its last dimension (got strides ",
            shape_str(out.strides()), ")");
}

void check_world(int64_t world, const char* op) {
  LTX_CHECK(world >= 1 && world <= kSpMaxWorld, op, "world must be in [1, ", kSpMaxWorld,
            "] (got ", world, ")");
}

// Per-rank token counts -> prefix sums; checks them.
std::vector<int64_t> prefix_of(c10::IntArrayRef tokens, const char* op) {
  LTX_CHECK(tokens.size() >= 1 && int64_t(tokens.size()) <= kSpMaxWorld, op,
            "tokens must list one count per rank, 1 to ", kSpMaxWorld, " ranks (got ",
            tokens.size(), ")");
  std::vector<int64_t> p(tokens.size() + 1, 0);
  for (size_t s = 0; s < tokens.size(); ++s) {
    LTX_CHECK(tokens[s] >= 0, op, "token counts must be >= 0 (got ", shape_str(tokens), ")");
    p[s + 1] = p[s] + tokens[s];
  }
  return p;
}

void check_buffer(const at::Tensor& buf, const at::Tensor& ref, int64_t numel, const char* op,
                  const char* name) {
  check_same_device(buf, ref, op, name, "x");
  check_same_dtype(buf, ref, op, name, "x");
  LTX_CHECK(buf.is_contiguous(), op, name, " must be contiguous (got strides ",
            shape_str(buf.strides()), ")");
  LTX_CHECK(buf.numel() == numel, op, name, " must have ", numel, " elements (got shape ",
            shape_str(buf.sizes()), ")");
}

char* bytes(const at::Tensor& t) { return static_cast<char*>(const_cast<void*>(t.data_ptr())); }

SpHeadsLayout heads_layout(const at::Tensor& x, int64_t world) {
  SpHeadsLayout l{};
  const int64_t es = x.element_size();
  l.B = x.size(0), l.T = x.size(1), l.H = x.size(2), l.D = x.size(3), l.W = world;
  l.sb = x.stride(0) * es, l.st = x.stride(1) * es, l.sh = x.stride(2) * es;
  l.buf_T = l.T, l.t0 = 0;
  return l;
}

SpTokensLayout tokens_layout(const at::Tensor& y, const std::vector<int64_t>& prefix) {
  SpTokensLayout l{};
  const int64_t es = y.element_size();
  l.B = y.size(0), l.T = y.size(1), l.Hl = y.size(2), l.D = y.size(3);
  l.W = int64_t(prefix.size()) - 1;
  l.sb = y.stride(0) * es, l.st = y.stride(1) * es, l.sh = y.stride(2) * es;
  l.seg_hs = l.Hl;
  for (size_t i = 0; i < prefix.size(); ++i) l.prefix[i] = prefix[i];
  return l;
}

// The all_to_all receive buffer `buf` = concat_s [B, tokens[s], Hl, D] as the layout's segments.
void packed_segments(SpTokensLayout& l, char* buf, const std::vector<int64_t>& prefix, int64_t elem_size) {
  const int64_t tok_bytes = l.Hl * l.D * elem_size;
  for (int64_t s = 0; s < l.W; ++s) {
    l.seg[s] = buf + l.B * prefix[s] * tok_bytes;
    l.seg_T[s] = prefix[s + 1] - prefix[s];
  }
}

Prepared<SpHeadsParams> make_sp_pack_heads_params(at::Tensor& out, const at::Tensor& x, int64_t world) {
  constexpr const char* op = "sp_pack_heads";
  check_4d(x, op, "x", "[B, T, H, D]");
  check_bytes_dtype(x, op, "x");
  check_world(world, op);
  LTX_CHECK(x.size(2) % world == 0, op, "heads H = x.shape[2] must be divisible by world (got H = ",
            x.size(2), ", world = ", world, ")");
  check_buffer(out, x, x.numel(), op, "out");
  check_disjoint(out, x, op, "x");
  Prepared<SpHeadsParams> pr;
  if (x.numel() == 0) return pr;
  const at::Tensor& xc = pr.keep(last_contig(x));
  SpHeadsParams& p = pr.emplace();
  p.layout = heads_layout(xc, world);
  p.x = bytes(xc);
  p.elem_size = x.element_size();
  const int64_t group_bytes = p.layout.B * p.layout.T * (p.layout.H / world) * p.layout.D * p.elem_size;
  for (int64_t w = 0; w < world; ++w) p.layout.group[w] = bytes(out) + w * group_bytes;
  return pr;
}

Prepared<SpTokensParams> make_sp_unpack_heads_params(at::Tensor& out, const at::Tensor& recv,
                                                     c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_unpack_heads";
  check_4d(out, op, "out", "[B, T_total, H / world, D]");
  check_bytes_dtype(out, op, "out");
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  LTX_CHECK(out.size(1) == prefix.back(), op, "out.shape[1] must be sum(tokens) = ", prefix.back(),
            " (got ", out.size(1), ")");
  check_out_4d(out, op);
  check_buffer(recv, out, out.numel(), op, "recv");
  check_disjoint(out, recv, op, "recv");
  Prepared<SpTokensParams> pr;
  if (out.numel() == 0) return pr;
  SpTokensParams& p = pr.emplace();
  p.layout = tokens_layout(out, prefix);
  p.y = bytes(out);
  p.elem_size = out.element_size();
  packed_segments(p.layout, bytes(pr.keep(recv)), prefix, p.elem_size);
  return pr;
}

Prepared<SpTokensParams> make_sp_pack_tokens_params(at::Tensor& out, const at::Tensor& y, c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_pack_tokens";
  check_4d(y, op, "y", "[B, T_total, H / world, D]");
  check_bytes_dtype(y, op, "y");
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  LTX_CHECK(y.size(1) == prefix.back(), op, "y.shape[1] must be sum(tokens) = ", prefix.back(),
            " (got ", y.size(1), ")");
  check_buffer(out, y, y.numel(), op, "out");
  check_disjoint(out, y, op, "y");
  Prepared<SpTokensParams> pr;
  if (y.numel() == 0) return pr;
  const at::Tensor& yc = pr.keep(last_contig(y));
  SpTokensParams& p = pr.emplace();
  p.layout = tokens_layout(yc, prefix);
  p.y = bytes(yc);
  p.elem_size = y.element_size();
  packed_segments(p.layout, bytes(out), prefix, p.elem_size);
  return pr;
}

Prepared<SpHeadsParams> make_sp_unpack_tokens_params(at::Tensor& out, const at::Tensor& recv, int64_t world) {
  constexpr const char* op = "sp_unpack_tokens";
  check_4d(out, op, "out", "[B, T, H, D]");
  check_bytes_dtype(out, op, "out");
  check_world(world, op);
  LTX_CHECK(out.size(2) % world == 0, op,
            "heads H = out.shape[2] must be divisible by world (got H = ", out.size(2),
            ", world = ", world, ")");
  check_out_4d(out, op);
  check_buffer(recv, out, out.numel(), op, "recv");
  check_disjoint(out, recv, op, "recv");
  Prepared<SpHeadsParams> pr;
  if (out.numel() == 0) return pr;
  SpHeadsParams& p = pr.emplace();
  p.layout = heads_layout(out, world);
  p.x = bytes(out);
  p.elem_size = out.element_size();
  const int64_t group_bytes = p.layout.B * p.layout.T * (p.layout.H / world) * p.layout.D * p.elem_size;
  for (int64_t w = 0; w < world; ++w) p.layout.group[w] = bytes(pr.keep(recv)) + w * group_bytes;
  return pr;
}

Prepared<SpTokensParams> make_sp_unpack_gather_params(at::Tensor& out, const at::Tensor& recv,
                                                      c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_unpack_gather";
  LTX_CHECK(out.dim() >= 2, op, "out must be [B, T_total, ...] (got shape ", shape_str(out.sizes()),
            ")");
  check_bytes_dtype(out, op, "out");
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  const int64_t W = int64_t(tokens.size());
  LTX_CHECK(out.size(1) == prefix.back(), op, "out.shape[1] must be sum(tokens) = ", prefix.back(),
            " (got ", out.size(1), ")");
  int64_t F = 1, expect = 1;
  bool inner_contig = true;
  for (int64_t d = out.dim() - 1; d >= 2; --d) {
    if (out.size(d) != 1 && out.stride(d) != expect) inner_contig = false;
    expect *= out.size(d);
    F *= out.size(d);
  }
  LTX_CHECK(inner_contig, op, "out must be contiguous after its first two dimensions (got strides ",
            shape_str(out.strides()), ")");
  const int64_t Tmax = *std::max_element(tokens.begin(), tokens.end());
  check_buffer(recv, out, W * out.size(0) * Tmax * F, op, "recv");
  check_disjoint(out, recv, op, "recv");
  Prepared<SpTokensParams> pr;
  if (out.numel() == 0) return pr;
  const at::Tensor& o4 = pr.keep(out.dim() == 2 ? out.unsqueeze(-1).unsqueeze(-1)
                                                : out.flatten(2).unsqueeze(2));  // [B, T_total, 1, F] view
  SpTokensParams& p = pr.emplace();
  p.layout = tokens_layout(o4, prefix);
  p.y = bytes(o4);
  p.elem_size = out.element_size();
  for (int64_t s = 0; s < W; ++s) {
    p.layout.seg[s] = bytes(recv) + s * p.layout.B * Tmax * F * p.elem_size;
    p.layout.seg_T[s] = Tmax;
  }
  return pr;
}

constexpr int64_t kHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)
#ifdef LTX_KERNELS_WITH_CUDA
static_assert(kHandleBytes == kSpIpcHandleBytes, "IPC handle size");
#endif

void check_handle_tensor(const at::Tensor& h, const char* op, const char* name) {
  LTX_CHECK(h.is_cpu() && h.scalar_type() == at::kByte && h.is_contiguous(), op, name,
            " must be a contiguous uint8 CPU tensor (got ", h.scalar_type(), " on ", h.device(), ")");
}

#ifdef LTX_KERNELS_WITH_CUDA
// What the three IPC exchanges share: the communicator, out / x / status checks, timeout.
SpIpcParams ipc_params(const at::Tensor& out, const at::Tensor& status, const at::Tensor& x, int64_t id,
                       c10::IntArrayRef tokens, double timeout_s, const char* op) {
  SpIpcParams p{};
  const std::string why = sp_ipc_find(id, &p.comm);
  LTX_CHECK(why.empty(), op, why);
  LTX_CHECK(x.is_cuda() && x.device().index() == p.comm.device, op,
            "x must be on the communicator's device cuda:", p.comm.device, " (got ", x.device(), ")");
  check_same_device(out, x, op, "out", "x");
  check_same_dtype(out, x, op, "out", "x");
  check_bytes_dtype(x, op, "x");
  check_disjoint(out, x, op, "x");
  LTX_CHECK(status.is_cuda() && status.device() == x.device() && status.scalar_type() == at::kInt &&
                status.numel() >= 1,
            op, "status must be an int32 tensor on x's device (got ", status.scalar_type(), " on ",
            status.device(), ")");
  LTX_CHECK(int64_t(tokens.size()) == p.comm.world, op, "tokens must list one count per rank (",
            p.comm.world, ") (got ", tokens.size(), ")");
  LTX_CHECK(timeout_s > 0, op, "timeout must be > 0 s (got ", timeout_s, ")");
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  std::copy(prefix.begin(), prefix.end(), p.prefix);
  p.status = status.data_ptr<int>();
  p.timeout_ns = uint64_t(timeout_s * 1e9);
  p.elem_size = x.element_size();
  return p;
}

// out: 4-D of shape `want` (what: the layout's name), last dimension contiguous.
void check_out_shape(const at::Tensor& out, const std::vector<int64_t>& want, const char* what, const char* op) {
  check_4d(out, op, "out", what);
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape ", shape_str(want), " (got ",
            shape_str(out.sizes()), ")");
  check_out_4d(out, op);
}

// The call's receive buffer must fit the communicator's.
void check_buffer_bytes(int64_t need, const SpIpcParams& p, const char* op) {
  LTX_CHECK(need <= p.comm.nbytes, op, "the call needs a receive buffer of ", need,
            " bytes but the communicator holds ", p.comm.nbytes, " (raise max_tokens)");
}

// out as the exchange's final copy sees it: [B, T, R, D] with one segment.
void set_out(SpIpcParams& p, const at::Tensor& out4) {
  p.out = tokens_layout(out4, {0, out4.size(1)});
  p.out_base = bytes(out4);
}

// The exchange on x's device and current stream; a rank that did not arrive raises on the host
// (distributed.py reads the status word), not here.
void run_exchange(const SpIpcParams& p, const at::Tensor& x, const char* op,
                  cudaError_t (*exchange)(const SpIpcParams&, cudaStream_t)) {
  const CudaScope scope(x, op);
  check_cuda(exchange(p, scope.stream), op);
}
#endif

[[maybe_unused]] constexpr const char* kNoIpc = "this build has no CUDA backend (the IPC transport needs CUDA)";

}  // namespace

void sp_pack_heads_cpu(at::Tensor& out, const at::Tensor& x, int64_t world) {
  run_cpu(make_sp_pack_heads_params(out, x, world), cpu::sp_pack_heads);
}
void sp_unpack_heads_cpu(at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens) {
  run_cpu(make_sp_unpack_heads_params(out, recv, tokens), cpu::sp_unpack_heads);
}
void sp_pack_tokens_cpu(at::Tensor& out, const at::Tensor& y, c10::IntArrayRef tokens) {
  run_cpu(make_sp_pack_tokens_params(out, y, tokens), cpu::sp_pack_tokens);
}
void sp_unpack_tokens_cpu(at::Tensor& out, const at::Tensor& recv, int64_t world) {
  run_cpu(make_sp_unpack_tokens_params(out, recv, world), cpu::sp_unpack_tokens);
}
void sp_unpack_gather_cpu(at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens) {
  run_cpu(make_sp_unpack_gather_params(out, recv, tokens), cpu::sp_unpack_gather);
}

#ifdef LTX_KERNELS_WITH_CUDA
void sp_pack_heads_cuda(at::Tensor& out, const at::Tensor& x, int64_t world) {
  run_cuda(make_sp_pack_heads_params(out, x, world), x, "sp_pack_heads", ltx_kernels::sp_pack_heads);
}
void sp_unpack_heads_cuda(at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens) {
  run_cuda(make_sp_unpack_heads_params(out, recv, tokens), out, "sp_unpack_heads", ltx_kernels::sp_unpack_heads);
}
void sp_pack_tokens_cuda(at::Tensor& out, const at::Tensor& y, c10::IntArrayRef tokens) {
  run_cuda(make_sp_pack_tokens_params(out, y, tokens), y, "sp_pack_tokens", ltx_kernels::sp_pack_tokens);
}
void sp_unpack_tokens_cuda(at::Tensor& out, const at::Tensor& recv, int64_t world) {
  run_cuda(make_sp_unpack_tokens_params(out, recv, world), out, "sp_unpack_tokens", ltx_kernels::sp_unpack_tokens);
}
void sp_unpack_gather_cuda(at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens) {
  run_cuda(make_sp_unpack_gather_params(out, recv, tokens), out, "sp_unpack_gather", ltx_kernels::sp_unpack_gather);
}
#endif

// ---- the CUDA IPC transport: host ops on CPU tensors (the 64-byte handles), in every build.
int64_t sp_ipc_create_host(at::Tensor& handle, int64_t device, int64_t nbytes) {
  constexpr const char* op = "sp_ipc_create";
  check_handle_tensor(handle, op, "handle");
  LTX_CHECK(handle.numel() == kHandleBytes, op, "handle must have ", kHandleBytes, " bytes (got ", handle.numel(),
            ")");
  LTX_CHECK(nbytes >= 0, op, "nbytes must be >= 0 (got ", nbytes, ")");
#ifdef LTX_KERNELS_WITH_CUDA
  int64_t id = 0;
  const std::string why = sp_ipc_create(int(device), nbytes, handle.data_ptr<uint8_t>(), &id);
  LTX_CHECK(why.empty(), op, why);
  return id;
#else
  (void)device;
  LTX_CHECK(false, op, kNoIpc);
  return 0;
#endif
}

void sp_ipc_open_host(const at::Tensor& handles, int64_t id, int64_t rank) {
  constexpr const char* op = "sp_ipc_open";
  check_handle_tensor(handles, op, "handles");
  LTX_CHECK(handles.dim() == 2 && handles.size(1) == kHandleBytes && handles.size(0) >= 1 &&
                handles.size(0) <= kSpMaxWorld,
            op, "handles must be [world, ", kHandleBytes, "] uint8 with world in [1, ", kSpMaxWorld,
            "] (got shape ", shape_str(handles.sizes()), ")");
  const int64_t world = handles.size(0);
  LTX_CHECK(rank >= 0 && rank < world, op, "rank must be in [0, ", world, ") (got ", rank, ")");
#ifdef LTX_KERNELS_WITH_CUDA
  const std::string why = sp_ipc_open(id, handles.data_ptr<uint8_t>(), int(world), int(rank));
  LTX_CHECK(why.empty(), op, why);
#else
  (void)id;
  LTX_CHECK(false, op, kNoIpc);
#endif
}

void sp_ipc_close_host(const at::Tensor& handle, int64_t id) {
  check_handle_tensor(handle, "sp_ipc_close", "handle");
#ifdef LTX_KERNELS_WITH_CUDA
  sp_ipc_close(id);
#else
  (void)id;
#endif
}

#ifdef LTX_KERNELS_WITH_CUDA
void sp_ipc_send_recv_heads_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                                 c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "send_recv_heads";
  check_4d(x, op, "x", "[B, T, H, D]");
  SpIpcParams p = ipc_params(out, status, x, id, tokens, timeout_s, op);
  const int64_t W = p.comm.world, r = p.comm.rank;
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), D = x.size(3);
  LTX_CHECK(H % W == 0, op, "heads H = x.shape[2] must be divisible by world (got H = ", H,
            ", world = ", W, ")");
  LTX_CHECK(T == tokens[r], op, "x.shape[1] must be this rank's token count ", tokens[r], " (got ", T, ")");
  const int64_t Hl = H / W, Tt = p.prefix[W];
  check_out_shape(out, {B, Tt, Hl, D}, "[B, T_total, H / world, D]", op);
  check_buffer_bytes(B * Tt * Hl * D * x.element_size(), p, op);
  const at::Tensor xc = last_contig(x);
  p.in_heads = heads_layout(xc, W);
  p.in = bytes(xc);
  set_out(p, out);
  run_exchange(p, x, op, ltx_kernels::sp_ipc_send_recv_heads);
}

void sp_ipc_gather_heads_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& y, int64_t id,
                              c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "gather_heads";
  check_4d(y, op, "y", "[B, T_total, H / world, D]");
  SpIpcParams p = ipc_params(out, status, y, id, tokens, timeout_s, op);
  const int64_t W = p.comm.world, r = p.comm.rank;
  const std::vector<int64_t> prefix(p.prefix, p.prefix + W + 1);
  const int64_t B = y.size(0), Tt = y.size(1), Hl = y.size(2), D = y.size(3), H = Hl * W;
  LTX_CHECK(Tt == prefix.back(), op, "y.shape[1] must be sum(tokens) = ", prefix.back(), " (got ", Tt, ")");
  check_out_shape(out, {B, tokens[r], H, D}, "[B, T, H, D]", op);
  const int64_t Tmax = *std::max_element(tokens.begin(), tokens.end());
  check_buffer_bytes(B * Tmax * H * D * y.element_size(), p, op);
  const at::Tensor yc = last_contig(y);
  p.in_tokens = tokens_layout(yc, prefix);
  p.in = bytes(yc);
  set_out(p, out);
  run_exchange(p, y, op, ltx_kernels::sp_ipc_gather_heads);
}

void sp_ipc_all_gather_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                            c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "all_gather";
  LTX_CHECK(x.dim() >= 2, op, "x must be [B, T, ...] (got shape ", shape_str(x.sizes()), ")");
  SpIpcParams p = ipc_params(out, status, x, id, tokens, timeout_s, op);
  const int64_t W = p.comm.world, r = p.comm.rank;
  const int64_t B = x.size(0), T = x.size(1), Tt = p.prefix[W];
  LTX_CHECK(T == tokens[r], op, "x.shape[1] must be this rank's token count ", tokens[r], " (got ", T, ")");
  std::vector<int64_t> want(x.sizes().begin(), x.sizes().end());
  want[1] = Tt;
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape ", shape_str(want),
            " (got ", shape_str(out.sizes()), ")");
  LTX_CHECK(out.is_contiguous(), op, "out must be contiguous (got strides ", shape_str(out.strides()), ")");
  const int64_t F = B == 0 || T == 0 ? 0 : x.numel() / (B * T);
  check_buffer_bytes(out.numel() * x.element_size(), p, op);
  const at::Tensor x4 = x.contiguous().view({B, T, 1, F});
  p.in_tokens = tokens_layout(x4, {0, T});
  p.in = bytes(x4);
  set_out(p, out.view({B, Tt, 1, out.numel() / std::max<int64_t>(B * Tt, 1)}));
  run_exchange(p, x, op, ltx_kernels::sp_ipc_all_gather);
}
#endif
