"""The sm_90a attention kernel and the CUDA attention quantizer under compute-sanitizer: every
kernel the build has (bf16 / fp16 with one CTA per query tile and persistent, FP8 with K factors
per 128 keys and per key, head dims 64 and 128, both warpgroup schedules), on small ragged shapes with kv_lengths (one row fully masked), a
key mask, GQA and both layouts. Each output is compared with the float64 reference (reference.py)
so that a silent wrong answer fails too.

  compute-sanitizer --tool memcheck  --error-exitcode 3 python3 tools/sanitize/sanitize_attention.py
  compute-sanitizer --tool racecheck --error-exitcode 3 python3 tools/sanitize/sanitize_attention.py --quick
  compute-sanitizer --tool synccheck --error-exitcode 3 python3 tools/sanitize/sanitize_attention.py --quick

--quick: two shapes, one layout, both warpgroup schedules (racecheck and synccheck are slow on wgmma kernels).
Either way one more shape has more query tiles than the GPU has SMs, so that persistent CTAs take
several tiles (their Q buffers and K / V stages reused across tiles).
"""
import argparse
import os
import sys

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "benchmarks"))

import ltx_kernels as lk  # noqa: E402
from ltx_kernels import reference as ref  # noqa: E402

from common import rel_l2  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if torch.cuda.get_device_capability() != (9, 0):
        raise SystemExit("sanitize_attention: needs compute capability 9.0")
    torch.manual_seed(0)
    dev = "cuda"
    # 8 heads over 4 KV heads: the per-key K factors' TMA reads them in place (2 KV heads: from a
    # copy with the heads padded to 4)
    shapes = [(2, 77, 300, 4, 2), (1, 77, 300, 8, 4)]
    if not args.quick:
        shapes += [(1, 200, 129, 2, 2), (1, 5, 2, 1, 1)]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes += [(2, 200, 130, sms // 2 + 1, sms // 2 + 1)]  # 2 x 2 x (sms / 2 + 1) query tiles
    failures = []
    n = 0
    for d in (64, 128):
        for b, sq, skv, h, hk in shapes:
            for layout in (("bshd",) if args.quick else ("bshd", "bhsd")):
                def mk(s, heads):
                    x = torch.randn(b, s, heads, d, device=dev, dtype=torch.bfloat16)
                    return x if layout == "bshd" else x.transpose(1, 2).contiguous()
                q, k, v = mk(sq, h), mk(skv, hk), mk(skv, hk)
                lengths = torch.tensor([skv, 0][:b], device=dev, dtype=torch.int32)  # a fully masked row
                mask = torch.rand(b, skv, device=dev) > 0.2
                bias = torch.zeros(b, skv, device=dev).masked_fill(~mask, float("-inf"))
                runs = []
                # 16-bit: bf16 and fp16, both schedules
                for dt in (torch.bfloat16, torch.float16):
                    qq, kk, vv = q.to(dt), k.to(dt), v.to(dt)
                    want = ref.attention(qq, kk, vv, kv_lengths=lengths, key_bias=bias, layout=layout)
                    runs.append((f"{dt}", want,
                                 lambda qq=qq, kk=kk, vv=vv: lk.attention(qq, kk, vv, kv_lengths=lengths,
                                                                          attn_mask=mask, layout=layout,
                                                                          backend="sm90")))
                # FP8: K factors per 128 keys and per key
                for k_block in (128, 1):
                    ops8 = lk.quantize_attention_fp8(q, k, v, layout=layout, k_block=k_block)
                    qd, kd, vd = ref.attention_fp8_dequantize(*ops8, layout=layout)
                    want = ref.attention(qd, kd, vd, kv_lengths=lengths, layout=layout)
                    runs.append((f"fp8 k_block {k_block}", want,
                                 lambda ops8=ops8: lk.attention(*ops8, kv_lengths=lengths, layout=layout,
                                                                backend="sm90")))
                    if not args.quick:  # with a key mask: the kernels' key-bias path
                        want_m = ref.attention(qd, kd, vd, kv_lengths=lengths, key_bias=bias, layout=layout)
                        runs.append((f"fp8 k_block {k_block} masked", want_m,
                                     lambda ops8=ops8: lk.attention(*ops8, kv_lengths=lengths, attn_mask=mask,
                                                                    layout=layout, backend="sm90")))
                # 16-bit: both tile schedules (FP8 has one)
                for (what, want, fn), pers in [(r, p) for r in runs for p in (("",) if "fp8" in r[0] else ("0", "1"))]:
                    for pp in ("0", "1"):  # both warpgroup schedules (FP8 d 64 runs without ping-pong by default)
                        with lk.developer_config(LTX_KERNELS_ATTENTION_PINGPONG=pp,
                                                 LTX_KERNELS_ATTENTION_PERSISTENT=pers):
                            out = fn()
                        torch.cuda.synchronize()
                        err = rel_l2(out.cpu(), want.cpu())
                        n += 1
                        # relative L2 of P rounding on a flat softmax over random v is about its unit
                        # roundoff (bf16 1e-3, e4m3 P 4e-2 rms); a wrong row or tile gives ~1
                        tol = 0.1 if "fp8" in what else 1e-2
                        if not err < tol or torch.isnan(out).any():
                            failures.append(f"d{d} {(b, sq, skv, h, hk)} {layout} {what} pp {pp} persistent {pers or '-'}: "
                                            f"rel L2 {err:.2e}")
    for f in failures:
        print("WRONG", f)
    print(f"sanitize_attention: {n} calls, {len(failures)} wrong")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
