// Torch adapter for the distributed family: sequence-parallel pack/unpack around an all_to_all
// or all_gather (checks, then one SpHeadsParams / SpTokensParams from distributed/sp_layout.h for
// the CPU backend or the CUDA core), and the CUDA IPC transport (the registry of
// distributed/sp_ipc.h; per exchange, the tensors' checks, then one SpIpcParams from the plan of
// distributed/sp_ipc_plan.h). Every copy moves bytes: any dtype of 1, 2, 4 or 8 bytes, byte-exact.
#include <algorithm>
#include <string>
#include <vector>

#include "checks.h"
#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/distributed/sp_layout.h"
#include "run.h"
#include "tensor_rows.h"
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

void check_4d(const at::Tensor& t, const char* op, const char* name, const char* what) {
  LTX_CHECK(t.dim() == 4, op, name, " must be 4-D ", what, " (got shape ", shape_str(t.sizes()), ")");
}

void check_out_4d(const at::Tensor& out, const char* op) {
  LTX_CHECK(out.size(3) <= 1 || out.stride(3) == 1, op, "out must have stride 1 in its last dimension (got strides ",
            shape_str(out.strides()), ")");
}

// t [B, T, H, D] (a 4-D, byte-typed tensor named `name`) split in `world` head groups.
void check_heads_split(const at::Tensor& t, int64_t world, const char* op, const char* name) {
  LTX_CHECK(world >= 1 && world <= kSpMaxWorld, op, "world must be in [1, ", kSpMaxWorld, "] (got ", world, ")");
  LTX_CHECK(t.size(2) % world == 0, op, "heads H = ", name, ".shape[2] must be divisible by world (got H = ",
            t.size(2), ", world = ", world, ")");
}

// Per-rank token counts -> prefix sums, checked, with t [B, sum(tokens), ...] (named `name`).
std::vector<int64_t> prefix_of(const at::Tensor& t, c10::IntArrayRef tokens, const char* op, const char* name) {
  LTX_CHECK(tokens.size() >= 1 && int64_t(tokens.size()) <= kSpMaxWorld, op,
            "tokens must list one count per rank, 1 to ", kSpMaxWorld, " ranks (got ", tokens.size(), ")");
  std::vector<int64_t> p(tokens.size() + 1, 0);
  LTX_CHECK(sp_prefix(tokens.data(), int64_t(tokens.size()), p.data()), op, "token counts must be >= 0 (got ",
            shape_str(tokens), ")");
  LTX_CHECK(t.size(1) == p.back(), op, name, ".shape[1] must be sum(tokens) = ", p.back(), " (got ", t.size(1), ")");
  return p;
}

void check_buffer(const at::Tensor& buf, const at::Tensor& ref, int64_t numel, const char* op, const char* name) {
  check_same_device(buf, ref, op, name, "x");
  check_same_dtype(buf, ref, op, name, "x");
  LTX_CHECK(buf.is_contiguous(), op, name, " must be contiguous (got strides ", shape_str(buf.strides()), ")");
  LTX_CHECK(buf.numel() == numel, op, name, " must have ", numel, " elements (got shape ", shape_str(buf.sizes()),
            ")");
}

char* bytes(const at::Tensor& t) { return static_cast<char*>(const_cast<void*>(t.data_ptr())); }

// A [B, T, H, D] tensor whose last dimension is contiguous: the tensor itself, else a copy.
at::Tensor last_contig(const at::Tensor& t) { return (t.size(-1) <= 1 || t.stride(-1) == 1) ? t : t.contiguous(); }

// A 4-D tensor with a contiguous last dimension as sp_layout.h's array.
SpArray array_of(const at::Tensor& t) {
  return SpArray{bytes(t), int64_t(t.element_size()), {t.size(0), t.size(1), t.size(2), t.size(3)},
                 {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}};
}

Prepared<SpHeadsParams> make_sp_pack_heads_params(at::Tensor& out, const at::Tensor& x, int64_t world) {
  constexpr const char* op = "sp_pack_heads";
  check_4d(x, op, "x", "[B, T, H, D]");
  check_bytes_dtype(x, op, "x");
  check_heads_split(x, world, op, "x");
  check_buffer(out, x, x.numel(), op, "out");
  check_disjoint(out, x, op, "x");
  Prepared<SpHeadsParams> pr;
  if (x.numel() > 0) pr.emplace() = sp_heads_params(array_of(pr.keep(last_contig(x))), bytes(out), world);
  return pr;
}

