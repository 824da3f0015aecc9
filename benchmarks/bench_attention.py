"""Dense attention: ours (bf16, and FP8 on pre-quantized operands) beside every PyTorch SDPA
backend, each forced with torch.nn.attention.sdpa_kernel, at LTX-Video and LTX-2 shapes.

TFLOP/s = 4 B H Sq Skv D / time (the two GEMMs; softmax not counted), all timed by CUDA-graph
replay of the op alone on inputs already in the backend's layout (SDPA: [B, H, S, D]; ours:
[B, S, H, D], the layout diffusers' processors hold, and [B, H, S, D]). The ceiling reported is the
fastest SDPA backend measured in the same run. FP8 rows time the attention op on operands from
quantize_attention_fp8 (k factors per 128 keys, the kernel's fast path); the quantization pass is
timed on its own row ("fp8 quantize").

SageAttention (`sageattention.sageattn`, INT8 QK^T / fp16 PV in Triton, when `import sageattention`
works; otherwise one line says why) is timed beside the SDPA backends on the same [B, H, S, D]
inputs at the shapes without a key mask (it takes none), on its own copies of k (it subtracts k's
mean in place). Error: rel L2 and cosine of SageAttention, ours bf16 and ours FP8 against the
float64 definition (ltx_kernels.reference.attention) on batch row 0, heads 0-1, the first 256
queries (every statistic of these kernels is per row, head and block, so the slice's outputs are
those of the full call), once on the benchmark's random inputs and once with keys that carry a
per-channel offset shared by all tokens and a few outlier channels (what smoothing k is for).
"""

import argparse
import importlib.metadata
import json
import os
import sys

import torch
import torch.nn.functional as F

import ltx_kernels as lk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import add_record_arguments, attention_row, check_record, graph_timing, sdpa_baselines, time_graph, write_record  # noqa: E402

# name, B, Sq, Skv, H, D, cross (text keys with a padding mask)
SHAPES = [
    ("LTX-Video self 49x512x768", 2, 2688, 2688, 32, 64, False),
    ("LTX-Video self 121x720x1280", 1, 14080, 14080, 32, 64, False),
    ("LTX-Video cross (128 text keys)", 2, 2688, 128, 32, 64, True),
    ("LTX-2 self 49x512x768", 2, 2688, 2688, 32, 128, False),
    ("LTX-2 self 8k", 1, 8192, 8192, 32, 128, False),
    ("LTX-2 self 16k", 1, 16384, 16384, 32, 128, False),
]
QUICK = [0, 3]
OUTLIER_CHANNELS = (7, 33, 50)


def sageattention():
    """(sageattn, label) when SageAttention imports, else (None, why not)."""
    try:
        from sageattention import sageattn
    except Exception as e:
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    try:
        version = importlib.metadata.version("sageattention")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return sageattn, f"sageattention {version}"


