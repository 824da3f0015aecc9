// Torch adapter for the sequence-parallel (comm) family: pack/unpack around an all_to_all or
// all_gather (CPU backend or CUDA core), and the CUDA IPC transport (buffers, handles, the fused
// store-to-peer ops). Every copy moves bytes: any dtype of 1, 2, 4 or 8 bytes, byte-exact.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "common.h"
#include "ltx_kernels/comm/comm_layout.h"
#include "ltx_kernels/cpu/comm.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/comm/comm.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kCpuGrain = 64;  // tokens per CPU task

void check_bytes_dtype(const at::Tensor& t, const char* op, const char* name) {
  const int64_t es = t.element_size();
  LTX_CHECK(es == 1 || es == 2 || es == 4 || es == 8, op, name,
            " must have 1, 2, 4 or 8-byte elements (got ", t.scalar_type(), ")");
  LTX_CHECK(!t.is_complex() && t.scalar_type() != at::kBool, op, name,
            " must be a real dtype (got ", t.scalar_type(), ")");
}

void check_device_ok(const at::Tensor& x, const char* op) {
#ifdef LTX_KERNELS_WITH_CUDA
  LTX_CHECK(x.is_cpu() || x.is_cuda(), op, "x must be a CPU or CUDA tensor (got ", x.device(), ")");
#else
  LTX_CHECK(x.is_cpu(), op, "this build has no CUDA backend (got a tensor on ", x.device(), ")");
#endif
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

void run_heads(const SpHeadsLayout& l, const at::Tensor& x, bool to_buf, const char* op) {
  const int64_t es = x.element_size();
  if (x.is_cpu()) {
    at::parallel_for(0, l.B * l.T, kCpuGrain, [&](int64_t b, int64_t e) {
      cpu::sp_heads_copy(l, bytes(x), es, to_buf, b, e);
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  check_cuda(ltx_kernels::sp_heads_copy(l, bytes(x), es, to_buf, scope.stream), op);
#endif
}

void run_tokens(const SpTokensLayout& l, const at::Tensor& y, bool to_buf, const char* op) {
  const int64_t es = y.element_size();
  if (y.is_cpu()) {
    at::parallel_for(0, l.B * l.T, kCpuGrain, [&](int64_t b, int64_t e) {
      cpu::sp_tokens_copy(l, bytes(y), es, to_buf, b, e);
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(y, op);
  check_cuda(ltx_kernels::sp_tokens_copy(l, bytes(y), es, to_buf, scope.stream), op);
#endif
}

}  // namespace

void sp_pack_heads(at::Tensor& out, const at::Tensor& x, int64_t world) {
  constexpr const char* op = "sp_pack_heads";
  check_4d(x, op, "x", "[B, T, H, D]");
  check_bytes_dtype(x, op, "x");
  check_device_ok(x, op);
  check_world(world, op);
  LTX_CHECK(x.size(2) % world == 0, op, "heads H = x.shape[2] must be divisible by world (got H = ",
            x.size(2), ", world = ", world, ")");
  check_buffer(out, x, x.numel(), op, "out");
  check_disjoint(out, x, op, "x");
  if (x.numel() == 0) return;
  const at::Tensor xc = last_contig(x);
  SpHeadsLayout l = heads_layout(xc, world);
  const int64_t group_bytes = l.B * l.T * (l.H / world) * l.D * x.element_size();
  for (int64_t w = 0; w < world; ++w) l.group[w] = bytes(out) + w * group_bytes;
  run_heads(l, xc, true, op);
}

void sp_unpack_heads(at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_unpack_heads";
  check_4d(out, op, "out", "[B, T_total, H / world, D]");
  check_bytes_dtype(out, op, "out");
  check_device_ok(out, op);
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  LTX_CHECK(out.size(1) == prefix.back(), op, "out.shape[1] must be sum(tokens) = ", prefix.back(),
            " (got ", out.size(1), ")");
  check_out_4d(out, op);
  check_buffer(recv, out, out.numel(), op, "recv");
  check_disjoint(out, recv, op, "recv");
  if (out.numel() == 0) return;
  SpTokensLayout l = tokens_layout(out, prefix);
  const int64_t tok_bytes = l.Hl * l.D * out.element_size();
  for (int64_t s = 0; s < l.W; ++s) {
    l.seg[s] = bytes(recv) + l.B * prefix[s] * tok_bytes;
    l.seg_T[s] = prefix[s + 1] - prefix[s];
  }
  run_tokens(l, out, false, op);
}

void sp_pack_tokens(at::Tensor& out, const at::Tensor& y, c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_pack_tokens";
  check_4d(y, op, "y", "[B, T_total, H / world, D]");
  check_bytes_dtype(y, op, "y");
  check_device_ok(y, op);
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  LTX_CHECK(y.size(1) == prefix.back(), op, "y.shape[1] must be sum(tokens) = ", prefix.back(),
            " (got ", y.size(1), ")");
  check_buffer(out, y, y.numel(), op, "out");
  check_disjoint(out, y, op, "y");
  if (y.numel() == 0) return;
  const at::Tensor yc = last_contig(y);
  SpTokensLayout l = tokens_layout(yc, prefix);
  const int64_t tok_bytes = l.Hl * l.D * y.element_size();
  for (int64_t s = 0; s < l.W; ++s) {
    l.seg[s] = bytes(out) + l.B * prefix[s] * tok_bytes;
    l.seg_T[s] = prefix[s + 1] - prefix[s];
  }
  run_tokens(l, yc, true, op);
}

void sp_unpack_tokens(at::Tensor& out, const at::Tensor& recv, int64_t world) {
  constexpr const char* op = "sp_unpack_tokens";
  check_4d(out, op, "out", "[B, T, H, D]");
  check_bytes_dtype(out, op, "out");
  check_device_ok(out, op);
  check_world(world, op);
  LTX_CHECK(out.size(2) % world == 0, op,
            "heads H = out.shape[2] must be divisible by world (got H = ", out.size(2),
            ", world = ", world, ")");
  check_out_4d(out, op);
  check_buffer(recv, out, out.numel(), op, "recv");
  check_disjoint(out, recv, op, "recv");
  if (out.numel() == 0) return;
  SpHeadsLayout l = heads_layout(out, world);
  const int64_t group_bytes = l.B * l.T * (l.H / world) * l.D * out.element_size();
  for (int64_t w = 0; w < world; ++w) l.group[w] = bytes(recv) + w * group_bytes;
  run_heads(l, out, false, op);
}

void sp_unpack_gather(at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens) {
  constexpr const char* op = "sp_unpack_gather";
  LTX_CHECK(out.dim() >= 2, op, "out must be [B, T_total, ...] (got shape ", shape_str(out.sizes()),
            ")");
  check_bytes_dtype(out, op, "out");
  check_device_ok(out, op);
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
  if (out.numel() == 0) return;
  const at::Tensor o4 = out.dim() == 2 ? out.unsqueeze(-1).unsqueeze(-1)
                                       : out.flatten(2).unsqueeze(2);  // [B, T_total, 1, F] view
  SpTokensLayout l = tokens_layout(o4, prefix);
  const int64_t es = out.element_size();
  for (int64_t s = 0; s < W; ++s) {
    l.seg[s] = bytes(recv) + s * l.B * Tmax * F * es;
    l.seg_T[s] = Tmax;
  }
  run_tokens(l, o4, false, op);
}

// ---------------------------------------------------------------------------------------------
// CUDA IPC transport. Each communicator owns one cudaMalloc'd block per rank:
//   [flags: uint32 [kSpMaxWorld + 1], padded to kFlagBytes][data: nbytes]
// opened by every other rank through cudaIpcOpenMemHandle. Table entries are keyed by an int id.
namespace {

constexpr int64_t kFlagBytes = 512;
static_assert(kFlagBytes >= int64_t(sizeof(uint32_t)) * (kSpMaxWorld + 1), "flag region");
constexpr int64_t kHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)

#ifdef LTX_KERNELS_WITH_CUDA
struct IpcComm {
  int device = 0;
  int rank = -1, world = 0;
  int64_t nbytes = 0;
  char* local = nullptr;         // own block (cudaMalloc)
  std::vector<char*> base;       // every rank's block as seen here (own = local)
};

std::mutex g_mu;
std::map<int64_t, IpcComm> g_comms;
int64_t g_next_id = 1;

IpcComm get_comm(int64_t id, const char* op) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_comms.find(id);
  LTX_CHECK(it != g_comms.end(), op, "no open IPC communicator with id ", id);
  LTX_CHECK(it->second.world > 0, op, "IPC communicator ", id, " was created but not opened");
  return it->second;
}
#endif

void check_handle_tensor(const at::Tensor& h, const char* op, const char* name) {
  LTX_CHECK(h.is_cpu() && h.scalar_type() == at::kByte && h.is_contiguous(), op, name,
            " must be a contiguous uint8 CPU tensor (got ", h.scalar_type(), " on ", h.device(), ")");
}

}  // namespace

int64_t sp_ipc_create(at::Tensor& handle, int64_t device, int64_t nbytes) {
  constexpr const char* op = "sp_ipc_create";
  check_handle_tensor(handle, op, "handle");
  LTX_CHECK(handle.numel() == kHandleBytes, op, "handle must have ", kHandleBytes,
            " bytes (got ", handle.numel(), ")");
  LTX_CHECK(nbytes >= 0, op, "nbytes must be >= 0 (got ", nbytes, ")");
#ifdef LTX_KERNELS_WITH_CUDA
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  IpcComm c;
  c.device = int(device);
  c.nbytes = nbytes;
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, size_t(kFlagBytes + nbytes)), op);
  c.local = static_cast<char*>(p);
  cudaError_t err = cudaMemset(p, 0, size_t(kFlagBytes));
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  cudaIpcMemHandle_t h;
  if (err == cudaSuccess) err = cudaIpcGetMemHandle(&h, p);
  if (err != cudaSuccess) {
    cudaFree(p);
    check_cuda(err, op);
  }
  static_assert(sizeof(cudaIpcMemHandle_t) == kHandleBytes, "IPC handle size");
  std::memcpy(handle.data_ptr(), &h, sizeof(h));
  std::lock_guard<std::mutex> lock(g_mu);
  const int64_t id = g_next_id++;
  g_comms[id] = c;
  return id;
#else
  (void)device;
  LTX_CHECK(false, op, "this build has no CUDA backend (the IPC transport needs CUDA)");
  return 0;
#endif
}

void sp_ipc_open(const at::Tensor& handles, int64_t id, int64_t rank) {
  constexpr const char* op = "sp_ipc_open";
  check_handle_tensor(handles, op, "handles");
  LTX_CHECK(handles.dim() == 2 && handles.size(1) == kHandleBytes && handles.size(0) >= 1 &&
                handles.size(0) <= kSpMaxWorld,
            op, "handles must be [world, ", kHandleBytes, "] uint8 with world in [1, ", kSpMaxWorld,
            "] (got shape ", shape_str(handles.sizes()), ")");
  const int64_t world = handles.size(0);
  LTX_CHECK(rank >= 0 && rank < world, op, "rank must be in [0, ", world, ") (got ", rank, ")");
#ifdef LTX_KERNELS_WITH_CUDA
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_comms.find(id);
  LTX_CHECK(it != g_comms.end(), op, "no IPC communicator with id ", id);
  IpcComm& c = it->second;
  LTX_CHECK(c.world == 0, op, "IPC communicator ", id, " is already open");
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(c.device));
  const auto* hb = handles.data_ptr<uint8_t>();
  std::vector<char*> base(size_t(world), nullptr);
  for (int64_t r = 0; r < world; ++r) {
    if (r == rank) {
      base[r] = c.local;
      continue;
    }
    cudaIpcMemHandle_t h;
    std::memcpy(&h, hb + r * kHandleBytes, sizeof(h));
    void* p = nullptr;
    const cudaError_t err = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
      for (int64_t q = 0; q < r; ++q)
        if (q != rank && base[q] != nullptr) cudaIpcCloseMemHandle(base[q]);
      LTX_CHECK(false, op, "cudaIpcOpenMemHandle of rank ", r, "'s buffer failed: ",
                cudaGetErrorString(err));
    }
    base[r] = static_cast<char*>(p);
  }
  c.rank = int(rank);
  c.world = int(world);
  c.base = std::move(base);
#else
  (void)id;
  LTX_CHECK(false, op, "this build has no CUDA backend (the IPC transport needs CUDA)");
#endif
}

