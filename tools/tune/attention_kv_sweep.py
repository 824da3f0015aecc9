"""Where ltx_kernels.attention stops paying as the key count shrinks (cross-attention against text
tokens): queries of an LTX self-attention (B 2, 2688 tokens, 32 heads) against Skv keys with a
padding mask (the last eighth of the keys masked, as a padded prompt) and without one, each path
timed as the diffusers processor calls it:

  sdpa        F.scaled_dot_product_attention on the [B, H, S, D] views of the processor's
              [B, S, H, D] tensors, additive mask, PyTorch's default backend choice
  ours bf16   ltx_kernels.attention on [B, S, H, D] with the boolean key mask
  ours fp8    quantize_attention_fp8 + ltx_kernels.attention (what attention="fp8" runs)

Same timing as benchmarks/bench_attention.py (CUDA-graph replay, input sets rotated past L2);
each time is the median of `--repeats` medians, with their range. Each output is compared with
SDPA's first (relative L2) so that a wrong path cannot post a time.

    python3 tools/tune/attention_kv_sweep.py [--repeats 3] [--json out.json]
"""

import argparse
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import ltx_kernels as lk  # noqa: E402

from common import graph_timing, n_copies, rel_l2, time_graph, write_record  # noqa: E402

B, SQ, H = 2, 2688, 32
SKV = [128, 256, 512, 1024, 2048, 2688]



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for d in (64, 128):
        for skv in SKV:
            sets = n_copies(2 * H * d * B * (2 * SQ + 2 * skv))  # q, out, k, v (bf16) per call
            q = [torch.randn(B, SQ, H, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            k = [torch.randn(B, skv, H, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            v = [torch.randn(B, skv, H, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            mask = torch.ones(B, skv, dtype=torch.bool, device="cuda")
            mask[:, skv - skv // 8:] = False
            add = torch.zeros(B, 1, 1, skv, device="cuda", dtype=torch.bfloat16).masked_fill(
                ~mask[:, None, None], float("-inf"))

            def sdpa(i):
                return F.scaled_dot_product_attention(q[i].transpose(1, 2), k[i].transpose(1, 2),
                                                      v[i].transpose(1, 2), attn_mask=add).transpose(1, 2)

            def ours(i):
                return lk.attention(q[i], k[i], v[i], attn_mask=mask)

            def ours8(i):
                return lk.attention(*lk.quantize_attention_fp8(q[i], k[i], v[i]), attn_mask=mask)

            def sdpa_nomask(i):
                return F.scaled_dot_product_attention(q[i].transpose(1, 2), k[i].transpose(1, 2),
                                                      v[i].transpose(1, 2)).transpose(1, 2)

            def ours_nomask(i):
                return lk.attention(q[i], k[i], v[i])

            want, want_nomask = sdpa(0), sdpa_nomask(0)
            row = {"B": B, "Sq": SQ, "Skv": skv, "H": H, "D": d}
            for name, fn, tol, ref in (("sdpa", sdpa, 1e-9, want), ("ours_bf16", ours, 1e-2, want),
                                       ("ours_fp8", ours8, 1e-1, want),
                                       ("sdpa_nomask", sdpa_nomask, 1e-9, want_nomask),
                                       ("ours_bf16_nomask", ours_nomask, 1e-2, want_nomask)):
                err = rel_l2(fn(0), ref)
                meds = [time_graph(fn, sets, trials=9) for _ in range(args.repeats)]
                row[name + "_us"] = statistics.median(meds)
                row[name + "_us_range"] = [min(meds), max(meds)]
                row[name + "_rel_l2"] = err
                row[name + "_ok"] = err < tol
            rows.append(row)
            print(f"d{d} Skv {skv:5d}: sdpa {row['sdpa_us']:7.1f} us  ours bf16 {row['ours_bf16_us']:7.1f} us "
                  f"({row['sdpa_us'] / row['ours_bf16_us']:.2f}x{'' if row['ours_bf16_ok'] else ' WRONG'})  "
                  f"ours fp8 {row['ours_fp8_us']:7.1f} us ({row['sdpa_us'] / row['ours_fp8_us']:.2f}x"
                  f"{'' if row['ours_fp8_ok'] else ' WRONG'}); no mask: sdpa {row['sdpa_nomask_us']:7.1f} us "
                  f"ours bf16 {row['ours_bf16_nomask_us']:7.1f} us ({row['sdpa_nomask_us'] / row['ours_bf16_nomask_us']:.2f}x"
                  f"{'' if row['ours_bf16_nomask_ok'] else ' WRONG'})", flush=True)
            del q, k, v
            torch.cuda.empty_cache()
    if args.json:
        timing = dict(graph_timing(trials=9), statistic=f"median of {args.repeats} medians of replay time / calls "
                      "per graph, with their range")
        write_record(args.json, rows, "tools/tune/attention_kv_sweep.py", sys.argv[1:], timing=timing)


if __name__ == "__main__":
    main()
