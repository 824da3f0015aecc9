"""Decoder-stage end-to-end benchmark: one deterministic stage of diffusers' LTX-2
diffusion decoder with its default FlexAttention processor vs ltx_kernels' neighborhood attention.

  python3 benchmarks/e2e_ltx2_decoder.py [--stage 1|2|3|4] [--grid T H W] [--iters 10] [--warmup 3]
      [--compile-blocks] [--tiny] [--device cuda|cpu] [--out file.json] [--allow-dirty]

What runs: stage i of diffusers.models.autoencoders.ltx2_diffusion_decoder.LTX2VideoDiffusionDecoder3d,
as its forward_stages_1_to_3 / forward_stage_4 run it: one build_block_mask for the stage, then
stage_depths[i] LTX2VideoVaeNABlock (pre-norm RMSNorm -> LTX2VideoVaeNeighborhoodAttention (q/k/v,
q/k RMSNorm, 3-D RoPE, attention, out proj) -> RMSNorm -> SwiGLU, residual adds), then the stage's
LTX2VideoVaePixelShuffleUpsampler. Channels, depth, window, head dim, upsample stride and channel
reduction are the decoder class's own __init__ defaults, read at run time (diffusers 0.42.1:
channels 2048/1024/512/512, depths 4/6/4/2, windows (3,7,7) x2 then (3,5,5) x2, head dim 64, MLP
ratio 4). Grid: the stage's input grid for a 121x512x768 video, derived the way the decoder does
it (latent 16x16x24 + 2 replicated border frames, then each upsample; a temporal stride of 2 drops
the duplicate leading frame): 18x16x24, 18x32x48, 35x32x48, 69x64x96 (bench_natten.py's stage-3
shape has 36 frames: --grid 36 32 48). Random weights (PyTorch
default init, seeded), random channels-last input [1, T, H, W, C] (the stages' layout); bf16 on
CUDA, fp32 on CPU. --tiny: 64 channels, head dim 32, 2 blocks, a grid just above the window.

Variants, one process, the same weights and input:
  flex  diffusers' default LTX2VideoVaeNeighborhoodAttnProcessor (flex_attention with a BlockMask
        from eager create_block_mask, rebuilt per stage call as the decoder does; its build time is
        also reported alone). On CUDA
        flex_attention is torch.compile'd (dynamic=False) through the hook diffusers' dispatcher
        leaves for it (it calls torch.nn.attention.flex_attention.flex_attention by attribute);
        eager flex would materialize the scores. The rest of the stage runs eager. CPU: eager.
  ours  ltx_kernels.integrations.diffusers.vae.apply_to(stage): fused norm+scale+RoPE, na3d.
  --compile-blocks adds flex+compile and ours+compile: every NABlock torch.compile'd (regional
        compile, dynamic=False; the mask is still built eagerly once per call).
Timed: the stage forward under no_grad, CUDA events (perf_counter on CPU) per call after --warmup
calls (compiled variants get at least one); median of --iters (at least 3 unless --tiny), with the fastest and
slowest call beside it. Peak: max allocated over the timed calls (weights and input included). Error: rel L2 = ||y - y_flex|| / ||y_flex|| of the stage
output. A variant that runs out of memory (the flex mask at large grids) reports "did not fit".
The JSON carries benchmarks/common.py's record_meta (the build's commit, refused from a tree that
differs from it unless --allow-dirty or --tiny, compilers, GPU, clocks, command, timing).
"""

import argparse
import contextlib
import functools
import gc
import inspect
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

VIDEO = (121, 512, 768)  # frames, height, width
VAE_T, VAE_S = 8, 32
TINY = dict(channels=64, head_dim=32, depth=2)  # head dim 32: the CUDA kernel runs it too


def decoder_defaults():
    from diffusers.models.autoencoders.ltx2_diffusion_decoder import LTX2VideoDiffusionDecoder3d

    sig = inspect.signature(LTX2VideoDiffusionDecoder3d.__init__).parameters
    return {k: v.default for k, v in sig.items() if v.default is not inspect.Parameter.empty}


