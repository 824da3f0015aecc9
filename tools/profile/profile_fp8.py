"""One call of each FP8 quantization path at a benchmark shape, for Nsight Compute, bracketed by
torch.cuda.profiler.start() / stop() and named by NVTX ranges (tools/profile/profile.sh runs it):

    ncu --profile-from-start off --nvtx --print-nvtx-rename kernel --section SpeedOfLight \
        --section Occupancy --section WarpStateStats --section LaunchStats python3 tools/profile/profile_fp8.py

beside the Triton kernel torch.compile generates for the same composition (the per-token-group
and 128x128-block quantizers). The benchmarks time these ops; this only launches them, after one
warm-up call each."""

import os
import sys

import torch

import ltx_kernels as lk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_heavy import profile_calls  # noqa: E402

dev, bf, F8 = "cuda", torch.bfloat16, torch.float8_e4m3fn
x = torch.randn(12288, 4096, device=dev, dtype=bf)
w = torch.randn(4096, device=dev, dtype=bf)
x3 = x.view(2, 6144, 4096)
th = torch.rand(1, 32, 6144, 64, device=dev)
cs, sn = th.cos(), th.sin()
q_row, s_row = lk.quantize_fp8_per_token_group(x, 128, "row")


def compiled_group(x):
    g = x.float().view(x.shape[0], -1, 128)
    s = g.abs().amax(-1, keepdim=True) / 448.0
    q = torch.where(s == 0, g, g / torch.where(s == 0, torch.ones_like(s), s)).to(F8)
    return q.view(x.shape), s.squeeze(-1)


def compiled_block(x):
    m, n = x.shape
    g = x.float().view(m // 128, 128, n // 128, 128)
    s = g.abs().amax(dim=(1, 3), keepdim=True) / 448.0
    q = torch.where(s == 0, g, g / torch.where(s == 0, torch.ones_like(s), s)).to(F8)
    return q.view(m, n), s.view(m // 128, n // 128)


c_group, c_block = torch.compile(compiled_group), torch.compile(compiled_block)
calls = [
    ("ours quantize_fp8_per_token_group mn_major", lambda: lk.quantize_fp8_per_token_group(x, 128, "mn_major")),
    ("ours quantize_fp8_per_token_group row", lambda: lk.quantize_fp8_per_token_group(x, 128, "row")),
    ("compiled per_token_group", lambda: c_group(x)),
    ("ours dequantize_fp8_per_token_group", lambda: lk.dequantize_fp8_per_token_group(q_row, s_row, 128, bf)),
    ("ours quantize_fp8_block", lambda: lk.quantize_fp8_block(x)),
    ("compiled block", lambda: c_block(x)),
    ("ours rms_norm->fp8", lambda: lk.rms_norm(x3, w, out_dtype=F8, scale_layout="mn_major")),
    ("ours rms_norm_split_rope->fp8", lambda: lk.rms_norm_split_rope(x3, cs, sn, w, out_dtype=F8,
                                                                    scale_layout="mn_major")),
]
profile_calls("profile_fp8", calls)