def realistic_k(k, seed=0):
    """k plus a per-channel offset shared by every token (|offset| ~ 4x the values) with channels
    OUTLIER_CHANNELS 10x larger (values and offset)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    d = k.shape[-1]
    offset = (4.0 * torch.randn(d, generator=g)).to(k.device)
    scale = torch.ones(d, device=k.device)
    for c in OUTLIER_CHANNELS:
        if c < d:
            scale[c] = 10.0
    return ((k.float() + offset) * scale).to(k.dtype)


def attention_errors(q, k, v, sage, nq=256):
    """{name: {"rel_l2", "cos"}} of ours bf16, ours FP8 (k per 128 keys; k smoothed by the mean of all
    keys, and of the leading 128) and SageAttention against the float64 definition, on batch row 0,
    heads 0-1, the first nq queries of [B, S, H, D] inputs."""
    qs, ks, vs = (t[:1, :, :2].contiguous() for t in (q, k, v))
    qs = qs[:, :nq].contiguous()
    ref = lk.reference.attention(qs, ks, vs)
    outs = {"ours_bf16": lambda: lk.attention(qs, ks, vs),
            "ours_fp8_kblock128": lambda: lk.attention(*lk.quantize_attention_fp8(qs, ks, vs), out=torch.empty_like(qs)),
            # k smoothed by the mean of its leading 128 keys instead of all keys
            "ours_fp8_kblock128_lead128": lambda: lk.attention(*lk.quantize_attention_fp8(qs, ks, vs, smooth_keys=128),
                                                               out=torch.empty_like(qs))}
    if sage is not None:
        outs["sageattn"] = lambda: sage(qs.transpose(1, 2).contiguous(), ks.transpose(1, 2).contiguous(),
                                        vs.transpose(1, 2).contiguous(), tensor_layout="HND",
                                        is_causal=False).transpose(1, 2)
    res = {}
    for name, fn in outs.items():
        try:
            o = fn().double()
        except Exception as e:
            res[name] = {"error": str(e).splitlines()[0][:160]}
            continue
        res[name] = {"rel_l2": ((o - ref).norm() / ref.norm()).item(),
                     "cos": torch.nn.functional.cosine_similarity(o.flatten(), ref.flatten(), dim=0).item()}
    return res


def sdpa_backends():
    from torch.nn.attention import SDPBackend

    return {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def bench_shape(name, b, sq, skv, h, d, cross, sets=2):
    from torch.nn.attention import sdpa_kernel

    flops = 4.0 * b * h * sq * skv * d
    dev = "cuda"
    qs = [torch.randn(b, sq, h, d, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
    ks = [torch.randn(b, skv, h, d, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
    vs = [torch.randn(b, skv, h, d, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
    mask = None
    if cross:
        mask = torch.ones(b, skv, dtype=torch.bool, device=dev)
        mask[:, skv - 40:] = False  # padded text tokens
    qh, kh, vh = ([t.transpose(1, 2).contiguous() for t in ts] for ts in (qs, ks, vs))
    sdpa_mask = None if mask is None else torch.zeros(b, 1, 1, skv, device=dev, dtype=torch.bfloat16).masked_fill(
        ~mask[:, None, None], float("-inf"))
    row = {"shape": name, "B": b, "Sq": sq, "Skv": skv, "H": h, "D": d, "tflop": flops / 1e12, "us": {}}
    for bname, be in sdpa_backends().items():
        try:
            with sdpa_kernel([be]):
                def g(i):  # SDPA allocates its output: part of its cost, as in a model
                    F.scaled_dot_product_attention(qh[i], kh[i], vh[i], attn_mask=sdpa_mask)
                row["us"][f"sdpa_{bname}"] = time_graph(g, sets)
        except Exception as e:  # a backend that does not take these inputs
            row["us"][f"sdpa_{bname}"] = None
            row.setdefault("skipped", {})[bname] = str(e).splitlines()[0][:160]
    outs = torch.empty_like(qs[0])
    row["backend"] = lk.attention_backend(qs[0], ks[0], vs[0], attn_mask=mask)
    row["us"]["ours_bf16_bshd"] = time_graph(lambda i: lk.attention(qs[i], ks[i], vs[i], attn_mask=mask, out=outs), sets)
    outh = torch.empty_like(qh[0])
    row["us"]["ours_bf16_bhsd"] = time_graph(
        lambda i: lk.attention(qh[i], kh[i], vh[i], attn_mask=mask, layout="bhsd", out=outh), sets)
    ops8 = None
    for kb in (1, 128):
        ops8 = [lk.quantize_attention_fp8(qs[i], ks[i], vs[i], k_block=kb) for i in range(sets)]
        row["us"][f"ours_fp8_kblock{kb}"] = time_graph(lambda i: lk.attention(*ops8[i], attn_mask=mask, out=outs), sets)
    # the other warpgroup scheduling of the sm_90 kernel (ping-pong on / off), for the record
    for pp in ("0", "1"):
        with lk.developer_config(LTX_KERNELS_ATTENTION_PINGPONG=pp):
            row["us"][f"ours_bf16_bshd_pingpong{pp}"] = time_graph(
                lambda i: lk.attention(qs[i], ks[i], vs[i], attn_mask=mask, out=outs), sets)
            row["us"][f"ours_fp8_kblock128_pingpong{pp}"] = time_graph(
                lambda i: lk.attention(*ops8[i], attn_mask=mask, out=outs), sets)
    # fp16 inputs (the same configurations as bf16), beside cuDNN's fp16 SDPA
    qf, kf, vf = ([t.half() for t in ts] for ts in (qs, ks, vs))
    qfh, kfh, vfh = ([t.transpose(1, 2).contiguous() for t in ts] for ts in (qf, kf, vf))
    fmask = None if sdpa_mask is None else sdpa_mask.half()
    try:
        with sdpa_kernel([sdpa_backends()["cudnn"]]):
            row["us"]["fp16_sdpa_cudnn"] = time_graph(
                lambda i: F.scaled_dot_product_attention(qfh[i], kfh[i], vfh[i], attn_mask=fmask), sets)
    except Exception as e:
        row["us"]["fp16_sdpa_cudnn"] = None
        row.setdefault("skipped", {})["fp16 cudnn"] = str(e).splitlines()[0][:160]
    sage, sage_label = sageattention()
    if sage is not None and not cross:
        ks_sage = [t.clone() for t in kh]  # sageattn subtracts k's mean in place
        try:
            row["us"]["sageattn"] = time_graph(
                lambda i: sage(qh[i], ks_sage[i], vh[i], tensor_layout="HND", is_causal=False), sets)
            row["sageattn"] = sage_label
        except Exception as e:
            row["us"]["sageattn"] = None
            row.setdefault("skipped", {})["sageattn"] = str(e).splitlines()[0][:160]
        del ks_sage
    elif sage is not None:
        row.setdefault("skipped", {})["sageattn"] = "takes no key mask"
    else:
        row.setdefault("skipped", {})["sageattn"] = f"not available ({sage_label})"
    if not cross:  # the error of each path against the float64 definition (the mask path has its own tests)
        row["error_vs_fp64"] = {"random": attention_errors(qs[0], ks[0], vs[0], sage),
                                "k_offset_outliers": attention_errors(qs[0], realistic_k(ks[0]), vs[0], sage)}
    outf = torch.empty_like(qf[0])
    row["us"]["ours_fp16_bshd"] = time_graph(lambda i: lk.attention(qf[i], kf[i], vf[i], attn_mask=mask, out=outf), sets)
    row["us"]["fp8 quantize"] = time_graph(lambda i: lk.quantize_attention_fp8(qs[i], ks[i], vs[i]), sets)
    row["tflops"] = {k: (flops / (v * 1e-6) / 1e12 if v else None) for k, v in row["us"].items() if k != "fp8 quantize"}
    if row["us"].get("sageattn"):
        row["speedup_vs_sageattn"] = {k: row["us"]["sageattn"] / v for k, v in row["us"].items()
                                      if k.startswith("ours_fp8") and v}
    sd = [v for k, v in row["us"].items() if k.startswith("sdpa_") and v]
    best = min(sd) if sd else None
    row["best_sdpa_us"] = best
    row["speedup_vs_best_sdpa"] = {k: best / v for k, v in row["us"].items()
                                   if k.startswith("ours") and "fp16" not in k and v and best}
    f16 = row["us"].get("fp16_sdpa_cudnn")
    if f16 and row["us"].get("ours_fp16_bshd"):
        row["speedup_vs_best_sdpa"]["ours_fp16_bshd"] = f16 / row["us"]["ours_fp16_bshd"]
    # accuracy of the FP8 path on these (random) inputs against our bf16 kernel
    o16 = lk.attention(qs[0], ks[0], vs[0], attn_mask=mask).double()
    o8 = lk.attention(*lk.quantize_attention_fp8(qs[0], ks[0], vs[0]), attn_mask=mask).double()
    row["fp8_rel_l2_vs_bf16"] = ((o8 - o16).norm() / o16.norm()).item()
    return row


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _errs(r):
    e = r.get("error_vs_fp64", {}).get("k_offset_outliers", {})
    return " / ".join(_fmt(e.get(k, {}).get("rel_l2"), ".2g") for k in ("ours_bf16", "ours_fp8_kblock128", "sageattn"))


def table(rows):
    lines = ["| shape | best SDPA TFLOP/s | ours bf16 (bshd) | ours bf16 (bhsd) | ours FP8 | FP8 k/token | "
             "x best SDPA (bf16 / FP8) | FP8 quantize us | SageAttention TFLOP/s | rel L2 vs fp64, offset/outlier k "
             "(ours bf16 / ours FP8 / Sage) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        t = r["tflops"]
        best = r["tflop"] / (r["best_sdpa_us"] * 1e-6) if r["best_sdpa_us"] else float("nan")
        sp = r["speedup_vs_best_sdpa"]
        lines.append(
            f"| {r['shape']} | {best:.0f} | {t['ours_bf16_bshd']:.0f} | {t['ours_bf16_bhsd']:.0f} | "
            f"{t['ours_fp8_kblock128']:.0f} | {t['ours_fp8_kblock1']:.0f} | "
            f"{sp.get('ours_bf16_bshd', 0):.2f}x / {sp.get('ours_fp8_kblock128', 0):.2f}x | {r['us']['fp8 quantize']:.0f} | "
            f"{_fmt(t.get('sageattn'), '.0f')} | {_errs(r)} |")
    return "\n".join(lines)


def run(copy_gbps=0.0, quick=False):
    """benchmarks/run.py entry: one Row per (shape, variant of ours), the best SDPA backend of the
    same run as the baseline and as the ceiling ("SDPA")."""
    rows = []
    for i, sh in enumerate(SHAPES):
        if quick and i not in QUICK:
            continue
        r = bench_shape(*sh)
        name, b, sq, skv, h, d, cross = sh
        base, best = sdpa_baselines(r["us"])
        sage_us = r["us"].get("sageattn")
        errs = r.get("error_vs_fp64", {})
        for variant in ("ours_bf16_bshd", "ours_bf16_bhsd", "ours_fp8_kblock128", "ours_fp8_kblock1"):
            note = f"{name}; backend {r['backend']}; {variant}"
            vbase = base
            if "fp8" in variant:
                note += f"; quantize pass {r['us']['fp8 quantize']:.0f} us not included; rel L2 vs bf16 {r['fp8_rel_l2_vs_bf16']:.3g}"
                if sage_us:  # the other quantized attention, a baseline of the FP8 rows (not of the ceiling)
                    vbase = dict(base, sageattn=sage_us)
                    note += f"; {r['sageattn']} {r['tflop'] / (sage_us * 1e-6):.0f} TFLOP/s"
            for inputs, e in errs.items():
                note += f"; rel L2 vs fp64 ({inputs}): " + ", ".join(
                    f"{k} {v['rel_l2']:.2g}" for k, v in e.items() if "rel_l2" in v)
            rows.append(attention_row(variant, [b, sq, skv, h, d], r["us"][variant], vbase, best, r["tflop"],
                                      int(r["tflop"] * 1e12), note, copy_gbps))
        # fp16: against cuDNN's fp16 SDPA of the same run
        f16 = r["us"].get("fp16_sdpa_cudnn")
        rows.append(attention_row("ours_fp16_bshd", [b, sq, skv, h, d], r["us"]["ours_fp16_bshd"],
                                  {"sdpa_cudnn": f16} if f16 else {}, f16, r["tflop"], int(r["tflop"] * 1e12),
                                  f"{name}; fp16 inputs; baseline cuDNN fp16", copy_gbps))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="JSON file to write")
    add_record_arguments(ap)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench_attention: needs a CUDA GPU")
        return
    check_record(a.out, a.allow_dirty)
    sage, sage_label = sageattention()
    print(f"sageattention: {sage_label}" if sage else f"sageattention: not available ({sage_label})", flush=True)
    rows = []
    for i, s in enumerate(SHAPES):
        if a.quick and i not in QUICK:
            continue
        rows.append(bench_shape(*s))
        print(json.dumps({k: rows[-1].get(k) for k in ("shape", "backend", "us", "error_vs_fp64")}), flush=True)
    print(table(rows))
    if a.out:  # with the commit, build, command, GPU and timing (benchmarks/common.py record_meta)
        write_record(a.out, rows, "benchmarks/bench_attention.py", sys.argv[1:], graph_timing(), a.allow_dirty)


if __name__ == "__main__":
    main()
