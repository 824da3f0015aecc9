"""Every performance figure of README.md and docs/*.md, computed from the committed records.

The docs hold each figure inside a marker block that benchmarks/report.py rewrites:

    <!-- generated: NAME -->
    ...what BLOCKS[NAME](records) returns...
    <!-- /generated -->

(or inline, `<!-- generated: NAME -->1.23x<!-- /generated -->`, for a figure inside a sentence).
benchmarks/check_docs.py fails when a committed block differs from what its generator makes of
the records, and when prose outside the blocks carries a performance number.

Records: the `<family>.json` files of benchmarks/results/<gpu>/ (benchmarks/run.py), the
end-to-end records `e2e_ltx_video.json`, `e2e_ltx2.json` and `e2e_cache_*.json` there
(benchmarks/e2e_ltx_video.py / e2e_ltx2.py), and the attention key-count sweep named by
ATTENTION_SWEEP (tools/tune/attention_kv_sweep.py). Standard library only, except the blocks that
apply the compile policy's own rules (they load integrations/_compile_policy.py, which needs
torch).
"""

import ast
import importlib.util
import json
import math
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # report.py and e2e_cache_report.py, beside this file
    sys.path.insert(0, str(HERE))
ROOT = HERE.parent
DEFAULT_RESULTS = HERE / "results" / "h200"
POLICY_FILE = ROOT / "torch-ext" / "ltx_kernels" / "integrations" / "_compile_policy.py"
# The attention processors' key-count sweep (128-2688 keys, with and without a key mask): the
# measurements below 2688 keys behind use_kernel_attention. Relative to the results folder.
ATTENTION_SWEEP = "attention_kv_sweep.json"
# Differences smaller than this fraction count as a tie: repeated runs of one benchmark row move
# by about this much (every decision checked by benchmarks/check_policy.py uses it too).
NOISE = 0.02


# ---- reading --------------------------------------------------------------------------------


class Records:
    """The records of one results folder, read on demand."""

    def __init__(self, folder=DEFAULT_RESULTS):
        self.folder = Path(folder)
        self._cache = {}

    def json(self, rel: str):
        """The record at `rel` (relative to the folder), or None."""
        if rel not in self._cache:
            try:
                self._cache[rel] = json.loads((self.folder / rel).read_text())
            except (OSError, ValueError):
                self._cache[rel] = None
        return self._cache[rel]

    def rows(self, family: str) -> list:
        d = self.json(f"{family}.json")
        return d.get("rows", []) if isinstance(d, dict) else []

    def families(self) -> dict:
        """family -> record, for every benchmark family JSON (report.load_results' rule)."""
        out = {}
        for p in sorted(self.folder.glob("*.json")):
            d = self.json(p.name)
            rows = d.get("rows") if isinstance(d, dict) else None
            if not isinstance(d, dict) or not isinstance(d.get("meta"), dict) or not isinstance(rows, list):
                continue
            if all(isinstance(r, dict) and "op" in r and "ours_us" in r for r in rows):
                out[p.stem] = d
        return out


def load_policy():
    """integrations/_compile_policy.py as the source tree has it (needs torch; no build), read
    with its knobs (LTX_KERNELS_COMPILE_*) unset so that the committed policy is what is read."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("LTX_KERNELS_COMPILE_")}
    try:
        spec = importlib.util.spec_from_file_location("_ltx_compile_policy_source", POLICY_FILE)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        os.environ.update(saved)


def policy_constants() -> dict:
    """The literal constants of _compile_policy.py (no torch needed): name -> value."""
    out = {}
    for node in ast.parse(POLICY_FILE.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


# ---- formatting -----------------------------------------------------------------------------


def x(v) -> str:
    return f"{v:.2f}x"


def span(values, fmt=x) -> str:
    """'a - b' over values (one value: itself; none: '-')."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} - {fmt(hi)}"


def shape(s) -> str:
    return "[" + ", ".join(map(str, s)) + "]"


def ratio(row: dict, baseline: str):
    """The baseline's time over ours (> 1: ours is faster), or None."""
    b = (row.get("baselines") or {}).get(baseline)
    return b / row["ours_us"] if b and row.get("ours_us") else None


def base_op(op: str) -> str:
    """'adaln_rms_norm (per_token)' -> 'adaln_rms_norm'; 'rms_norm -> fp8' stays as it is."""
    return op.split(" (")[0]