def stage_grids(d):
    """Input grid (T, H, W) of each deterministic stage for VIDEO, as the decoder computes it."""
    t, h, w = (VIDEO[0] - 1) // VAE_T + 1, VIDEO[1] // VAE_S, VIDEO[2] // VAE_S
    t += (d["stage_kernels"][0][0] // 2) * 2  # trailing_pad_latent_frames
    grids = []
    for st, sh, sw in d["upsample_strides"]:
        grids.append((t, h, w))
        t, h, w = t * st - (1 if st == 2 else 0), h * sh, w * sw
    return grids


def build_stage(args, d):
    from diffusers.models.autoencoders import ltx2_diffusion_decoder as m

    i = args.stage - 1
    kernel = tuple(d["stage_kernels"][i])
    if args.tiny:
        cfg = dict(TINY, kernel=kernel, grid=tuple(k + j for k, j in zip(kernel, (1, 2, 3))))
    else:
        cfg = dict(channels=d["stage_channels"][i], head_dim=d["head_dim"], depth=d["stage_depths"][i],
                   kernel=kernel, grid=stage_grids(d)[i])
    if args.grid:
        cfg["grid"] = tuple(args.grid)
    cfg.update(heads=cfg["channels"] // cfg["head_dim"], upsample_stride=tuple(d["upsample_strides"][i]),
               upsample_reduction=d["upsample_channel_reductions"][i])
    blocks = torch.nn.ModuleList(
        m.LTX2VideoVaeNABlock(cfg["channels"], kernel, head_dim=cfg["head_dim"]) for _ in range(cfg["depth"]))
    up = m.LTX2VideoVaePixelShuffleUpsampler(cfg["channels"], cfg["upsample_stride"], cfg["upsample_reduction"])
    cfg["mlp_hidden"] = blocks[0].mlp.w_up.out_features
    return m, torch.nn.ModuleDict(dict(blocks=blocks, upsample=up)), cfg


def stage_forward(stage, x, blocks=None):
    mask = stage.blocks[0].attn.build_block_mask(x)  # None for ours
    for b in blocks or stage.blocks:
        x = b(x, mask)
    return stage.upsample(x)


@contextlib.contextmanager
def compiled_flex_attention(enabled):
    """Swap in torch.compile(flex_attention) where diffusers' dispatcher looks it up."""
    import torch.nn.attention.flex_attention as fa

    orig = fa.flex_attention
    if enabled:
        fa.flex_attention = _compile_once(orig)
    try:
        yield
    finally:
        fa.flex_attention = orig


@functools.cache
def _compile_once(fn):
    return torch.compile(fn, dynamic=False)


def timed(fn, device, iters, warmup):
    """Median ms of fn() over iters calls after warmup calls, peak GiB, the last output, and the
    (fastest, slowest) call in ms."""
    cuda, out, times = device.type == "cuda", None, []
    for _ in range(warmup):
        out = None  # free the previous output before the next call
        out = fn()
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    for _ in range(iters):
        out = None
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)] if cuda else None
        t0 = time.perf_counter() if not cuda else ev[0].record()
        out = fn()
        if cuda:
            ev[1].record()
            ev[1].synchronize()
        times.append(ev[0].elapsed_time(ev[1]) if cuda else (time.perf_counter() - t0) * 1e3)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if cuda else None
    return statistics.median(times), peak, out, (min(times), max(times))


def rel_l2(y, ref):
    num = den = 0.0
    for a, b in zip(y.flatten().split(1 << 24), ref.flatten().split(1 << 24)):
        b = b.to(a.device).double()
        num += (a.double() - b).square().sum().item()
        den += b.square().sum().item()
    return math.sqrt(num / den) if den > 0 else float("nan")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stage", type=int, choices=[1, 2, 3, 4], default=2)
    p.add_argument("--grid", type=int, nargs=3, metavar=("T", "H", "W"), help="override the stage grid")
    p.add_argument("--iters", type=int, default=10, help="timed calls per variant (at least 3 unless --tiny)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--compile-blocks", action="store_true", help="add torch.compile'd-block variants")
    p.add_argument("--tiny", action="store_true", help="CPU-sized config (64 ch, head dim 32, 2 blocks)")
    p.add_argument("--device", default=None, help="cuda (default if available) or cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write results as JSON here")
    p.add_argument("--allow-dirty", action="store_true",
                   help="write --out even if the build or the checkout differs from the build's commit (marked dirty)")
    args = p.parse_args(argv)
    if args.iters < 3 and not args.tiny:
        p.error("--iters: at least 3 timed calls (the median and spread need them; --tiny for a smoke test)")
    return args