void sp_ipc_close(const at::Tensor& handle, int64_t id) {
  constexpr const char* op = "sp_ipc_close";
  check_handle_tensor(handle, op, "handle");
#ifdef LTX_KERNELS_WITH_CUDA
  IpcComm c;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_comms.find(id);
    if (it == g_comms.end()) return;  // closing twice is harmless
    c = it->second;
    g_comms.erase(it);
  }
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(c.device));
  cudaDeviceSynchronize();  // no kernel of ours may still touch the buffers
  for (int r = 0; r < int(c.base.size()); ++r)
    if (r != c.rank && c.base[r] != nullptr) cudaIpcCloseMemHandle(c.base[r]);
  cudaFree(c.local);
  cudaGetLastError();  // do not leave a sticky-free error for the next op
#else
  (void)id;
#endif
}

#ifdef LTX_KERNELS_WITH_CUDA
namespace {

struct IpcCall {
  IpcComm c;
  std::vector<uint32_t*> flags;
  std::vector<char*> data;
  int* status;
  uint64_t timeout_ns;
};

IpcCall ipc_call(const at::Tensor& out, const at::Tensor& status, const at::Tensor& x, int64_t id,
                 c10::IntArrayRef tokens, double timeout_s, const char* op) {
  IpcCall k;
  k.c = get_comm(id, op);
  LTX_CHECK(x.is_cuda() && x.device().index() == k.c.device, op,
            "x must be on the communicator's device cuda:", k.c.device, " (got ", x.device(), ")");
  check_same_device(out, x, op, "out", "x");
  check_same_dtype(out, x, op, "out", "x");
  check_bytes_dtype(x, op, "x");
  check_disjoint(out, x, op, "x");
  LTX_CHECK(status.is_cuda() && status.device() == x.device() && status.scalar_type() == at::kInt &&
                status.numel() >= 1,
            op, "status must be an int32 tensor on x's device (got ", status.scalar_type(), " on ",
            status.device(), ")");
  LTX_CHECK(int64_t(tokens.size()) == k.c.world, op, "tokens must list one count per rank (",
            k.c.world, ") (got ", tokens.size(), ")");
  LTX_CHECK(timeout_s > 0, op, "timeout must be > 0 s (got ", timeout_s, ")");
  for (char* b : k.c.base) {
    k.flags.push_back(reinterpret_cast<uint32_t*>(b));
    k.data.push_back(b + kFlagBytes);
  }
  k.status = status.data_ptr<int>();
  k.timeout_ns = uint64_t(timeout_s * 1e9);
  return k;
}

// out (any strides with a contiguous last dim, shape [B, T, R, D]) <- the local data region
// holding [B, T, R, D] contiguous: a one-segment token copy.
void copy_out(const at::Tensor& out4, const IpcCall& k, cudaStream_t stream, const char* op) {
  SpTokensLayout l = tokens_layout(out4, {0, out4.size(1)});
  l.seg[0] = k.data[k.c.rank];
  l.seg_T[0] = out4.size(1);
  check_cuda(sp_tokens_copy(l, bytes(out4), out4.element_size(), false, stream), op);
}

void barrier(const IpcCall& k, cudaStream_t stream, const char* op) {
  check_cuda(sp_ipc_barrier(k.flags.data(), k.c.rank, k.c.world, k.status, k.timeout_ns, stream),
             op);
}

}  // namespace
#endif

