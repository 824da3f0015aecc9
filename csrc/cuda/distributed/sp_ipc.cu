// The CUDA IPC transport: the communicator registry and the three fused exchanges (see
// distributed/sp_ipc.h). Host code only; the copies and the barrier are distributed.cu's.
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "ltx_kernels/distributed/distributed.h"
#include "ltx_kernels/distributed/sp_ipc.h"

namespace ltx_kernels {
namespace {

static_assert(kSpIpcFlagBytes >= int64_t(sizeof(uint32_t)) * (kSpMaxWorld + 1), "flag region");
static_assert(sizeof(cudaIpcMemHandle_t) == kSpIpcHandleBytes, "IPC handle size");

struct Entry {
  int device = 0;
  int rank = -1, world = 0;  // world 0: created, not opened
  int64_t nbytes = 0;
  char* local = nullptr;     // own block (cudaMalloc)
  std::vector<char*> base;   // every rank's block as seen here (own = local)
};

std::mutex g_mu;
std::map<int64_t, Entry> g_entries;
int64_t g_next_id = 1;

std::string cuda_error(cudaError_t err) { return std::string("CUDA error: ") + cudaGetErrorString(err); }

// Runs `fn` with `device` current, restoring the caller's device after.
template <class Fn>
auto on_device(int device, Fn&& fn) -> decltype(fn()) {
  int prev = -1;
  const bool have_prev = cudaGetDevice(&prev) == cudaSuccess;
  cudaSetDevice(device);
  auto r = fn();
  if (have_prev) cudaSetDevice(prev);
  return r;
}

// out (as a [B, T, R, D] tokens layout with one segment) <- our data region.
cudaError_t copy_out(const SpIpcParams& p, cudaStream_t stream) {
  SpTokensLayout l = p.out;
  l.seg[0] = p.comm.data[p.comm.rank];
  l.seg_T[0] = l.T;
  return sp_tokens_copy(l, p.out_base, p.elem_size, false, stream);
}

cudaError_t barrier(const SpIpcParams& p, cudaStream_t stream) {
  return sp_ipc_barrier(p.comm.flags, p.comm.rank, p.comm.world, p.status, p.timeout_ns, stream);
}

// barrier, stores, barrier, copy out; `stores` skipped when the input is empty.
template <class Stores>
cudaError_t exchange(const SpIpcParams& p, bool have_input, cudaStream_t stream, Stores&& stores) {
  cudaError_t err = barrier(p, stream);  // every peer finished reading its buffer (previous call)
  if (err == cudaSuccess && have_input) err = stores();
  if (err == cudaSuccess) err = barrier(p, stream);  // every peer's stores into our buffer are done
  if (err == cudaSuccess && p.out.B * p.out.T * p.out.Hl * p.out.D > 0) err = copy_out(p, stream);
  return err;
}

}  // namespace

std::string sp_ipc_create(int device, int64_t nbytes, uint8_t* handle, int64_t* id) {
  Entry c;
  c.device = device;
  c.nbytes = nbytes;
  const cudaError_t err = on_device(device, [&]() {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, size_t(kSpIpcFlagBytes + nbytes));
    if (e != cudaSuccess) return e;
    c.local = static_cast<char*>(p);
    e = cudaMemset(p, 0, size_t(kSpIpcFlagBytes));
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    cudaIpcMemHandle_t h;
    if (e == cudaSuccess) e = cudaIpcGetMemHandle(&h, p);
    if (e != cudaSuccess) {
      cudaFree(p);
      return e;
    }
    std::memcpy(handle, &h, sizeof(h));
    return cudaSuccess;
  });
  if (err != cudaSuccess) return cuda_error(err);
  std::lock_guard<std::mutex> lock(g_mu);
  *id = g_next_id++;
  g_entries[*id] = c;
  return "";
}