def footnote(lines) -> str:
    return "\n" + "\n".join(lines) + "\n" if lines else ""


# ---- the attention kernel against SDPA --------------------------------------------------------

_QUANT_PASS = re.compile(r"quanti[sz]\w* pass \(?(\d+(?:\.\d+)?) us")


def quantize_pass_us(row: dict):
    """The FP8 quantization pass timed beside an attention row (its note), or None."""
    m = _QUANT_PASS.search(row.get("note", ""))
    return float(m.group(1)) if m else None


# The folder beside the results folder that holds the newer records: the attention records
# (attention.json, ATTENTION_SWEEP, SCHEDULE_RECORD), which time the current attention kernels
# (the key bias loaded with K, the persistent schedule for few keys) that the H200's predate, and
# the end-to-end runs beside the torch._scaled_mm peers with their step profiles (E2E_RECORDS_H100).
H100_FOLDER = "h100"


def h100_records(records: Records, needs: str = "") -> Optional[Records]:
    """The records of H100_FOLDER beside `records`' folder (None where it does not exist or lacks
    the file `needs`); `records` itself when that is the folder."""
    alt = records.folder.parent / H100_FOLDER
    if alt.resolve() == records.folder.resolve():
        return records
    return Records(alt) if alt.is_dir() and (not needs or (alt / needs).exists()) else None


def attention_records(records: Records) -> Records:
    return h100_records(records, "attention.json") or records


def attention_rows(records: Records) -> list:
    """attention.json, per shape: ours in bf16 ([B, S, H, D], the processors' layout) and FP8
    (k factors per 128 keys, per key), each against the fastest SDPA backend of the run, FP8 also
    with its quantization pass added."""
    records = attention_records(records)
    out = {}
    for r in records.rows("attention"):
        key = tuple(r["shape"])
        b, sq, skv, h, d = r["shape"]
        note = r.get("note", "")
        e = out.setdefault(key, {"shape": r["shape"], "name": note.split(";")[0], "head_dim": d, "keys": skv,
                                 "masked": "cross" in note or "text keys" in note})
        variant = r["op"].split(" ", 1)[1]
        if variant.startswith("fp16"):  # fp16 inputs against cuDNN's fp16 SDPA of the same run
            f16 = r["baselines"].get("sdpa_cudnn")
            if f16:
                e["fp16"] = f16 / r["ours_us"]
            continue
        sdpa = min(v for k, v in r["baselines"].items() if k.startswith("sdpa_"))
        e["sdpa_us"] = sdpa
        if variant == "bf16_bshd":
            e["bf16"] = sdpa / r["ours_us"]
        elif variant.startswith("fp8_kblock"):
            kind = "fp8_" + variant[len("fp8_kblock"):]
            e[kind] = sdpa / r["ours_us"]
            q = quantize_pass_us(r)
            if q is not None:
                e[kind + "_with_pass"] = sdpa / (r["ours_us"] + q)
                e["pass_us"] = q
    return list(out.values())


def attention_points(records: Records) -> list:
    """Every measured (mode, head dim, keys, masked) -> ours over SDPA as the attention
    processors call them: "bf16" = ltx_kernels.attention in bf16; "fp8" = quantize_attention_fp8
    + the FP8 kernel (k factors per 128 keys), the pass included. From attention.json and the
    key-count sweep (ATTENTION_SWEEP)."""
    records = attention_records(records)
    pts = []
    for e in attention_rows(records):
        src = "attention.json"
        if "bf16" in e:
            pts.append(dict(mode="bf16", head_dim=e["head_dim"], keys=e["keys"], masked=e["masked"],
                            speedup=e["bf16"], source=src))
        if "fp8_128_with_pass" in e:
            pts.append(dict(mode="fp8", head_dim=e["head_dim"], keys=e["keys"], masked=e["masked"],
                            speedup=e["fp8_128_with_pass"], source=src))
    sweep = records.json(ATTENTION_SWEEP)
    for r in (sweep or {}).get("rows", []):
        src = Path(ATTENTION_SWEEP).name
        for mode, ours, sdpa, masked in (("bf16", "ours_bf16_us", "sdpa_us", True),
                                         ("fp8", "ours_fp8_us", "sdpa_us", True),
                                         ("bf16", "ours_bf16_nomask_us", "sdpa_nomask_us", False)):
            if r.get(ours) and r.get(sdpa) and r.get(ours.replace("_us", "_ok"), True):
                pts.append(dict(mode=mode, head_dim=r["D"], keys=r["Skv"], masked=masked,
                                speedup=r[sdpa] / r[ours], source=src))
    return pts


