"""Tables, plot and every generated figure of the docs from the benchmark JSONs, so that no number
is typed by hand.

    python3 benchmarks/report.py                 # results/h200/results.md + plot.png from its JSONs
    python3 benchmarks/report.py --readme        # ... and every generated block of README.md, docs/**/*.md
    python3 benchmarks/report.py --check         # exit 1 if results.md or any generated block is stale
    python3 benchmarks/report.py --results DIR   # another results folder (e.g. a fresh run)

Input: every `<family>.json` in the results folder, as `benchmarks/run.py` writes them
({"meta": {...}, "rows": [...]}, one file per family); other JSON files are ignored.
`results.md` holds one section per family (its run's metadata, then one line per row);
the README table holds one line per (family, ceiling). The docs' other figures sit in
`<!-- generated: NAME -->` ... `<!-- /generated -->` blocks that benchmarks/figures.py fills from
the same folder (benchmarks/check_docs.py checks them). Standard library only (matplotlib, when
installed, for the plot; torch for the blocks that apply the compile policy's rules).
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_RESULTS = HERE / "results" / "h200"
# <!-- generated: NAME --> ... <!-- /generated -->: a block (its body starts with a newline) or an
# inline figure; NAME (lowercase, digits, dashes) is a key of figures.BLOCKS.
BLOCK = re.compile(r"<!-- generated: (?P<name>[a-z0-9-]+) -->(?P<body>.*?)<!-- /generated -->", re.S)

CEILING_MEANING = {
    "copy": "bytes the op must read and write / copy bandwidth of an SM kernel over 2 GiB",
    "SDPA": "attended FLOP/s / PyTorch SDPA's FLOP/s over all tokens at the same heads and head dim",
    "FP8 matmul": "TFLOP/s / tensorwise FP8 torch._scaled_mm at 8192^3",
}


# ---- reading -------------------------------------------------------------------------------


def load_results(folder) -> dict:
    """family -> {"meta": ..., "rows": [...]} for every benchmark JSON in `folder`, by name."""
    out = {}
    for p in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        rows = data.get("rows") if isinstance(data, dict) else None
        if not isinstance(data.get("meta") if isinstance(data, dict) else None, dict):
            continue
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "op" in r and "ours_us" in r for r in rows):
            continue
        out[p.stem] = data
    return out


def ceiling_of(row: dict):
    """The name of the ceiling the row's fraction divides by (None: no ceiling)."""
    if row.get("fraction_of_ceiling") is None:
        return None
    if row.get("ceiling_name"):
        return row["ceiling_name"]
    # rows written before ceiling_name existed: the ceiling dict says which it was
    ceiling = row.get("ceiling") or {}
    if "sdpa_TFLOPs" in ceiling:
        return "SDPA"
    if "copy_GBps" in ceiling:
        return "copy"
    return "?"


def rate(row: dict) -> str:
    us = row["ours_us"]
    if ceiling_of(row) in (None, "copy") and row.get("bytes"):
        return f"{row['bytes'] / (us * 1e-6) / 1e9:.0f} GB/s"
    if row.get("flops"):
        return f"{row['flops'] / (us * 1e-6) / 1e12:.0f} TFLOP/s"
    return "-"


def _sha(meta: dict) -> str:
    sha = meta.get("git_sha")
    if not sha:
        return "not recorded"
    return sha[:10] + ("+dirty" if meta.get("git_dirty") else "")


def _compiler(meta: dict) -> str:
    build = meta.get("build") or {}
    parts = [f"{label} {build[k]}" for k, label in (("cxx_compiler", "C++"), ("cuda_compiler", "CUDA"))
             if build.get(k)]
    return ", ".join(parts) if parts else "not recorded"


def _date(meta: dict) -> str:
    return str(meta.get("date", "?"))[:10]


