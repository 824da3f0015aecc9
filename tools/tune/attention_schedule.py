"""A/B of the sm_90a 16-bit attention kernel's two schedules: one CTA per query tile and persistent
(one CTA per SM walking the tiles; LTX_KERNELS_ATTENTION_PERSISTENT 0 / 1; persistent also with
the warpgroups' ping-pong off), at the LTX query
lengths against a growing number of keys (text lengths up to self-attention), beside every SDPA
backend in the same run. The heuristics' key thresholds (persistent_max_keys in
attention/heuristics.h) is read off these rows. Same timing as benchmarks/bench_attention.py
(CUDA-graph replay, input sets rotated past L2); each time is the median of `--repeats` medians, with their
spread. Every output is compared with cuDNN's first (relative L2), so that a wrong result cannot
post a time.

    python3 tools/tune/attention_schedule.py [--quick] [--json out.json]
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

TRIALS = 9  # graph replays per median

SHAPES = [  # name, B, Sq, H, D, key counts
    ("LTX-Video 49x512x768", 2, 2688, 32, 64, (128, 256, 512, 1024, 2688)),
    ("LTX-Video 121x720x1280", 1, 14080, 32, 64, (128, 512)),
    ("LTX-2 49x512x768", 2, 6144, 32, 128, (128, 256, 512, 1024)),
]


def timed(fn, sets, repeats):
    meds = [time_graph(fn, sets, trials=TRIALS) for _ in range(repeats)]
    return statistics.median(meds), min(meds), max(meds)


def bench(name, b, sq, h, d, skv, repeats):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    flops = 4.0 * b * h * sq * skv * d
    sets = n_copies(2 * h * d * b * (2 * sq + 2 * skv))  # q, out, k, v (bf16) per call
    qs = [torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    ks = [torch.randn(b, skv, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    vs = [torch.randn(b, skv, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    qh, kh, vh = ([t.transpose(1, 2).contiguous() for t in ts] for ts in (qs, ks, vs))
    row = {"shape": name, "B": b, "Sq": sq, "Skv": skv, "H": h, "D": d, "us": {}, "spread_us": {}, "rel_l2": {}}
    want = None
    for sdpa_name, be in (("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION), ("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                          ("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION)):
        try:
            with sdpa_kernel([be]):
                got = F.scaled_dot_product_attention(qh[0], kh[0], vh[0]).transpose(1, 2)
                med, lo, hi = timed(lambda i: F.scaled_dot_product_attention(qh[i], kh[i], vh[i]), sets, repeats)
        except RuntimeError as e:
            print(f"  {sdpa_name}: cannot run: {str(e).splitlines()[0][:100]}")
            continue
        if want is None:
            want = got
        row["us"][sdpa_name], row["spread_us"][sdpa_name] = med, [lo, hi]
        row["rel_l2"][sdpa_name] = rel_l2(got, want)
    out = torch.empty_like(qs[0])
    # the per-tile kernel with its default warpgroup schedule (ping-pong); persistent with and without
    for key, pers, pp in (("ours_per_tile", "0", ""), ("ours_persistent", "1", ""),
                          ("ours_persistent_no_pingpong", "1", "0")):
        with lk.developer_config(LTX_KERNELS_ATTENTION_PERSISTENT=pers, LTX_KERNELS_ATTENTION_PINGPONG=pp):
            got = lk.attention(qs[0], ks[0], vs[0], backend="sm90").clone()
            med, lo, hi = timed(lambda i: lk.attention(qs[i], ks[i], vs[i], out=out, backend="sm90"), sets, repeats)
        err = rel_l2(got, want)
        row["us"][key], row["spread_us"][key], row["rel_l2"][key] = med, [lo, hi], err
        if err > 1e-2:
            row[key + "_wrong"] = True
    base = min(v for k, v in row["us"].items() if k.startswith("sdpa_"))
    line = "  ".join(f"{k[5:]} {v:7.1f}" for k, v in row["us"].items())
    print(f"{name} B{b} Sq{sq} Skv{skv} H{h} d{d}: {line} | persistent {row['us']['ours_per_tile'] / row['us']['ours_persistent']:.3f}x per-tile, "
          f"{base / row['us']['ours_persistent']:.3f}x best SDPA ({flops / row['us']['ours_persistent'] / 1e6:.0f} TFLOP/s)",
          flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="128 and 2688 keys at LTX-Video's 2688 queries only")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for name, b, sq, h, d, keys in SHAPES:
        for skv in keys:
            if args.quick and (sq != 2688 or skv not in (128, 2688)):
                continue
            rows.append(bench(name, b, sq, h, d, skv, args.repeats))
            torch.cuda.empty_cache()
            if args.json:  # after every shape, so that a run cut short keeps what it measured
                write_record(args.json, rows, "tools/tune/attention_schedule.py", sys.argv[1:],
                             timing=dict(graph_timing(TRIALS), statistic=f"median of {args.repeats} medians of "
                                         f"{TRIALS} replays (spread_us: their range)"))


if __name__ == "__main__":
    main()
