"""GEMM family benchmarks: our sm_90a blockwise FP8 GEMM and bf16 GEMM (with fused epilogues)
beside cuBLASLt's blockwise FP8 GEMM (torch._scaled_mm with 1x128 / 128x128 scales), FP8 rowwise
(per-row x per-column scales) and tensorwise _scaled_mm, bf16 matmul (cuBLAS), the CUTLASS-collective
FP8 kernel ("sm90_cutlass"), DeepGEMM's fp8_gemm_nt on the same 1x128 / 128x128 operands when
`import deep_gemm` works (a build of it on PYTHONPATH; its version from a DG_SOURCE.txt beside the
package, else deep_gemm.__version__; otherwise one line says why it is absent) and, for the
epilogues, the same GEMM followed by the separate op(s) or by torch.compile's fused glue.

GEMMs are compute bound: rows report TFLOP/s = 2 M N K / time. Timing: CUDA-graph replay with
input sets rotated past 3x L2, medians (common.time_graph). Every comparison is within one run.

Shapes: the linear layers of the LTX models at their real token counts, M = 5376 and 10752
(diffusers' configs):
  LTX-Video 2B (hidden 2048, 32 x 64 heads, FFN 4 x 2048, gelu-approximate):
    fused QKV 6144 x 2048, attention out 2048 x 2048, FF up 8192 x 2048, FF down 2048 x 8192
  LTX-2 19B video stream (hidden 4096, 32 x 128 heads, FFN 16384):
    fused QKV 12288 x 4096, attention out / q, k, v 4096 x 4096, FF up 16384 x 4096, FF down 4096 x 16384
  LTX-2 audio stream (hidden 2048, 32 x 64 heads, FFN 8192): the LTX-Video 2B shapes
(N x K = out_features x in_features); plus 8192^3 and 4096 x 7168 x 16384 (peak-rate shapes).

  python3 benchmarks/bench_gemm.py [--quick | --full] [--sections fp8,linear,epilogue,bf16,decode] [--json out.json]
      [--allow-dirty]

Section "linear" times a plain FP8 GEMM with a bias: "auto" with a bf16 bias beside cuBLASLt with it,
our sm_90a kernel with it and the CUTLASS kernel with an fp32 bias (what FP8BlockwiseLinear passes).
The table printed last holds, per section, ours and each alternative in TFLOP/s (or us) and the
ratios the targets are stated in: FP8 vs cuBLASLt blockwise (geometric mean over the LTX shapes,
minimum), the fused epilogue vs our GEMM + the separate op, bf16 vs cuBLAS and vs cuBLAS + compiled glue.
Run as a script it first prints `record meta: {...}` (benchmarks/common.py record_meta: the
build's commit, compilers, GPU, clocks, command, timing), so that a log names what it measured.
"""

import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ltx_kernels as lk  # noqa: E402

from common import Row, add_record_arguments, graph_timing, n_copies, record_meta, time_graph, write_record  # noqa: E402

F8 = torch.float8_e4m3fn
LTX_NK = [  # (N, K, name)
    (6144, 2048, "ltxv qkv"), (2048, 2048, "ltxv out"), (8192, 2048, "ltxv ff up"), (2048, 8192, "ltxv ff down"),
    (12288, 4096, "ltx2 qkv"), (4096, 4096, "ltx2 out"), (16384, 4096, "ltx2 ff up"), (4096, 16384, "ltx2 ff down"),
]
LTX_M = [5376, 10752]
PEAK = [(8192, 8192, 8192, "square"), (4096, 7168, 16384, "deepseek")]
DECODE = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (64, 16384, 4096)]


def tflops(m, n, k, us):
    return 2.0 * m * n * k / (us * 1e-6) / 1e12


def timed(fn, sets):
    """Median us per call, or (None, reason) when the call cannot run here."""
    try:
        fn(0)
        torch.cuda.synchronize()
    except RuntimeError as e:
        return None, str(e).splitlines()[0][:200]
    return time_graph(fn, sets), ""


