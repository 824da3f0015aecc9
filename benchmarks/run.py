"""Benchmark runner: measures the ceilings once, runs every family, writes
benchmarks/results/<gpu>/{<family>.json, results.md, plot.png}, prints the table last.

  python benchmarks/run.py [--quick] [--only norm,...] [--out DIR]

Without a GPU it says so and runs nothing (GPU numbers need a GPU)."""

import argparse
import datetime
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

FAMILIES = ["norm"]
FAMILIES.append("activation")
FAMILIES.append("fused_norm")
FAMILIES.append("rope")
FAMILIES.append("fp8")
FAMILIES.append("lowbit")
FAMILIES.append("gemm")
FAMILIES.append("natten")
FAMILIES.append("distributed")
FAMILIES.append("fused_fp8")


def gpu_slug() -> str:
    name = torch.cuda.get_device_name(0).lower()
    for key in ["h200", "h100", "b200", "a100", "l40s", "l4", "rtx"]:
        if key in name:
            return key
    return name.replace(" ", "-")


def plot(rows_by_family, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot skipped: matplotlib is not installed")
        return
    rows = [r for fam in rows_by_family.values() for r in fam if r.fraction_of_ceiling is not None]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(max(8, 0.35 * len(rows)), 5))
    labels = [f"{r.op} {'x'.join(map(str, r.shape))} {r.dtype}" for r in rows]
    ax.bar(range(len(rows)), [100 * r.fraction_of_ceiling for r in rows], label="ours")
    best = []
    for r in rows:
        b = r.baselines[r.best_baseline] if r.best_baseline else None
        best.append(100 * r.fraction_of_ceiling * r.ours_us / b if b else 0)
    ax.plot(range(len(rows)), best, "r_", markersize=14, mew=2, label="best PyTorch path")
    ax.axhline(100, color="k", lw=0.8)
    ax.axhline(90, color="g", ls="--", lw=0.8, label="90% target")
    ax.set_ylabel("% of copy bandwidth measured in the same run")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=75, ha="right", fontsize=7)
    ax.legend(fontsize=8)
    ax.set_title(f"ltx-kernels on {torch.cuda.get_device_name(0)}: achieved vs ceiling")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("No CUDA GPU here: GPU numbers need a GPU. The CPU backend is tested by `make test`;")
        print("run `make bench` (or `make gpu-check`) on a GPU machine for the tables.")
        return 0
    from common import bf16_matmul_ceiling_tflops, copy_ceiling_gbps, markdown_table, write_json

    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", gpu_slug())
    os.makedirs(out, exist_ok=True)
    copy = copy_ceiling_gbps()
    mm = bf16_matmul_ceiling_tflops()
    meta = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "copy_ceiling_GBps": round(copy, 1),
        "bf16_matmul_ceiling_TFLOPs": round(mm, 1),
        "method": "CUDA-graph replay, median of 15 replays, inputs rotated past 3x L2",
    }
    print(f"ceilings: copy {copy:.0f} GB/s, bf16 matmul {mm:.0f} TFLOP/s")
    fams = [f for f in (a.only.split(",") if a.only else FAMILIES) if f]
    results = {}
    md = [f"# ltx-kernels on {meta['gpu']}\n",
          f"torch {meta['torch']}, CUDA {meta['cuda']}, {meta['date']}. Ceilings measured in this run: "
          f"copy {copy:.0f} GB/s (read+write), bf16 matmul {mm:.0f} TFLOP/s. {meta['method']}.\n",
          "Regenerate: `make gpu-check` (scripts/gpu_check.sh) on the GPU machine.\n"]
    for fam in fams:
        try:
            mod = __import__(f"bench_{fam}")
        except ImportError as e:
            print(f"family {fam}: no benchmark module ({e}); skipped")
            continue
        try:
            rows = mod.run(copy, quick=a.quick)
        except (RuntimeError, NotImplementedError) as e:  # e.g. a CUDA kernel this build lacks
            print(f"family {fam}: not benchmarked ({str(e).splitlines()[0]})")
            continue
        results[fam] = rows
        write_json(os.path.join(out, f"{fam}.json"), rows, meta)
        md.append(f"\n## {fam}\n\n" + markdown_table(rows))
        print(md[-1], flush=True)
        # written after every family, so a time limit still leaves what was measured
        with open(os.path.join(out, "results.md"), "w") as f:
            f.write("\n".join(md))
        plot(results, os.path.join(out, "plot.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
