"""End-to-end LTX-Video transformer benchmark: the denoising loop only, eager vs ltx_kernels.

  python benchmarks/e2e_ltx_video.py [--no-optimized-kernels] [--compile] [--quantization fp8 [fp8_rowwise ...]]
      [--num-frames 49 --height 512 --width 768 --steps 30 --batch-size 1 --warmup-iterations 2]
      [--timed-runs 3] [--compare [--no-compile-variants] [--keep-variants OPS ...] [--leave-variants OPS ...]
      [--peers tensorwise rowwise]]
      [--cache first_block mag taylorseer [--cache-threshold T]] [--tiny] [--checkpoint DIR]
      [--out result.json [--allow-dirty]]

What runs: diffusers' LTXVideoTransformer3DModel in bf16 (fp32 on CPU) with the real LTX-Video
2B transformer config (`LTXVideoTransformer3DModel`'s defaults in diffusers 0.42.1, which are
the Lightricks/LTX-Video 0.9.x `transformer/config.json` values: 28 layers, 32 heads x 64,
cross-attention 2048, caption channels 4096 (T5-XXL), gelu-approximate, RMSNorm without weight,
eps 1e-6; docs/semantics.md, section "Norms, RoPE and DiT glue", lists the same module facts). Weights come from
`--checkpoint DIR` (a diffusers `transformer/` folder, read offline) or are random (it says so).
No VAE and no text encoder: random latents and prompt embeddings of the real shapes (VAE 8x
temporal / 32x spatial compression, 128 latent channels; 128 T5 tokens with a padded tail),
classifier-free guidance doubles the batch (guidance 3), and a plain Euler flow-matching update
over `--steps` sigmas from 1 to 0 moves the latents, so every step sees new inputs.

Measured per variant: per-step time (CUDA events around each step; the median over the steps of
`--timed-runs` runs (at least 3) after `--warmup-iterations` full warm-up runs (at least 1), with
the fastest and slowest run's median beside it: single runs of the same command vary between
machine starts, so a difference inside that spread is not a result), the median total time of a
run, peak memory, and the error of the final latents against the eager run of the same dtype and
seed (relative L2 and PSNR with the reference's max |value| as peak). Where a variant asks for
ltx_kernels' attention (`--attention bf16 / fp8`), one more untimed step under torch.profiler
counts the attention calls that reached `ltx_kernels.attention` and those that ran PyTorch's
SDPA, since optimize() routes each call by its shape (`use_kernel_attention` in
integrations/_compile_policy.py): a row whose calls all went to SDPA says so (`attention_route`).
Compiled rows record the compile policy they ran under (`compile_policy`). `--compare` runs eager,
torch.compile, optimized, optimized + compile, optimized + compile with every kernel kept
(`LTX_KERNELS_COMPILE_ALL_KERNELS=1`: what leaving the glue to Inductor gains; see
docs/integrations.md "Under torch.compile"), and the quantized variants when `--quantization`
is given (each of several formats in turn: the original linears are put back between them), in
one process on one set of weights, and prints a table. `--peers tensorwise rowwise` adds what a
PyTorch user assembles without this library: the plain model, compiled, with every linear that
optimize() would quantize replaced by an FP8 linear through `torch._scaled_mm` (cuBLASLt) with
dynamic activation scales per tensor or per token, as torchao's float8 inference does
(benchmarks/baselines.py `ScaledMMLinear`). `--keep-variants OPS` and
`--leave-variants OPS` add compiled variants that keep (LTX_KERNELS_COMPILE_KEEP) or leave to
Inductor the comma-separated policy ops: what each decision of the policy gains or costs end to
end (benchmarks/check_policy.py reads them). Compile is
regional (each transformer block compiled with fullgraph=True, as diffusers'
`compile_repeated_blocks` does), which keeps compile time to one block's.

`--cache NAME [NAME ...]` measures diffusers' step caches (`transformer.enable_cache`) with and
without ltx_kernels: in one process on one set of weights, eager, optimized and (with
`--quantization`) optimized + quantized, each run once without a cache and once per cache, a
full `--steps` denoising loop each (each call inside `cache_context`, the cache state reset
before every loop, as the pipelines do; two untimed steps after each optimize() keep first calls
out of the timings). Reported per variant: ms per step as each timed loop's mean step
(cached steps included), the median over the timed loops with the fastest and slowest loop beside
it (and the median step), the fraction of the last
block's feed-forward and attention calls that ran (what the cache skipped), and the final
latents' error against the uncached eager run. Caches: `first_block` (FirstBlockCacheConfig,
`--cache-threshold` or diffusers' default 0.05), `mag` (MagCacheConfig with ratios calibrated
on this model first: one untimed eager loop with `calibrate=True`, diffusers' documented way to
get them; `--cache-threshold` or diffusers' 0.06), `taylorseer` (TaylorSeerCacheConfig on every
attention module of the blocks, diffusers' other defaults; its default module patterns match no
LTX-Video attention). diffusers 0.42.1 refuses `first_block` and `mag` on LTX-2 (its block class
is not in diffusers' block registry): those rows say so.

`--compare` at 49x512x768 spends most of its time compiling; `--steps 10 --warmup-iterations 1`
keeps it short. With `--out`, the JSON carries benchmarks/common.py's record_meta (the build's
commit, refused from a tree that differs from it unless --allow-dirty or --tiny, compilers, GPU,
clocks, command, timing method).
"""

import argparse
import ast
import contextlib
import io
import json
import math
import os
import statistics
import sys
import time
import types