def _ops(rows) -> list:
    """The op names of `rows` (the leading identifier: "adaln_rms_norm (per_token)" and
    "fp8_blockwise_gemm[auto]" count as adaln_rms_norm and fp8_blockwise_gemm)."""
    seen = []
    for r in rows:
        op = re.match(r"[A-Za-z0-9_]*", r["op"]).group(0) or r["op"]
        if op not in seen:
            seen.append(op)
    return seen


def default_path(row: dict) -> bool:
    """Rows of what a user gets: `op` or `op[auto]`; `op[<backend>]` forces one backend (kept in
    results.md for comparison, left out of the summary)."""
    m = re.search(r"\[([^\]]*)\]$", row["op"])
    return m is None or m.group(1) == "auto"


def _pct(v: float) -> str:
    return f"{v:.1f}%" if v < 10 else f"{v:.0f}%"


# ---- results.md ------------------------------------------------------------------------------


def family_table(rows) -> str:
    lines = [
        "| op | shape | dtype | ours (us) | rate | % of ceiling | ceiling | best baseline (us) | speedup | note |",
        "|---|---|---|---:|---:|---:|---|---|---:|---|",
    ]
    for r in rows:
        frac = r.get("fraction_of_ceiling")
        bb = r.get("best_baseline")
        best = f"{bb} {r['baselines'][bb]:.2f}" if bb else "-"
        sp = r.get("speedup_vs_best_baseline")
        lines.append(
            f"| {r['op']} | {'x'.join(map(str, r['shape']))} | {r['dtype']} | {r['ours_us']:.2f} | {rate(r)} | "
            f"{'-' if frac is None else f'{100 * frac:.1f}'} | {ceiling_of(r) or '-'} | {best} | "
            f"{'-' if not sp else f'{sp:.2f}x'} | {r.get('note', '').replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def _meta_line(meta: dict) -> str:
    bits = [
        f"{meta.get('gpu', '?')}",
        f"git {_sha(meta)}",
        f"compiler: {_compiler(meta)}",
        f"torch {meta.get('torch', '?')}, CUDA {meta.get('cuda', '?')}",
        f"{meta.get('date', '?')}",
    ]
    clocks = meta.get("clocks") or {}
    if clocks.get("sm_MHz") is not None:
        bits.append(f"{meta.get('sms', '?')} SMs, SM clock {clocks['sm_MHz']:g} MHz (max {clocks.get('max_sm_MHz', '?')}), memory "
                    f"{clocks.get('mem_MHz', '?')} MHz when written")
    if meta.get("copy_ceiling_GBps"):
        bits.append(f"copy ceiling {meta['copy_ceiling_GBps']:.0f} GB/s")
    if meta.get("git_dirty") and meta.get("dirty_reasons"):
        bits.append(f"**dirty** ({'; '.join(meta['dirty_reasons'])}; diff sha256 {meta.get('diff_sha256')})")
    if meta.get("quick"):
        bits.append("**quick mode** (a subset of the shapes)")
    line = "; ".join(bits) + "."
    if meta.get("command"):
        line += f" Command: `{meta['command']}`."
    timing = meta.get("timing")
    if isinstance(timing, dict) and timing:
        line += " Timing: " + "; ".join(f"{k} {v}" for k, v in timing.items()) + "."
    return line


def results_md(results: dict) -> str:
    out = [
        "# Benchmark results\n",
        "Generated by `python3 benchmarks/report.py` from the JSON files next to this one (one per "
        "family, written by `benchmarks/run.py`); do not edit by hand. Each family's numbers come "
        "from one process: the ceilings it divides by were measured in that same process. "
        "Method and ceilings: docs/benchmarking.md.\n",
        "Ceilings:\n",
    ]
    used = sorted({c for d in results.values() for r in d["rows"] for c in [ceiling_of(r)] if c})
    for c in used:
        out.append(f"- **{c}**: {CEILING_MEANING.get(c, 'see the family benchmark docstring')}")
    out.append("\n'speedup' is the best baseline's time over ours (> 1: ours is faster); the baselines "
               "are listed in each row of the JSON.\n")
    for fam, data in results.items():
        out.append(f"\n## {fam}\n")
        out.append(_meta_line(data["meta"]) + "\n")
        out.append(family_table(data["rows"]))
    return "\n".join(out)


# ---- the README's summary --------------------------------------------------------------------


def _range(values, fmt) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt(med)
    return f"{fmt(med)} ({fmt(min(values))} - {fmt(max(values))})"


def summary_table(results: dict, results_md: str = "benchmarks/results/h200/results.md") -> str:
    """One line per (family, ceiling): how close to the ceiling and how it compares with the
    best baseline of the same run, as median (min - max) over the family's rows (default
    backend only, see `default_path`). `results_md`: the per-row file the heading links to."""
    lines = [
        "| family | ops | rows | ceiling | % of ceiling | best baseline (most rows) | speedup vs best baseline | faster in | measured |",
        "|---|---|---:|---|---:|---|---:|---:|---|",
    ]
    for fam, data in results.items():
        groups = {}
        for r in filter(default_path, data["rows"]):
            groups.setdefault(ceiling_of(r) or "-", []).append(r)
        for ceiling, rows in groups.items():
            fr = [100 * r["fraction_of_ceiling"] for r in rows if r.get("fraction_of_ceiling") is not None]
            sp = [r["speedup_vs_best_baseline"] for r in rows if r.get("speedup_vs_best_baseline")]
            faster = f"{sum(s > 1.0 for s in sp)} of {len(sp)}" if sp else "-"
            names = [r["best_baseline"] for r in rows if r.get("best_baseline")]
            usual = max(sorted(set(names)), key=names.count) if names else "-"
            meta = data["meta"]
            when = _date(meta) + (", quick" if meta.get("quick") else "")
            lines.append(
                f"| {fam} | {', '.join(f'`{o}`' for o in _ops(rows))} | {len(rows)} | {ceiling} | "
                f"{_range(fr, _pct)} | {usual} | {_range(sp, lambda v: f'{v:.2f}x')} | {faster} | {when} |"
            )
    gpus = sorted({d["meta"].get("gpu", "?") for d in results.values()})
    head = (f"Measured on {', '.join(gpus)}; median (min - max) over each family's rows (the "
            "default backend; rows that force one backend are in results.md). "
            "Per-row numbers, the baselines and each run's metadata (commit, build, command): "
            f"[{results_md}]({results_md}).\n\n")
    return head + "\n".join(lines) + "\n"


# ---- generated blocks in the docs ------------------------------------------------------------


def doc_files(root=ROOT) -> list:
    """The files whose generated blocks the generator owns: README.md and docs/**/*.md."""
    return [Path(root) / "README.md", *sorted((Path(root) / "docs").rglob("*.md"))]


def render_blocks(text: str, folder=DEFAULT_RESULTS, cache=None) -> str:
    """`text` with every generated block's body rewritten from the records of `folder`. A block
    keeps its form: one whose body starts with a newline is a block (newline, the generator's
    lines, newline), any other an inline figure. An unknown name is an error."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import figures

    records = figures.Records(folder)
    cache = {} if cache is None else cache

    def sub(m):
        name = m.group("name")
        if name not in figures.BLOCKS:
            raise SystemExit(f"report.py: unknown generated block '{name}' (known: {', '.join(figures.BLOCKS)})")
        if name not in cache:
            cache[name] = figures.BLOCKS[name](records)
        out = cache[name]
        body = "\n" + out.strip("\n") + "\n" if m.group("body").startswith("\n") else out.strip()
        return f"<!-- generated: {name} -->{body}<!-- /generated -->"

    return BLOCK.sub(sub, text)


def stale_blocks(files, folder=DEFAULT_RESULTS) -> list:
    """(path, block name) for every generated block whose committed body differs from its
    generator's output."""
    cache, out = {}, []
    for f in files:
        text = Path(f).read_text()
        new = render_blocks(text, folder, cache)
        if new != text:
            old_blocks = {m.start(): m for m in BLOCK.finditer(text)}
            new_blocks = list(BLOCK.finditer(new))
            for (_, a), b in zip(sorted(old_blocks.items()), new_blocks):
                if a.group(0) != b.group(0):
                    out.append((str(f), a.group("name")))
    return out


# ---- plot ------------------------------------------------------------------------------------


def plot(results: dict, path) -> bool:
    """Two panels, one column of dots per family (default-backend rows, as in the summary):
    % of ceiling, and speedup over the best baseline (log scale). Returns False (and writes
    nothing) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fams = list(results)
    if not fams:
        return False
    colors = {"copy": "tab:blue", "SDPA": "tab:orange", "FP8 matmul": "tab:green"}
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(max(7, 0.9 * len(fams) + 2), 7), sharex=True)
    seen = set()
    for i, fam in enumerate(fams):
        rows = [r for r in results[fam]["rows"] if default_path(r)]
        for j, r in enumerate(rows):
            x = i + (j / max(len(rows) - 1, 1) - 0.5) * 0.6  # spread the family's rows
            c = ceiling_of(r)
            if c is not None:
                label = None if c in seen else f"% of {c}"
                seen.add(c)
                a1.plot(x, 100 * r["fraction_of_ceiling"], "o", ms=3, color=colors.get(c, "tab:gray"), label=label)
            if r.get("speedup_vs_best_baseline"):
                a2.plot(x, r["speedup_vs_best_baseline"], "o", ms=3, color="tab:purple")
    a1.axhline(100, color="k", lw=0.8)
    a1.set_ylabel("% of the ceiling (same run)")
    a1.legend(fontsize=8, loc="lower right")
    a2.set_yscale("log")
    a2.axhline(1.0, color="k", lw=0.8)
    a2.set_ylabel("speedup vs best baseline")
    a2.set_xticks(range(len(fams)))
    a2.set_xticklabels(fams, rotation=30, ha="right")
    gpus = sorted({results[f]["meta"].get("gpu", "?") for f in fams})
    a1.set_title(f"ltx-kernels on {', '.join(gpus)}: one dot per benchmarked row (default backend)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---- entry points ----------------------------------------------------------------------------


def write_results(folder, with_plot: bool = True) -> dict:
    """Regenerates results.md (and plot.png) in `folder` from every family JSON there."""
    results = load_results(folder)
    (Path(folder) / "results.md").write_text(results_md(results))
    if with_plot and not plot(results, Path(folder) / "plot.png"):
        print("report.py: plot skipped (matplotlib is not installed)")
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(DEFAULT_RESULTS), help="folder holding <family>.json")
    ap.add_argument("--readme", "--docs", dest="readme", action="store_true",
                    help="also rewrite every generated block of README.md and docs/**/*.md")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if results.md or a generated block differs from the JSONs")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)
    folder = Path(a.results)
    results = load_results(folder)
    if not results:
        print(f"report.py: no benchmark JSON in {folder}")
        return 1
    md = results_md(results)
    docs = folder.resolve() == DEFAULT_RESULTS.resolve()  # the docs cite the committed records only
    if a.check:
        stale = []
        if not (folder / "results.md").exists() or (folder / "results.md").read_text() != md:
            stale.append(str(folder / "results.md"))
        if docs:
            stale += [f"{f}: block '{name}'" for f, name in stale_blocks(doc_files(), folder)]
        for s in stale:
            print(f"report.py: {s} is out of date; run `python3 benchmarks/report.py --readme`")
        return 1 if stale else 0
    (folder / "results.md").write_text(md)
    if not a.no_plot and not plot(results, folder / "plot.png"):
        print("report.py: plot skipped (matplotlib is not installed)")
    written = []
    if a.readme and docs:
        cache = {}
        for f in doc_files():
            text = f.read_text()
            new = render_blocks(text, folder, cache)
            if new != text:
                f.write_text(new)
                written.append(str(f.relative_to(ROOT)))
    print(f"report.py: {len(results)} families -> {folder / 'results.md'}"
          + (f"; blocks rewritten in {', '.join(written)}" if written else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
