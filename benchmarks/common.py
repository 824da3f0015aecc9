"""Timing, ceilings and result rows shared by every benchmark family.

Method (docs/benchmarking.md): each candidate is captured in a CUDA graph of `reps` calls
that cycle through enough input copies to exceed 3x the L2 cache, so every call reads from
DRAM; the graph is replayed `trials` times between CUDA events and the median replay time
divided by `reps` is reported. The Python launch cost is not the kernel's. The copy ceiling
(`torch.mul(x, 1.0, out=y)` on 1 GiB in, 1 GiB out) and the matmul ceiling are measured in
the same process, so every fraction refers to the same run.
"""

import argparse
import contextlib
import json
import os
import statistics
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch._dynamo

# Each benchmarked shape compiles its own graph of the reference: allow that many.
torch._dynamo.config.cache_size_limit = 256
torch._dynamo.config.recompile_limit = 256


@contextlib.contextmanager
def env_var(name: str, value: Optional[str]):
    """Sets environment variable `name` to `value` (None: unsets it) for the block, then restores
    what it was. The library reads its forcing knobs (LTX_KERNELS_GEMM_CONFIG,
    LTX_KERNELS_NORM_SHAPE, ...) per call, so a sweep times each forced choice inside one."""
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def l2_bytes() -> int:
    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20))


def n_copies(bytes_per_call: int) -> int:
    """Input copies so that one pass over them is >= 3x L2 (and at least 2)."""
    return max(2, min(64, -(-3 * l2_bytes() // max(bytes_per_call, 1))))


def time_graph(fn: Callable[[int], None], n_sets: int, reps: int = 0, trials: int = 15) -> float:
    """Median microseconds per call of fn(i) (i = input-set index), by CUDA-graph replay."""
    if reps <= 0:
        reps = max(n_sets, 20)
    for i in range(n_sets):  # warm up (and let torch.compile specialise) outside the graph
        fn(i)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(2):
            fn(i % n_sets)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for r in range(reps):
            fn(r % n_sets)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / reps)
    del g
    return statistics.median(times)


def copy_ceiling_gbps() -> float:
    """Device copy bandwidth in GB/s (bytes read + written) of an SM kernel over 2 GiB."""
    n = 1 << 29  # fp16 elements: 1 GiB in, 1 GiB out
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    us = time_graph(lambda i: torch.mul(x, 1.0, out=y), 1, reps=10, trials=10)
    del x, y
    torch.cuda.empty_cache()
    return 2 * n * 2 / (us * 1e-6) / 1e9


def bf16_matmul_ceiling_tflops(n: int = 8192) -> float:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    us = time_graph(lambda i: torch.matmul(a, b, out=c), 1, reps=5, trials=10)
    del a, b, c
    torch.cuda.empty_cache()
    return 2 * n**3 / (us * 1e-6) / 1e12


@dataclass
class Row:
    """One measured configuration. `ceiling_name` says what `fraction_of_ceiling` divides by:
    "copy" (bytes the op must move / the copy bandwidth of the same run), or a compute ceiling
    measured in the same run ("SDPA", "FP8 matmul", ...); `ceiling` holds its value(s)."""

    op: str
    shape: List[int]
    dtype: str
    ours_us: float
    baselines: Dict[str, float]
    bytes: Optional[int] = None
    flops: Optional[int] = None
    ceiling: Dict[str, float] = field(default_factory=dict)
    fraction_of_ceiling: Optional[float] = None
    speedup_vs_best_baseline: Optional[float] = None
    best_baseline: Optional[str] = None
    note: str = ""
    ceiling_name: Optional[str] = None

    def finish(self, copy_gbps: float) -> "Row":
        """Rounds the times, picks the best baseline and, for rows with `bytes`, sets the copy
        ceiling (call `against` afterwards for a compute ceiling)."""
        if self.bytes and copy_gbps > 0:
            self.ceiling = {"copy_GBps": round(copy_gbps, 1)}
            self.ceiling_name = "copy"
            achieved = self.bytes / (self.ours_us * 1e-6) / 1e9
            self.fraction_of_ceiling = round(achieved / copy_gbps, 4)
        if self.baselines:
            name, best = min(self.baselines.items(), key=lambda kv: kv[1])
            self.best_baseline = name
            self.speedup_vs_best_baseline = round(best / self.ours_us, 4)
        self.ours_us = round(self.ours_us, 3)
        self.baselines = {k: round(v, 3) for k, v in self.baselines.items()}
        return self

    def against(self, name: str, tflops_ceiling: float, **values: float) -> "Row":
        """Sets a compute ceiling: this row's TFLOP/s (from `flops`) over `tflops_ceiling`."""
        self.ceiling_name = name
        self.ceiling = {k: round(v, 1) if isinstance(v, float) else v for k, v in values.items()}
        self.fraction_of_ceiling = round(self.tflops / tflops_ceiling, 4)
        return self

    @property
    def gbps(self) -> Optional[float]:
        return self.bytes / (self.ours_us * 1e-6) / 1e9 if self.bytes else None

    @property
    def tflops(self) -> Optional[float]:
        return self.flops / (self.ours_us * 1e-6) / 1e12 if self.flops else None


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    """Relative L2 distance of `a` from `b`, in float64 (on their device)."""
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def build_info() -> dict:
    """What the extension in use was built with (written by cmake/write_variant.py)."""
    import ltx_kernels

    p = os.path.join(os.path.dirname(os.path.realpath(ltx_kernels.__file__)), "build_info.json")
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"note": "the loaded ltx_kernels has no build_info.json"}


def run_meta(script: str, argv: Sequence[str]) -> dict:
    """What made a record: the command (absolute paths cut to their file names, so that no
    machine's directories are recorded), the commit ($GIT_SHA, else the build's) and the build
    (compilers, archs)."""
    build = build_info()
    args = [os.path.basename(a) if os.path.isabs(a) else a for a in argv]
    return {"command": " ".join(["python3", script, *args]),
            "git_sha": os.environ.get("GIT_SHA") or build.get("sha_pin") or build.get("git_sha", ""),
            "build": build}


def write_record(path, rows: list, script: str, argv: Sequence[str]) -> None:
    """A sweep's record (the scripts' --json): its rows and the run's metadata: the GPU, torch and
    run_meta's command, commit and build."""
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, **run_meta(script, argv)}
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