def deepgemm():
    """(module, label) of an importable DeepGEMM, or (None, why not). The label names the version:
    describe and commit from DG_SOURCE.txt in the directory above the package, else __version__."""
    try:
        import deep_gemm
    except Exception as e:  # absent, or a build that does not load here
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    if not hasattr(deep_gemm, "fp8_gemm_nt"):
        return None, f"{deep_gemm.__file__} has no fp8_gemm_nt"
    label = f"deep_gemm {getattr(deep_gemm, '__version__', '?')}"
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(deep_gemm.__file__))), "DG_SOURCE.txt")
    if os.path.isfile(src):
        with open(src) as f:
            kv = dict(line.strip().split("=", 1) for line in f if "=" in line)
        label = f"DeepGEMM {kv.get('describe', '?')} ({kv.get('commit', '?')[:12]})"
    return deep_gemm, label


def deepgemm_scales(dg, sa):
    """DeepGEMM's activation scales: M-major with the M stride padded to 16 bytes (TMA), made here
    so that fp8_gemm_nt finds them in its layout and converts nothing inside the timed call."""
    for mod in (dg, getattr(dg, "_C", None), sys.modules.get("deep_gemm_cpp")):
        fn = getattr(mod, "get_mn_major_tma_aligned_tensor", None) if mod is not None else None
        if fn is not None:
            return fn(sa)
    m, g = sa.shape
    pad = -(-m // 4) * 4
    return torch.empty(g, pad, device=sa.device, dtype=torch.float32)[:, :m].copy_(sa.t()).t()


def fp8_inputs(m, n, k, sets):
    out = []
    for _ in range(sets):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
        a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
        b, sb = lk.quantize_fp8_block(w)
        out.append(dict(a=a, sa=sa, b=b, sb=sb, sa_cm=sa.contiguous().t().contiguous().t(),
                        y=torch.empty(m, n, device="cuda", dtype=torch.bfloat16), one=torch.ones((), device="cuda"),
                        # rowwise: one fp32 factor per row of a ([M, 1]) and per column of b.t() ([1, N])
                        s_row=sa.amax(1, keepdim=True).float().contiguous(),
                        s_col=sb.amax(1).repeat_interleave(128).reshape(1, n).float().contiguous()))
    return out


def bf16_inputs(m, n, k, sets):
    return [dict(x=torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
                 w=torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05,
                 y=torch.empty(m, n, device="cuda", dtype=torch.bfloat16)) for _ in range(sets)]


def _cfg_str(cfg):
    if cfg.get("backend") != "sm90":
        return cfg.get("backend", "?")
    return f"sm90 {cfg['bm']}x{cfg['bn']} c{cfg['cluster']}"


# ---- sections -------------------------------------------------------------------------------
def section_fp8(quick, rows, summary):
    shapes = [(m, n, k, name) for m in LTX_M for (n, k, name) in LTX_NK] + [(m, n, k, name) for (m, n, k, name) in PEAK]
    if quick:
        shapes = [s for s in shapes if s[0] == 5376][:4] + PEAK[:1]
    dg, dg_label = deepgemm()
    print(f"deepgemm: {dg_label}" if dg else f"deepgemm: not available ({dg_label})", flush=True)
    ratios = {}
    for m, n, k, name in shapes:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = fp8_inputs(m, n, k, sets)
        cfg = lk.gemm_config("fp8_blockwise_gemm", ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"], backend="sm90")
        t = {}
        # ours: the sm_90a kernel written here ("auto" now hands plain GEMMs to cuBLASLt: section "linear")
        t["ours"], err = timed(lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"],
                                                                out=ins[i]["y"], backend="sm90"), sets)
        t["sm90_cutlass"], _ = timed(lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"],
                                                                      out=ins[i]["y"], backend="sm90_cutlass"), sets)
        t["cublaslt_blockwise"], _ = timed(lambda i: torch._scaled_mm(ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["sa_cm"],
                                                                      scale_b=ins[i]["sb"].t(), out_dtype=torch.bfloat16), sets)
        t["fp8_rowwise"], _ = timed(lambda i: torch._scaled_mm(ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["s_row"],
                                                               scale_b=ins[i]["s_col"], out_dtype=torch.bfloat16), sets)
        t["fp8_tensorwise"], _ = timed(lambda i: torch._scaled_mm(ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["one"],
                                                                  scale_b=ins[i]["one"], out_dtype=torch.bfloat16), sets)
        dg_note = ""
        if dg is not None:
            t["deepgemm"], dg_note = time_deepgemm(dg, ins, sets)
        del ins
        torch.cuda.empty_cache()
        bins = bf16_inputs(m, n, k, min(sets, 4))
        t["bf16_cublas"], _ = timed(lambda i: torch.matmul(bins[i]["x"], bins[i]["w"].t(), out=bins[i]["y"]), min(sets, 4))
        del bins
        torch.cuda.empty_cache()
        if t["ours"] is None:
            print(f"fp8 {m}x{n}x{k}: ours cannot run: {err}")
            continue
        base = {kk: v for kk, v in t.items() if kk != "ours" and v is not None}
        note = "; ".join(f"{kk} {tflops(m, n, k, v):.0f}" for kk, v in base.items())
        if dg is not None:
            note += f"; deepgemm = {dg_label}" + (f", {dg_note}" if dg_note else "")
        r = Row("fp8_blockwise_gemm", [m, n, k], "e4m3->bf16", t["ours"], base, flops=2 * m * n * k,
                note=f"{name}; {_cfg_str(cfg)}; ours {tflops(m, n, k, t['ours']):.0f} TFLOP/s; {note}").finish(0.0)
        rows.append(r)
        cb = t.get("cublaslt_blockwise")
        if cb is not None and name not in ("square", "deepseek"):
            ratios[(m, n, k)] = cb / t["ours"]
        summary.append(dict(section="fp8", shape=f"{m}x{n}x{k}", name=name, config=_cfg_str(cfg),
                            ours_tflops=round(tflops(m, n, k, t["ours"]), 1),
                            **{f"{kk}_tflops": round(tflops(m, n, k, v), 1) for kk, v in base.items()},
                            vs_cublaslt=round(cb / t["ours"], 3) if cb else None,
                            **({"deepgemm": dg_label, "vs_deepgemm": round(t["deepgemm"] / t["ours"], 3)
                                if t.get("deepgemm") else None} if dg is not None else {})))
        print(f"fp8 {m}x{n}x{k} ({name}): {r.note}", flush=True)
    if ratios:
        g = math.exp(sum(math.log(v) for v in ratios.values()) / len(ratios))
        worst = min(ratios.items(), key=lambda kv: kv[1])
        summary.append(dict(section="fp8", shape="geomean", vs_cublaslt=round(g, 3),
                            min_vs_cublaslt=round(worst[1], 3), min_shape="x".join(map(str, worst[0]))))


