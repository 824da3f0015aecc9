// Per-row broadcast tables of the fused norms and of their FP8-output variants (AdaLN scale /
// shift, gated-residual gate). Host and device; no CUDA and no torch, so the params structs,
// the CPU backend and the CUDA core share it.
#pragma once

#include <cstdint>

namespace ltx_kernels {

// Row r of the activation ([rows, cols]) reads table entry e = r / rows_per_entry, whose
// `cols` contiguous elements start at data + e * stride.
//   rows_per_entry == 1: one entry per row  (per token,  table [B, S, C] = x.shape)
//   rows_per_entry  > 1: one entry per sample (per sample, table [B, C]; rows = B * rows_per_entry)
// The CUDA core reads per-sample entries through the cached path (they are reused by every
// row of the sample) and per-token entries as a stream (read once).
template <typename T>
struct ModTable {
  const T* data;           // [entries, cols], innermost stride 1
  int64_t stride;          // elements between entries
  int64_t rows_per_entry;  // >= 1
};

// The table as a params struct holds it (element type from the params' DType; data nullptr when
// the op has no such table) and as a backend reads it (an absent table: {nullptr, 0, 1}).
using AnyModTable = ModTable<void>;
template <typename T>
inline ModTable<T> typed(const AnyModTable& t) {
  if (t.data == nullptr) return ModTable<T>{nullptr, 0, 1};
  return ModTable<T>{static_cast<const T*>(t.data), t.stride, t.rows_per_entry};
}

}  // namespace ltx_kernels