def write_json(path, rows: Sequence[Row], meta: dict) -> None:
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": [asdict(r) for r in rows]}, f, indent=1)


def sdpa_baselines(us: Dict[str, float]):
    """The SDPA backends that ran on one attention shape ({name: us}, from the shape's times `us`)
    and the best of their times (None if none ran)."""
    base = {k: v for k, v in us.items() if k.startswith("sdpa_") and v}
    return base, (min(base.values()) if base else None)


def attention_row(variant: str, shape: List[int], us: float, base: Dict[str, float], best: Optional[float],
                  tflop: float, flops: int, note: str, copy_gbps: float) -> Row:
    """The Row of one variant of ours ("ours_<kind>") on one attention shape of `tflop` TFLOP: SDPA's
    backends as baselines and the best of them (`best` us) as the ceiling ("SDPA")."""
    row = Row(op=f"attention {variant[5:]}", shape=shape, dtype="bf16" if "bf16" in variant else "e4m3",
              ours_us=us, baselines=base, flops=flops, note=note).finish(copy_gbps)
    if best:
        sdpa = tflop / (best * 1e-6)
        row.against("SDPA", sdpa, sdpa_TFLOPs=sdpa)
    return row


def import_arguments(source: str, family: str):
    """The command line of a benchmarks/import_*.py script: the `source` file, the run's --sha,
    --compiler and --command, an optional --date, and --out (default
    benchmarks/results/h200/<family>.json)."""
    ap = argparse.ArgumentParser()
    ap.add_argument(source)
    ap.add_argument("--sha", required=True)
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--date", default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "h200",
                                                 f"{family}.json"))
    return ap.parse_args()