def block_attention_kernel(records: Records) -> str:
    records = attention_records(records)
    rows = attention_rows(records)
    if not rows:
        return "(no attention record)\n"
    lines = ["| shape (B, Sq, Skv, H, D) | | bf16 | FP8, k factors per 128 keys | with its quantization pass | "
             "FP8, a factor per key |",
             "|---|---|---:|---:|---:|---:|"]
    for e in rows:
        lines.append(f"| {shape(e['shape'])} | {e['name']}{' (key mask)' if e['masked'] else ''} | "
                     f"{x(e['bf16']) if 'bf16' in e else '-'} | {x(e['fp8_128']) if 'fp8_128' in e else '-'} | "
                     f"{x(e['fp8_128_with_pass']) if 'fp8_128_with_pass' in e else '-'} | "
                     f"{x(e['fp8_1']) if 'fp8_1' in e else '-'} |")
    meta = (records.json("attention.json") or {}).get("meta", {})
    return (f"Ours over the fastest PyTorch SDPA backend of the same run (> 1.00x: ours is faster), "
            f"{meta.get('gpu', '?')}, git {meta.get('git_sha', '?')[:10]}, "
            f"`benchmarks/results/{records.folder.name}/attention.json`:\n\n" + "\n".join(lines) + "\n")


def _fp8_self_span(records, kind):
    return span([e[kind] for e in attention_rows(records) if kind in e and not e["masked"]])


def block_attention_fp8_per_key(records):
    return _fp8_self_span(records, "fp8_1")


def block_attention_fp8_per_block(records):
    return _fp8_self_span(records, "fp8_128")


def block_attention_routing(records: Records) -> str:
    """The rule of use_kernel_attention with the measurements on each side of it."""
    c = policy_constants()
    pts = attention_points(records)
    lines = ["| `attention=` | runs ltx_kernels.attention for | measured there | measured elsewhere |",
             "|---|---|---:|---|"]
    rules = (("MIN_KERNEL_ATTENTION_KEYS", "KERNEL_ATTENTION_HEAD_DIMS", False),
             ("MIN_MASKED_KERNEL_ATTENTION_KEYS", "MASKED_KERNEL_ATTENTION_HEAD_DIMS", True))
    for mode in ("bf16", "fp8"):
        for keys_name, dims_name, masked in rules:
            keys, dims = c.get(keys_name, {}), c.get(dims_name, {})
            mine = [p for p in pts if p["mode"] == mode and p["masked"] == masked]
            if mode not in keys:
                if masked and mine:
                    lines.append(f"| `\"{mode}\"` | no attention with a key mask (those run as with `\"bf16\"`) | - | "
                                 f"a key mask: {span([p['speedup'] for p in mine])} |")
                continue
            inside = [p for p in mine if p["head_dim"] in dims[mode] and p["keys"] >= keys[mode]]
            rest = []
            below = [p for p in mine if p["head_dim"] in dims[mode] and p["keys"] < keys[mode]]
            if below:
                ks = sorted({p["keys"] for p in below})
                rest.append(f"{'fewer keys' if len(ks) > 1 else 'keys'} ({ks[0]}{'-' + str(ks[-1]) if len(ks) > 1 else ''}): "
                            f"{span([p['speedup'] for p in below])}")
            other_dims = [p for p in mine if p["head_dim"] not in dims[mode]]
            for d in sorted({p["head_dim"] for p in other_dims}):
                rest.append(f"head dim {d}: {span([p['speedup'] for p in other_dims if p['head_dim'] == d])}")
            what = (f"{'attention with a key mask' if masked else 'unmasked attention'}, head dim "
                    f"{' or '.join(map(str, dims[mode]))}, >= {keys[mode]} keys"
                    + (" (the quantization pass included)" if mode == "fp8" else ""))
            lines.append(f"| `\"{mode}\"` | {what} | {span([p['speedup'] for p in inside]) if inside else '-'} | "
                         f"{'; '.join(rest) or '-'} |")
    srcs = sorted({p["source"] for p in pts})
    folder = attention_records(records).folder.name
    return ("Ours over PyTorch's SDPA (cuDNN), each as the processors call it, from "
            + ", ".join(f"`{folder}/{s}`" for s in srcs) + ":\n\n" + "\n".join(lines) + "\n")


