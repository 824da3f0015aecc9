"""The step-cache table from the JSON files of `e2e_ltx_video.py / e2e_ltx2.py --cache ...`, so
that no number is typed by hand.

    python3 benchmarks/e2e_cache_report.py                  # print the table of results/h200/e2e_cache_*.json
    python3 benchmarks/e2e_cache_report.py A.json B.json    # print the table of these files
    python3 benchmarks/e2e_cache_report.py --docs           # ... and rewrite the docs' e2e-cache blocks
    python3 benchmarks/e2e_cache_report.py --check          # exit 1 if an e2e-cache block is stale

One section per file: the run's model, shape, steps, GPU, versions, warm-up and timed loops, then
one line per variant: ms per step as each timed loop's mean step (cached steps included), the
median over the timed loops with the fastest and slowest loop beside it, speedup over the
uncached eager loop of the same run, the share of the last block's feed-forward / attention
calls that ran, the final latents' relative L2 error against the uncached eager run, and which
attention ran where a variant asked for ltx_kernels' kernel (a row that asked and whose record
does not say is left out). The docs hold the table in `<!-- generated: e2e-cache -->` blocks
(benchmarks/report.py, benchmarks/figures.py). Standard library only.
"""

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_GLOB = str(HERE / "results" / "h200" / "e2e_cache_*.json")
BLOCK = "e2e-cache"


def load(paths):
    out = []
    for p in sorted(paths):
        data = json.loads(Path(p).read_text())
        if isinstance(data, dict) and data.get("cache") and isinstance(data.get("rows"), list):
            out.append((Path(p).name, data))
    return out


def _num(v, fmt):
    return "-" if v is None or v != v else fmt(v)  # v != v: NaN


def loops(r) -> str:
    """The fastest and slowest timed loop's mean step, or why there is no spread."""
    means = r.get("run_mean_ms") or []
    if len(means) > 1:
        return f"{min(means):.1f} - {max(means):.1f}"
    return "one loop"


def route(r):
    """Which attention ran, for a variant that asked for ltx_kernels' kernel ("+attn-MODE"): None
    if it did not ask, False if it asked and the record does not say (figures.route_label, which
    the generated tables use too)."""
    sys.path.insert(0, str(HERE))
    from figures import route_label

    return route_label(r)


def section(name: str, d: dict) -> str:
    rows = d["rows"]
    eager = next((r for r in rows if r["variant"] == "eager" and "error" not in r), None)
    base = eager["mean_step_ms"] if eager else None
    full = eager["last_block_calls"] if eager else 0
    timed = d.get("timed_runs") or max((len(r.get("run_mean_ms") or []) for r in rows), default=0) or 1
    head = (f"**{d.get('model', '?')}**: {d.get('shape', '?')}; {d.get('steps', '?')} steps, CFG "
            f"{d.get('guidance_scale', '?')}, {d.get('dtype', '?')}; weights: {d.get('weights', '?')}; "
            f"{d.get('gpu') or d.get('device', '?')}, torch {d.get('torch', '?')}, diffusers "
            f"{d.get('diffusers', '?')}; caches {', '.join(d['cache'])}"
            + (f" (threshold {d['cache_threshold']})" if d.get("cache_threshold") is not None else "")
            + f"; {d.get('warmup_iterations', '?')} warm-up loop(s), {timed} timed loop(s) per variant. "
              f"From `{name}`.\n")
    lines = [head,
             "| variant | ms/step (mean of a loop, median over loops) | timed loops | vs uncached eager | "
             "last block ran | rel. L2 vs uncached eager | attention ran on |",
             "|---|---:|---:|---:|---:|---:|---|"]
    dropped = []
    for r in rows:
        if "error" in r:
            why = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", r["error"].split(": ", 1)[-1])[:90]
            lines.append(f"| {r['variant']} | failed: {why.replace('|', '/')} | | | | | |")
            continue
        att = route(r)
        if att is False:
            dropped.append(r["variant"])
            continue
        ms = r["mean_step_ms"]
        sp = _num(base / ms if base and ms else None, lambda v: f"{v:.2f}x")
        ran = _num(100 * r["last_block_calls"] / full if full else None, lambda v: f"{v:.0f}%")
        err = _num(r["rel_l2_vs_eager"], lambda v: f"{v:.2e}")
        lines.append(f"| {r['variant']} | {ms:.1f} | {loops(r)} | {sp} | {ran} | {err} | {att or 'SDPA'} |")
    if dropped:
        lines.append(f"\nLeft out: {', '.join(dropped)}: they asked for ltx_kernels' attention and the record "
                     "does not say which attention ran.")
    return "\n".join(lines) + "\n"


def table(results) -> str:
    if not results:
        return "(no results yet)\n"
    return "\n".join(section(n, d) for n, d in results)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help=f"JSON files (default {DEFAULT_GLOB})")
    ap.add_argument("--docs", action="store_true",
                    help="rewrite the e2e-cache blocks of README.md and docs/**/*.md (from the committed records)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if an e2e-cache block is stale")
    a = ap.parse_args(argv)
    if a.check or a.docs:
        sys.path.insert(0, str(HERE))
        import report

        if a.check:
            stale = [f for f, name in report.stale_blocks(report.doc_files()) if name == BLOCK]
            for d in stale:
                print(f"e2e_cache_report.py: {d} is out of date; run `python3 benchmarks/e2e_cache_report.py --docs`")
            return 1 if stale else 0
        cache = {}
        for d in report.doc_files():
            text = d.read_text()
            new = report.BLOCK.sub(lambda m: report.render_blocks(m.group(0), cache=cache)
                                   if m.group("name") == BLOCK else m.group(0), text)
            if new != text:
                d.write_text(new)
    files = a.files or sorted(Path(DEFAULT_GLOB).parent.glob(Path(DEFAULT_GLOB).name))
    print(table(load(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
