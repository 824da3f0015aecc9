// Developer settings: overrides of the kernels' own choices for tests, sweeps and profiling
// (docs/knobs.md lists them). No user needs one for correct or fast results. Each is named after
// the environment variable that gives its initial value; the environment is read once, at the
// first use of any setting, and never on a kernel's path. set_dev_setting changes one at run
// time (Python: ltx_kernels.developer_config). Torch-free; the only reader of the environment in
// the C++ layers.
#pragma once

#include <string>

namespace ltx_kernels {

// The settings that exist, in the order docs/knobs.md lists them.
constexpr const char* kDevSettings[] = {
    "LTX_KERNELS_GEMM_CONFIG",         // the sm_90a GEMM's tile configuration (csrc/torch/gemm.cpp)
    "LTX_KERNELS_SM90_CUTLASS_CONFIG", // the CUTLASS-collective FP8 GEMM's configuration
    "LTX_KERNELS_SM90_GEMM_RASTER",    //   its persistent scheduler's raster order
    "LTX_KERNELS_SM90_GEMM_SWIZZLE",   //   and swizzle size
    "LTX_KERNELS_SKINNY_WGMMA",        // "0": the few-token GEMM without its wgmma variant
    "LTX_KERNELS_SKINNY_SPLITK",       // the few-token GEMM's K splits
    "LTX_KERNELS_ATTENTION_PINGPONG",  // the sm_90a attention's warpgroup schedule (0 / 1)
    "LTX_KERNELS_ATTENTION_PERSISTENT",  // the sm_90a 16-bit attention's persistent schedule (0 / 1)
    "LTX_KERNELS_NORM_SHAPE",          // the row norms' launch shape
    "LTX_KERNELS_NATTEN_TILE",         // the neighborhood attention's tile
    "LTX_KERNELS_NATTEN_SM90",         // "0": the portable neighborhood attention on sm_90
};

// The value of a setting ("" when unset). Thread-safe.
std::string dev_setting(const char* name);

// Sets (or, with "", clears) a setting; false for a name not in kDevSettings. Thread-safe.
bool set_dev_setting(const std::string& name, const std::string& value);

}  // namespace ltx_kernels