std::string sp_ipc_open(int64_t id, const uint8_t* handles, int world, int rank) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_entries.find(id);
  if (it == g_entries.end()) return "no IPC communicator with id " + std::to_string(id);
  Entry& c = it->second;
  if (c.world != 0) return "IPC communicator " + std::to_string(id) + " is already open";
  std::vector<char*> base(size_t(world), nullptr);
  const std::string why = on_device(c.device, [&]() -> std::string {
    for (int r = 0; r < world; ++r) {
      if (r == rank) {
        base[r] = c.local;
        continue;
      }
      cudaIpcMemHandle_t h;
      std::memcpy(&h, handles + r * kSpIpcHandleBytes, sizeof(h));
      void* p = nullptr;
      const cudaError_t err = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
      if (err != cudaSuccess) {
        for (int q = 0; q < r; ++q)
          if (q != rank && base[q] != nullptr) cudaIpcCloseMemHandle(base[q]);
        return "cudaIpcOpenMemHandle of rank " + std::to_string(r) + "'s buffer failed: " + cudaGetErrorString(err);
      }
      base[r] = static_cast<char*>(p);
    }
    return "";
  });
  if (!why.empty()) return why;
  c.rank = rank;
  c.world = world;
  c.base = std::move(base);
  return "";
}

void sp_ipc_close(int64_t id) {
  Entry c;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_entries.find(id);
    if (it == g_entries.end()) return;  // closing twice is harmless
    c = it->second;
    g_entries.erase(it);
  }
  on_device(c.device, [&]() {
    cudaDeviceSynchronize();  // no kernel of ours may still touch the buffers
    for (int r = 0; r < int(c.base.size()); ++r)
      if (r != c.rank && c.base[r] != nullptr) cudaIpcCloseMemHandle(c.base[r]);
    cudaFree(c.local);
    return cudaGetLastError();  // do not leave a sticky-free error for the next op
  });
}

std::string sp_ipc_find(int64_t id, SpIpcComm* comm) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_entries.find(id);
  if (it == g_entries.end()) return "no open IPC communicator with id " + std::to_string(id);
  const Entry& c = it->second;
  if (c.world <= 0) return "IPC communicator " + std::to_string(id) + " was created but not opened";
  *comm = SpIpcComm{};
  comm->device = c.device;
  comm->rank = c.rank;
  comm->world = c.world;
  comm->nbytes = c.nbytes;
  for (int r = 0; r < c.world; ++r) {
    comm->flags[r] = reinterpret_cast<uint32_t*>(c.base[r]);
    comm->data[r] = c.base[r] + kSpIpcFlagBytes;
  }
  return "";
}

cudaError_t sp_ipc_send_recv_heads(const SpIpcParams& p, cudaStream_t stream) {
  const SpHeadsLayout& in = p.in_heads;
  return exchange(p, in.B * in.T * in.H * in.D > 0, stream, [&]() {
    SpHeadsLayout l = in;
    l.buf_T = p.prefix[p.comm.world];
    l.t0 = p.prefix[p.comm.rank];
    for (int w = 0; w < p.comm.world; ++w) l.group[w] = p.comm.data[w];  // peer w's [B, T_total, Hl, D]
    return sp_heads_copy_guarded(l, p.in, p.elem_size, p.status, stream);
  });
}

cudaError_t sp_ipc_gather_heads(const SpIpcParams& p, cudaStream_t stream) {
  const SpTokensLayout& in = p.in_tokens;
  return exchange(p, in.B * in.T * in.Hl * in.D > 0, stream, [&]() {
    SpTokensLayout l = in;
    l.seg_hs = in.Hl * p.comm.world;  // rows per token in rank s's [B, T_s, H, D]
    for (int s = 0; s < p.comm.world; ++s) {
      l.seg[s] = p.comm.data[s] + p.comm.rank * in.Hl * in.D * p.elem_size;  // our heads there
      l.seg_T[s] = p.prefix[s + 1] - p.prefix[s];
    }
    return sp_tokens_copy_guarded(l, p.in, p.elem_size, p.status, stream);
  });
}

cudaError_t sp_ipc_all_gather(const SpIpcParams& p, cudaStream_t stream) {
  const SpTokensLayout& in = p.in_tokens;
  return exchange(p, in.B * in.T * in.Hl * in.D > 0, stream, [&]() {
    SpTokensLayout l = in;
    l.seg_T[0] = p.prefix[p.comm.world];
    for (int w = 0; w < p.comm.world; ++w) {  // the same rows into every rank's [B, T_total, F]
      l.seg[0] = p.comm.data[w] + p.prefix[p.comm.rank] * in.D * p.elem_size;
      const cudaError_t err = sp_tokens_copy_guarded(l, p.in, p.elem_size, p.status, stream);
      if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
  });
}

}  // namespace ltx_kernels
