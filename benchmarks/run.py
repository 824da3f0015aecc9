"""Benchmark runner: measures the ceilings, runs the benchmark families, writes one JSON per
family into the results folder, then regenerates results.md and plot.png there from every
family JSON present (benchmarks/report.py), and prints the tables of this run last.

    python3 benchmarks/run.py [--quick] [--only norm,gemm] [--out DIR] [--sha SHA] [--allow-dirty] [--list]

Families: every `benchmarks/bench_<family>.py` that defines `run(copy_gbps, quick=False)`
returning a list of `common.Row`; a new family is a new file. `--only` runs some of them and
leaves the other families' JSONs as they are. The default folder is benchmarks/results/<gpu>/.

Every JSON's `meta` is benchmarks/common.py's record_meta: the commit of the imported build (its
build_info.json; the run refuses to start unless that build and this checkout are that commit
without changes, or `--allow-dirty` marks the records dirty with the sha256 of the difference),
the compilers, the GPU with its SM count and clocks, torch, CUDA, the date, the command line and
the timing method; then the ceilings of the run and how long the family took. `--sha SHA` checks
that the build is that commit. Without a GPU it says so and runs nothing: GPU numbers need a GPU.
"""

import argparse
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402  (standard library only)


def discover() -> list:
    """The benchmark families: bench_<family>.py files in this folder, by name."""
    return sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))


def gpu_slug(name: str) -> str:
    low = name.lower()
    for key in ["h200", "h100", "b200", "a100", "l40s", "l4", "rtx"]:
        if key in low:
            return key
    return low.replace(" ", "-")


def main() -> int:
    ap = argparse.ArgumentParser(description="ltx-kernels benchmarks")
    ap.add_argument("--quick", action="store_true", help="a few shapes per family (a smoke run)")
    ap.add_argument("--only", default="", help="comma-separated families (default: all)")
    ap.add_argument("--out", default="", help="results folder (default benchmarks/results/<gpu>)")
    ap.add_argument("--sha", default="", help="refuse to run unless the imported build is this commit")
    ap.add_argument("--list", action="store_true", help="print the families and exit")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="write records even if the build or this checkout differs from the build's commit "
                         "(marked dirty, with the reasons and the sha256 of the difference)")
    a = ap.parse_args()
    families = discover()
    if a.list:
        print("\n".join(families))
        return 0
    wanted = [f for f in a.only.split(",") if f] if a.only else families
    unknown = [f for f in wanted if f not in families]
    if unknown:
        print(f"run.py: no benchmark family {', '.join(unknown)} (have: {', '.join(families)})")
        return 2

    import torch

    if not torch.cuda.is_available():
        print("No CUDA GPU here: GPU numbers need a GPU. The CPU backend is tested by `make test`;")
        print("run `make bench` on a GPU machine for the tables. The H200 numbers are in")
        print("benchmarks/results/h200/results.md.")
        return 0
    from common import DirtyTree, bf16_matmul_ceiling_tflops, copy_ceiling_gbps, graph_timing, record_meta, write_json

    gpu = torch.cuda.get_device_name(0)
    out = Path(a.out) if a.out else HERE / "results" / gpu_slug(gpu)

    def meta_now():  # the results folder being written does not count as a change
        return record_meta("benchmarks/run.py", sys.argv[1:], graph_timing(), a.allow_dirty, exclude=[str(out)])

    try:
        base_meta = meta_now()  # before any GPU time is spent: a record that could not name its tree
    except DirtyTree as e:
        print(f"run.py: {e}")
        return 2
    if a.sha and not (base_meta["git_sha"] or "").startswith(a.sha.split("+")[0]):
        print(f"run.py: the imported build is {base_meta['git_sha']}, not {a.sha}")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    copy = copy_ceiling_gbps()
    mm = bf16_matmul_ceiling_tflops()
    print(f"ceilings: copy {copy:.0f} GB/s, bf16 matmul {mm:.0f} TFLOP/s")
    ceilings = {"quick": a.quick, "copy_ceiling_GBps": round(copy, 1), "bf16_matmul_ceiling_TFLOPs": round(mm, 1)}
    status = 0
    done = {}
    for fam in wanted:
        mod = importlib.import_module(f"bench_{fam}")
        if not callable(getattr(mod, "run", None)):
            print(f"family {fam}: bench_{fam}.py has no run(copy_gbps, quick); skipped")
            continue
        t0 = time.perf_counter()
        try:
            rows = mod.run(copy, quick=a.quick)
        except (RuntimeError, NotImplementedError) as e:  # e.g. a kernel this build lacks
            print(f"family {fam}: not benchmarked ({str(e).splitlines()[0]})")
            status = 1
            continue
        try:  # again at writing: the tree must still be the one the run started from
            meta = meta_now()
        except DirtyTree as e:
            print(f"run.py: family {fam} not written: {e}")
            return 2
        meta.update(ceilings, family=fam, elapsed_s=round(time.perf_counter() - t0, 1))
        write_json(out / f"{fam}.json", rows, meta)
        done[fam] = meta["elapsed_s"]
        # after every family, so a time limit still leaves what was measured
        report.write_results(out, with_plot=False)
        print(f"family {fam}: {len(rows)} rows in {meta['elapsed_s']:.0f} s", flush=True)
    results = report.write_results(out)
    for fam in done:
        print(f"\n## {fam} ({done[fam]:.0f} s)\n\n" + report.family_table(results[fam]["rows"]))
    print(f"results: {out / 'results.md'} ({len(results)} families)")
    return status


if __name__ == "__main__":
    sys.exit(main())