void sp_ipc_send_recv_heads(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                            c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "send_recv_heads";
#ifdef LTX_KERNELS_WITH_CUDA
  check_4d(x, op, "x", "[B, T, H, D]");
  const IpcCall k = ipc_call(out, status, x, id, tokens, timeout_s, op);
  const int64_t W = k.c.world;
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), D = x.size(3);
  LTX_CHECK(H % W == 0, op, "heads H = x.shape[2] must be divisible by world (got H = ", H,
            ", world = ", W, ")");
  LTX_CHECK(T == tokens[k.c.rank], op, "x.shape[1] must be this rank's token count ",
            tokens[k.c.rank], " (got ", T, ")");
  const int64_t Hl = H / W, Tt = prefix.back();
  check_4d(out, op, "out", "[B, T_total, H / world, D]");
  LTX_CHECK(out.size(0) == B && out.size(1) == Tt && out.size(2) == Hl && out.size(3) == D, op,
            "out must have shape [", B, ", ", Tt, ", ", Hl, ", ", D, "] (got ",
            shape_str(out.sizes()), ")");
  check_out_4d(out, op);
  LTX_CHECK(B * Tt * Hl * D * x.element_size() <= k.c.nbytes, op,
            "the call needs a receive buffer of ", B * Tt * Hl * D * x.element_size(),
            " bytes but the communicator holds ", k.c.nbytes, " (raise max_tokens)");
  const CudaScope scope(x, op);
  barrier(k, scope.stream, op);  // every peer finished reading its buffer (previous call)
  if (x.numel() > 0) {
    const at::Tensor xc = last_contig(x);
    SpHeadsLayout l = heads_layout(xc, W);
    l.buf_T = Tt;
    l.t0 = prefix[k.c.rank];
    for (int64_t w = 0; w < W; ++w) l.group[w] = k.data[w];
    check_cuda(sp_heads_copy_guarded(l, bytes(xc), x.element_size(), k.status, scope.stream), op);
  }
  barrier(k, scope.stream, op);  // every peer's stores into our buffer are done
  if (out.numel() > 0) copy_out(out, k, scope.stream, op);