def _timing(args) -> dict:
    return {"timer": "CUDA events around each stage call (perf_counter on the CPU)",
            "warmup": f"{args.warmup} calls (compiled variants and CUDA flex at least 1)",
            "repeats": f"{args.iters} timed calls", "statistic": "median, with the fastest and slowest call"}


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    import diffusers

    from common import record_meta

    script, argv = "benchmarks/e2e_ltx2_decoder.py", sys.argv[1:] if argv is None else list(argv)

    def meta():  # a --tiny run is a smoke test of the script, not a measurement: never refused
        return record_meta(script, argv, _timing(args), args.allow_dirty or args.tiny, device,
                           exclude=[args.out])

    if args.out:
        meta()  # refuse before measuring

    warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")  # CPU: eager flex
    from ltx_kernels.integrations.diffusers.vae import apply_to

    d = decoder_defaults()
    torch.manual_seed(args.seed)
    m, stage, cfg = build_stage(args, d)
    stage = stage.to(device, dtype).eval()
    T, H, W = cfg["grid"]
    x = torch.randn(1, T, H, W, cfg["channels"], device=device, dtype=dtype)
    weights = f"random (PyTorch default init, seed {args.seed})"
    print(f"LTX-2 decoder stage {args.stage}{' (tiny)' if args.tiny else ''}: {cfg['depth']} x LTX2VideoVaeNABlock "
          f"C={cfg['channels']} ({cfg['heads']} heads x {cfg['head_dim']}), window {cfg['kernel']}, grid {T}x{H}x{W} "
          f"({T * H * W} tokens) + upsample {cfg['upsample_stride']}; weights {weights}; {dtype}, {device}")

    def set_flex():
        for mod in stage.modules():
            if isinstance(mod, m.LTX2VideoVaeNeighborhoodAttention):
                mod.set_processor(m.LTX2VideoVaeNeighborhoodAttnProcessor())

    plan = [("flex", set_flex, False), ("ours", lambda: apply_to(stage), False)]
    if args.compile_blocks:
        plan += [("flex+compile", set_flex, True), ("ours+compile", lambda: apply_to(stage), True)]
    rows, ref = [], None
    for name, select, compile_blocks in plan:
        select()
        row = dict(variant=name, status="ok", ms=None, ms_min_max=None, mask_ms=None, peak_gib=None,
                   rel_l2_vs_flex=None)
        if compile_blocks:
            torch._dynamo.reset()
        blocks = [torch.compile(b, dynamic=False) for b in stage.blocks] if compile_blocks else None
        warmup = max(args.warmup, 1) if compile_blocks or (name == "flex" and device.type == "cuda") else args.warmup
        try:
            with torch.no_grad(), compiled_flex_attention(name == "flex" and device.type == "cuda"):
                row["ms"], row["peak_gib"], y, row["ms_min_max"] = timed(
                    lambda: stage_forward(stage, x, blocks), device, args.iters, warmup)
                if name == "flex":
                    row["mask_ms"] = timed(lambda: stage.blocks[0].attn.build_block_mask(x), device,
                                           args.iters, min(warmup, 1))[0]
        except Exception as e:  # noqa: BLE001 - report it and go on with the other variants
            oom = isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()
            row.update(status="did not fit" if oom else "failed",
                       error=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}")
            y = None
        if y is not None:
            if name == "flex":
                ref = y.cpu()
            elif ref is not None:
                row["rel_l2_vs_flex"] = rel_l2(y, ref)
            row["output_shape"] = list(y.shape)
        del y
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        rows.append(row)

    flex_ms = rows[0]["ms"]
    fmt = lambda v, spec, w: f"{v:{w}{spec}}" if v is not None else f"{'-':>{w}}"  # noqa: E731
    print(f"{'variant':<14} {'stage ms':>10} {'min - max':>17} {'x flex':>7} {'mask ms':>9} {'peak GiB':>9} "
          f"{'rel L2 vs flex':>15}")
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['variant']:<14} {r['status']}: {r.get('error', '')}")
            continue
        sp = flex_ms / r["ms"] if flex_ms else None
        lo, hi = r["ms_min_max"]
        print(f"{r['variant']:<14} {r['ms']:10.2f} {f'{lo:.2f} - {hi:.2f}':>17} {fmt(sp, '.2f', 7)} "
              f"{fmt(r['mask_ms'], '.2f', 9)} "
              f"{fmt(r['peak_gib'], '.2f', 9)} {fmt(r['rel_l2_vs_flex'], '.3e', 15)}")

    if args.out:
        res = dict(
            benchmark="e2e_ltx2_decoder", stage=args.stage, tiny=args.tiny, device=str(device), dtype=str(dtype),
            **meta(), machine=platform.machine(), cpu=platform.processor() or None, diffusers=diffusers.__version__,
            module=("diffusers LTX2VideoDiffusionDecoder3d stage: depth x LTX2VideoVaeNABlock "
                    "+ LTX2VideoVaePixelShuffleUpsampler"),
            config_source="LTX2VideoDiffusionDecoder3d.__init__ defaults" + (" (tiny override)" if args.tiny else ""),
            config={k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
            video=None if args.tiny or args.grid else list(VIDEO), input_shape=[1, T, H, W, cfg["channels"]],
            input_layout="BTHWC", weights=weights, iters=args.iters, warmup=args.warmup,
            flex_attention_compiled=device.type == "cuda", variants=rows)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
