"""Which format for the FP8 attention's q and k operands: E4M3 (what the kernel reads) or INT8
(what SageAttention reads; Hopper's wgmma runs s8 at the e4m3 rate), judged by accuracy on
realistic inputs. An arithmetic model, not a kernel: every operand is quantized by its rule and
decoded, the scores and the softmax are taken in float64, P is rounded as the kernel rounds it,
and the result is compared with the float64 definition (`reference.attention`), so the error of
each format and of each rounding step can be separated. Runs on the CPU (or a GPU) in seconds.

Variants (q per token and head, k per 128 keys and head, k smoothed by the mean of all keys,
v per channel: the layouts of `quantize_attention_fp8`):
  bf16                    the 16-bit kernel: bf16 q, k, v; P rounded to bf16
  e4m3 qk + e4m3 pv       the FP8 kernel: E4M3 q, k, v; P x 448 rounded to E4M3
  int8 qk + e4m3 pv       INT8 q and k (s = amax / 127, round half to even), the rest as above
  e4m3 qk + bf16 pv       E4M3 q and k, bf16 P and v: the share of the error that q and k carry
  int8 qk + bf16 pv       the same with INT8 q and k
  sage1                   SageAttention 1's recipe: INT8 q per 128 queries and head, INT8 k per 64
                          keys and head (smoothed), fp16 P and v
  ..., k mean of 128      E4M3 / INT8 q and k with the mean of the first 128 keys subtracted (what the
                          integrations' k producer subtracts), or with none ("k unsmoothed")
The denominators are the sums of the unrounded P (as the kernels take them); the row maximum is
the final one (the kernels' running maximum rescales P by powers of two, which E4M3 and INT8
rounding do not see except below E4M3's normal range). A check ties the model to the library:
with P left unrounded, the E4M3 model equals `attention(*quantize_attention_fp8(...))` on the
CPU backend (which does not round P) up to the output's last rounding.

Inputs per shape: q, v standard normal, k = `realistic_k` (a per-channel offset ~4 sigma shared by
every token, outlier channels x10; benchmarks/bench_attention.py) or standard normal too, bf16,
batch row 0, 2 heads, the first 256 queries against every key, the output written in bf16;
several seeds, the median and range of each error. (benchmarks/bench_attention.py measures the
kernels' and SageAttention's errors on the GPU on inputs made the same way.)

    python3 tools/tune/attention_qk_format.py [--seeds 3] [--inputs realistic random] [--json out.json]
"""

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import ltx_kernels as lk  # noqa: E402

from bench_attention import realistic_k  # noqa: E402
from common import write_record  # noqa: E402

# (name, shape [B, S, H, D]): LTX-Video's self-attention at 49x512x768 and LTX-2's at 6144 tokens
SHAPES = [("ltx-video self 2688 d64", (1, 2688, 2, 64)), ("ltx-2 self 6144 d128", (1, 6144, 2, 128))]
NQ = 256
F8 = torch.float8_e4m3fn


