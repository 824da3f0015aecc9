"""GEMM family benchmarks: the blockwise-scaled FP8 GEMM (and its FP6-weight variant) against
cuBLASLt's blockwise FP8 GEMM through torch._scaled_mm, tensorwise FP8 _scaled_mm and bf16
torch.matmul. Timing: CUDA-graph replay with input sets rotated past 3x L2 (common.time_graph).

Large-M rows (LTX prefill shapes, M = 5376 and 12288 tokens, and 8192^3) are compute bound: their
ceiling is "FP8 matmul", tensorwise FP8 _scaled_mm at 8192^3 measured in the same run, and the
bf16 matmul rate is recorded next to it. Each shape gives one row per backend of ours ("auto",
"sm89" forced, the exact "torch" fallback); a backend that cannot run on this GPU/build is
printed, not timed. The best baseline is the fastest of the three PyTorch paths, usually
tensorwise FP8, which does less work (one scale per tensor); cuBLASLt blockwise is the
like-for-like comparison and its time is in `baselines`. The script ends by printing the
geometric mean over the 12 large-M shapes of (cuBLASLt blockwise time / our "auto" time).

Few-token rows (M <= 128, decode) are weight-bandwidth bound: their ceiling is "copy", with
bytes = the N*K weight bytes; they time "auto" (the skinny split-K kernel at M <= 64), the
skinny kernel and the sm90 wgmma kernel forced."""

import math

import torch

import ltx_kernels as lk

from common import Row, n_copies, time_graph

F8 = torch.float8_e4m3fn
LARGE_M = [5376, 12288]
LARGE_NK = [(2048, 2048), (8192, 2048), (2048, 8192), (4096, 4096), (16384, 4096), (4096, 16384)]
DECODE_M = [1, 16, 32, 64, 128]
DECODE_NK = [(4096, 4096), (16384, 4096), (4096, 16384), (2048, 2048)]
SQUARE = (8192, 8192, 8192)


def fp8_tensorwise_ceiling_tflops(n: int = 8192) -> float:
    a = torch.randn(n, n, device="cuda").to(F8)
    b = torch.randn(n, n, device="cuda").to(F8)
    one = torch.ones((), device="cuda")
    us = time_graph(lambda i: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                    1, reps=5, trials=10)
    del a, b
    torch.cuda.empty_cache()
    return 2 * n**3 / (us * 1e-6) / 1e12