import torch

# ---- model-independent machinery (also used by e2e_ltx2.py) ----------------------------------

CACHES = ("first_block", "mag", "taylorseer")
# TaylorSeer on every attention module of the blocks (LTX-Video attn1/attn2; LTX-2 also the
# audio and cross-modal ones)
TAYLORSEER_ATTENTION = r"transformer_blocks\.\d+\.(attn\d|audio_attn\d|audio_to_video_attn|video_to_audio_attn)"


def base_parser(description: str, tiny_hint: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--use-optimized-kernels", dest="optimized", action="store_true", default=True,
                   help="optimize the transformer with ltx_kernels (default)")
    p.add_argument("--no-optimized-kernels", dest="optimized", action="store_false",
                   help="plain diffusers eager transformer")
    p.add_argument("--compile", action="store_true", help="regional torch.compile(fullgraph=True) of each block")
    p.add_argument("--compile-mode", nargs="+", default=[None],
                   choices=[None, "default", "reduce-overhead", "max-autotune-no-cudagraphs"],
                   help="torch.compile mode of the compiled variants (reduce-overhead: CUDA graphs per block); "
                        "several with --compare: the compile, peer and optimized+compile rows run once per mode; "
                        "a row compiled in a mode other than the default has '[mode]' after 'compile' in its name")
    p.add_argument("--quantization", choices=["none", "fp8", "fp8_rowwise", "fp6", "nvfp4"], nargs="+",
                   default=["none"], help="optimize(quantization=...) (several: --compare runs each, one after another "
                                          "on the same weights)")
    p.add_argument("--peers", choices=["tensorwise", "rowwise"], nargs="*", default=[],
                   help="with --compare: the FP8 peer, compiled (eager with --no-compile-variants): every linear optimize() would quantize replaced "
                        "by an FP8 linear through torch._scaled_mm (cuBLASLt) with dynamic activation scales per "
                        "tensor or per token (benchmarks/baselines.py ScaledMMLinear), the model otherwise plain")
    p.add_argument("--attention", choices=["none", "bf16", "fp8"], nargs="*", default=["none"],
                   help="ltx_kernels.attention inside the optimized processors (several: --compare runs each)")
    p.add_argument("--num-frames", type=int, default=49)
    p.add_argument("--height", type=int, default=512)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--guidance-scale", type=float, default=3.0, help="CFG (> 1 doubles the batch)")
    p.add_argument("--warmup-iterations", type=int, default=2,
                   help="full denoising runs before the timed ones (at least 1 unless --tiny)")
    p.add_argument("--timed-runs", type=int, default=3,
                   help="timed denoising runs per variant (at least 3 unless --tiny): ms/step is the median over "
                        "all their steps, the fastest and slowest run's median are reported beside it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tiny", action="store_true", help=tiny_hint)
    p.add_argument("--checkpoint", default=None, help="diffusers transformer folder (offline); else random weights")
    p.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=None,
                   help="default: bf16 on CUDA, fp32 on CPU")
    p.add_argument("--compare", action="store_true",
                   help="eager, compile, optimized, optimized+compile (+ quantized) in one process")
    p.add_argument("--no-compile-variants", action="store_true", help="with --compare: skip the compiled variants")
    p.add_argument("--keep-variants", nargs="*", default=[], metavar="OPS",
                   help="with --compare: one more compiled variant per value, keeping the comma-separated "
                        "ops of the compile policy (integrations/_compile_policy.py) under compile, "
                        "as LTX_KERNELS_COMPILE_KEEP does; run for the quantized, attention-free variant")
    p.add_argument("--leave-variants", nargs="*", default=[], metavar="OPS",
                   help="with --compare: one more compiled variant per value, leaving the comma-separated policy "
                        "ops to Inductor (as LTX_KERNELS_COMPILE_LEAVE does); run for the quantized, "
                        "attention-free variant")
    p.add_argument("--cache", nargs="+", choices=CACHES, default=None,
                   help="diffusers step caches to measure with and without optimize() (see the module docstring)")
    p.add_argument("--cache-threshold", type=float, default=None,
                   help="first_block / mag threshold (default: diffusers' default of each)")
    p.add_argument("--out", default=None, help="JSON path for the results")
    p.add_argument("--allow-dirty", action="store_true",
                   help="write --out even if the build or the checkout differs from the build's commit "
                        "(the record says dirty, why, and the sha256 of the difference)")
    return p


def check_method(parser, args):
    """A measurement needs warm-up and enough runs for a median and a spread; --tiny is a smoke
    test of the script and may use fewer."""
    if args.tiny:
        return
    if args.timed_runs < 3:
        parser.error("--timed-runs: at least 3 (a median and a spread need them; --tiny for a smoke test)")
    if args.warmup_iterations < 1:
        parser.error("--warmup-iterations: at least 1 (first calls load kernels and grow the allocator)")


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timer(device):
    """start() / stop() -> ms, CUDA events on CUDA, perf_counter on CPU."""
    if device.type == "cuda":
        class T:
            def start(self):
                self.a = torch.cuda.Event(enable_timing=True)
                self.b = torch.cuda.Event(enable_timing=True)
                self.a.record()

            def stop(self):
                self.b.record()
                self.b.synchronize()
                return self.a.elapsed_time(self.b)
    else:
        class T:
            def start(self):
                self.a = time.perf_counter()

            def stop(self):
                return (time.perf_counter() - self.a) * 1e3
    return T()