#else
  (void)out, (void)status, (void)x, (void)id, (void)tokens, (void)timeout_s;
  LTX_CHECK(false, op, "this build has no CUDA backend (the IPC transport needs CUDA)");
#endif
}

void sp_ipc_gather_heads(at::Tensor& out, at::Tensor& status, const at::Tensor& y, int64_t id,
                         c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "gather_heads";
#ifdef LTX_KERNELS_WITH_CUDA
  check_4d(y, op, "y", "[B, T_total, H / world, D]");
  const IpcCall k = ipc_call(out, status, y, id, tokens, timeout_s, op);
  const int64_t W = k.c.world, r = k.c.rank;
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  const int64_t B = y.size(0), Tt = y.size(1), Hl = y.size(2), D = y.size(3), H = Hl * W;
  LTX_CHECK(Tt == prefix.back(), op, "y.shape[1] must be sum(tokens) = ", prefix.back(), " (got ",
            Tt, ")");
  check_4d(out, op, "out", "[B, T, H, D]");
  LTX_CHECK(out.size(0) == B && out.size(1) == tokens[r] && out.size(2) == H && out.size(3) == D,
            op, "out must have shape [", B, ", ", tokens[r], ", ", H, ", ", D, "] (got ",
            shape_str(out.sizes()), ")");
  check_out_4d(out, op);
  const int64_t es = y.element_size();
  const int64_t Tmax = *std::max_element(tokens.begin(), tokens.end());
  LTX_CHECK(B * Tmax * H * D * es <= k.c.nbytes, op, "the call needs a receive buffer of ",
            B * Tmax * H * D * es, " bytes but the communicator holds ", k.c.nbytes,
            " (raise max_tokens)");
  const CudaScope scope(y, op);
  barrier(k, scope.stream, op);
  if (y.numel() > 0) {
    const at::Tensor yc = last_contig(y);
    SpTokensLayout l = tokens_layout(yc, prefix);
    l.seg_hs = H;
    for (int64_t s = 0; s < W; ++s) {
      l.seg[s] = k.data[s] + r * Hl * D * es;  // our heads inside rank s's [B, T_s, H, D]
      l.seg_T[s] = prefix[s + 1] - prefix[s];
    }
    check_cuda(sp_tokens_copy_guarded(l, bytes(yc), es, k.status, scope.stream), op);
  }
  barrier(k, scope.stream, op);
  if (out.numel() > 0) copy_out(out, k, scope.stream, op);
#else
  (void)out, (void)status, (void)y, (void)id, (void)tokens, (void)timeout_s;
  LTX_CHECK(false, op, "this build has no CUDA backend (the IPC transport needs CUDA)");
#endif
}

