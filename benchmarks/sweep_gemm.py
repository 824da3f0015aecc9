"""Sweep of the sm_90a GEMM's tile configurations against the heuristic's pick
(ltx_kernels/gemm/heuristics.h), and of the few-token rule ("auto" between the skinny kernel and
the sm_90a one at M <= 64). Every compiled tile x cluster 1 / 2 is forced in turn through
LTX_KERNELS_GEMM_CONFIG (read per call) and timed (CUDA-graph replay, inputs rotated past L2).
Prints per shape the pick, the best configuration and how far the pick is from it; the geometric
mean of (best / pick) says how much a better heuristic could gain.

  python3 benchmarks/sweep_gemm.py [--op fp8|bf16] [--quick] [--json out.json] [--allow-dirty]
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ltx_kernels as lk  # noqa: E402

from bench_gemm import LTX_M, LTX_NK, PEAK, bf16_inputs, fp8_inputs, tflops  # noqa: E402
from common import add_record_arguments, check_record, env_var, graph_timing, n_copies, time_graph, write_record  # noqa: E402

FP8_TILES = [(128, 128), (128, 144), (128, 160), (128, 192), (256, 128), (64, 128), (64, 256)]
BF16_TILES = [(128, 128), (128, 192), (128, 256), (256, 128), (64, 256)]
SMALL_M = [(16, 4096, 4096), (32, 4096, 4096), (48, 4096, 4096), (64, 4096, 4096), (64, 16384, 4096),
           (64, 2048, 8192), (300, 2048, 2048), (1000, 4096, 4096)]


def time_cfg(fn, sets, cfg, trials=7, say_why=False):
    """Median time of fn under LTX_KERNELS_GEMM_CONFIG=cfg (None: the heuristic's pick), or None
    when the configuration cannot run the problem (with the reason printed if say_why)."""
    with env_var("LTX_KERNELS_GEMM_CONFIG", cfg or None):
        try:
            fn(0)
            torch.cuda.synchronize()
            return time_graph(fn, sets, trials=trials)
        except RuntimeError as e:
            if say_why:
                print(f"  cannot run ({cfg}): {str(e).splitlines()[0][:160]}")
            return None


def sweep(op, quick):
    shapes = [(m, n, k) for m in LTX_M for (n, k, _) in LTX_NK] + [(m, n, k) for (m, n, k, _) in PEAK]
    if quick:
        shapes = shapes[:4]
    tiles = FP8_TILES if op == "fp8" else BF16_TILES
    res = []
    for m, n, k in shapes:
        sets = n_copies(m * k + n * k + 2 * m * n) if op == "fp8" else min(8, n_copies(2 * (m * k + n * k + m * n)))
        if op == "fp8":
            ins = fp8_inputs(m, n, k, sets)
            fn = lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"], out=ins[i]["y"],
                                                 backend="sm90")
            pick = lk.gemm_config("fp8_blockwise_gemm", ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"])
        else:
            ins = bf16_inputs(m, n, k, sets)
            fn = lambda i: lk.bf16_gemm(ins[i]["x"], ins[i]["w"], out=ins[i]["y"], backend="sm90")
            pick = lk.gemm_config("bf16_gemm", ins[0]["x"], ins[0]["w"])
        times = {"auto": time_cfg(fn, sets, None)}
        for bm, bn in tiles:
            for c in (1, 2):
                times[f"{bm}x{bn}:c{c}"] = time_cfg(fn, sets, f"{bm}x{bn}:c{c}")
        del ins
        torch.cuda.empty_cache()
        ok = {kk: v for kk, v in times.items() if v is not None and kk != "auto"}
        best = min(ok.items(), key=lambda kv: kv[1])
        pick_s = f"{pick['bm']}x{pick['bn']}:c{pick['cluster']}"
        r = dict(op=op, shape=f"{m}x{n}x{k}", pick=pick_s, pick_us=round(times["auto"], 2),
                 pick_tflops=round(tflops(m, n, k, times["auto"]), 1), best=best[0], best_us=round(best[1], 2),
                 best_tflops=round(tflops(m, n, k, best[1]), 1), loss=round(times["auto"] / best[1], 3),
                 all_us={kk: round(v, 2) for kk, v in ok.items()})
        res.append(r)
        print(f"{op} {r['shape']:>19}: pick {pick_s:<12} {r['pick_tflops']:7.1f} TFLOP/s; best {best[0]:<12} "
              f"{r['best_tflops']:7.1f}; pick/best time {r['loss']:.3f}", flush=True)
    return res


def sweep_small_m(quick):
    res = []
    for m, n, k in SMALL_M[:3] if quick else SMALL_M:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = fp8_inputs(m, n, k, sets)
        t = {}
        for be in ("auto", "skinny", "sm90"):
            fn = lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"], out=ins[i]["y"],
                                                 backend=be)
            t[be] = time_cfg(fn, sets, None)
        picked = lk.fp8_gemm_backend(ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"])
        del ins
        torch.cuda.empty_cache()
        ok = {kk: v for kk, v in t.items() if v is not None and kk != "auto"}
        best = min(ok.items(), key=lambda kv: kv[1])[0] if ok else "-"
        res.append(dict(op="small_m", shape=f"{m}x{n}x{k}", auto=picked, best=best,
                        **{f"{kk}_us": round(v, 2) for kk, v in t.items() if v}))
        print(f"small M {m}x{n}x{k}: auto -> {picked}; " + ", ".join(f"{kk} {v:.1f} us" for kk, v in t.items() if v)
              + f"; fastest {best}", flush=True)
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", default="fp8,bf16,small_m")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    add_record_arguments(ap)
    args = ap.parse_args()
    check_record(args.json, args.allow_dirty)
    out = []
    for op in args.op.split(","):
        out += sweep_small_m(args.quick) if op == "small_m" else sweep(op, args.quick)
    losses = [r["loss"] for r in out if "loss" in r]
    if losses:
        print(f"geometric mean of pick/best time: {math.exp(sum(map(math.log, losses)) / len(losses)):.3f}")
    if args.json:
        write_record(args.json, out, "benchmarks/sweep_gemm.py", sys.argv[1:], graph_timing(trials=7),
                     args.allow_dirty)