def denoise(problem, model, steps: int, guidance: float, device, step_times=None, cached: bool = False):
    """Euler flow matching from sigma 1 to 0: x <- x + (s_next - s) * v, v with CFG.
    problem.latents0: tuple of fp32 latents; problem.velocity(model, latents, sigma) -> tuple.
    cached: a diffusers cache is enabled: its state is reset first and every call runs inside
    `cache_context` (one context for the CFG batch, as the LTX pipelines do)."""
    lat = tuple(x.clone() for x in problem.latents0)
    sigmas = torch.linspace(1.0, 0.0, steps + 1).tolist()
    timer = _timer(device)
    if cached:
        model._reset_stateful_cache()
    for i in range(steps):
        if COMPILE_MODE == "reduce-overhead":  # a new step: the CUDA graphs' earlier outputs are dead
            torch.compiler.cudagraph_mark_step_begin()
        timer.start()
        with torch.no_grad(), (model.cache_context("cond_uncond") if cached else contextlib.nullcontext()):
            v = problem.velocity(model, lat, sigmas[i], guidance)
        lat = tuple(x + (sigmas[i + 1] - sigmas[i]) * vi.float() for x, vi in zip(lat, v))
        ms = timer.stop()
        if step_times is not None:
            step_times.append(ms)
    _sync(device)
    return lat


def cfg_combine(pred: torch.Tensor, guidance: float) -> torch.Tensor:
    if guidance <= 1.0:
        return pred
    uncond, cond = pred.float().chunk(2)
    return uncond + guidance * (cond - uncond)


def errors(lat, ref):
    num = sum(float((a.double() - b.double()).pow(2).sum()) for a, b in zip(lat, ref))
    den = sum(float(b.double().pow(2).sum()) for b in ref)
    n = sum(b.numel() for b in ref)
    peak = max(float(b.abs().max()) for b in ref)
    rel = math.sqrt(num / den) if den > 0 else float("nan")
    mse = num / max(n, 1)
    psnr = float("inf") if mse == 0 else 10 * math.log10(peak * peak / mse)
    return rel, psnr


COMPILE_MODE = None  # --compile-mode: torch.compile's mode for every compiled variant


def _mode_name(name: str, mode) -> str:
    """A compiled row's name in a torch.compile mode other than the default: "+compile" (or a
    bare "compile") followed by "[mode]"."""
    if mode in (None, "default"):
        return name
    i = name.index("compile") + len("compile")
    return f"{name[:i]}[{mode}]{name[i:]}"


def compile_blocks(transformer):
    for b in transformer.transformer_blocks:
        b.compile(fullgraph=True, mode=COMPILE_MODE)


def uncompile_blocks(transformer):
    for b in transformer.transformer_blocks:
        b._compiled_call_impl = None


def last_block_calls(model):
    """Counts the calls of the last block's feed-forwards and attention to_q projections (torch
    forward pre-hooks, which run only when the block or attention really computes, not when a
    diffusers cache hook answers for it). Returns (counts dict, remove())."""
    c = {"calls": 0}
    handles = []
    for n, m in model.transformer_blocks[-1].named_modules():
        if n in ("ff", "audio_ff") or n.endswith("to_q"):
            handles.append(m.register_forward_pre_hook(lambda *_: c.__setitem__("calls", c["calls"] + 1)))
    return c, lambda: [h.remove() for h in handles]


def summarize_runs(runs):
    """The statistics of a row from each timed run's step times (ms): per_step_ms, the median over
    every step; run_median_ms / spread_ms, each run's median and the [fastest, slowest] of them;
    run_mean_ms, each run's mean step (what a loop with cached steps costs per step);
    mean_step_ms / mean_spread_ms, the median and [min, max] of those means; run_spread_pct, the
    runs' medians' range over their median."""
    steps = [t for r in runs for t in r]
    medians = [statistics.median(r) for r in runs]
    means = [statistics.fmean(r) for r in runs]
    spread = (max(medians) - min(medians)) / statistics.median(medians) * 100 if len(medians) > 1 else 0.0
    return dict(per_step_ms=statistics.median(steps), run_median_ms=medians, spread_ms=[min(medians), max(medians)],
                run_spread_pct=spread, run_mean_ms=means, mean_step_ms=statistics.median(means),
                mean_spread_ms=[min(means), max(means)])


def run_variant(name, problem, model, args, device, ref, cached: bool = False):
    """Warm-up runs, then `--timed-runs` timed runs (the same inputs each time), then, where the
    blocks are not compiled, one untimed run that counts the last block's calls; returns the result
    row (dict, statistics from summarize_runs) and the last timed run's latents. Single runs of one
    variant vary between machine starts (eager rows most: they are bound by the host's launches),
    so every run's median and mean is kept beside the row's."""
    steps, g = args.steps, args.guidance_scale
    t0 = time.perf_counter()
    for _ in range(args.warmup_iterations):
        denoise(problem, model, steps, g, device, cached=cached)
    warm_s = time.perf_counter() - t0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    runs, totals = [], []
    for r in range(max(1, args.timed_runs)):
        run_times = []
        t0 = time.perf_counter()
        lat = denoise(problem, model, steps, g, device, run_times, cached=cached)
        totals.append(time.perf_counter() - t0)
        runs.append(run_times)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else float("nan")
    # The last block's calls, counted in one more, untimed loop (hooks change what runs: a hooked
    # projection leaves the fused one). A compiled block does not run hooks added after it was
    # compiled (Dynamo does not guard on them), so compiled rows record None.
    calls = {"calls": None}
    if not any(getattr(b, "_compiled_call_impl", None) is not None for b in model.transformer_blocks):
        calls, remove = last_block_calls(model)
        try:
            denoise(problem, model, steps, g, device, cached=cached)
        finally:
            remove()
    rel, psnr = errors(lat, ref) if ref is not None else (0.0, float("inf"))
    return dict(variant=name, **summarize_runs(runs), timed_runs=len(runs), warmup_runs=args.warmup_iterations,
                total_s=statistics.median(totals), warmup_s=warm_s, peak_mem_gib=peak, rel_l2_vs_eager=rel,
                psnr_db=psnr, last_block_calls=calls["calls"]), lat


