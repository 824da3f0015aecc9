"""A/B of the k mean that quantize_attention_fp8 subtracts: the mean of all keys (smooth_keys=0)
against the mean of the leading keys (smooth_keys=64, 128, 256), which spares the quantizer's
first pass all but those keys of k. Per LTX self-attention shape (bf16, k factors per 128 keys):
the quantizer's time (benchmarks' CUDA-graph timing, inputs rotated past L2) and the FP8
attention's error against the float64 definition on realistic keys (a per-channel offset shared
by every token and outlier channels, benchmarks/bench_attention.py's realistic_k; batch row 0,
heads 0-1, the first 256 queries), beside no smoothing. What decides the integrations' choice.

    python3 tools/tune/attention_quant_smooth.py [--quick] [--json out.json]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import ltx_kernels as lk  # noqa: E402

from bench_attention import realistic_k  # noqa: E402
from bench_attention_quant import SHAPES  # noqa: E402
from common import n_copies, time_graph, write_record  # noqa: E402

CHOICES = {"all keys": dict(smooth_keys=0), "first 64": dict(smooth_keys=64), "first 128": dict(smooth_keys=128),
           "first 256": dict(smooth_keys=256), "none": dict(smooth_k=False)}


def errors(q, k, v, nq=256):
    """{choice: (rel L2, cosine)} of FP8 attention against the float64 definition."""
    qs, ks, vs = (t[:1, :, :2].contiguous() for t in (q, k, v))
    qs = qs[:, :nq].contiguous()
    ref = lk.reference.attention(qs, ks, vs)
    out = {}
    for name, kw in CHOICES.items():
        o = lk.attention(*lk.quantize_attention_fp8(qs, ks, vs, **kw)).double()
        out[name] = (((o - ref).norm() / ref.norm()).item(),
                     torch.nn.functional.cosine_similarity(o.flatten(), ref.flatten(), dim=0).item())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("attention_quant_smooth.py: needs a CUDA GPU")
    rows = []
    for i, (name, b, s, h, d) in enumerate(SHAPES):
        if args.quick and i > 1:
            continue
        sets = n_copies(b * s * h * d * 9)
        qs, ks, vs = ([torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
                      for _ in range(3))
        us = {c: time_graph(lambda j, kw=kw: lk.quantize_attention_fp8(qs[j], ks[j], vs[j], **kw), sets)
              for c, kw in CHOICES.items()}
        err = errors(qs[0], realistic_k(ks[0]), vs[0])
        rows.append(dict(name=name, shape=[b, s, h, d], us=us, rel_l2={c: e[0] for c, e in err.items()},
                         cos={c: e[1] for c, e in err.items()}))
        print(f"{name} {b}x{s}x{h}x{d}: " + "; ".join(f"{c} {us[c]:.1f} us rel {err[c][0]:.4f}" for c in CHOICES),
              flush=True)
        del qs, ks, vs
        torch.cuda.empty_cache()
    print("\n| shape | " + " | ".join(f"{c}: us / rel L2" for c in CHOICES) + " |")
    print("|---|" + "---|" * len(CHOICES))
    for r in rows:
        print(f"| {'x'.join(map(str, r['shape']))} | "
              + " | ".join(f"{r['us'][c]:.1f} / {r['rel_l2'][c]:.4f}" for c in CHOICES) + " |")
    if args.json:
        write_record(args.json, rows, "tools/tune/attention_quant_smooth.py", sys.argv[1:])


if __name__ == "__main__":
    main()
