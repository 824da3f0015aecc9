"""One small ragged GEMM per sm_90a configuration (operands x tile x cluster x epilogue / output),
against the float64 reference: prints OK or where it is wrong (which tiles, rows, columns), so
that a first GPU run localizes a failure. A launch failure (e.g. a barrier watchdog trap) kills
the CUDA context: the script prints "FATAL <case>" and exits 2; rerun with --after <case> to go on.

  python3 tools/gpu/gemm_smoke.py [--after CASE] [--quick]
"""

import argparse
import os
import sys

import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from test_gemm_epilogue import (BF16_TILES, FP8_OUT_TILES, FP8_TILES, absdot_fp8, acc_bound, bf16_operands,  # noqa: E402
                                fp8_operands, localize)

F8 = torch.float8_e4m3fn


def cases(quick):
    for op, tiles in (("fp8", FP8_TILES), ("bf16", BF16_TILES)):
        for bm, bn in tiles:
            for c in (1, 2):
                for epi in ("none", "gelu", "gated", "fp8out"):
                    if quick and epi != "none" and c == 2:
                        continue
                    if epi == "fp8out" and (bm, bn) not in FP8_OUT_TILES[op]:
                        continue
                    yield f"{op}:{bm}x{bn}:c{c}:{epi}", op, bm, bn, c, epi


def run_case(op, bm, bn, c, epi, device="cuda", backend="sm90"):
    B = 2
    tokens = bm + 9
    m = B * tokens
    n = 3 * 128 if epi == "fp8out" else bn + 40
    k = 128 * 5 if op == "fp8" else 64 * 5 + 24
    lk.set_developer_setting("LTX_KERNELS_GEMM_CONFIG", f"{bm}x{bn}:c{c}")
    if op == "fp8":
        a, sa, b, sb = fp8_operands(None, n, k, device, leading=(B, tokens))
        y = ref.fp8_blockwise_gemm(a, sa, b, sb)
        e_y = acc_bound("fp8", backend, absdot_fp8(a, sa, b, sb), k)
        f = lambda **kw: lk.fp8_blockwise_gemm(a, sa, b, sb, backend=backend, **kw)
    else:
        a, b = bf16_operands(None, n, k, device, leading=(B, tokens))
        y = ref.bf16_gemm(a, b)
        e_y = acc_bound("bf16", backend, ref.bf16_gemm(a.abs(), b.abs()), k)
        f = lambda **kw: lk.bf16_gemm(a, b, backend=backend, **kw)
    cfg = {"bm": bm, "bn": bn, "cluster": c}
    if epi == "none":
        got, want, slope = f(), y, 1.0
    elif epi == "gelu":
        got, want, slope = f(epilogue="gelu_tanh"), ref.gemm_epilogue(y, "gelu_tanh"), 1.13
    elif epi == "gated":
        h = torch.randn(B, tokens, n, device=device).to(torch.bfloat16)
        g = torch.randn(B, n, device=device).to(torch.bfloat16)
        got = f(epilogue="gated_residual", residual=h, gate=g)
        want = ref.gemm_epilogue(y, "gated_residual", h, g)
        e_y = e_y * g.abs().double().unsqueeze(1)
        slope = 1.0
    else:
        q, s = f(out_dtype=F8)
        deq = (ref.fp8_decode(q).to(device).double().reshape(m, n) * s.double().repeat_interleave(128, 1))
        v = y.reshape(m, n)
        tol = 2.0**-4 * (v.abs() + e_y.reshape(m, n)) + 2.0**-10 * s.double().repeat_interleave(128, 1) + e_y.reshape(m, n)
        bad = (deq - v).abs() > tol
        return (not bad.any()), localize(bad, cfg)
    tol = 2.0**-7 * want.abs() + slope * e_y
    bad = (got.double() - want).abs() > tol
    if torch.isnan(got.float()).any():
        bad |= torch.isnan(got.float())
    return (not bad.any()), localize(bad, cfg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--after", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if torch.cuda.get_device_capability() != (9, 0):
        print("gemm_smoke: needs compute capability 9.0")
        return 0
    skipping = args.after is not None
    fails = 0
    for name, op, bm, bn, c, epi in cases(args.quick):
        if skipping:
            skipping = name != args.after
            continue
        print(f"{name} ...", end=" ", flush=True)
        try:
            ok, where = run_case(op, bm, bn, c, epi)
        except RuntimeError as e:
            msg = str(e).splitlines()[0][:300]
            if "CUDA error" in msg or "launch failure" in msg or "illegal" in msg:
                print(f"\nFATAL {name}: {msg}", flush=True)
                return 2
            print(f"ERROR {msg}", flush=True)
            fails += 1
            continue
        print("OK" if ok else f"WRONG: {where}", flush=True)
        fails += 0 if ok else 1
    lk.set_developer_setting("LTX_KERNELS_GEMM_CONFIG", "")
    print(f"gemm_smoke: {fails} failing cases")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