# ---- one op against torch.compile --------------------------------------------------------------

MEMBOUND_FAMILIES = ("norm", "fused_norm", "activation", "fp8", "fused_fp8", "rope", "attention_quant", "lowbit",
                     "distributed")


def compile_ratios(records: Records, op: str) -> list:
    """(row, ours over torch.compile) for every benchmark row of `op` (the policy's name: the
    row's op without its variant suffix), FP8-output rows excluded."""
    out = []
    for fam in MEMBOUND_FAMILIES:
        for r in records.rows(fam):
            if base_op(r["op"]) == op and ratio(r, "torch.compile") is not None:
                out.append((r, ratio(r, "torch.compile")))
    return out


def block_compile_one_op(records: Records) -> str:
    policy_ops = ["rms_norm", "add_rms_norm", "adaln_rms_norm", "gated_residual_adaln_rms_norm", "gelu_tanh",
                  "silu_and_mul", "gelu_and_mul", "gelu_and_mul(tanh)", "gated_attention",
                  "quantize_fp8_per_token_group"]
    lines = ["| op | rows | ours over torch.compile | median |", "|---|---:|---:|---:|"]
    for op in policy_ops:
        rs = [v for _, v in compile_ratios(records, op)]
        if rs:
            lines.append(f"| `{op}` | {len(rs)} | {span(rs)} | {x(statistics.median(rs))} |")
    return ("One op at a time, every benchmark row (LTX and LLM shapes, bf16 / fp16 / fp32; "
            "`benchmarks/results/h200/results.md`):\n\n" + "\n".join(lines) + "\n")


def block_compile_rules(records: Records) -> str:
    """The per-input rules of the compile policy, applied to the benchmark rows they decide."""
    import torch

    pol = load_policy()
    lines = ["| rule | op | rows it keeps our kernel for | ours over torch.compile there | rows it leaves to "
             "Inductor | ours over torch.compile there |", "|---|---|---|---:|---|---:|"]

    def meta_tensor(r):
        return torch.empty(r["shape"], dtype=getattr(torch, r["dtype"]), device="meta")

    for op, rule in pol.COMPILED_RULES.items():
        kept, left = [], []
        for r, v in compile_ratios(records, op):
            (kept if rule(meta_tensor(r)) else left).append((r, v))
        if not kept and not left:
            continue

        def rows_of(items):
            return "; ".join(f"{shape(r['shape'])} {r['dtype']}" for r, _ in items) or "-"

        lines.append(f"| `{rule.__name__}` | `{op}` | {rows_of(kept)} | {span([v for _, v in kept])} | "
                     f"{rows_of(left)} | {span([v for _, v in left])} |")
    for op, rule in pol.EAGER_RULES.items():
        for r in records.rows("activation"):
            if r["op"] != op:
                continue
            fused = next((k for k in r["baselines"] if k.startswith("F.")), None)
            v = ratio(r, fused) if fused else None
            if v is not None and not rule(meta_tensor(r)):
                lines.append(f"| `{rule.__name__}` (eager) | `{op}` | - | - | {shape(r['shape'])} {r['dtype']}: "
                             f"PyTorch's `{fused}` | {x(v)} (ours over `{fused}`) |")
    return "\n".join(lines) + "\n"


def block_slower_than_compile(records: Records) -> str:
    """Every op with a benchmark row where torch.compile of the reference composition is faster."""
    lines = ["| op | rows | slower than torch.compile | there | faster or equal | there |",
             "|---|---:|---:|---:|---:|---:|"]
    for fam in MEMBOUND_FAMILIES:
        ops = []
        for r in records.rows(fam):
            if r["op"] not in ops:
                ops.append(r["op"])
        for op in ops:
            rs = [ratio(r, "torch.compile") for r in records.rows(fam) if r["op"] == op]
            rs = [v for v in rs if v is not None]
            slow = [v for v in rs if v < 1.0]
            if slow:
                fast = [v for v in rs if v >= 1.0]
                lines.append(f"| `{op}` | {len(rs)} | {len(slow)} | {span(slow)} | {len(fast)} | {span(fast)} |")
    return "\n".join(lines) + "\n"


