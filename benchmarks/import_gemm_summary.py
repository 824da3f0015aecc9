"""Turn the summary that benchmarks/bench_gemm.py prints (the lines tools/gpu/gemm.sh keeps in its
log) into the family JSON that benchmarks/report.py reads, when the device run could not bring its
own JSON back. Every number comes from the printed summary (TFLOP/s and microseconds as printed;
times are 2 M N K / rate); `meta` is the `record meta: {...}` line bench_gemm.py printed before
it measured (benchmarks/common.py record_meta: the build's commit, compilers, GPU, clocks,
command, timing), never typed in: a log without that line is refused.

    python3 benchmarks/import_gemm_summary.py gemm.log [--out benchmarks/results/h200/gemm.json]

Rows: for each LTX / peak shape, the kernel "auto" runs for a plain FP8 GEMM (sm90_cutlass) and our
sm_90a kernel forced ("sm90"), each against cuBLASLt blockwise, FP8 tensorwise and bf16 matmul of
the same run; bf16_gemm (ours) against cuBLAS; the fused epilogues against our GEMM + the separate
op. The ceiling of the FP8 rows is tensorwise FP8 _scaled_mm at the same shape.
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Row, write_json  # noqa: E402

META = "record meta: "

FP8 = re.compile(r"^fp8\s+(\d+)x(\d+)x(\d+)\s+(.+?)\s+sm90 (\S+) (c\d)\s+ours\s+([\d.]+)\s+cuBLASLt-bw\s+([\d.]+)\s+"
                 r"cutlass\s+([\d.]+)\s+tensorwise\s+([\d.]+)\s+bf16\s+([\d.]+)")
BF16 = re.compile(r"^bf16\s+(\d+)x(\d+)x(\d+)\s+(.+?)\s+sm90 (\S+) (c\d)\s+ours\s+([\d.]+)\s+cuBLAS\s+([\d.]+)")
EPI = re.compile(r"^epi\s+(\d+)x(\d+)x(\d+)\s+(\S+)\s+fused\s+([\d.]+) us\s+separate\s+([\d.]+) us\s+plain GEMM\s+([\d.]+) us")


def us(m, n, k, tflops):
    return 2.0 * m * n * k / (tflops * 1e12) * 1e6


def rows_of(lines):
    rows = []
    for line in lines:
        f = FP8.match(line)
        if f:
            m, n, k = (int(x) for x in f.group(1, 2, 3))
            name, tile, cl = f.group(4).strip(), f.group(5), f.group(6)
            ours, blt, cut, tw, bf = (float(x) for x in f.group(7, 8, 9, 10, 11))
            flops = 2 * m * n * k
            base = {"cuBLASLt blockwise": us(m, n, k, blt), "FP8 tensorwise": us(m, n, k, tw),
                    "bf16 matmul": us(m, n, k, bf)}
            for backend, rate, note in (("auto", cut, "auto runs the CUTLASS-collective kernel (sm90_cutlass)"),
                                        ("sm90", ours, f"our kernel, tile {tile} {cl}")):
                r = Row(op=f"fp8_blockwise_gemm[{backend}]", shape=[m, n, k], dtype="e4m3", ours_us=us(m, n, k, rate),
                        baselines=dict(base), flops=flops, note=f"{name}; {note}").finish(0.0)
                rows.append(r.against("FP8 tensorwise", tw, fp8_tensorwise_TFLOPs=tw))
            continue
        b = BF16.match(line)
        if b:
            m, n, k = (int(x) for x in b.group(1, 2, 3))
            ours, cub = float(b.group(7)), float(b.group(8))
            r = Row(op="bf16_gemm[sm90]", shape=[m, n, k], dtype="bf16", ours_us=us(m, n, k, ours),
                    baselines={"cuBLAS (F.linear)": us(m, n, k, cub)}, flops=2 * m * n * k,
                    note=f"{b.group(4).strip()}; tile {b.group(5)} {b.group(6)}").finish(0.0)
            rows.append(r.against("cuBLAS bf16", cub, cublas_TFLOPs=cub))
            continue
        e = EPI.match(line)
        if e:
            m, n, k = (int(x) for x in e.group(1, 2, 3))
            fused, sep, plain = (float(x) for x in e.group(5, 6, 7))
            rows.append(Row(op=f"fp8_blockwise_gemm epilogue {e.group(4)}", shape=[m, n, k], dtype="e4m3",
                            ours_us=fused, baselines={"our GEMM + separate op": sep}, flops=2 * m * n * k,
                            note=f"plain GEMM alone {plain:.1f} us").finish(0.0))
    return rows


def meta_of(lines) -> dict:
    """The record meta bench_gemm.py printed (the last such line of the log)."""
    found = [ln[ln.index(META) + len(META):] for ln in lines if META in ln]
    if not found:
        raise SystemExit("import_gemm_summary.py: the log has no 'record meta: {...}' line from bench_gemm.py; "
                         "its commit and build cannot be established")
    return json.loads(found[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "h200",
                                                 "gemm.json"))
    a = ap.parse_args(argv)
    lines = open(a.log).read().splitlines()
    meta = dict(meta_of(lines), imported_by="benchmarks/import_gemm_summary.py (numbers as printed in the log)")
    rows = rows_of(lines)
    write_json(a.out, rows, meta)
    print(f"wrote {a.out}: {len(rows)} rows")


if __name__ == "__main__":
    main()