# ---- which attention ran -----------------------------------------------------------------------

_SDPA_EVENTS = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product")


def _is_sdpa(name: str) -> bool:
    return name.startswith(_SDPA_EVENTS)


def count_attention_calls(fn) -> dict:
    """Runs fn() once under torch.profiler (CPU activity: the dispatcher records every op call,
    eager or from a compiled graph) and counts the calls of ltx_kernels' attention op
    ("ltx_kernels") and of PyTorch's SDPA ("sdpa": the outermost SDPA op of each call, so that
    a backend op under scaled_dot_product_attention is not counted twice), and of the passes that
    make one FP8 attention call's v operand ("fp8": quantize_attention_fp8 or attention_values_fp8,
    one per FP8 call; the other ltx_kernels calls ran the 16-bit kernel)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    ours = sdpa = fp8 = 0
    for e in prof.events():
        if e.name.startswith("_ltx_kernels_") and e.name.endswith("::attention"):
            ours += 1
        elif e.name.startswith("_ltx_kernels_") and e.name.endswith(("::quantize_attention_fp8",
                                                                      "::attention_values_fp8")):
            fp8 += 1
        elif _is_sdpa(e.name):
            parent, nested = e.cpu_parent, False
            while parent is not None:
                if _is_sdpa(parent.name):
                    nested = True
                    break
                parent = parent.cpu_parent
            sdpa += not nested
    return {"ltx_kernels": ours, "sdpa": sdpa, "fp8": fp8}


def attention_route(mode, counts) -> str:
    """What ran the attention of a variant that asked for ltx_kernels' kernel in `mode`
    (None: it did not ask)."""
    if mode is None:
        return "sdpa (not asked)"
    if counts is None:
        return "not counted"
    k, s = counts["ltx_kernels"], counts["sdpa"]
    if k == 0:
        return "sdpa: the routing rule sent every call to SDPA"
    parts = [f"ltx_kernels {mode}: {k}"]
    if mode == "fp8":
        f8 = min(counts.get("fp8", 0), k)
        parts = [f"ltx_kernels fp8: {f8}"] + ([f"ltx_kernels 16-bit: {k - f8}"] if k > f8 else [])
    if s:
        parts.append(f"sdpa: {s}")
    return f"{', '.join(parts)} (of {k + s} calls)"


def probe_attention(row, mode, problem, model, args, device):
    """Adds attention_calls and attention_route to a variant's row (one untimed step, counted)."""
    if mode is None:
        return
    x = problem.latents0
    counts = count_attention_calls(lambda: (problem.velocity(model, x, 1.0, args.guidance_scale), _sync(device)))
    row["attention"] = mode
    row["attention_calls"] = counts
    row["attention_route"] = attention_route(mode, counts)


def policy_state(policy) -> dict:
    """The compile policy a compiled row ran under (integrations/_compile_policy.py)."""
    return {"keep_all": bool(policy.KEEP_ALL), "keep": sorted(policy.KEEP),
            "left_to_inductor": sorted(policy.LEFT_TO_INDUCTOR)}


def _versions():
    v = {"torch": torch.__version__}
    try:
        import diffusers

        v["diffusers"] = diffusers.__version__
    except ImportError:
        pass
    return v


def timing_method(args) -> dict:
    cache = bool(getattr(args, "cache", None))
    return {"timer": "CUDA events around each denoising step (perf_counter on the CPU)",
            "warmup": f"{args.warmup_iterations} full denoising loops per variant",
            "repeats": f"{args.timed_runs} timed loops of {args.steps} steps per variant",
            "statistic": ("mean_step_ms: the median over the timed loops of each loop's mean step (cached steps "
                          "included), mean_spread_ms: the fastest and slowest loop" if cache else
                          "per_step_ms: the median over every timed step, spread_ms: the fastest and slowest "
                          "timed loop's median")}