def block_gelu_rows(records: Records) -> str:
    lines = ["| dtype | shape | % of the copy rate | ours over `F.gelu` | ours over torch.compile |",
             "|---|---|---:|---:|---:|"]
    for r in records.rows("activation"):
        if r["op"] == "gelu":
            frac = r.get("fraction_of_ceiling")
            lines.append(f"| {r['dtype']} | {shape(r['shape'])} | {'-' if frac is None else f'{100 * frac:.0f}%'} | "
                         f"{x(ratio(r, 'F.gelu'))} | {x(ratio(r, 'torch.compile'))} |")
    return "\n".join(lines) + "\n"


# ---- GEMM ------------------------------------------------------------------------------------


def _tflops(r, us):
    return r["flops"] / (us * 1e-6) / 1e12


def block_gemm_summary(records: Records) -> str:
    rows = records.rows("gemm")
    plain = [r for r in rows if r["op"] == "fp8_blockwise_gemm" and "cublaslt_blockwise" in r["baselines"]]
    ltx = [r for r in plain if r.get("note", "").startswith(("ltxv", "ltx2"))]
    if not ltx:
        return "(no GEMM record)\n"
    vs = [ratio(r, "cublaslt_blockwise") for r in ltx]
    geo = math.exp(sum(map(math.log, vs)) / len(vs))
    out = [f"- our sm_90a FP8 GEMM (`backend=\"sm90\"`) over cuBLASLt's blockwise-scaled FP8 GEMM, the "
           f"{len(ltx)} LTX linear shapes: {x(geo)} in geometric mean, {span(vs)} per shape, ahead at "
           f"{sum(v > 1.0 for v in vs)};"]
    for r in plain:
        if r not in ltx:
            out.append(f"- {shape(r['shape'])} ({r['note'].split(';')[0]}): ours {_tflops(r, r['ours_us']):.0f} "
                       f"TFLOP/s, cuBLASLt {_tflops(r, r['baselines']['cublaslt_blockwise']):.0f} TFLOP/s;")
    out[-1] = out[-1][:-1] + "."
    return "\n".join(out) + "\n"


def block_gemm_epilogues(records: Records) -> str:
    rows = [r for r in records.rows("gemm") if r["op"].startswith("fp8_gemm+")]
    if not rows:
        return "(no GEMM epilogue record)\n"
    lines = ["| epilogue | M x N x K | fused | the GEMM, then the separate op | fused over separate |",
             "|---|---|---:|---:|---:|"]
    for r in rows:
        sep = r["baselines"].get("separate")
        if not sep:
            continue
        # the note names the separate op: "...; GEMM + torch.addcmul 87.7 us; ..."
        what = next((part.strip().rsplit(" ", 2)[0] for part in r.get("note", "").split(";")
                     if part.strip().startswith("GEMM +")), "GEMM + separate op")
        lines.append(f"| `{r['op'][len('fp8_gemm+'):]}` | {' x '.join(map(str, r['shape']))} | {r['ours_us']:.1f} us | "
                     f"{sep:.1f} us ({what}) | {x(ratio(r, 'separate'))} |")
    return ("Our sm_90a FP8 GEMM with the epilogue fused against the same GEMM followed by the separate "
            "op (`benchmarks/results/h200/gemm.json`):\n\n" + "\n".join(lines) + "\n")


# ---- the performance summary table (README) --------------------------------------------------


def block_perf_table(records: Records) -> str:
    import report

    return report.summary_table(report.load_results(records.folder))


# ---- end to end -------------------------------------------------------------------------------

E2E_RECORDS = ("e2e_ltx_video.json", "e2e_ltx2.json")
E2E_RECORDS_H100 = ("e2e_ltx_video.json", "e2e_ltx_video_121x720x1280.json")


def attention_asked(variant: str):
    m = re.search(r"\+attn-(\w+)", variant)
    return m.group(1) if m else None