def _inputs(m, n, k, sets):
    """`sets` independent input sets: our operands (M-major activation scales, as the layers
    produce them), cuBLASLt's (sa [M, K/128] column-major, sb [N/128, K/128]) and bf16 ones."""
    out = []
    for _ in range(sets):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
        a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
        b, sb = lk.quantize_fp8_block(w)
        sa_cm = sa.contiguous().t().contiguous().t()  # [M, K/128], column-major (stride (1, M))
        out.append(dict(x=x, w=w, a=a, sa=sa, b=b, sb=sb, sa_cm=sa_cm,
                        y=torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
    return out


def _time_or_none(fn, sets):
    try:
        fn(0)
        torch.cuda.synchronize()
    except RuntimeError as e:
        return None, str(e).splitlines()[0][:160]
    return time_graph(fn, sets), ""


def _tflops(m, n, k, us):
    return 2 * m * n * k / (us * 1e-6) / 1e12


def run(copy_gbps, quick=False, decode_only=False):
    from common import bf16_matmul_ceiling_tflops

    bf16_ceiling = bf16_matmul_ceiling_tflops()
    fp8_ceiling = fp8_tensorwise_ceiling_tflops()
    print(f"gemm ceilings: bf16 matmul {bf16_ceiling:.0f} TFLOP/s, fp8 tensorwise _scaled_mm {fp8_ceiling:.0f} TFLOP/s")
    shapes = [(m, n, k) for m in LARGE_M for (n, k) in LARGE_NK]
    n_large = len(shapes)
    shapes += [SQUARE]
    n_big = len(shapes)
    shapes += [(m, n, k) for (n, k) in DECODE_NK for m in DECODE_M]
    if quick:
        shapes = shapes[:2] + shapes[n_big:n_big + 1]
        n_large = n_big = 2
    if decode_only:
        shapes, n_large, n_big = shapes[n_big:], 0, 0
    rows, ratios = [], []
    one = torch.ones((), device="cuda")
    for idx, (m, n, k) in enumerate(shapes):
        per_call = m * k + n * k + 2 * m * n + 4 * (m + n) * (k // 128)
        sets = n_copies(per_call)
        ins = _inputs(m, n, k, sets)
        base, notes = {}, []
        t, err = _time_or_none(lambda i: torch._scaled_mm(ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["sa_cm"],
                                                          scale_b=ins[i]["sb"].t(), out_dtype=torch.bfloat16), sets)
        if t is None:
            notes.append(f"cuBLASLt blockwise n/a ({err})")
        else:
            base["cublaslt_blockwise"] = t
        st = [torch.ones((), device="cuda") for _ in range(sets)]
        t, err = _time_or_none(lambda i: torch._scaled_mm(ins[i]["a"], ins[i]["b"].t(), scale_a=st[i], scale_b=one,
                                                          out_dtype=torch.bfloat16), sets)
        if t is not None:
            base["fp8_tensorwise"] = t
        base["bf16_matmul"] = time_graph(lambda i: torch.matmul(ins[i]["x"], ins[i]["w"].t(), out=ins[i]["y"]), sets)
        decode = idx >= n_big
        for backend in (("auto", "skinny", "sm90") if decode else ("auto", "sm89", "torch")):
            picked = ""
            try:
                picked = lk.fp8_gemm_backend(ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"], backend=backend)
            except RuntimeError as e:
                print(f"fp8_blockwise_gemm[{backend}] {m}x{n}x{k}: {str(e).splitlines()[0][:200]}")
                continue
            us, err = _time_or_none(lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"],
                                                                     out=ins[i]["y"], backend=backend), sets)
            if us is None:
                print(f"fp8_blockwise_gemm[{backend}] {m}x{n}x{k}: {err}")
                continue
            ours = _tflops(m, n, k, us)
            note = [f"{ours:.0f} TFLOP/s ({picked}; {100 * ours / fp8_ceiling:.0f}% of the fp8 tensorwise ceiling)"]
            note += [f"{name} {_tflops(m, n, k, v):.0f}" for name, v in base.items()]
            note += notes
            if decode:
                note.append(f"weights {n * k / 1e6:.1f} MB at {n * k / us / 1e3:.0f} GB/s = "
                            f"{100 * n * k / us / 1e3 / copy_gbps:.0f}% of copy")
            row = Row(f"fp8_blockwise_gemm[{backend}]", [m, n, k], "e4m3->bf16", us, dict(base),
                      bytes=n * k if decode else None, flops=2 * m * n * k, note="; ".join(note)).finish(copy_gbps)
            if decode:  # weight bytes against copy; the compute ceilings for the record
                row.ceiling.update({"bf16_matmul_TFLOPs": round(bf16_ceiling, 1),
                                    "fp8_tensorwise_TFLOPs": round(fp8_ceiling, 1)})
            else:
                row.against("FP8 matmul", fp8_ceiling, fp8_tensorwise_TFLOPs=fp8_ceiling,
                            bf16_matmul_TFLOPs=bf16_ceiling)
            rows.append(row)
            print(f"{row.op} {m}x{n}x{k}: {row.ours_us:.1f} us, {row.note}", flush=True)
            if backend == "auto" and idx < n_large and "cublaslt_blockwise" in base:
                ratios.append(base["cublaslt_blockwise"] / us)
        del ins
        torch.cuda.empty_cache()
    # the FP6-weight variant at two LTX shapes (weights 0.75 bytes per element)
    for m, n, k in ([] if decode_only else [(5376, 2048, 2048)] if quick else [(5376, 2048, 2048), (5376, 8192, 2048)]):
        sets = n_copies(m * k + n * k * 3 // 4 + 2 * m * n)
        ins = _inputs(m, n, k, sets)
        packed = [lk.quantize_fp6_block(d["w"].cpu())[0].cuda() for d in ins]
        sb6 = [lk.quantize_fp6_block(d["w"].cpu())[1].cuda() for d in ins]
        us, err = _time_or_none(lambda i: lk.fp6_blockwise_gemm(ins[i]["a"], ins[i]["sa"], packed[i], sb6[i],
                                                                 out=ins[i]["y"]), sets)
        if us is not None:
            row = Row("fp6_blockwise_gemm[auto]", [m, n, k], "fp8xfp6->bf16", us, {}, flops=2 * m * n * k,
                      note=f"{_tflops(m, n, k, us):.0f} TFLOP/s").finish(0.0)
            row.against("FP8 matmul", fp8_ceiling, fp8_tensorwise_TFLOPs=fp8_ceiling,
                        bf16_matmul_TFLOPs=bf16_ceiling)
            rows.append(row)
            print(f"{row.op} {m}x{n}x{k}: {row.ours_us:.1f} us, {row.note}", flush=True)
        else:
            print(f"fp6_blockwise_gemm {m}x{n}x{k}: {err}")
        del ins
        torch.cuda.empty_cache()
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"fp8_blockwise_gemm: geometric mean of (cuBLASLt blockwise time / ours) over {len(ratios)} large-M shapes: {g:.3f}x")
    return rows


if __name__ == "__main__":
    import sys

    quick = "--quick" in sys.argv
    from common import copy_ceiling_gbps

    for r in run(copy_ceiling_gbps(), quick=quick, decode_only="--decode" in sys.argv):
        print(r.op, r.shape, f"{r.ours_us:.1f} us", r.note)