def _run_meta(args, argv, script: str, device) -> dict:
    """benchmarks/common.py record_meta: the build's commit (refused from a tree that differs from
    it, unless --allow-dirty, or --tiny: a smoke test of the script), compilers, GPU, clocks,
    the command, the timing method."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import record_meta

    return record_meta(script, sys.argv[1:] if argv is None else list(argv), timing_method(args),
                       args.allow_dirty or args.tiny, device, exclude=[args.out] if args.out else ())


def _spread(r, key="spread_ms") -> str:
    lo_hi = r.get(key)
    return f"{lo_hi[0]:.2f} - {lo_hi[1]:.2f}" if lo_hi else "-"


def _print_rows(rows, step_key, columns, width=28):
    """One line per row: the variant, then `columns` ((header, width, cell(row, x_eager) -> str), with
    x_eager = the eager row's `step_key` over this row's), then the attention route."""
    base = next((r[step_key] for r in rows if r["variant"] == "eager"), None)
    w = max([width] + [len(r["variant"]) for r in rows])
    hdr = f"{'variant':<{w}} " + " ".join(f"{h:>{n}}" for h, n, _ in columns) + "  attention"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        if "error" in r:
            print(f"{r['variant']:<{w}} failed: {r['error'][:100]}")
            continue
        x_eager = base / r[step_key] if base else float("nan")
        cells = " ".join(f"{cell(r, x_eager):>{n}}" for _, n, cell in columns)
        print(f"{r['variant']:<{w}} {cells}  {r.get('attention_route', '')}")


# The columns both tables end with: peak memory and the output's distance from eager's.
_QUALITY_COLUMNS = [
    ("peak GiB", 9, lambda r, x: f"{r['peak_mem_gib']:.2f}"),
    ("rel L2", 10, lambda r, x: f"{r['rel_l2_vs_eager']:.3e}"),
    ("PSNR dB", 8, lambda r, x: f"{r['psnr_db']:.1f}"),
]


def _print_table(rows):
    _print_rows(rows, "per_step_ms", [
        ("step ms", 9, lambda r, x: f"{r['per_step_ms']:.2f}"),
        ("runs min - max", 17, lambda r, x: _spread(r)),
        ("total s", 8, lambda r, x: f"{r['total_s']:.2f}"),
        ("x eager", 8, lambda r, x: f"{x:.2f}"),
    ] + _QUALITY_COLUMNS)


def _error_row(name, e):
    return dict(variant=name, error=f"{type(e).__name__}: {e}"[:500], per_step_ms=float("nan"),
                mean_step_ms=float("nan"), total_s=float("nan"), warmup_s=float("nan"), peak_mem_gib=float("nan"),
                rel_l2_vs_eager=float("nan"), psnr_db=float("nan"), last_block_calls=0)


def cache_config(name: str, args, mag_ratios=None):
    from diffusers.hooks import FirstBlockCacheConfig, MagCacheConfig, TaylorSeerCacheConfig

    thr = {} if args.cache_threshold is None else {"threshold": args.cache_threshold}
    if name == "first_block":
        return FirstBlockCacheConfig(**thr)
    if name == "mag":
        if mag_ratios is None:
            return MagCacheConfig(calibrate=True, num_inference_steps=args.steps)
        return MagCacheConfig(num_inference_steps=args.steps, mag_ratios=mag_ratios, **thr)
    return TaylorSeerCacheConfig(cache_identifiers=[TAYLORSEER_ATTENTION])


def calibrate_mag(problem, model, args, device):
    """MagCache's ratios for this model and step count: one eager loop with calibrate=True,
    which prints them at its last step (diffusers' documented calibration)."""
    model.enable_cache(cache_config("mag", args))
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            denoise(problem, model, args.steps, args.guidance_scale, device, cached=True)
    finally:
        model.disable_cache()
    lists = [ln for ln in buf.getvalue().splitlines() if ln.startswith("[") and ln.endswith("]")]
    if not lists:
        raise RuntimeError(f"MagCache calibration printed no ratios: {buf.getvalue()[-300:]!r}")
    return [float(v) for v in ast.literal_eval(lists[-1])]


def cache_rows(spec, args, problem, model, device, ref, quant, lkd, attn=None):
    """--cache: eager, optimized (, optimized+quant), each uncached and with each cache; the
    optimized stages with `attention=attn` (the first --attention)."""
    rows, mag_ratios, refused = [], None, {}

    def log(row):
        rows.append(row)
        print(f"{spec.NAME} {row['variant']}: " + (f"failed: {row['error'][:200]}" if "error" in row else
              f"{row['mean_step_ms']:.2f} ms/step (mean), last block calls {row['last_block_calls']}, "
              f"rel L2 {row['rel_l2_vs_eager']:.3e}"), flush=True)

    if "mag" in args.cache:
        try:
            mag_ratios = calibrate_mag(problem, model, args, device)
            print(f"{spec.NAME}: MagCache ratios calibrated on the eager model: "
                  f"{', '.join(f'{r:.3f}' for r in mag_ratios)}")
        except Exception as e:  # diffusers refuses MagCache on this block class
            refused["mag"] = e
    a = f"+attn-{attn}" if attn else ""
    stages = [("eager", False, None), (f"optimized{a}", True, None)]
    if quant:
        stages.append((f"optimized+{quant}{a}", True, quant))
    for stage, opt, q in stages:
        if opt:
            lkd.optimize(model, quantization=q, attention=attn)
        # two untimed steps per stage: first calls (kernel loading, allocator growth) stay out of
        # the timed loops even with --warmup-iterations 0
        denoise(problem, model, min(2, args.steps), args.guidance_scale, device)
        probe = {}
        probe_attention(probe, attn if opt else None, problem, model, args, device)
        for cache in [None] + list(args.cache):
            name = stage if cache is None else f"{stage}+{cache}"
            if cache in refused:
                log(_error_row(name, refused[cache]))
                continue
            try:
                if cache is not None:
                    model.enable_cache(cache_config(cache, args, mag_ratios))
                row, _ = run_variant(name, problem, model, args, device, ref, cached=cache is not None)
            except Exception as e:
                if cache is not None and not model.is_cache_enabled:
                    refused[cache] = e  # enable_cache itself refused: the same for every stage
                row = _error_row(name, e)
            finally:
                if cache is not None and model.is_cache_enabled:
                    model.disable_cache()
            row["cache"] = cache
            row.update(probe)
            log(row)
    return rows


def _print_cache_table(rows):
    full = next((r["last_block_calls"] for r in rows if r["variant"] == "eager"), 0)
    _print_rows(rows, "mean_step_ms", [
        ("mean ms", 9, lambda r, x: f"{r['mean_step_ms']:.2f}"),
        ("loops min - max", 17, lambda r, x: _spread(r, "mean_spread_ms")),
        ("median", 8, lambda r, x: f"{r['per_step_ms']:.2f}"),
        ("x eager", 8, lambda r, x: f"{x:.2f}"),
        ("ran", 6, lambda r, x: f"{100 * r['last_block_calls'] / full:.0f}%" if full else "-"),
    ] + _QUALITY_COLUMNS, width=30)


def common_main(argv, spec):
    """spec: module-like with NAME, CONFIG_SOURCE, build_model(args, device, dtype) ->
    (model, weights_note), make_problem(args, model, device, dtype) -> problem, describe(problem)."""
    parser = spec.parser()
    args = parser.parse_args(argv)
    check_method(parser, args)
    global COMPILE_MODE
    modes = list(dict.fromkeys(args.compile_mode))  # in the order given, each once
    if len(modes) > 1 and not args.compare:
        parser.error("several --compile-mode values need --compare")
    COMPILE_MODE = modes[0]
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[
        args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    quants = [q for q in args.quantization if q != "none"]
    if len(args.quantization) > 1 and not args.compare:
        parser.error("several --quantization values need --compare")
    if args.peers and not args.compare:
        parser.error("--peers needs --compare")
    quant = quants[0] if quants else None
    attns = [None if a == "none" else a for a in (args.attention or ["none"])]

    import ltx_kernels.integrations.diffusers as lkd
    from ltx_kernels.integrations import _compile_policy

    KEEP_ALL_DEFAULT, KEEP_DEFAULT = _compile_policy.KEEP_ALL, _compile_policy.KEEP
    LEFT_DEFAULT = _compile_policy.LEFT_TO_INDUCTOR
    keep_sets = [_compile_policy.parse_ops(k) for k in args.keep_variants]  # typos fail here
    leave_sets = [_compile_policy.parse_ops(k, "--leave-variants") for k in args.leave_variants]
    script = f"benchmarks/{'e2e_ltx2' if spec.NAME == 'ltx-2' else 'e2e_ltx_video'}.py"
    if args.out:
        _run_meta(args, argv, script, device)  # refuse before measuring

    torch.manual_seed(args.seed)
    model, weights_note = spec.build_model(args, device, dtype)
    problem = spec.make_problem(args, model, device, dtype)
    print(f"{spec.NAME}: {spec.CONFIG_SOURCE}; weights: {weights_note}")
    print(f"{spec.NAME}: {spec.describe(problem, args)}; {args.steps} steps, CFG {args.guidance_scale} "
          f"(batch x{2 if args.guidance_scale > 1 else 1}), {dtype}, {device}")

    meta = dict(model=spec.NAME, config_source=spec.CONFIG_SOURCE, weights=weights_note,
                shape=spec.describe(problem, args), steps=args.steps, batch_size=args.batch_size,
                guidance_scale=args.guidance_scale, dtype=str(dtype), device=str(device),
                gpu=torch.cuda.get_device_name(device) if device.type == "cuda" else None,
                warmup_iterations=args.warmup_iterations, timed_runs=args.timed_runs, **_versions(),
                compile_policy=policy_state(_compile_policy))

    # the reference: eager, same weights, same seed (one untimed run)
    ref = denoise(problem, model, args.steps, args.guidance_scale, device)

    if args.cache:
        rows = cache_rows(spec, args, problem, model, device, ref, quant, lkd, attns[0])
        print()
        _print_cache_table(rows)
        res = dict(meta, cache=list(args.cache), cache_threshold=args.cache_threshold, rows=rows)
    elif not args.compare:
        name = "optimized" if args.optimized else "eager"
        if args.optimized:
            lkd.optimize(model, quantization=quant, attention=attns[0])
            if quant:
                name += f"+{quant}"
            if attns[0]:
                name += f"+attn-{attns[0]}"
        if args.compile:
            compile_blocks(model)
            name += _mode_name("+compile", COMPILE_MODE)
        row, _ = run_variant(name, problem, model, args, device, ref)
        probe_attention(row, attns[0] if args.optimized else None, problem, model, args, device)
        if args.compile:
            row["compile_policy"] = policy_state(_compile_policy)
            row["compile_mode"] = COMPILE_MODE or "default"
        res = dict(meta, **row)
        print(f"{spec.NAME} {name}: {row['per_step_ms']:.2f} ms/step (median; runs {_spread(row)}), "
              f"total {row['total_s']:.2f} s, "
              f"peak {row['peak_mem_gib']:.2f} GiB, final latents vs eager: rel L2 {row['rel_l2_vs_eager']:.3e}, "
              f"PSNR {row['psnr_db']:.1f} dB")
    else:
        rows = []
        # one set of weights throughout: optimize() swaps forwards only; quantization (last)
        # replaces linears in place after every unquantized variant has run
        # (name, optimize, quantization, compile, attention, kept under compile: True = every
        # kernel, a frozenset = those ops kept, ("leave", ops) = those ops left, False = the policy;
        # peer: None, or the scale granularity of the plain model with the linears optimize()
        # would quantize replaced by torch._scaled_mm FP8 linears)
        plan = [("eager", False, None, False, None, False, None)]
        if not args.no_compile_variants:
            plan.append(("compile", False, None, True, None, False, None))
        for g in args.peers:  # compiled, as a user runs it (eager with --no-compile-variants)
            comp = not args.no_compile_variants
            plan.append((f"peer:scaled_mm-{g}" + ("+compile" if comp else ""), False, None, comp, None, False, g))
        for q in [None] + quants:
            for a in attns:
                name = "optimized" + (f"+{q}" if q else "") + (f"+attn-{a}" if a else "")
                plan.append((name, True, q, False, a, False, None))
                if not args.no_compile_variants:
                    plan.append((name + "+compile", True, q, True, a, False, None))
                    if a is None:
                        # the compile policy off (LTX_KERNELS_COMPILE_ALL_KERNELS=1): what the
                        # compositions the policy leaves to Inductor gain or cost
                        plan.append((name + "+compile(all kernels)", True, q, True, a, True, None))
                        if q == (quant or None):
                            for ks, k in zip(args.keep_variants, keep_sets):
                                plan.append((name + f"+compile(keep {ks})", True, q, True, a, k, None))
                            for ls, lv in zip(args.leave_variants, leave_sets):
                                plan.append((name + f"+compile(leave {ls})", True, q, True, a, ("leave", lv), None))
        # + the torch.compile mode: the compile, peer and optimized+compile rows once per
        # --compile-mode, one after another (the same weights and optimize() state); the rows that
        # change the compile policy in the first mode only; a row in a mode other than the default
        # says so in its name
        plan = [(_mode_name(row[0], m) if row[3] else row[0],) + row[1:] + (m,)
                for row in plan for m in (modes if row[3] and row[5] is False else modes[:1])]
        peer_linears = list(quantizable_linears(model))  # what optimize(quantization="fp8") replaces
        linears = quantizable_linears(model, quants)
        applied, restore_peer = None, None
        for name, opt, q, comp, a, keep, peer, mode in plan:
            if peer:
                from baselines import ScaledMMLinear, swap_linears
                restore_peer = swap_linears(model, peer_linears, lambda m, g=peer: ScaledMMLinear(m, g))
            if opt:
                if applied is not None and q != applied:
                    unquantize(model, linears, device)
                lkd.optimize(model, quantization=q, attention=a)
                if q is not None and q != applied:  # the originals wait in host memory (peak memory)
                    for m in linears.values():
                        m.to("cpu")
                applied = q
            _compile_policy.KEEP_ALL = keep is True or KEEP_ALL_DEFAULT
            _compile_policy.KEEP = keep if isinstance(keep, frozenset) else KEEP_DEFAULT
            _compile_policy.LEFT_TO_INDUCTOR = LEFT_DEFAULT | (keep[1] if isinstance(keep, tuple) else frozenset())
            if comp:
                COMPILE_MODE = mode
                torch._dynamo.reset()
                compile_blocks(model)
            try:
                row, _ = run_variant(name, problem, model, args, device, ref)
                probe_attention(row, a, problem, model, args, device)
                if comp:
                    row["compile_policy"] = policy_state(_compile_policy)
                    row["compile_mode"] = COMPILE_MODE or "default"
            except Exception as e:  # keep the table going (e.g. a format this GPU lacks)
                print(f"{spec.NAME} {name}: failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                row = _error_row(name, e)
            if comp:
                uncompile_blocks(model)
            if restore_peer is not None:
                restore_peer()
                restore_peer = None
                row["peer"] = dict(linears=len(peer_linears), gemm="torch._scaled_mm", scales=peer, use_fast_accum=True)
            rows.append(row)
            print(f"{spec.NAME} {name}: {row['per_step_ms']:.2f} ms/step (runs {_spread(row)}), "
                  f"rel L2 {row['rel_l2_vs_eager']:.3e} {row.get('attention_route', '')}", flush=True)
            if args.out:  # after every variant, so that a run cut short keeps what it measured
                _write(args.out, dict(meta, **_run_meta(args, argv, script, device), rows=rows))
        COMPILE_MODE = modes[0]
        print()
        _print_table(rows)
        res = dict(meta, rows=rows)
    _compile_policy.KEEP_ALL, _compile_policy.KEEP, _compile_policy.LEFT_TO_INDUCTOR = (
        KEEP_ALL_DEFAULT, KEEP_DEFAULT, LEFT_DEFAULT)
    if args.out:  # the provenance again at writing: the tree must not have changed during the run
        _write(args.out, dict(res, **_run_meta(args, argv, script, device)))
    return 0


def quantizable_linears(model, fmts=("fp8",)) -> dict:
    """{name: module} of the nn.Linear modules optimize(quantization=fmt) replaces for any of
    `fmts` (ltx_kernels.quantization.linears_to_quantize: quantize_linears' default policy)."""
    from ltx_kernels import quantization as lq

    names = {n for fmt in fmts for n in lq.linears_to_quantize(model, fmt)}
    return {n: model.get_submodule(n) for n in sorted(names)}


def unquantize(model, linears: dict, device) -> None:
    """Puts the original nn.Linear modules back (on `device`) in place of the quantized ones, so
    that one process measures several quantizations on the same weights (quantization builds new
    modules from the originals and leaves those unchanged)."""
    for name, mod in linears.items():
        model.set_submodule(name, mod.to(device))
    model._ltx_kernels_quantization = None  # optimize() re-quantizes a model whose marker is None


def _write(path, res):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=float)


def load_or_random(cls, config: dict, args, device, dtype):
    """(model, note): from_pretrained(args.checkpoint) offline when given, else random weights
    initialised directly on the device (diffusers' default init)."""
    if args.checkpoint:
        m = cls.from_pretrained(args.checkpoint, torch_dtype=dtype, local_files_only=True)
        return m.to(device).eval(), f"checkpoint {args.checkpoint}"
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # build the 19B LTX-2 directly in bf16, on the device
    try:
        with torch.device(device):
            m = cls(**config)
    finally:
        torch.set_default_dtype(prev)
    return m.to(dtype).eval(), "random weights (no checkpoint given; --checkpoint DIR reads one offline)"


# ---- LTX-Video ------------------------------------------------------------------------------

NAME = "ltx-video"
CONFIG_SOURCE = ("LTX-Video 2B transformer: diffusers 0.42.1 LTXVideoTransformer3DModel defaults "
                 "(= Lightricks/LTX-Video 0.9.x transformer/config.json: 28 layers, 32x64 heads, "
                 "cross 2048, caption 4096)")
REAL = dict(in_channels=128, out_channels=128, patch_size=1, patch_size_t=1, num_attention_heads=32,
            attention_head_dim=64, cross_attention_dim=2048, num_layers=28, activation_fn="gelu-approximate",
            qk_norm="rms_norm_across_heads", norm_elementwise_affine=False, norm_eps=1e-6, caption_channels=4096,
            attention_bias=True, attention_out_bias=True)
TINY = dict(REAL, in_channels=16, out_channels=16, num_attention_heads=2, attention_head_dim=16,
            cross_attention_dim=32, num_layers=2, caption_channels=24)
VAE_T, VAE_S = 8, 32  # LTX-Video VAE compression (temporal, spatial)
FRAME_RATE = 25
TEXT_TOKENS = 128  # LTXPipeline max_sequence_length


def parser():
    return base_parser(__doc__.splitlines()[0], "CPU-sized config (2 layers, 2x16 heads) for tests")


def build_model(args, device, dtype):
    from diffusers import LTXVideoTransformer3DModel

    if args.tiny:
        args.num_frames, args.height, args.width = min(args.num_frames, 17), min(args.height, 96), min(args.width, 128)
    cfg = TINY if args.tiny else REAL
    return load_or_random(LTXVideoTransformer3DModel, cfg, args, device, dtype)


def packed_video_latents(problem, args, channels, g, vae_t, vae_s):
    """Sets problem.f, .h, .w (the latent grid of args' video under a vae_t x vae_s x vae_s VAE) and
    .tokens; returns latents [B, C, F, H, W] drawn from g, packed to [B, F*H*W, C]
    (LTXPipeline._pack_latents, patch 1)."""
    problem.f = (args.num_frames - 1) // vae_t + 1
    problem.h, problem.w = args.height // vae_s, args.width // vae_s
    problem.tokens = problem.f * problem.h * problem.w
    b = args.batch_size
    lat = torch.randn(b, channels, problem.f, problem.h, problem.w, generator=g)
    return lat.permute(0, 2, 3, 4, 1).reshape(b, problem.tokens, channels)


class LTXVideoProblem:
    def __init__(self, args, model, device, dtype):
        cfg = model.config
        b = args.batch_size
        text = 16 if args.tiny else TEXT_TOKENS
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        lat = packed_video_latents(self, args, cfg.in_channels, g, VAE_T, VAE_S)
        self.latents0 = (lat.to(device),)
        cond = torch.randn(b, text, cfg.caption_channels, generator=g) * 0.2
        uncond = torch.randn(b, text, cfg.caption_channels, generator=g) * 0.2
        mask = torch.zeros(b, text)
        mask[:, : max(1, text * 3 // 8)] = 1  # a prompt of ~48 tokens, rest padding
        umask = torch.zeros(b, text)
        umask[:, :1] = 1
        two = args.guidance_scale > 1
        self.enc = (torch.cat([uncond, cond]) if two else cond).to(device, dtype)
        self.mask = (torch.cat([umask, mask]) if two else mask).to(device, dtype)
        self.dtype = dtype
        self.rope_scale = (VAE_T / FRAME_RATE, VAE_S, VAE_S)

    def velocity(self, model, lat, sigma, guidance):
        x = lat[0].to(self.dtype)
        if guidance > 1:
            x = torch.cat([x, x])
        t = torch.full((x.shape[0],), sigma * 1000.0, device=x.device)
        v = model(hidden_states=x, encoder_hidden_states=self.enc, timestep=t, encoder_attention_mask=self.mask,
                  num_frames=self.f, height=self.h, width=self.w, rope_interpolation_scale=self.rope_scale,
                  return_dict=False)[0]
        return (cfg_combine(v, guidance),)


def make_problem(args, model, device, dtype):
    return LTXVideoProblem(args, model, device, dtype)


def describe(problem, args):
    return (f"{args.num_frames}x{args.height}x{args.width} -> latent {problem.f}x{problem.h}x{problem.w} "
            f"= {problem.tokens} tokens, batch {args.batch_size}")


def spec_of(namespace: dict):
    """The model-specific pieces of a script, for common_main."""
    keys = ("NAME", "CONFIG_SOURCE", "parser", "build_model", "make_problem", "describe")
    return types.SimpleNamespace(**{k: namespace[k] for k in keys})


def main(argv=None):
    return common_main(argv, spec_of(globals()))


if __name__ == "__main__":
    sys.exit(main())