def _groups(x: torch.Tensor, size: int) -> torch.Tensor:
    """x [S, H, D] -> [ceil(S / size), size, H, D] (zero rows past S: they change no amax)."""
    s = x.shape[0]
    pad = -(-s // size) * size - s
    return torch.cat([x, x.new_zeros(pad, *x.shape[1:])]).reshape(-1, size, *x.shape[1:])


def quant(x: torch.Tensor, fmt: str, rows: int) -> torch.Tensor:
    """x [S, H, D] fp32, quantized per (`rows` consecutive tokens, head) and decoded to fp32:
    E4M3: s = amax / 448, e4m3(x / s) (round to nearest even); INT8: s = amax / 127,
    round-half-even(x / s) clamped to [-127, 127]. An all-zero group decodes to zeros."""
    s_len = x.shape[0]
    g = _groups(x, rows)
    amax = g.abs().amax(dim=(1, 3), keepdim=True)
    top = 448.0 if fmt == "e4m3" else 127.0
    s = amax / top
    safe = torch.where(s > 0, s, torch.ones_like(s))
    if fmt == "e4m3":
        codes = (g / safe).to(F8).float()
    else:
        codes = torch.round(g / safe).clamp(-127, 127)
    return (codes * s).reshape(-1, *x.shape[1:])[:s_len]


def quant_v_channels(v: torch.Tensor, fmt: str) -> torch.Tensor:
    """v [S, H, D] fp32 per (head, channel) over every key, decoded; fmt e4m3, bf16 or fp16."""
    if fmt == "bf16":
        return v.bfloat16().float()
    if fmt == "fp16":
        return v.half().float()
    s = v.abs().amax(0, keepdim=True) / 448.0
    safe = torch.where(s > 0, s, torch.ones_like(s))
    return (v / safe).to(F8).float() * s


def round_p(p: torch.Tensor, fmt: str) -> torch.Tensor:
    """P in [0, 1] (float64) as the kernel feeds it to P V: E4M3 of P x 448 (then / 448), bf16,
    fp16, or unrounded ("none")."""
    if fmt == "e4m3":
        return (p * 448.0).float().to(F8).double() / 448.0
    if fmt in ("bf16", "fp16"):
        return p.to(torch.bfloat16 if fmt == "bf16" else torch.float16).double()
    return p


def model(q, k, v, qk: str, pv: str, q_rows: int = 1, k_rows: int = 128, smooth: int = 0):
    """The attention of decoded operands, written in bf16: q [Sq, H, D], k, v [Skv, H, D] (bf16 inputs). qk: "bf16",
    "e4m3" or "int8" (k smoothed by its mean over the keys first, for the 8-bit formats); pv:
    "bf16", "fp16", "e4m3" (P and v in that format) or "none" (v E4M3, P unrounded). smooth: the
    k mean subtracted is over every key (0), the first `smooth` keys (as the integrations' k
    producer, `attention_keys_fp8`, takes it), or none (-1). Returns float64 [Sq, H, D]."""
    qf, kf, vf = q.float(), k.float(), v.float()
    if qk != "bf16":
        if smooth >= 0:
            n = smooth if smooth > 0 else kf.shape[0]
            kf = kf - kf[:n].double().mean(0, keepdim=True).float()
        qf, kf = quant(qf, qk, q_rows), quant(kf, qk, k_rows)
    vf = quant_v_channels(vf, "e4m3" if pv == "none" else pv)
    d = q.shape[-1]
    s = torch.einsum("ihd,jhd->hij", qf.double(), kf.double()) * d ** -0.5
    p = torch.exp(s - s.amax(-1, keepdim=True))
    o = torch.einsum("hij,jhd->ihd", round_p(p, pv), vf.double())
    # the output written in bf16, as every kernel here writes it
    return (o / p.sum(-1).transpose(0, 1).unsqueeze(-1)).bfloat16().double()


VARIANTS = {
    "bf16": dict(qk="bf16", pv="bf16"),
    "e4m3 qk + e4m3 pv": dict(qk="e4m3", pv="e4m3"),
    "int8 qk + e4m3 pv": dict(qk="int8", pv="e4m3"),
    "e4m3 qk + bf16 pv": dict(qk="e4m3", pv="bf16"),
    "int8 qk + bf16 pv": dict(qk="int8", pv="bf16"),
    "sage1": dict(qk="int8", pv="fp16", q_rows=128, k_rows=64),
    # the k mean taken over the first 128 keys (what the k producer of the integrations does), or none
    "e4m3 qk + e4m3 pv, k mean of 128": dict(qk="e4m3", pv="e4m3", smooth=128),
    "int8 qk + e4m3 pv, k mean of 128": dict(qk="int8", pv="e4m3", smooth=128),
    "e4m3 qk + e4m3 pv, k unsmoothed": dict(qk="e4m3", pv="e4m3", smooth=-1),
    "int8 qk + e4m3 pv, k unsmoothed": dict(qk="int8", pv="e4m3", smooth=-1),
}


def errors(o: torch.Tensor, ref: torch.Tensor):
    rel = ((o - ref).norm() / ref.norm()).item()
    cos = torch.nn.functional.cosine_similarity(o.flatten(), ref.flatten(), dim=0).item()
    return rel, cos


def check_against_library(q, k, v, ref) -> float:
    """The E4M3 model with P unrounded against the library's CPU FP8 attention (no P rounding
    there, fp32 arithmetic, the output rounded to bf16 as the model's): their relative
    difference. Where fp32 and float64 land on either side of a
    bf16 rounding boundary the two differ by one ulp (2^-8 relative), so the bound is 1e-3: far
    below what a different quantization rule gives (a factor 10% off: ~1e-1)."""
    qb, kb, vb = (t.unsqueeze(0).cpu() for t in (q, k, v))
    lib = lk.attention(*lk.quantize_attention_fp8(qb, kb, vb))[0]
    mine = model(q.cpu(), k.cpu(), v.cpu(), "e4m3", "none")
    return ((lib.double() - mine.double()).norm() / ref.cpu().norm()).item()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--inputs", nargs="+", choices=["realistic", "random"], default=["realistic", "random"],
                    help="k with offset and outlier channels (realistic_k), or standard normal like q and v")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    dev = torch.device(args.device)
    rows = []
    for (name, (b, s, h, d)), kind in [(sh, kind) for kind in args.inputs for sh in SHAPES]:
        per = {v: [] for v in VARIANTS}
        worst_check = 0.0
        for seed in range(args.seeds):
            g = torch.Generator(device="cpu").manual_seed(seed)
            q, k, v = (torch.randn(b, s, h, d, generator=g).bfloat16() for _ in range(3))
            if kind == "realistic":
                k = realistic_k(k, seed=seed)
            q, k, v = q[0, :NQ].to(dev), k[0].to(dev), v[0].to(dev)
            ref = lk.reference.attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0))[0]
            for vname, kw in VARIANTS.items():
                per[vname].append(errors(model(q, k, v, **kw), ref))
            worst_check = max(worst_check, check_against_library(q, k, v, ref))
        if worst_check > 1e-3:
            sys.exit(f"attention_qk_format: the E4M3 model differs from the library's FP8 attention by "
                     f"{worst_check:.2e} (relative) at {name}, {kind} k: the model no longer describes the "
                     "kernel's operands")
        name_k = f"{name}, {kind} k"
        row = dict(name=name_k, inputs=kind, shape=[b, s, h, d], queries=NQ, seeds=args.seeds, model_vs_library=worst_check,
                   rel_l2={}, rel_l2_range={}, cos={})
        print(f"{name_k}: {args.seeds} seeds; the E4M3 model equals the library's CPU FP8 attention to "
              f"{worst_check:.1e}")
        print(f"  {'variant':<34} {'rel L2 (median)':>16} {'range':>22} {'cosine':>9}")
        for vname, errs in per.items():
            rels = [e[0] for e in errs]
            row["rel_l2"][vname] = statistics.median(rels)
            row["rel_l2_range"][vname] = [min(rels), max(rels)]
            row["cos"][vname] = statistics.median(e[1] for e in errs)
            print(f"  {vname:<34} {row['rel_l2'][vname]:>16.3e} {min(rels):>10.3e} - {max(rels):.3e} "
                  f"{row['cos'][vname]:>9.5f}")
        rows.append(row)
    if args.json:
        write_record(args.json, rows, "tools/tune/attention_qk_format.py", sys.argv[1:] if argv is None else argv,
                     timing=dict(timer="none: an accuracy model (no timing)", statistic="median over seeds"),
                     device=str(dev))
    return rows


if __name__ == "__main__":
    main()
