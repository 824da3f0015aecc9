"""ncu target for the neighborhood-attention kernels: an LTX-2 decoder stage shape
(1x16x64x96, 16 heads of 64, window (3, 7, 7)) through the sm_90 TMA kernel and the portable
kernel (LTX_KERNELS_NATTEN_SM90=0), one warm-up call each, then one profiled call each.
  ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section LaunchStats --section SchedulerStats -k regex:na_ \
      --launch-skip 2 --launch-count 2 python3 scripts/profile_natten.py
"""
import os

import torch

import ltx_kernels as lk

q, k, v = (torch.randn(1, 16, 64, 96, 16, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(2):  # warm-up (launches 0-1), profiled (launches 2-3)
    lk.na3d(q, k, v, (3, 7, 7))
    os.environ["LTX_KERNELS_NATTEN_SM90"] = "0"
    lk.na3d(q, k, v, (3, 7, 7))
    del os.environ["LTX_KERNELS_NATTEN_SM90"]
torch.cuda.synchronize()
print("profile_natten: done")
