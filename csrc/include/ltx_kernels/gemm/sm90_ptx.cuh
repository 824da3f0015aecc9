// PTX wrappers of the sm_90a kernels (the GEMM in sm90_gemm.cuh; the neighborhood-attention
// kernel in natten/sm90_natten.cuh takes its mbarrier and fence wrappers from here, the dense
// attention kernel its cp.async ones): mbarriers,
// TMA (tensor, multicast, 1-D bulk), bulk-group completion, proxy fences, wgmma fences, register
// reconfiguration and cluster primitives. Device only; the callers compile these into sm_90a
// images alone.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace ltx_kernels {
namespace gemm {
namespace sm90 {
namespace ptx {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Barrier initialisation visible to the async proxy and to the other CTAs of the cluster.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrive on the barrier at the same shared-memory offset in CTA `cta` of the cluster. Default
// semantics (release at CTA scope): what the arrival publishes is that this thread's reads of a
// stage are done, and those reads are wgmma's, already complete when wgmma.wait_group returned.
// `.release.cluster` would make ptxas put a MEMBAR.ALL.GPU before the arrival, which stalls the
// releasing warp for hundreds of cycles on every K block.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// One arrival when every cp.async this thread issued so far has landed; counts as one of the
// barrier's expected arrivals (.noinc).
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// One probe of the phase with the given parity: kTry may suspend the thread for a system-defined
// time until the phase completes (mbarrier.try_wait); kTest never suspends (test_wait); kTrySleep
// asks to stay suspended up to 20 us (try_wait with a suspend-time hint), for a warp that is not
// on the critical path, so that it does not spin through issue slots the warps that share its SM
// sub-partition need (a storer spinning through a whole tile issues a large share of the GEMM
// kernel's instructions).
enum class Probe { kTry, kTest, kTrySleep };
template <Probe kProbe>
__device__ __forceinline__ bool mbar_probe(uint32_t bar, uint32_t parity) {
  uint32_t done;
#define LTX_MBAR_PROBE(INSTR)                                                                   \
  asm volatile("{\n.reg .pred p;\n" INSTR "\nselp.u32 %0, 1, 0, p;\n}\n"                   \
               : "=r"(done)                                                                     \
               : "r"(bar), "r"(parity)                                                          \
               : "memory")
  if constexpr (kProbe == Probe::kTest) {
    LTX_MBAR_PROBE("mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;");
  } else if constexpr (kProbe == Probe::kTrySleep) {
    LTX_MBAR_PROBE("mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, 20000;");
  } else {
    LTX_MBAR_PROBE("mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;");
  }
#undef LTX_MBAR_PROBE
  return done != 0;
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  return mbar_probe<Probe::kTry>(bar, parity);
}
// Whether the phase with the given parity has completed, without suspending the thread.
__device__ __forceinline__ bool mbar_test_wait(uint32_t bar, uint32_t parity) {
  return mbar_probe<Probe::kTest>(bar, parity);
}
// Wait for the phase with the given parity to complete. A wait that outlasts 2^32 cycles
// (~2 s: far beyond any tile of any GEMM) is a protocol error: trap, so that a bug
// surfaces as a launch failure ("unspecified launch failure") rather than a hung process. (No
// printf here: a function call inside the mainloop would serialize the wgmma pipeline.)
template <Probe kProbe = Probe::kTry>
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  if (mbar_probe<kProbe>(bar, parity)) return;
  const long long start = clock64();
  while (!mbar_probe<kProbe>(bar, parity)) {
    if (clock64() - start > (1ll << 32)) asm volatile("trap;\n");
  }
}
// mbar_wait for a warp off the critical path (see Probe::kTrySleep).
__device__ __forceinline__ void mbar_wait_sleep(uint32_t bar, uint32_t parity) {
  mbar_wait<Probe::kTrySleep>(bar, parity);
}

// ---- copies ---------------------------------------------------------------------------------
// 4-byte cp.async; src_bytes = 0 zero-fills (src must still be a valid address).
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void prefetch_tensormap(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// 2-D tile load into this CTA's shared memory; completes `bytes` of transactions on `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const void* map, uint32_t bar, int32_t x, int32_t y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(x), "r"(y)
      : "memory");
}
// The same tile into the same offset of every CTA in `mask`, completing on each CTA's barrier at
// `bar`'s offset.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const void* map, uint32_t bar, int32_t x, int32_t y,
                                                      uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(x), "r"(y), "h"(mask)
      : "memory");
}
// Contiguous global -> shared bulk copy (16-byte aligned addresses, size % 16 == 0).
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_store_2d(const void* map, uint32_t src, int32_t x, int32_t y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(x), "r"(y)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// The shared-memory sources of all committed bulk stores have been read.
__device__ __forceinline__ void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// All committed bulk stores are complete (written to global memory).
__device__ __forceinline__ void bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Generic-proxy writes to shared memory made visible to the async proxy (TMA stores).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator accesses across the asynchronous wgmma.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Shared-memory descriptor of a K-major operand in the 128-byte swizzle (rows of 128 bytes,
// 8-row atoms of 1024 bytes): start address >> 4, leading offset 1 (unused for swizzled K-major),
// stride offset 1024 bytes between 8-row atoms, layout type 1 (SWIZZLE_128B). Adding 32 bytes to
// the start selects the next 32-byte K step inside the atom (the swizzle acts on address bits).
__device__ __forceinline__ uint64_t desc_sw128(uint32_t smem_addr) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

// ---- registers, barriers, cluster -----------------------------------------------------------
template <int R>
__device__ __forceinline__ void reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

}  // namespace ptx
}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
