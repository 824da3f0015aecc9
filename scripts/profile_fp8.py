"""One call of each FP8 quantization path at a benchmark shape, for Nsight Compute:

    ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
        -k "regex:quant_group_regs|dequant|quant_block_regs|fp8_rows" python3 scripts/profile_fp8.py

(the benchmarks time these ops; this only launches them, after one warm-up call each)."""

import torch

import ltx_kernels as lk

dev, bf, F8 = "cuda", torch.bfloat16, torch.float8_e4m3fn
x = torch.randn(12288, 4096, device=dev, dtype=bf)
w = torch.randn(4096, device=dev, dtype=bf)
x3 = x.view(2, 6144, 4096)
th = torch.rand(1, 32, 6144, 64, device=dev)
cs, sn = th.cos(), th.sin()
calls = [
    lambda: lk.quantize_fp8_per_token_group(x, 128, "mn_major"),
    lambda: lk.dequantize_fp8_per_token_group(*lk.quantize_fp8_per_token_group(x, 128, "row"), 128, bf),
    lambda: lk.quantize_fp8_block(x),
    lambda: lk.rms_norm(x3, w, out_dtype=F8, scale_layout="mn_major"),
    lambda: lk.rms_norm_split_rope(x3, cs, sn, w, out_dtype=F8, scale_layout="mn_major"),
]
for f in calls:  # warm-up (module loading, allocator)
    f()
torch.cuda.synchronize()
for f in calls:
    f()
torch.cuda.synchronize()
