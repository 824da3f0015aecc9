"""Benchmark runner: measures the ceilings, runs the benchmark families, writes one JSON per
family into the results folder, then regenerates results.md and plot.png there from every
family JSON present (benchmarks/report.py), and prints the tables of this run last.

    python3 benchmarks/run.py [--quick] [--only norm,gemm] [--out DIR] [--sha SHA] [--list]

Families: every `benchmarks/bench_<family>.py` that defines `run(copy_gbps, quick=False)`
returning a list of `common.Row`; a new family is a new file. `--only` runs some of them and
leaves the other families' JSONs as they are. The default folder is benchmarks/results/<gpu>/.

Every JSON's `meta` records the commit (git sha and whether the tree had local changes; `--sha`
when the tree is not a git checkout), the compilers that built the extension (the variant's
build_info.json), the GPU, torch, CUDA, the date, the command line, the ceilings of the run and
how long the family took. Without a GPU it says so and runs nothing: GPU numbers need a GPU.
"""

import argparse
import datetime
import importlib
import os
import platform
import shlex
import subprocess
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


def git_state(override: str = ""):
    """(sha, dirty, source). `override` ("<sha>" or "<sha>+dirty") wins; otherwise git; tracked
    files only (a results folder being written does not count)."""
    if override:
        sha = override.split("+")[0]
        return sha, override.endswith("+dirty"), "--sha"
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
        return sha, bool(status.strip()), "git"
    except (OSError, subprocess.CalledProcessError):
        return None, None, "unknown"


def build_info() -> dict:
    """What the extension in use was built with (common.build_info)."""
    from common import build_info as info

    return info()


def command_line() -> str:
    """This command with paths made relative to the repository (no machine paths in results)."""
    def rel(a: str) -> str:
        if os.path.isabs(a):
            try:
                return os.path.relpath(a, ROOT) if Path(a).resolve().is_relative_to(ROOT) else Path(a).name
            except ValueError:
                return Path(a).name
        return a

    return shlex.join(["python3"] + [rel(a) for a in sys.argv])


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
    ap.add_argument("--sha", default="", help="commit to record when this tree is not a git checkout")
    ap.add_argument("--list", action="store_true", help="print the families and exit")
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
    from common import bf16_matmul_ceiling_tflops, copy_ceiling_gbps, write_json

    sha, dirty, sha_source = git_state(a.sha)
    gpu = torch.cuda.get_device_name(0)
    out = Path(a.out) if a.out else HERE / "results" / gpu_slug(gpu)
    out.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    copy = copy_ceiling_gbps()
    mm = bf16_matmul_ceiling_tflops()
    print(f"ceilings: copy {copy:.0f} GB/s, bf16 matmul {mm:.0f} TFLOP/s")
    base_meta = {
        "git_sha": sha,
        "git_dirty": dirty,
        "git_source": sha_source,
        "build": build_info(),
        "gpu": gpu,
        "compute_capability": f"{props.major}.{props.minor}",
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "command": command_line(),
        "quick": a.quick,
        "copy_ceiling_GBps": round(copy, 1),
        "bf16_matmul_ceiling_TFLOPs": round(mm, 1),
        "method": "CUDA-graph replay, median of 15 replays, inputs rotated past 3x L2",
    }
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
        meta = dict(base_meta, family=fam, elapsed_s=round(time.perf_counter() - t0, 1),
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
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