Prepared<SpTokensParams> make_sp_unpack_heads_params(at::Tensor& out, const at::Tensor& recv,
                                                     c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_unpack_heads";
  check_4d(out, op, "out", "[B, T_total, H / world, D]");
  check_bytes_dtype(out, op, "out");
  const std::vector<int64_t> prefix = prefix_of(out, tokens, op, "out");
  check_out_4d(out, op);
  check_buffer(recv, out, out.numel(), op, "recv");
  check_disjoint(out, recv, op, "recv");
  Prepared<SpTokensParams> pr;
  if (out.numel() > 0) pr.emplace() = sp_tokens_params(array_of(out), bytes(recv), prefix.data(), tokens.size());
  return pr;
}

Prepared<SpTokensParams> make_sp_pack_tokens_params(at::Tensor& out, const at::Tensor& y, c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_pack_tokens";
  check_4d(y, op, "y", "[B, T_total, H / world, D]");
  check_bytes_dtype(y, op, "y");
  const std::vector<int64_t> prefix = prefix_of(y, tokens, op, "y");
  check_buffer(out, y, y.numel(), op, "out");
  check_disjoint(out, y, op, "y");
  Prepared<SpTokensParams> pr;
  if (y.numel() > 0) pr.emplace() = sp_tokens_params(array_of(pr.keep(last_contig(y))), bytes(out), prefix.data(),
                                                     tokens.size());
  return pr;
}

Prepared<SpHeadsParams> make_sp_unpack_tokens_params(at::Tensor& out, const at::Tensor& recv, int64_t world) {
  constexpr const char* op = "sp_unpack_tokens";
  check_4d(out, op, "out", "[B, T, H, D]");
  check_bytes_dtype(out, op, "out");
  check_heads_split(out, world, op, "out");
  check_out_4d(out, op);
  check_buffer(recv, out, out.numel(), op, "recv");
  check_disjoint(out, recv, op, "recv");
  Prepared<SpHeadsParams> pr;
  if (out.numel() > 0) pr.emplace() = sp_heads_params(array_of(out), bytes(recv), world);
  return pr;
}

Prepared<SpTokensParams> make_sp_unpack_gather_params(at::Tensor& out, const at::Tensor& recv,
                                                      c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_unpack_gather";
  LTX_CHECK(out.dim() >= 2, op, "out must be [B, T_total, ...] (got shape ", shape_str(out.sizes()), ")");
  check_bytes_dtype(out, op, "out");
  const std::vector<int64_t> prefix = prefix_of(out, tokens, op, "out");
  SpArray o{};  // out as [B, T_total, 1, F]
  LTX_CHECK(sp_token_rows(out.dim(), out.sizes().data(), out.strides().data(), bytes(out), out.element_size(), &o),
            op, "out must be contiguous after its first two dimensions (got strides ", shape_str(out.strides()), ")");
  const int64_t W = int64_t(tokens.size()), Tmax = *std::max_element(tokens.begin(), tokens.end());
  check_buffer(recv, out, W * out.size(0) * Tmax * o.size[3], op, "recv");
  check_disjoint(out, recv, op, "recv");
  Prepared<SpTokensParams> pr;
  if (out.numel() > 0) pr.emplace() = sp_gather_params(o, bytes(recv), prefix.data(), W, Tmax);
  return pr;
}

void check_handle_tensor(const at::Tensor& h, const char* op, const char* name) {
  LTX_CHECK(h.is_cpu() && h.scalar_type() == at::kByte && h.is_contiguous(), op, name,
            " must be a contiguous uint8 CPU tensor (got ", h.scalar_type(), " on ", h.device(), ")");
}

#ifdef LTX_KERNELS_WITH_CUDA
SpStrided strided(const at::Tensor& t) {
  return SpStrided{bytes(t), int64_t(t.element_size()), t.dim(), t.sizes().data(), t.strides().data()};
}

using IpcPlan = std::string (*)(const SpStrided&, const SpStrided&, const int64_t*, int64_t, double, SpIpcParams*);

