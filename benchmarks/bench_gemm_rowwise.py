"""FP8 rowwise GEMM benchmarks: fp8_rowwise_gemm as "auto" runs it ("ours": cuBLASLt's rowwise GEMM
for these plain calls, heuristics.h prefer_cublaslt) beside, in the same run:
  ours_sm90               our sm_90a kernel forced (one scale per token and one per output
                          channel, applied in the epilogue, no per-K-block promotion): what runs
                          the fused epilogues, and the A/B of the heuristic's rule
  scaled_mm_rowwise       torch._scaled_mm with scale_a [M, 1] and scale_b [1, N] fp32 (PyTorch's
                          rowwise FP8 GEMM), use_fast_accum=False
  scaled_mm_rowwise_fast  the same with use_fast_accum=True (no promotion either, as ours)
  fp8_tensorwise          torch._scaled_mm with one scale per tensor: the plain FP8 rate
  ours_blockwise          fp8_blockwise_gemm on our sm_90a kernel (1x128 / 128x128 scales, promoted
                          per 128 K), the other recipe at the same shape
Every row also carries the relative L2 error, over its first 1024 rows, of the rowwise and the
blockwise outputs against the float64 product of the unquantized bf16 operands, so that speed and
accuracy of the two recipes are read from one record.

GEMMs are compute bound: TFLOP/s = 2 M N K / time. Timing: CUDA-graph replay with input sets
rotated past 3x L2, medians (common.time_graph). Shapes: the LTX-Video / LTX-2 linears at
M = 5376 and 10752 and the peak-rate shapes of bench_gemm.py.

  python3 benchmarks/bench_gemm_rowwise.py [--quick] [--json out.json] [--allow-dirty]
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ltx_kernels as lk  # noqa: E402

from bench_gemm import LTX_M, LTX_NK, PEAK, tflops, timed  # noqa: E402  (the same shapes and timing)
from common import Row, add_record_arguments, graph_timing, n_copies, record_meta, write_record  # noqa: E402

ERR_ROWS = 1024


def inputs(m, n, k, sets):
    out = []
    for _ in range(sets):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
        a, sa = lk.quantize_fp8_per_token_group(x, k, "row")
        b, sb = lk.quantize_fp8_per_token_group(w, k, "row")
        out.append(dict(x=x, w=w, a=a, sa=sa, b=b, sb=sb, sb_row=sb.reshape(1, n),
                        y=torch.empty(m, n, device="cuda", dtype=torch.bfloat16), one=torch.ones((), device="cuda")))
    return out


def rel_errors(d):
    """Relative L2 errors of the rowwise and the blockwise outputs (first ERR_ROWS rows) against the
    float64 product of the unquantized operands."""
    x, w = d["x"][:ERR_ROWS], d["w"]
    want = x.double() @ w.double().t()
    row = lk.fp8_rowwise_gemm(d["a"][:ERR_ROWS], d["sa"][:ERR_ROWS], d["b"], d["sb"], backend="sm90")
    a1, s1 = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
    b1, t1 = lk.quantize_fp8_block(w)
    blk = lk.fp8_blockwise_gemm(a1, s1, b1, t1, backend="sm90")
    norm = want.norm()
    return float((row.double() - want).norm() / norm), float((blk.double() - want).norm() / norm)


def run(copy_gbps=0.0, quick=False, summary=None):
    """benchmarks/run.py entry."""
    rows = []
    summary = [] if summary is None else summary
    shapes = [(m, n, k, name) for m in LTX_M for (n, k, name) in LTX_NK] + list(PEAK)
    if quick:
        shapes = [s for s in shapes if s[0] == 5376][:4] + PEAK[:1]
    for m, n, k, name in shapes:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = inputs(m, n, k, sets)
        cfg = lk.gemm_config("fp8_rowwise_gemm", ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"])
        cfg90 = lk.gemm_config("fp8_rowwise_gemm", ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"], backend="sm90")
        t = {}
        t["ours"], err = timed(lambda i: lk.fp8_rowwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"],
                                                              out=ins[i]["y"]), sets)
        t["ours_sm90"], _ = timed(lambda i: lk.fp8_rowwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"],
                                                                 out=ins[i]["y"], backend="sm90"), sets)
        for key, fast in (("scaled_mm_rowwise", False), ("scaled_mm_rowwise_fast", True)):
            t[key], _ = timed(lambda i: torch._scaled_mm(ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["sa"],
                                                         scale_b=ins[i]["sb_row"], out_dtype=torch.bfloat16,
                                                         use_fast_accum=fast), sets)
        t["fp8_tensorwise"], _ = timed(lambda i: torch._scaled_mm(ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["one"],
                                                                  scale_b=ins[i]["one"], out_dtype=torch.bfloat16), sets)
        if t["ours"] is None:
            print(f"rowwise {m}x{n}x{k}: ours cannot run: {err}")
            del ins
            torch.cuda.empty_cache()
            continue
        e_row, e_blk = rel_errors(ins[0])
        del ins
        torch.cuda.empty_cache()
        bl = []
        for _ in range(min(sets, 4)):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
            a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
            b, sb = lk.quantize_fp8_block(w)
            bl.append(dict(a=a, sa=sa, b=b, sb=sb, y=torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
        t["ours_blockwise"], _ = timed(lambda i: lk.fp8_blockwise_gemm(bl[i]["a"], bl[i]["sa"], bl[i]["b"], bl[i]["sb"],
                                                                        out=bl[i]["y"], backend="sm90"), len(bl))
        del bl
        torch.cuda.empty_cache()
        base = {kk: v for kk, v in t.items() if kk != "ours" and v is not None}
        rates = "; ".join(f"{kk} {tflops(m, n, k, v):.0f}" for kk, v in base.items())
        tile = f"sm90 {cfg['bm']}x{cfg['bn']}" if cfg.get("backend") == "sm90" else cfg.get("backend", "?")
        tile += f" (ours_sm90: {cfg90['bm']}x{cfg90['bn']})"
        note = (f"{name}; {tile}; ours {tflops(m, n, k, t['ours']):.0f} TFLOP/s; {rates}; "
                f"rel. L2 error vs float64 of the bf16 operands: rowwise {e_row:.3g}, blockwise {e_blk:.3g}")
        r = Row("fp8_rowwise_gemm", [m, n, k], "e4m3->bf16", t["ours"], base, flops=2 * m * n * k, note=note).finish(0.0)
        rows.append(r)
        summary.append(dict(shape=f"{m}x{n}x{k}", name=name, config=tile, ours_tflops=round(tflops(m, n, k, t["ours"]), 1),
                            **{f"{kk}_tflops": round(tflops(m, n, k, v), 1) for kk, v in base.items()},
                            rel_err_rowwise=e_row, rel_err_blockwise=e_blk))
        print(f"rowwise {m}x{n}x{k} ({name}): {note}", flush=True)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    add_record_arguments(ap)
    args = ap.parse_args()
    meta = record_meta("benchmarks/bench_gemm_rowwise.py", sys.argv[1:], graph_timing(), args.allow_dirty,
                       exclude=[args.json] if args.json else ())
    print("record meta: " + json.dumps(meta), flush=True)
    summary = []
    rows = run(quick=args.quick, summary=summary)
    if args.json:
        write_record(args.json, rows, "benchmarks/bench_gemm_rowwise.py", sys.argv[1:], graph_timing(), args.allow_dirty,
                     summary=summary)
    for s in summary:
        print(" ".join(f"{k}={v}" for k, v in s.items()))
