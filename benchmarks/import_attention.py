"""Turn the raw JSON of `benchmarks/bench_attention.py --out raw.json` (what scripts/gpu/check.sh's
attn-bench step writes) into the family JSON that benchmarks/report.py reads
(benchmarks/results/<gpu>/attention.json), with the run's commit, compiler and command in `meta`.
The rows are built by the same code as bench_attention.run(); no number is recomputed.

    python3 benchmarks/import_attention.py raw.json --sha SHA --compiler "g++ ..." --command "..." \
        [--out benchmarks/results/h200/attention.json]
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import attention_row, import_arguments, sdpa_baselines, write_json  # noqa: E402

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


def main():
    a = import_arguments("raw", "attention")
    raw = json.load(open(a.raw))
    meta = dict(raw.get("meta", {}))
    meta.update(git_sha=a.sha, git_dirty=False, build={"cxx_compiler": a.compiler}, command=a.command,
                method="CUDA-graph replay, median of 15 replays, 2 input sets", cuda="13.0")
    if a.date:
        meta["date"] = a.date
    write_json(a.out, rows_of(raw["rows"]), meta)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