// An IPC exchange: the communicator `id`, the checks of x, out and status that need the tensors,
// then the exchange's plan (distributed/sp_ipc_plan.h: the rest of the checks, the layouts) on
// `in` (x, or a copy the plan can read) and the exchange on x's device and current stream. A
// rank that did not arrive raises on the host (distributed.py reads the status word), not here.
void run_exchange(at::Tensor& out, const at::Tensor& status, const at::Tensor& x, const at::Tensor& in, int64_t id,
                  c10::IntArrayRef tokens, double timeout_s, const char* op, IpcPlan plan,
                  cudaError_t (*exchange)(const SpIpcParams&, cudaStream_t)) {
  SpIpcParams p{};
  const std::string found = sp_ipc_find(id, &p.comm);
  LTX_CHECK(found.empty(), op, found);
  LTX_CHECK(x.is_cuda() && x.device().index() == p.comm.device, op,
            "x must be on the communicator's device cuda:", p.comm.device, " (got ", x.device(), ")");
  check_same_device(out, x, op, "out", "x");
  check_same_dtype(out, x, op, "out", "x");
  check_bytes_dtype(x, op, "x");
  check_disjoint(out, x, op, "x");
  const bool status_ok = status.is_cuda() && status.device() == x.device() && status.scalar_type() == at::kInt;
  LTX_CHECK(status_ok && status.numel() >= 1, op, "status must be an int32 tensor on x's device (got ",
            status.scalar_type(), " on ", status.device(), ")");
  p.status = status.data_ptr<int>();
  const std::string why = plan(strided(in), strided(out), tokens.data(), int64_t(tokens.size()), timeout_s, &p);
  LTX_CHECK(why.empty(), op, why);
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
int64_t sp_ipc_create_host(at::Tensor& handle, [[maybe_unused]] int64_t device, int64_t nbytes) {
  constexpr const char* op = "sp_ipc_create";
  check_handle_tensor(handle, op, "handle");
  LTX_CHECK(handle.numel() == kSpIpcHandleBytes, op, "handle must have ", kSpIpcHandleBytes, " bytes (got ",
            handle.numel(), ")");
  LTX_CHECK(nbytes >= 0, op, "nbytes must be >= 0 (got ", nbytes, ")");
#ifdef LTX_KERNELS_WITH_CUDA
  int64_t id = 0;
  const std::string why = sp_ipc_create(int(device), nbytes, handle.data_ptr<uint8_t>(), &id);
  LTX_CHECK(why.empty(), op, why);
  return id;
#else
  LTX_CHECK(false, op, kNoIpc);
  return 0;
#endif
}

void sp_ipc_open_host(const at::Tensor& handles, [[maybe_unused]] int64_t id, int64_t rank) {
  constexpr const char* op = "sp_ipc_open";
  check_handle_tensor(handles, op, "handles");
  LTX_CHECK(handles.dim() == 2 && handles.size(1) == kSpIpcHandleBytes && handles.size(0) >= 1 &&
                handles.size(0) <= kSpMaxWorld,
            op, "handles must be [world, ", kSpIpcHandleBytes, "] uint8 with world in [1, ", kSpMaxWorld,
            "] (got shape ", shape_str(handles.sizes()), ")");
  const int64_t world = handles.size(0);
  LTX_CHECK(rank >= 0 && rank < world, op, "rank must be in [0, ", world, ") (got ", rank, ")");
#ifdef LTX_KERNELS_WITH_CUDA
  const std::string why = sp_ipc_open(id, handles.data_ptr<uint8_t>(), int(world), int(rank));
  LTX_CHECK(why.empty(), op, why);
#else
  LTX_CHECK(false, op, kNoIpc);
#endif
}

void sp_ipc_close_host(const at::Tensor& handle, [[maybe_unused]] int64_t id) {
  check_handle_tensor(handle, "sp_ipc_close", "handle");
#ifdef LTX_KERNELS_WITH_CUDA
  sp_ipc_close(id);
#endif
}

#ifdef LTX_KERNELS_WITH_CUDA
void sp_ipc_send_recv_heads_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                                 c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "send_recv_heads";
  check_4d(x, op, "x", "[B, T, H, D]");
  run_exchange(out, status, x, last_contig(x), id, tokens, timeout_s, op, sp_ipc_plan_send_recv_heads,
               ltx_kernels::sp_ipc_send_recv_heads);
}

void sp_ipc_gather_heads_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& y, int64_t id,
                              c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "gather_heads";
  check_4d(y, op, "y", "[B, T_total, H / world, D]");
  run_exchange(out, status, y, last_contig(y), id, tokens, timeout_s, op, sp_ipc_plan_gather_heads,
               ltx_kernels::sp_ipc_gather_heads);
}

void sp_ipc_all_gather_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                            c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "all_gather";
  LTX_CHECK(x.dim() >= 2, op, "x must be [B, T, ...] (got shape ", shape_str(x.sizes()), ")");
  run_exchange(out, status, x, x.contiguous(), id, tokens, timeout_s, op, sp_ipc_plan_all_gather,
               ltx_kernels::sp_ipc_all_gather);
}
#endif
