// Per-row broadcast tables of the fused norms (AdaLN scale / shift, gated-residual gate).
// Host and device; no CUDA and no torch, so the CPU backend and the CUDA core share it.
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

}  // namespace ltx_kernels