void sp_ipc_all_gather(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                       c10::IntArrayRef tokens, double timeout_s) {
  constexpr const char* op = "all_gather";
#ifdef LTX_KERNELS_WITH_CUDA
  LTX_CHECK(x.dim() >= 2, op, "x must be [B, T, ...] (got shape ", shape_str(x.sizes()), ")");
  const IpcCall k = ipc_call(out, status, x, id, tokens, timeout_s, op);
  const int64_t W = k.c.world, r = k.c.rank;
  const std::vector<int64_t> prefix = prefix_of(tokens, op);
  const int64_t B = x.size(0), T = x.size(1);
  LTX_CHECK(T == tokens[r], op, "x.shape[1] must be this rank's token count ", tokens[r], " (got ",
            T, ")");
  std::vector<int64_t> want(x.sizes().begin(), x.sizes().end());
  want[1] = prefix.back();
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape ", shape_str(want),
            " (got ", shape_str(out.sizes()), ")");
  LTX_CHECK(out.is_contiguous(), op, "out must be contiguous (got strides ",
            shape_str(out.strides()), ")");
  const int64_t es = x.element_size();
  const int64_t F = B == 0 || T == 0 ? 0 : x.numel() / (B * T);
  LTX_CHECK(out.numel() * es <= k.c.nbytes, op, "the call needs a receive buffer of ",
            out.numel() * es, " bytes but the communicator holds ", k.c.nbytes,
            " (raise max_tokens)");
  const CudaScope scope(x, op);
  barrier(k, scope.stream, op);
  if (x.numel() > 0) {
    const at::Tensor x4 = x.contiguous().view({B, T, 1, F});
    SpTokensLayout l = tokens_layout(x4, {0, T});
    l.seg_T[0] = prefix.back();
    for (int64_t w = 0; w < W; ++w) {  // the same rows into every rank's [B, T_total, F]
      l.seg[0] = k.data[w] + prefix[r] * F * es;
      check_cuda(sp_tokens_copy_guarded(l, bytes(x4), es, k.status, scope.stream), op);
    }
  }
  barrier(k, scope.stream, op);
  if (out.numel() > 0) {
    const int64_t Tt = prefix.back();
    copy_out(out.view({B, Tt, 1, out.numel() / std::max<int64_t>(B * Tt, 1)}), k, scope.stream,
             op);
  }
#else
  (void)out, (void)status, (void)x, (void)id, (void)tokens, (void)timeout_s;
  LTX_CHECK(false, op, "this build has no CUDA backend (the IPC transport needs CUDA)");
#endif
}
