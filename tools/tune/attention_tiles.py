"""A/B of the sm_90a attention kernel's two warpgroup schedules: the default configuration of each
input class and head dim (attention/heuristics.h) with ping-pong off and on
(LTX_KERNELS_ATTENTION_PINGPONG 0 / 1), bf16 and FP8 (k factors per 128 keys), beside cuDNN's SDPA
(bf16, [B, H, S, D]) at the LTX shapes. It has no option that selects another tile configuration:
the defaults are the kernel's only ones. Same timing as benchmarks/bench_attention.py (CUDA-graph
replay, two input sets, medians). Each schedule's output is compared with cuDNN's first (relative
L2), so that a wrong result cannot post a time.

    python3 tools/tune/attention_tiles.py [--kinds bf16 fp8] [--quick] [--json out.json]
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import ltx_kernels as lk  # noqa: E402

from common import rel_l2, time_graph, write_record  # noqa: E402

SHAPES = [  # name, B, S, H, D
    ("LTX-Video 49x512x768", 2, 2688, 32, 64),
    ("LTX-Video 121x720x1280", 1, 14080, 32, 64),
    ("LTX-2 49x512x768", 2, 2688, 32, 128),
    ("LTX-2 8k", 1, 8192, 32, 128),
]



def run(fn, pingpong, sets):
    with lk.developer_config(LTX_KERNELS_ATTENTION_PINGPONG=pingpong):
        try:
            out = fn(0).clone()
            torch.cuda.synchronize()
            return out, time_graph(fn, sets, trials=9)
        except RuntimeError as e:
            return str(e).splitlines()[0][:120], None


def bench_shape(name, b, s, h, d, kinds_run=("bf16", "fp8"), sets=2):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    flops = 4.0 * b * h * s * s * d
    qs, ks, vs = ([torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
                  for _ in range(3))
    qh, kh, vh = ([t.transpose(1, 2).contiguous() for t in ts] for ts in (qs, ks, vs))
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        want = F.scaled_dot_product_attention(qh[0], kh[0], vh[0]).transpose(1, 2)
        cudnn = time_graph(lambda i: F.scaled_dot_product_attention(qh[i], kh[i], vh[i]), sets, trials=9)
    print(f"{name} [{b}, {s}, {h}, {d}]: cuDNN {cudnn:.1f} us ({flops / cudnn / 1e6:.0f} TFLOP/s)", flush=True)
    out = torch.empty_like(qs[0])
    ops8 = [lk.quantize_attention_fp8(qs[i], ks[i], vs[i], k_block=128) for i in range(sets)]
    kinds = {"bf16": (lambda i: lk.attention(qs[i], ks[i], vs[i], out=out, backend="sm90"), 1e-2),
             "fp8": (lambda i: lk.attention(*ops8[i], out=out, backend="sm90"), 1e-1)}
    for kind, (fn, tol) in kinds.items():
        if kind not in kinds_run:
            continue
        for pp in ("0", "1"):
            got, us = run(fn, pp, sets)
            row = {"shape": name, "B": b, "S": s, "H": h, "D": d, "kind": kind, "pingpong": int(pp),
                   "cudnn_us": cudnn}
            if us is None:
                print(f"  {kind} pp {pp}: cannot run: {got}")
                continue
            err = rel_l2(got, want)
            row.update(us=us, tflops=flops / us / 1e6, vs_cudnn=cudnn / us, rel_l2_vs_cudnn=err, ok=err < tol)
            rows.append(row)
            print(f"  {kind:4s} pp {pp}: {us:8.1f} us {flops / us / 1e6:5.0f} TFLOP/s "
                  f"{cudnn / us:5.3f}x cuDNN  rel L2 {err:.2e}{'' if err < tol else '  WRONG'}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the 2688-token shapes only")
    ap.add_argument("--kinds", nargs="+", choices=["bf16", "fp8"], default=["bf16", "fp8"])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for name, b, s, h, d in SHAPES:
        if args.quick and s != 2688:
            continue
        rows += bench_shape(name, b, s, h, d, args.kinds)
        torch.cuda.empty_cache()
        if args.json:  # after every shape, so that a run cut short keeps what it measured
            write_record(args.json, rows, "tools/tune/attention_tiles.py", sys.argv[1:])


if __name__ == "__main__":
    main()
