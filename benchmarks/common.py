"""Timing, ceilings and result rows shared by every benchmark family.

Method: each candidate is captured in a CUDA graph of `reps` calls
that cycle through enough input copies to exceed 3x the L2 cache, so every call reads from
DRAM; the graph is replayed `trials` times between CUDA events and the median replay time
divided by `reps` is reported. The Python launch cost is not the kernel's. The copy ceiling
(`torch.mul(x, 1.0, out=y)` on 1 GiB in, 1 GiB out) and the matmul ceiling are measured in
the same process, so every fraction refers to the same run.
"""

import json
import statistics
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch._dynamo

# Each benchmarked shape compiles its own graph of the reference: allow that many.
torch._dynamo.config.cache_size_limit = 256
torch._dynamo.config.recompile_limit = 256


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

    def finish(self, copy_gbps: float) -> "Row":
        if self.bytes:
            self.ceiling = {"copy_GBps": round(copy_gbps, 1)}
            achieved = self.bytes / (self.ours_us * 1e-6) / 1e9
            self.fraction_of_ceiling = round(achieved / copy_gbps, 4)
        if self.baselines:
            name, best = min(self.baselines.items(), key=lambda kv: kv[1])
            self.best_baseline = name
            self.speedup_vs_best_baseline = round(best / self.ours_us, 4)
        self.ours_us = round(self.ours_us, 3)
        self.baselines = {k: round(v, 3) for k, v in self.baselines.items()}
        return self

    @property
    def gbps(self) -> Optional[float]:
        return self.bytes / (self.ours_us * 1e-6) / 1e9 if self.bytes else None


def write_json(path, rows: Sequence[Row], meta: dict) -> None:
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": [asdict(r) for r in rows]}, f, indent=1)


def markdown_table(rows: Sequence[Row]) -> str:
    head = "| op | shape | dtype | ours (us) | GB/s | % of copy | best baseline (us) | speedup |\n"
    head += "|---|---|---|---:|---:|---:|---|---:|\n"
    out = []
    for r in rows:
        bb = f"{r.best_baseline} {r.baselines[r.best_baseline]:.2f}" if r.best_baseline else "-"
        gb = f"{r.gbps:.0f}" if r.gbps else "-"
        frac = f"{100 * r.fraction_of_ceiling:.1f}" if r.fraction_of_ceiling is not None else "-"
        sp = f"{r.speedup_vs_best_baseline:.2f}x" if r.speedup_vs_best_baseline else "-"
        out.append(f"| {r.op} | {'x'.join(map(str, r.shape))} | {r.dtype} | {r.ours_us:.2f} | {gb} | {frac} | {bb} | {sp} |")
    return head + "\n".join(out) + "\n"
