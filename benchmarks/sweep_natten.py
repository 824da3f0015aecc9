"""Sweep of the neighborhood-attention kernels' configurations on LTX-2 decoder stage shapes
(d = 64, bf16): the automatic choice, each forced box (LTX_KERNELS_NATTEN_TILE: the portable kernel's
0-5, the sm_90 kernel's 6-8) and extra developer settings (docs/knobs.md) given as NAME=VALUE, each timed by
CUDA-graph replay over rotated inputs (benchmarks/common.py). Prints one line per (shape,
setting) and, with --json, writes them.
  python3 benchmarks/sweep_natten.py [--tiles 6,7,8] [--env LTX_KERNELS_NATTEN_SM90=0 ...] [--json F]
      [--allow-dirty]"""

import argparse
import sys

import torch

import ltx_kernels as lk

from bench_natten import SHAPES
from common import add_record_arguments, check_record, graph_timing, n_copies, time_graph, write_record


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiles", default="6,7,8", help="forced LTX_KERNELS_NATTEN_TILE values besides auto")
    ap.add_argument("--env", nargs="*", default=[], help="extra settings NAME=VALUE, each swept alone")
    ap.add_argument("--shapes", default="1,2,3,4", help="indices into bench_natten.SHAPES")
    ap.add_argument("--json", default=None)
    add_record_arguments(ap)
    args = ap.parse_args()
    check_record(args.json, args.allow_dirty)
    settings = [("auto", {})] + [(f"tile {t}", {"LTX_KERNELS_NATTEN_TILE": t}) for t in args.tiles.split(",") if t]
    settings += [(e, dict([e.split("=", 1)])) for e in args.env]
    rows = []
    for idx in [int(i) for i in args.shapes.split(",")]:
        shape, kernel = SHAPES[idx]
        nsets = n_copies(4 * torch.Size(shape).numel() * 2)
        sets = [[torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3)] for _ in range(nsets)]
        outs = [torch.empty(shape, device="cuda", dtype=torch.bfloat16) for _ in range(nsets)]
        for name, env in settings:
            with lk.developer_config(**env):
                try:
                    us = time_graph(lambda i: lk.na3d(*sets[i], kernel, out=outs[i]), nsets)
                except RuntimeError as e:  # a forced box outside the kernel's envelope
                    us = None
                    print(f"{shape} {kernel} {name}: {str(e).splitlines()[0][:80]}")
            if us is not None:
                print(f"{shape} {kernel} {name}: {us:.1f} us")
            rows.append({"shape": list(shape), "kernel": list(kernel), "setting": name, "us": us})
        del sets, outs
        torch.cuda.empty_cache()
    if args.json:
        write_record(args.json, rows, "benchmarks/sweep_natten.py", sys.argv[1:], graph_timing(), args.allow_dirty)


if __name__ == "__main__":
    main()
