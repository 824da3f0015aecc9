"""ncu target for the few-token GEMM (backend "skinny"): two calls of each shape after a warm-up.
  ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section LaunchStats -k regex:skinny --launch-skip 4 --launch-count 4 \
      python3 scripts/profile_skinny.py
"""
import torch

import ltx_kernels as lk

SHAPES = [(1, 4096, 4096), (64, 16384, 4096), (64, 4096, 16384), (16, 16384, 4096)]
ins = []
for m, n, k in SHAPES:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
    a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
    b, sb = lk.quantize_fp8_block(w)
    ins.append((a, sa, b, sb))
for a, sa, b, sb in ins:  # warm-up: one call per shape (launches 0-3)
    lk.fp8_blockwise_gemm(a, sa, b, sb, backend="skinny")
for a, sa, b, sb in ins:  # profiled: launches 4-7
    lk.fp8_blockwise_gemm(a, sa, b, sb, backend="skinny")
torch.cuda.synchronize()
print("profile_skinny: done")