def time_deepgemm(dg, ins, sets):
    """(us, note) of DeepGEMM's fp8_gemm_nt on the sets' operands (activation scales converted to
    its layout first, outside the timing), or (None, why it did not run). The note gives the rel L2
    of its output against cuBLASLt's blockwise GEMM on the same operands."""
    try:
        sa = [deepgemm_scales(dg, x["sa"]) for x in ins]
        y = [torch.empty_like(x["y"]) for x in ins]

        def call(i):
            dg.fp8_gemm_nt((ins[i]["a"], sa[i]), (ins[i]["b"], ins[i]["sb"]), y[i], disable_ue8m0_cast=True)

        call(0)
        torch.cuda.synchronize()
        ref = torch._scaled_mm(ins[0]["a"], ins[0]["b"].t(), scale_a=ins[0]["sa_cm"], scale_b=ins[0]["sb"].t(),
                               out_dtype=torch.bfloat16).float()
        err = ((y[0].float() - ref).norm() / ref.norm()).item()
        return time_graph(call, sets), f"rel L2 vs cuBLASLt blockwise {err:.2g}"
    except Exception as e:  # an API or layout this build does not take, a JIT failure, a capture failure
        msg = f"deepgemm did not run: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        print(msg, flush=True)
        return None, msg


def section_epilogue(quick, rows, summary):
    """Fused epilogue vs our plain GEMM followed by the separate op(s)."""
    cases = [  # (m, n, k, what)
        (5376, 8192, 2048, "gelu"), (5376, 8192, 2048, "gelu_fp8"), (5376, 2048, 2048, "gated"),
        (5376, 2048, 8192, "gated"), (10752, 16384, 4096, "gelu_fp8"), (10752, 4096, 4096, "gated"),
        (10752, 16384, 4096, "gelu"), (10752, 4096, 16384, "gated"),
    ]
    if quick:
        cases = cases[:3]
    B = 2
    for m, n, k, what in cases:
        sets = n_copies(m * k + n * k + 4 * m * n)
        ins = fp8_inputs(m, n, k, sets)
        bias = torch.randn(n, device="cuda")
        h = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
        gate = torch.randn(B, 1, n, device="cuda", dtype=torch.bfloat16)
        g2 = gate.reshape(B, n)
        qs = [(torch.empty(m, n, device="cuda", dtype=F8), lk.mn_major_scales(m, n // 128, "cuda")) for _ in range(sets)]

        def gemm(i, **kw):
            return lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"], bias, **kw)

        if what == "gelu":
            fused = lambda i: gemm(i, out=ins[i]["y"], epilogue="gelu_tanh")
            sep = lambda i: lk.gelu_tanh(gemm(i, out=ins[i]["y"]), out=ins[i]["y"])
            sep_name = "GEMM + ltx_kernels.gelu_tanh"
        elif what == "gelu_fp8":
            fused = lambda i: gemm(i, out=qs[i][0], out_scales=qs[i][1], epilogue="gelu_tanh")
            sep = lambda i: lk.gelu_tanh(gemm(i, out=ins[i]["y"]), out_dtype=F8, scale_layout="mn_major")
            sep_name = "GEMM + ltx_kernels.gelu_tanh(out_dtype=e4m3)"
        else:  # a per-sample gate: a, out and h as [B, M / B, .]
            hv = [x.view(B, m // B, n) for x in h]
            fused = lambda i: lk.fp8_blockwise_gemm(ins[i]["a"].view(B, m // B, k), ins[i]["sa"], ins[i]["b"],
                                                    ins[i]["sb"], bias, out=ins[i]["y"].view(B, m // B, n),
                                                    epilogue="gated_residual", residual=hv[i], gate=g2)
            sep = lambda i: torch.addcmul(hv[i], gemm(i, out=ins[i]["y"]).view(B, m // B, n), gate,
                                          out=ins[i]["y"].view(B, m // B, n))
            sep_name = "GEMM + torch.addcmul"
        tf, err = timed(fused, sets)
        ts, _ = timed(sep, sets)
        plain, _ = timed(lambda i: gemm(i, out=ins[i]["y"]), sets)
        del ins, h, qs
        torch.cuda.empty_cache()
        if tf is None:
            print(f"epilogue {what} {m}x{n}x{k}: {err}")
            continue
        r = Row(f"fp8_gemm+{what}", [m, n, k], "e4m3", tf, {"separate": ts} if ts else {}, flops=2 * m * n * k,
                note=f"fused {tf:.1f} us; {sep_name} {ts:.1f} us; plain GEMM {plain:.1f} us").finish(0.0)
        rows.append(r)
        summary.append(dict(section="epilogue", shape=f"{m}x{n}x{k}", name=what, fused_us=round(tf, 1),
                            separate_us=round(ts, 1) if ts else None, plain_gemm_us=round(plain, 1) if plain else None,
                            speedup=round(ts / tf, 3) if ts else None,
                            epilogue_cost_us=round(tf - plain, 1) if plain else None))
        print(f"epilogue {what} {m}x{n}x{k}: {r.note}", flush=True)


def section_linear(quick, rows, summary):
    """A plain FP8 GEMM with a bias, as a linear layer has it: "auto" with a bf16 bias (cuBLASLt's
    blockwise GEMM with its bias epilogue for large weights, else the CUTLASS kernel with the bias
    widened to fp32) beside each backend: cuBLASLt with the bf16 bias, our sm_90a kernel with it,
    the CUTLASS kernel with an fp32 bias (what FP8BlockwiseLinear passes)."""
    shapes = [(m, n, k, name) for m in LTX_M for (n, k, name) in LTX_NK]
    if quick:
        shapes = shapes[:2]
    for m, n, k, name in shapes:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = fp8_inputs(m, n, k, sets)
        b16 = torch.randn(n, device="cuda").to(torch.bfloat16)
        b32 = b16.float()

        def call(bias, backend):
            return lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"], bias,
                                                   out=ins[i]["y"], backend=backend)

        picked = lk.fp8_gemm_backend(ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"], b16)
        t = {"auto": timed(call(b16, "auto"), sets)[0], "cublaslt": timed(call(b16, "cublaslt"), sets)[0],
             "sm90": timed(call(b16, "sm90"), sets)[0],
             "sm90_cutlass_fp32_bias": timed(call(b32, "sm90_cutlass"), sets)[0]}
        del ins
        torch.cuda.empty_cache()
        if t["auto"] is None:
            continue
        base = {kk: v for kk, v in t.items() if kk != "auto" and v is not None}
        rows.append(Row("fp8_blockwise_gemm[bias]", [m, n, k], "e4m3->bf16", t["auto"], base, flops=2 * m * n * k,
                        note=f"{name}; bf16 bias; auto = {picked}; " +
                        "; ".join(f"{kk} {tflops(m, n, k, v):.0f} TFLOP/s" for kk, v in t.items() if v)).finish(0.0))
        cut = t.get("sm90_cutlass_fp32_bias")
        summary.append(dict(section="linear", shape=f"{m}x{n}x{k}", name=name, auto=picked,
                            **{f"{kk}_us": round(v, 1) for kk, v in t.items() if v},
                            vs_best_ours=round(cut / t["cublaslt"], 3) if cut and t["cublaslt"] else None))
        print(f"linear {m}x{n}x{k} ({name}): auto={picked} " + " ".join(f"{kk}={v:.1f}" for kk, v in t.items() if v),
              flush=True)


def section_bf16(quick, rows, summary, full=False):
    shapes = [(m, n, k, name) for m in (LTX_M if full else LTX_M[:1]) for (n, k, name) in LTX_NK]
    if quick:
        shapes = shapes[:3]
    torch._dynamo.config.cache_size_limit = 256
    B = 2
    for m, n, k, name in shapes:
        sets = min(n_copies(2 * (m * k + n * k + 2 * m * n)), 8)
        ins = bf16_inputs(m, n, k, sets)
        bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        cfg = lk.gemm_config("bf16_gemm", ins[0]["x"], ins[0]["w"], bias=bias)
        t_ours, err = timed(lambda i: lk.bf16_gemm(ins[i]["x"], ins[i]["w"], bias, out=ins[i]["y"]), sets)
        t_cublas, _ = timed(lambda i: torch.addmm(bias, ins[i]["x"], ins[i]["w"].t(), out=ins[i]["y"]), sets)
        # cuBLAS + compiled glue at two shapes per token count (each compile costs seconds)
        glue_here = name in ("ltxv ff up", "ltx2 out") and m == LTX_M[0]
        if "ff up" in name and glue_here:
            epi = "gelu_tanh"
            glue = torch.compile(lambda x, w: F.gelu(F.linear(x, w, bias), approximate="tanh"))
            t_fused, _ = timed(lambda i: lk.bf16_gemm(ins[i]["x"], ins[i]["w"], bias, out=ins[i]["y"], epilogue=epi), sets)
            t_glue, _ = timed(lambda i: glue(ins[i]["x"], ins[i]["w"]), sets)
        elif (name.endswith("out") or "down" in name) and glue_here:
            epi = "gated_residual"
            h = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
            gate = torch.randn(B, 1, n, device="cuda", dtype=torch.bfloat16)
            g2 = gate.reshape(B, n)
            glue = torch.compile(lambda x, w, h: (h.view(B, -1, n) + gate * F.linear(x, w, bias).view(B, -1, n)))
            t_fused, _ = timed(lambda i: lk.bf16_gemm(ins[i]["x"], ins[i]["w"], bias, out=ins[i]["y"], epilogue=epi,
                                                      residual=h, gate=g2), sets)
            t_glue, _ = timed(lambda i: glue(ins[i]["x"], ins[i]["w"], h), sets)
        else:
            epi, t_fused, t_glue = "none", None, None
        del ins
        torch.cuda.empty_cache()
        if t_ours is None:
            print(f"bf16 {m}x{n}x{k}: {err}")
            continue
        base = {"cublas_addmm": t_cublas} if t_cublas else {}
        note = f"{name}; {_cfg_str(cfg)}; ours {tflops(m, n, k, t_ours):.0f} TFLOP/s, cuBLAS {tflops(m, n, k, t_cublas):.0f}"
        if t_fused:
            note += f"; +{epi}: fused {t_fused:.1f} us vs cuBLAS + compiled glue {t_glue:.1f} us"
        rows.append(Row("bf16_gemm", [m, n, k], "bf16", t_ours, base, flops=2 * m * n * k, note=note).finish(0.0))
        summary.append(dict(section="bf16", shape=f"{m}x{n}x{k}", name=name, config=_cfg_str(cfg),
                            ours_tflops=round(tflops(m, n, k, t_ours), 1),
                            cublas_tflops=round(tflops(m, n, k, t_cublas), 1) if t_cublas else None,
                            vs_cublas=round(t_cublas / t_ours, 3) if t_cublas else None, epilogue=epi,
                            fused_us=round(t_fused, 1) if t_fused else None,
                            glue_us=round(t_glue, 1) if t_glue else None,
                            vs_compiled_glue=round(t_glue / t_fused, 3) if (t_fused and t_glue) else None))
        print(f"bf16 {m}x{n}x{k}: {note}", flush=True)


def section_decode(quick, rows, summary):
    for m, n, k in DECODE[:2] if quick else DECODE:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = fp8_inputs(m, n, k, sets)
        t = {}
        for be in ("auto", "skinny", "sm90"):
            t[be], _ = timed(lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"], ins[i]["sb"],
                                                              out=ins[i]["y"], backend=be), sets)
        picked = lk.fp8_gemm_backend(ins[0]["a"], ins[0]["b"], ins[0]["sa"], ins[0]["sb"])
        del ins
        torch.cuda.empty_cache()
        if t["auto"] is None:
            continue
        base = {kk: v for kk, v in t.items() if kk != "auto" and v is not None}
        rows.append(Row("fp8_blockwise_gemm[decode]", [m, n, k], "e4m3->bf16", t["auto"], base, bytes=n * k,
                        note=f"auto = {picked}; " + "; ".join(f"{kk} {v:.1f} us" for kk, v in t.items() if v)).finish(0.0))
        summary.append(dict(section="decode", shape=f"{m}x{n}x{k}", auto=picked,
                            **{f"{kk}_us": round(v, 1) for kk, v in t.items() if v}))


SECTIONS = {"fp8": section_fp8, "linear": section_linear, "epilogue": section_epilogue, "bf16": section_bf16,
            "decode": section_decode}


def run(copy_gbps=0.0, quick=False, sections=("fp8", "linear", "epilogue", "bf16", "decode"), summary=None, full=False):
    """benchmarks/run.py entry: the rows of every section (bf16 at M = 5376 only unless full)."""
    rows = []
    summary = [] if summary is None else summary
    for s in sections:
        if s == "bf16":
            section_bf16(quick, rows, summary, full)
        else:
            SECTIONS[s](quick, rows, summary)
    return rows


def print_table(summary):
    print("\n== GEMM summary (H200 targets: fp8 geomean >= 1.15x cuBLASLt blockwise, min >= 1.0x; "
          ">= 1350 TFLOP/s at 8192^3 and 4096x7168x16384; fused epilogue >= 1.3x GEMM + separate op; "
          "bf16 >= 1.0x cuBLAS, >= 1.2x cuBLAS + compiled glue)")
    for s in summary:
        sec = s["section"]
        if sec == "fp8" and s["shape"] != "geomean":
            print(f"fp8  {s['shape']:>19} {s['name']:<13} {s['config']:<18} ours {s['ours_tflops']:7.1f}  "
                  f"cuBLASLt-bw {s.get('cublaslt_blockwise_tflops', 0):7.1f}  cutlass {s.get('sm90_cutlass_tflops', 0):7.1f}  "
                  f"tensorwise {s.get('fp8_tensorwise_tflops', 0):7.1f}  bf16 {s.get('bf16_cublas_tflops', 0):6.1f}  "
                  f"rowwise {s.get('fp8_rowwise_tflops', 0):7.1f}  "
                  + (f"deepgemm {s.get('deepgemm_tflops', 0):7.1f}  " if "deepgemm" in s else "")
                  + f"ratio {s['vs_cublaslt'] if s['vs_cublaslt'] is not None else float('nan'):.3f}")
        elif sec == "fp8":
            print(f"fp8  geomean vs cuBLASLt blockwise {s['vs_cublaslt']:.3f}x, min {s['min_vs_cublaslt']:.3f}x at {s['min_shape']}")
        elif sec == "linear":
            print(f"lin  {s['shape']:>19} {s['name']:<13} auto={s['auto']:<12} " +
                  " ".join(f"{k}={v}" for k, v in s.items() if k.endswith('_us')) +
                  f"  cuBLASLt vs CUTLASS {s['vs_best_ours']}x")
        elif sec == "epilogue":
            print(f"epi  {s['shape']:>19} {s['name']:<9} fused {s['fused_us']:8.1f} us  separate {s['separate_us']} us  "
                  f"plain GEMM {s['plain_gemm_us']} us  speedup {s['speedup']}x")
        elif sec == "bf16":
            print(f"bf16 {s['shape']:>19} {s['name']:<13} {s['config']:<18} ours {s['ours_tflops']:7.1f}  cuBLAS "
                  f"{s['cublas_tflops']}  ratio {s['vs_cublas']}  {s['epilogue']}: vs compiled glue {s['vs_compiled_glue']}")
        elif sec == "decode":
            print(f"dec  {s['shape']:>19} auto={s['auto']:<7} " + " ".join(f"{k}={v}" for k, v in s.items()
                                                                          if k.endswith('_us')))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sections", default="fp8,linear,epilogue,bf16,decode")
    ap.add_argument("--json", default=None)
    ap.add_argument("--full", action="store_true", help="bf16 rows at both token counts")
    add_record_arguments(ap)
    args = ap.parse_args()
    meta = record_meta("benchmarks/bench_gemm.py", sys.argv[1:], graph_timing(), args.allow_dirty,
                       exclude=[args.json] if args.json else ())
    print("record meta: " + json.dumps(meta), flush=True)
    summary = []
    rows = run(quick=args.quick, sections=args.sections.split(","), summary=summary, full=args.full)
    if args.json:
        write_record(args.json, rows, "benchmarks/bench_gemm.py", sys.argv[1:], graph_timing(), args.allow_dirty,
                     summary=summary)
    print_table(summary)
