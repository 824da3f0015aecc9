"""Timing, ceilings, result rows and record metadata shared by every benchmark family and script.

Method (docs/benchmarking.md): each candidate is captured in a CUDA graph of `reps` calls
that cycle through enough input copies to exceed 3x the L2 cache, so every call reads from
DRAM; the graph is replayed `trials` times between CUDA events and the median replay time
divided by `reps` is reported. The Python launch cost is not the kernel's. The copy ceiling
(`torch.mul(x, 1.0, out=y)` on 1 GiB in, 1 GiB out) and the matmul ceiling are measured in
the same process, so every fraction refers to the same run. Every record's meta comes from
record_meta (below): the imported build's commit, checked against the tree, and how the record
was made.
"""

import argparse
import contextlib
import datetime
import hashlib
import json
import os
import platform
import shlex
import statistics
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch._dynamo

# Each benchmarked shape compiles its own graph of the reference: allow that many.
torch._dynamo.config.cache_size_limit = 256
torch._dynamo.config.recompile_limit = 256


@contextlib.contextmanager
def env_var(name: str, value: Optional[str]):
    """Sets the library's developer setting `name` (LTX_KERNELS_GEMM_CONFIG, LTX_KERNELS_NORM_SHAPE,
    ...: docs/knobs.md) to `value` (None: the kernels' own choice) for the block, then restores it,
    so that a sweep times each forced choice inside one process."""
    import ltx_kernels as lk

    with lk.developer_config(**{name: "" if value is None else value}):
        yield


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


# ---- what a record says about how it was made ---------------------------------------------------
#
# Every benchmark record (benchmarks/results/<gpu>/*.json and the scripts' --out / --json files)
# carries record_meta(): the commit of the build it imported (the build's own build_info.json,
# written by cmake/write_variant.py), whether that build and the checkout running the benchmark
# match that commit exactly, the compilers, the command line, the GPU with its SM count and
# clocks, and how the numbers were timed. A record from a tree that differs from its commit is
# refused (DirtyTree) unless the run passes --allow-dirty; then the record says dirty, why, and
# the sha256 of the difference.

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Records being written into the results folder do not make the tree dirty.
RESULTS_PATHSPEC = ":(exclude)benchmarks/results"


class DirtyTree(RuntimeError):
    """A record would not name the exact tree that produced it."""


def build_info_path(module=None) -> str:
    """build_info.json beside the imported ltx_kernels package (the variant directory)."""
    if module is None:
        import ltx_kernels as module
    return os.path.join(os.path.dirname(os.path.realpath(module.__file__)), "build_info.json")


def build_info(module=None) -> dict:
    """What the imported extension was built from (cmake/write_variant.py); {} without the file."""
    try:
        with open(build_info_path(module)) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _git(args: Sequence[str], cwd: str, binary: bool = False):
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True)
    return out.stdout if binary else out.stdout.decode().rstrip("\n")


def _excludes(top: str, exclude: Sequence[str]) -> List[str]:
    specs = [RESULTS_PATHSPEC]
    for e in exclude:
        real = os.path.realpath(e)
        if real.startswith(top + os.sep):
            specs.append(":(exclude)" + os.path.relpath(real, top))
    return specs


def git_tree_state(path: str, exclude: Sequence[str] = ()) -> dict:
    """The git checkout holding `path`: its HEAD, whether any file differs from HEAD (tracked
    changes and untracked files that git does not ignore; the results folder and the paths in
    `exclude`, the run's own output, excepted) and the sha256 of that difference (the binary diff
    against HEAD, then each untracked file's name and content). {"head": None} outside a git
    checkout."""
    try:
        top = os.path.realpath(_git(["rev-parse", "--show-toplevel"], path))
        head = _git(["rev-parse", "HEAD"], top)
        specs = _excludes(top, exclude)
        status = _git(["status", "--porcelain", "--untracked-files=all", "--", ".", *specs], top)
    except (OSError, subprocess.CalledProcessError):
        return {"top": None, "head": None, "dirty": None, "changes": [], "diff_sha256": None}
    changes = [ln for ln in status.splitlines() if ln.strip()]
    digest = None
    if changes:
        h = hashlib.sha256(_git(["diff", "--binary", "HEAD", "--", ".", *specs], top, binary=True))
        for ln in changes:
            if ln.startswith("?? "):
                rel = ln[3:]
                h.update(b"\0untracked\0" + rel.encode() + b"\0")
                try:
                    with open(os.path.join(top, rel), "rb") as f:
                        h.update(hashlib.sha256(f.read()).digest())
                except OSError:
                    pass
        digest = h.hexdigest()
    return {"top": top, "head": head, "dirty": bool(changes), "changes": changes,
            "diff_sha256": digest}


