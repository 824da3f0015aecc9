// The GEMM family's backends: one table of names, from which the torch adapter parses an op's
// `backend` argument and the Python package reads its list (the op gemm_backends, read by
// ltx_kernels.gemm). No CUDA, no torch; unit-tested in tests/cpp/test_gemm_heuristics.cpp. What
// each backend is and when "auto" picks it: gemm/gemm.h.
#pragma once

#include <string>

#include "ltx_kernels/gemm/gemm_params.h"

namespace ltx_kernels {
namespace gemm {

// A backend's value is its index in kBackendNames (the number gemm_plan reports).
enum class Backend : int { kAuto = -1, kCpu = 0, kTorch = 1, kSm89 = 2, kSm90 = 3, kSkinny = 4, kSm90Cutlass = 5, kCublasLt = 6 };

constexpr int kNumBackends = 7;
constexpr const char* kBackendNames[kNumBackends] = {"cpu", "torch", "sm89", "sm90", "skinny", "sm90_cutlass", "cublaslt"};

inline const char* backend_name(Backend b) {
  if (b == Backend::kAuto) return "auto";
  const int i = static_cast<int>(b);
  return i >= 0 && i < kNumBackends ? kBackendNames[i] : "?";
}

// The backends an op on `ops` takes by name besides "auto", in the order its messages list them.
struct BackendList {
  int n = 0;
  Backend items[kNumBackends] = {};
};
inline BackendList accepted_backends(Operands ops) {
  using B = Backend;
  switch (ops) {
    case Operands::kFp8Blockwise:
      return {7, {B::kSm90, B::kSkinny, B::kSm89, B::kSm90Cutlass, B::kCublasLt, B::kTorch, B::kCpu}};
    case Operands::kBf16: return {3, {B::kSm90, B::kTorch, B::kCpu}};
    case Operands::kFp6Blockwise: return {3, {B::kSm89, B::kTorch, B::kCpu}};
    case Operands::kNvfp4: return {3, {B::kCublasLt, B::kTorch, B::kCpu}};
    case Operands::kFp8Rowwise: return {4, {B::kSm90, B::kCublasLt, B::kTorch, B::kCpu}};
  }
  return {};
}

// `name` as the backend of an op on `ops`: true and *out (kAuto for "auto"); else false and
// *error = "backend must be 'auto', '...' or 'cpu' (got 'name')".
inline bool parse_backend(const std::string& name, Operands ops, Backend* out, std::string* error) {
  const BackendList list = accepted_backends(ops);
  if (name == "auto") {
    *out = Backend::kAuto;
    return true;
  }
  for (int i = 0; i < list.n; ++i) {
    if (name == backend_name(list.items[i])) {
      *out = list.items[i];
      return true;
    }
  }
  if (error) {
    *error = "backend must be 'auto'";
    for (int i = 0; i < list.n; ++i)
      *error += std::string(i + 1 == list.n ? " or '" : ", '") + backend_name(list.items[i]) + "'";
    *error += " (got '" + name + "')";
  }
  return false;
}

}  // namespace gemm
}  // namespace ltx_kernels
