"""Turn the raw JSON of `benchmarks/bench_attention.py --out raw.json` (what tools/gpu/check.sh's
attn-bench step writes) into the family JSON that benchmarks/report.py reads
(benchmarks/results/<gpu>/attention.json). `meta` is the raw file's own (benchmarks/common.py
record_meta: the build's commit, compilers, GPU, clocks, command, timing); a raw file without it
is refused. The rows are built by the same code as bench_attention.run(); no number is recomputed.

    python3 benchmarks/import_attention.py raw.json [--out benchmarks/results/h200/attention.json]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import attention_row, sdpa_baselines, write_json  # noqa: E402

VARIANTS = ("ours_bf16_bshd", "ours_bf16_bhsd", "ours_fp8_kblock128", "ours_fp8_kblock1")


def rows_of(raw_rows):
    rows = []
    for r in raw_rows:
        base, best = sdpa_baselines(r["us"])
        for variant in VARIANTS:
            us = r["us"].get(variant)
            if not us:
                continue
            note = f"{r['shape']}; backend {r['backend']}; {variant}"
            for pp in ("0", "1"):
                alt = r["us"].get(f"{variant}_pingpong{pp}")
                if alt:
                    note += f"; ping-pong {pp}: {alt:.0f} us"
            if "fp8" in variant:
                note += (f"; the quantization pass ({r['us']['fp8 quantize']:.0f} us) is not included; "
                         f"relative L2 vs our bf16 output {r['fp8_rel_l2_vs_bf16']:.3g}")
            rows.append(attention_row(variant, [r["B"], r["Sq"], r["Skv"], r["H"], r["D"]], us, base, best, r["tflop"],
                                      int(round(r["tflop"] * 1e12)), note, 0.0))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "h200",
                                                 "attention.json"))
    a = ap.parse_args(argv)
    raw = json.load(open(a.raw))
    meta = raw.get("meta") if isinstance(raw, dict) else None
    if not isinstance(meta, dict) or "git_sha" not in meta or "timing" not in meta:
        raise SystemExit(f"import_attention.py: {a.raw} carries no record meta (bench_attention.py --out writes "
                         "it); its commit and build cannot be established")
    meta = dict(meta, imported_by="benchmarks/import_attention.py")
    write_json(a.out, rows_of(raw["rows"]), meta)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
