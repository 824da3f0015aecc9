"""A/B of sm_90a FP8 GEMM configurations: each LTX_KERNELS_GEMM_CONFIG string given (read per
call, so per captured graph; e.g. "auto" for the heuristic's pick, "128x128", "128x192:c2")
runs our kernel (backend "sm90"), beside the CUTLASS collective ("sm90_cutlass"), cuBLASLt's
blockwise FP8 GEMM (torch._scaled_mm, 1x128 / 128x128 scales) and DeepGEMM's fp8_gemm_nt when
`import deep_gemm` works (tools/gpu/deepgemm.sh), at the LTX shapes and the two peak shapes of
benchmarks/bench_gemm.py. Same timing as the benchmarks (CUDA-graph replay, inputs rotated past
L2, medians). A configuration prefixed "row:" (e.g. "row:128x192:c2") passes the activation scales
row-major instead of M-major, which the kernel loads by cp.async instead of TMA.

    python3 tools/tune/gemm_ab.py [--configs CFG ...] [--quick] [--json out.json]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import ltx_kernels as lk  # noqa: E402

from bench_gemm import LTX_M, LTX_NK, PEAK, deepgemm, fp8_inputs, tflops, time_deepgemm  # noqa: E402
from common import n_copies, write_record  # noqa: E402
from sweep_gemm import time_cfg  # noqa: E402


def timed(fn, sets, cfg=None):
    return time_cfg(fn, sets, cfg, trials=9, say_why=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", nargs="+", default=["auto", "128x128"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    shapes = [(m, n, k, name) for m in LTX_M for (n, k, name) in LTX_NK] + list(PEAK)
    if args.quick:
        shapes = shapes[:2] + list(PEAK[:1])
    dg, dg_label = deepgemm()
    print(f"deepgemm: {dg_label}" if dg else f"deepgemm: not available ({dg_label})", flush=True)
    rows = []
    for m, n, k, name in shapes:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = fp8_inputs(m, n, k, sets)

        for d in ins:
            d["sa_row"] = d["sa"].contiguous()

        def ours(i, key="sa"):
            return lk.fp8_blockwise_gemm(ins[i]["a"], ins[i][key], ins[i]["b"], ins[i]["sb"], out=ins[i]["y"],
                                         backend="sm90")

        def ours_row(i):
            return ours(i, "sa_row")

        cfg = lk.gemm_config("fp8_blockwise_gemm", ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"],
                             backend="sm90")  # the heuristic's pick ("auto")
        t = {c: (timed(ours_row, sets, c[4:]) if c.startswith("row:") else timed(ours, sets, c))
             for c in args.configs}
        t["sm90_cutlass"] = timed(lambda i, ins=ins: lk.fp8_blockwise_gemm(
            ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"], out=ins[i]["y"], backend="sm90_cutlass"), sets)
        t["cublaslt_blockwise"] = timed(lambda i, ins=ins: torch._scaled_mm(
            ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["sa_cm"], scale_b=ins[i]["sb"].t(), out_dtype=torch.bfloat16),
            sets)
        if dg is not None:
            t["deepgemm"] = time_deepgemm(dg, ins, sets)[0]
        ins.clear()
        torch.cuda.empty_cache()
        tf = {kk: (round(tflops(m, n, k, v), 1) if v else None) for kk, v in t.items()}
        rows.append(dict(shape=[m, n, k], name=name, config=cfg, us=t, tflops=tf))
        print(f"{m}x{n}x{k} {name}: {cfg} " + " ".join(f"{kk} {v}" for kk, v in tf.items()), flush=True)
    cols = list(args.configs) + ["sm90_cutlass", "cublaslt_blockwise"] + (["deepgemm"] if dg is not None else [])
    best = "deepgemm" if dg is not None else "cublaslt_blockwise"
    print(f"\nTFLOP/s; last column: the fastest of the configs / {best}")
    print(f"{'shape':>19} {'name':<13} " + " ".join(f"{c[:14]:>14}" for c in cols) + f" {'x ' + best[:8]:>10}")
    for r in rows:
        tf, us = r["tflops"], r["us"]
        ours_best = min((us[c] for c in args.configs if us.get(c)), default=None)
        x = us[best] / ours_best if ours_best and us.get(best) else float("nan")
        print(f"{'x'.join(map(str, r['shape'])):>19} {r['name']:<13} "
              + " ".join(f"{tf.get(c) or 0:14.0f}" for c in cols) + f" {x:10.3f}")
    if args.json:
        write_record(args.json, rows, "tools/tune/gemm_ab.py", sys.argv[1:])

if __name__ == "__main__":
    main()