def provenance(allow_dirty: bool = False, info: Optional[dict] = None, checkouts: Optional[Sequence[str]] = None,
               exclude: Sequence[str] = ()) -> dict:
    """The commit a record may claim. The sha is the imported build's (its build_info.json), never
    an argument. Clean means: the build names its commit and was made from a tree without changes
    (its own git_dirty flag), and the checkout running the benchmark is a git checkout at that
    same commit without changes (benchmarks/results/ aside). Otherwise raises DirtyTree, unless
    `allow_dirty`: then the record carries git_dirty True, the reasons and the sha256 of the
    difference. `exclude`: the run's own output files or folders (they do not count as changes).
    `checkouts` (tests): the directories to check instead of this file's checkout."""
    info = build_info() if info is None else info
    sha = info.get("git_sha")
    reasons = []
    if not info:
        reasons.append("the imported ltx_kernels has no build_info.json (not a build of this tree)")
    elif not sha:
        reasons.append("the build does not name its commit (it was not built from a git checkout)")
    if info.get("git_dirty"):
        reasons.append("the build was made from a tree with uncommitted changes"
                       + (f" (diff sha256 {info['git_diff_sha256']})" if info.get("git_diff_sha256") else ""))
    if checkouts is None:
        checkouts = [ROOT]
    seen, digests = set(), []
    for i, d in enumerate(checkouts):
        what = "the benchmarks' checkout" if i == 0 else f"checkout {i + 1}"
        st = git_tree_state(d, exclude) if os.path.isdir(d) else {"top": None, "head": None}
        if st["head"] is None:
            reasons.append(f"{what} is not a git checkout, so it cannot be checked against the build")
            continue
        if st["top"] in seen:
            continue
        seen.add(st["top"])
        if sha and st["head"] != sha:
            reasons.append(f"{what} is at {st['head'][:10]}, the build at {sha[:10]}")
        if st["dirty"]:
            shown = ", ".join(ln[3:] for ln in st["changes"][:5]) + (", ..." if len(st["changes"]) > 5 else "")
            reasons.append(f"{what} has uncommitted changes ({shown})")
            digests.append(st["diff_sha256"])
    if reasons and not allow_dirty:
        raise DirtyTree("refusing to write a benchmark record: " + "; ".join(reasons)
                        + ". Commit, rebuild and rerun, or pass --allow-dirty to write a record marked dirty "
                        "with the sha256 of the difference.")
    out = {"git_sha": sha, "git_dirty": bool(reasons),
           "build": dict(info)}
    if reasons:
        out["dirty_reasons"] = reasons
        out["diff_sha256"] = (digests[0] if len(digests) == 1 else
                              hashlib.sha256("".join(digests).encode()).hexdigest() if digests else None)
    return out


def command_line(script: str, argv: Sequence[str]) -> str:
    """The command as run, `python3 <script> <args>`, with absolute paths made relative to the
    repository (or cut to their file name outside it), so that no machine's directories are
    recorded."""
    def rel(a: str) -> str:
        if os.path.isabs(a):
            real = os.path.realpath(a)
            if real == ROOT or real.startswith(ROOT + os.sep):
                return os.path.relpath(real, ROOT)
            return os.path.basename(a)
        return a

    return shlex.join(["python3", rel(script), *[rel(a) for a in argv]])


_SMI_FIELDS = ("uuid", "name", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
               "clocks.applications.graphics", "clocks.applications.memory", "power.limit", "temperature.gpu",
               "persistence_mode")