def route_label(row: dict):
    """What ran the attention of an end-to-end row: None when the row did not ask for our kernel;
    the recorded route otherwise; False when the row asked and its record does not say (such
    rows are left out of the tables: they cannot be shown as results of our kernel)."""
    mode = attention_asked(row["variant"])
    if mode is None:
        return None
    counts = row.get("attention_calls")
    if not counts:
        return False
    k, s = counts.get("ltx_kernels", 0), counts.get("sdpa", 0)
    if k == 0:
        return "SDPA: the routing rule sent every call there"
    if mode == "fp8" and "fp8" in counts:  # the FP8 mode runs the 16-bit kernel where FP8 does not pay
        f8 = min(counts["fp8"], k)
        parts = ([f"ours (fp8) for {f8}"] if f8 else []) + ([f"ours (16-bit) for {k - f8}"] if k > f8 else [])
        parts += [f"SDPA for {s}"] if s else []
        return f"{', '.join(parts)} of {k + s} calls"
    return f"ours ({mode}) for {k} of {k + s} calls" if s else f"ours ({mode})"


def _run_span(row, key="spread_ms"):
    lo_hi = row.get(key)
    if lo_hi:
        return f"{lo_hi[0]:.1f} - {lo_hi[1]:.1f}"
    runs = row.get("run_median_ms")
    if runs and len(runs) > 1:
        return f"{min(runs):.1f} - {max(runs):.1f}"
    return "one run"


def _e2e_head(name, d) -> str:
    runs = d.get("timed_runs") or max((len(r.get("run_median_ms") or []) for r in d.get("rows", [])), default=0)
    return (f"**{d.get('model', '?')}** (`{name}`): {d.get('shape', '?')}; {d.get('steps', '?')} steps, CFG "
            f"{d.get('guidance_scale', '?')}, {d.get('dtype', '?')}; {d.get('weights', '?')}; "
            f"{d.get('gpu') or d.get('device', '?')}, torch {d.get('torch', '?')}, diffusers "
            f"{d.get('diffusers', '?')}; {d.get('warmup_iterations', '?')} warm-up loop(s), {runs or '?'} timed "
            f"loop(s) per variant.\n")


def block_e2e_steps(records: Records, names=E2E_RECORDS) -> str:
    out = []
    for name in names:
        d = records.json(name)
        if not d or not d.get("rows"):
            continue
        rows = [r for r in d["rows"] if "error" not in r]
        comp = next((r["per_step_ms"] for r in rows if r["variant"] == "compile"), None)
        lines = [_e2e_head(name, d),
                 "| variant | ms/step (median) | timed loops' medians | compile's time over it | attention ran on |",
                 "|---|---:|---:|---:|---|"]
        dropped = []
        for r in rows:
            route = route_label(r)
            if route is False:
                dropped.append(r["variant"])
                continue
            lines.append(f"| {r['variant']} | {r['per_step_ms']:.1f} | {_run_span(r)} | "
                         f"{x(comp / r['per_step_ms']) if comp else '-'} | {route or 'SDPA'} |")
        note = []
        peers = [r for r in rows if r["variant"].startswith("peer:")]
        ours = [r for r in rows if r["variant"].startswith("optimized") and route_label(r) is not False]
        if peers and ours:
            bp = min(peers, key=lambda r: r["per_step_ms"])
            bo = min(ours, key=lambda r: r["per_step_ms"])
            note.append(f"Fastest of ours: {bo['variant']} ({bo['per_step_ms']:.1f} ms/step); fastest peer: "
                        f"{bp['variant']} ({bp['per_step_ms']:.1f}); the peer's time over ours: "
                        f"{x(bp['per_step_ms'] / bo['per_step_ms'])}.")
        if dropped:
            note.append(f"Left out: {', '.join(dropped)}: they asked for ltx_kernels' attention and the record "
                        "does not say which attention ran (rows record it as `attention_calls`).")
        out.append("\n".join(lines) + "\n" + footnote(note))
    return "\n".join(out) if out else "(no end-to-end record)\n"


def block_e2e_steps_h100(records: Records) -> str:
    """The end-to-end tables of the H100 folder (the runs beside the `_scaled_mm` peers)."""
    alt = h100_records(records)
    return block_e2e_steps(alt, E2E_RECORDS_H100) if alt else "(no H100 folder)\n"


