"""Norm family benchmarks: ours vs the eager fp32 composition (benchmarks/baselines.py),
F.rms_norm and torch.compile of the fp32 composition, same run, same method
(benchmarks/common.py); the error of what was timed is measured against the float64 oracle of
ltx_kernels.reference."""

import torch
import torch.nn.functional as F

import ltx_kernels as lk
from ltx_kernels import reference as ref

import baselines as bl
from common import Row, n_copies, time_graph

# Small DiT rows, the LTX-Video / LTX-2 shapes and LLM rows; the last moves >= 256 MB.
SHAPES = [
    (1, 1024, 2048), (2, 1024, 2048), (4, 1024, 2048), (2, 4096, 3072), (4, 4096, 3072),
    (2, 2688, 2048), (2, 6144, 4096), (1, 32760, 4096),
    (1, 4096), (32, 4096), (4096, 4096), (16384, 8192),
]


def run(copy_gbps, quick=False):
    rows = []
    eps = 1e-6
    compiled = torch.compile(bl.rms_norm, dynamic=False)
    shapes = SHAPES[:3] if quick else SHAPES
    for dtype in [torch.bfloat16] + ([] if quick else [torch.float16, torch.float32]):
        for shape in shapes:
            if dtype != torch.bfloat16 and shape not in [(2, 6144, 4096), (1, 32760, 4096)]:
                continue
            c = shape[-1]
            nbytes = 2 * torch.Size(shape).numel() * torch.finfo(dtype).bits // 8
            k = n_copies(nbytes)
            xs = [torch.randn(shape, device="cuda", dtype=dtype) for _ in range(k)]
            w = torch.randn(c, device="cuda", dtype=dtype)
            outs = [torch.empty_like(x) for x in xs]
            ours = time_graph(lambda i: lk.rms_norm(xs[i], w, eps, out=outs[i]), k)
            base = {
                "eager": time_graph(lambda i: bl.rms_norm(xs[i], w, eps), k),
                "F.rms_norm": time_graph(lambda i: F.rms_norm(xs[i], (c,), w, eps), k),
                "torch.compile": time_graph(lambda i: compiled(xs[i], w, eps), k),
            }
            # correctness of what was timed (cheap): against the float64 oracle
            err = (outs[0].float() - ref.rms_norm(xs[0], w, eps)).abs().max().item()
            rows.append(Row("rms_norm", list(shape), str(dtype).replace("torch.", ""), ours, base,
                            bytes=nbytes, note=f"max abs err vs fp64 oracle {err:.2e}").finish(copy_gbps))
            del xs, outs
            torch.cuda.empty_cache()
    return rows