def gpu_clocks(uuid: Optional[str] = None) -> dict:
    """The GPU's clocks (MHz) as nvidia-smi reports them now (current, maximum, application),
    its power limit (W), temperature (C) and persistence mode; the GPU with `uuid` where several
    are visible. {"note": why} where nvidia-smi cannot say."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return {"note": f"nvidia-smi unavailable ({type(e).__name__})"}
    rows = [[c.strip() for c in ln.split(",")] for ln in out.splitlines() if ln.strip()]
    rows = [r for r in rows if len(r) == len(_SMI_FIELDS)]
    if uuid:
        rows = [r for r in rows if r[0].lower().endswith(uuid.lower().replace("gpu-", ""))] or rows
    if not rows:
        return {"note": "nvidia-smi listed no GPU"}
    vals = dict(zip(_SMI_FIELDS, rows[0]))

    def num(k):
        try:
            return float(vals[k])
        except (KeyError, ValueError):
            return vals.get(k)

    return {"sm_MHz": num("clocks.sm"), "mem_MHz": num("clocks.mem"), "max_sm_MHz": num("clocks.max.sm"),
            "max_mem_MHz": num("clocks.max.mem"), "application_sm_MHz": num("clocks.applications.graphics"),
            "application_mem_MHz": num("clocks.applications.memory"), "power_limit_W": num("power.limit"),
            "temperature_C": num("temperature.gpu"), "persistence_mode": vals.get("persistence_mode"),
            "source": "nvidia-smi when the record was written"}


def gpu_meta(device=None) -> dict:
    """The GPU a record was measured on: name, compute capability, SM count, memory, clocks."""
    if not torch.cuda.is_available():
        return {"gpu": None}
    dev = torch.device("cuda") if device is None else torch.device(device)
    if dev.type != "cuda":
        return {"gpu": None}
    props = torch.cuda.get_device_properties(dev)
    uuid = str(getattr(props, "uuid", "") or "") or None
    return {"gpu": props.name, "compute_capability": f"{props.major}.{props.minor}",
            "sms": props.multi_processor_count, "gpu_memory_GiB": round(props.total_memory / 2**30, 1),
            "clocks": gpu_clocks(uuid)}


def graph_timing(trials: int = 15, reps: str = "max(input sets, 20) calls") -> dict:
    """The timing method of time_graph, for a record's meta."""
    return {"timer": "CUDA events around CUDA-graph replays",
            "warmup": "every input set called once, then two calls on a side stream, before capture",
            "repeats": f"{trials} replays of one graph of {reps}",
            "statistic": "median replay time / calls per graph",
            "inputs": "rotated through copies exceeding 3x the L2 cache"}


def record_meta(script: str, argv: Sequence[str], timing: dict, allow_dirty: bool = False, device=None,
                exclude: Sequence[str] = (), info: Optional[dict] = None,
                checkouts: Optional[Sequence[str]] = None) -> dict:
    """Everything a record carries about how it was made (module comment above): provenance(),
    the compilers, the command line, the GPU and its clocks, torch / CUDA / Python, the date and
    `timing` (timer, warm-up, repeats, statistic). Raises DirtyTree where provenance() does;
    `exclude`: the run's output paths (see provenance)."""
    prov = provenance(allow_dirty, info, checkouts, exclude)
    build = prov["build"]
    return {**prov,
            "compiler": {k: build.get(k) for k in ("cxx_compiler", "cuda_compiler", "cuda_host_compiler")},
            "command": command_line(script, argv),
            **gpu_meta(device),
            "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "timing": timing}


def add_record_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--allow-dirty", action="store_true",
                        help="write the record even if the build or the checkout differs from the build's commit "
                             "(the record is marked dirty, with the reasons and the sha256 of the difference)")
    return parser


def check_record(out, allow_dirty: bool) -> None:
    """Before a run spends GPU time: raises DirtyTree if its record at `out` would be refused
    (nothing when out is None: no record is written)."""
    if out:
        provenance(allow_dirty, exclude=[out])


def write_record(path, rows: list, script: str, argv: Sequence[str], timing: Optional[dict] = None,
                 allow_dirty: bool = False, **meta) -> None:
    """A script's record ({"meta": record_meta(...) + `meta`, "rows": rows}). `timing` defaults to
    time_graph's method."""
    full = dict(record_meta(script, argv, timing or graph_timing(), allow_dirty, exclude=[path]), **meta)
    write_json(path, rows, full)


def write_json(path, rows: Sequence, meta: dict) -> None:
    """{"meta": meta, "rows": rows} (Row objects as dicts); meta should come from record_meta."""
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": [asdict(r) if isinstance(r, Row) else r for r in rows]}, f, indent=1)


def sdpa_baselines(us: Dict[str, float]):
    """The SDPA backends that ran on one attention shape ({name: us}, from the shape's times `us`)
    and the best of their times (None if none ran)."""
    base = {k: v for k, v in us.items() if k.startswith("sdpa_") and v}
    return base, (min(base.values()) if base else None)


def attention_row(variant: str, shape: List[int], us: float, base: Dict[str, float], best: Optional[float],
                  tflop: float, flops: int, note: str, copy_gbps: float) -> Row:
    """The Row of one variant of ours ("ours_<kind>") on one attention shape of `tflop` TFLOP: SDPA's
    backends as baselines and the best of them (`best` us) as the ceiling ("SDPA")."""
    row = Row(op=f"attention {variant[5:]}", shape=shape, dtype="bf16" if "bf16" in variant else ("fp16" if "fp16" in variant else "e4m3"),
              ours_us=us, baselines=base, flops=flops, note=note).finish(copy_gbps)
    if best:
        sdpa = tflop / (best * 1e-6)
        row.against("SDPA", sdpa, sdpa_TFLOPs=sdpa)
    return row