def _profile_columns(rec: dict):
    """(GEMM, attention, glue ms, ms moved from attention to glue) of a profile_e2e_step.py record:
    GEMM = every gemm group, glue = Triton, ltx_kernels' other kernels and the rest. Inductor names
    its kernels after the ops they fuse, so a Triton kernel's name can mention attention; those of
    the record's top list that a record put in the attention group are counted as glue."""
    g = rec.get("groups", {})
    gemm = sum(v for k, v in g.items() if k.startswith("gemm"))
    attn = g.get("attention", 0.0) + g.get("attention (ours)", 0.0)
    glue = sum(v for k, v in g.items() if not k.startswith("gemm") and not k.startswith("attention"))
    moved = sum(ms for name, ms in rec.get("top", []) if name.lower().startswith("triton") and "attention" in name.lower())
    moved = min(moved, g.get("attention", 0.0))
    return gemm, attn - moved, glue + moved, moved


def block_e2e_profile(records: Records) -> str:
    """One denoising step's GPU time by kernel kind (benchmarks/profile_e2e_step.py records in
    h100/experiments), beside the step's wall time from the end-to-end record where that is of the
    profile's commit."""
    alt = h100_records(records)
    if alt is None:
        return "(no H100 folder)\n"
    folder = alt.folder
    recs = [json.loads(f.read_text()) for f in sorted((folder / "experiments").glob("profile_step_*.json"))]
    if not recs:
        return "(no step profile record)\n"
    e2e = json.loads((folder / "e2e_ltx_video.json").read_text()) if (folder / "e2e_ltx_video.json").exists() else {}
    wall = {r["variant"]: r["per_step_ms"] for r in e2e.get("rows", []) if "error" not in r}
    lines = ["| variant | commit | GEMMs (ms) | attention (ms) | glue: norms, RoPE, quantization, activations (ms) | "
             "GPU busy (ms) | wall ms/step | between kernels (ms) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for rec in sorted(recs, key=lambda r: r["step_gpu_ms"]):
        gemm, attn, glue, moved = _profile_columns(rec)
        w = wall.get(rec["variant"]) if rec.get("git_sha") == e2e.get("git_sha") else None
        busy = rec["step_gpu_ms"]
        w_cells = f"{w:.2f} | {w - busy:.2f}" if w else "- | -"
        lines.append(f"| {rec['variant']} | {rec.get('git_sha', '?')[:7]} | {gemm:.2f} | {attn:.2f} | {glue:.2f} | "
                     f"{busy:.2f} | {w_cells} |")
        if moved:
            notes.append(f"{rec['variant']}: {moved:.2f} ms of Triton kernels named after fused attention-side ops "
                         "counted as glue.")
    m = recs[0]
    head = (f"{m.get('gpu', '?')}, {m.get('shape', '?')}; `benchmarks/profile_e2e_step.py` (torch.profiler, one "
            "step after two warm-up steps); wall time: `benchmarks/results/h100/e2e_ltx_video.json` (git "
            f"{str(e2e.get('git_sha', '?'))[:7]}; a row of another commit shows none):\n\n")
    return head + "\n".join(lines) + "\n" + footnote(notes)


def block_compile_e2e(records: Records) -> str:
    """Compiled end-to-end rows side by side: the policy of the record's build, every kernel kept,
    and any variant keeping or leaving named ops."""
    out = []
    for name in E2E_RECORDS:
        d = records.json(name)
        if not d:
            continue
        rows = [r for r in d.get("rows", []) if "+compile" in r["variant"] and r["variant"] != "compile"
                and attention_asked(r["variant"]) is None and "error" not in r]
        if not rows:
            continue
        lines = [f"`{name}` ({d.get('model', '?')}, {d.get('steps', '?')} steps):\n",
                 "| variant | left to Inductor | ms/step (median) | timed loops' medians |", "|---|---|---:|---:|"]
        for r in rows:
            pol = r.get("compile_policy")
            if pol is None:
                left = "every kernel kept" if "(all kernels)" in r["variant"] else "policy not recorded"
            elif pol.get("keep_all"):
                left = "nothing (every kernel kept)"
            else:
                ops = [o for o in pol.get("left_to_inductor", []) if o not in pol.get("keep", [])]
                left = ", ".join(f"`{o}`" for o in ops) or "nothing"
            lines.append(f"| {r['variant']} | {left} | {r['per_step_ms']:.1f} | {_run_span(r)} |")
        out.append("\n".join(lines) + "\n")
    return "\n".join(out) if out else "(no compiled end-to-end record)\n"


def block_e2e_cache(records: Records) -> str:
    import e2e_cache_report

    return e2e_cache_report.table(e2e_cache_report.load(sorted(records.folder.glob("e2e_cache_*.json"))))


# The 16-bit attention kernels per query tile and persistent against the key count
# (tools/tune/attention_schedule.py): the rows behind persistent_max_keys (attention/heuristics.h).
# Read from the attention records' folder (attention_records).
SCHEDULE_RECORD = "attention_schedule.json"


def block_attention_schedule(records: Records) -> str:
    folder = attention_records(records).folder
    rec = Records(folder).json(SCHEDULE_RECORD)
    if not rec:
        return "(no attention schedule record)\n"
    lines = ["| queries (B, Sq, H, D) | keys | per tile (us) | persistent (us) | best SDPA (us) | "
             "persistent over per tile | persistent over best SDPA |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rec["rows"]:
        us = r["us"]
        sdpa_name, sdpa = min(((k, v) for k, v in us.items() if k.startswith("sdpa_")), key=lambda kv: kv[1])
        per, pers = us["ours_per_tile"], us["ours_persistent"]
        lines.append(f"| {shape([r['B'], r['Sq'], r['H'], r['D']])} | {r['Skv']} | {per:.1f} | {pers:.1f} | "
                     f"{sdpa:.1f} ({sdpa_name[5:]}) | {x(per / pers)} | {x(sdpa / pers)} |")
    m = rec["meta"]
    return (f"{m.get('gpu', '?')}, git {m.get('git_sha', '?')[:10]}, `{m.get('command', '?')}` "
            f"(bf16, medians of three medians; `benchmarks/results/{Path(folder).name}/{SCHEDULE_RECORD}`):\n\n"
            + "\n".join(lines) + "\n")


# The accuracy model of the FP8 attention's q / k format (tools/tune/attention_qk_format.py): an
# arithmetic model, run on the CPU, in its own folder beside the GPUs' (relative to the results root).
QK_FORMAT_RECORD = Path("model") / "attention_qk_format.json"


def block_attention_qk_format(records: Records) -> str:
    rec = Records(records.folder.parent).json(str(QK_FORMAT_RECORD))
    if not rec:
        return "(no q / k format record)\n"
    variants = list(rec["rows"][0]["rel_l2"])
    lines = ["| operands | " + " | ".join(r["name"] for r in rec["rows"]) + " |",
             "|---|" + "---:|" * len(rec["rows"])]
    for v in variants:
        cells = []
        for r in rec["rows"]:
            lo, hi = r["rel_l2_range"][v]
            cells.append(f"{r['rel_l2'][v]:.2e} ({lo:.2e} - {hi:.2e})")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    m = rec["meta"]
    return (f"Relative L2 against the float64 definition, median (range) over {rec['rows'][0]['seeds']} seeds; "
            f"git {str(m.get('git_sha', '?'))[:10]}, `{m.get('command', '?')}` "
            f"(`benchmarks/results/{QK_FORMAT_RECORD.as_posix()}`):\n\n" + "\n".join(lines) + "\n")


def block_noise(records):
    """The tie margin of the policy checks (NOISE), as a percentage."""
    return f"{100 * NOISE:g}%"


BLOCKS = {
    "noise": block_noise,
    "perf-table": block_perf_table,
    "attention-kernel": block_attention_kernel,
    "attention-routing": block_attention_routing,
    "attention-schedule": block_attention_schedule,
    "attention-fp8-per-key": block_attention_fp8_per_key,
    "attention-fp8-per-block": block_attention_fp8_per_block,
    "attention-qk-format": block_attention_qk_format,
    "compile-one-op": block_compile_one_op,
    "compile-rules": block_compile_rules,
    "compile-e2e": block_compile_e2e,
    "slower-than-compile": block_slower_than_compile,
    "gelu-rows": block_gelu_rows,
    "gemm-summary": block_gemm_summary,
    "gemm-epilogues": block_gemm_epilogues,
    "e2e-steps": block_e2e_steps,
    "e2e-steps-h100": block_e2e_steps_h100,
    "e2e-profile": block_e2e_profile,
    "e2e-cache": block_e2e_cache,
}
