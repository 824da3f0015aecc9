"""Where one denoising step's GPU time goes: torch.profiler over one step of
benchmarks/e2e_ltx_video.py's (or e2e_ltx2.py's) problem, kernels grouped by kind.

  python3 benchmarks/profile_e2e_step.py [--model ltx_video|ltx2] [--variant compile|optimized+compile|
      optimized+fp8+compile, optimized+fp8_rowwise+compile (any quantization), with +attn-bf16 or
      +attn-fp8 for optimize(attention=...); peer:scaled_mm-rowwise+compile or -tensorwise: the
      e2e scripts' --peers] [e2e flags: --num-frames 49 --height 512 --width 768 ...]

Groups (by kernel name): Triton (torch.compile; Inductor names a kernel after the ops it fuses, so
this comes first), attention (flash / fmha / cudnn sdpa), GEMM (cuBLAS(Lt) / nvjet / CUTLASS /
ours), ltx_kernels' other kernels (namespace ltx_kernels), other. Prints the sum per group (ms per step) and the 15 heaviest kernels.
On CUDA also where the step's wall time goes that is not kernel time: the wall time of a one-step
denoising call before any profiling (median of 3 synchronized calls, `wall_ms_unprofiled`, so
that the profiler's own state cannot touch it), the kernel count, and a profiled step
of the host side only: the 15 operators with the most self CPU time (the profiler's own cost per
event included, so for ranking, not as absolute host cost). --out writes JSON with
benchmarks/common.py's record_meta (the build's commit, refused from a tree that differs from it
unless --allow-dirty, compilers, GPU, clocks, command, method).
"""

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def kind(name: str) -> str:
    n = name.lower()
    if n.startswith("triton"):  # Inductor names its kernels after the ops they fuse ("..._attention_...")
        return "triton (torch.compile)"
    if "ltx_kernels" in n:
        if "attention_fwd" in n:  # its template arguments name cutlass types too
            return "attention (ours)"
        return "gemm (ours, fp8)" if ("gemm" in n or "cutlass" in n) else "ltx_kernels (norm/rope/act/quant)"
    if "flash" in n or "fmha" in n or "sdpa" in n or "attention" in n:
        return "attention"
    if "gemm" in n or "nvjet" in n or "cublas" in n or "sm90_xmma" in n or "cutlass" in n:
        return "gemm (cuBLAS / CUTLASS)"
    if "triton" in n:
        return "triton (torch.compile)"
    return "other (eager elementwise, copies, ...)"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["ltx_video", "ltx2"], default="ltx_video")
    p.add_argument("--variant", default="optimized+compile")
    p.add_argument("--out", default=None)
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of the script (CPU ops, --tiny)")
    p.add_argument("--allow-dirty", action="store_true",
                   help="write --out even if the build or the checkout differs from the build's commit (marked dirty)")
    args, rest = p.parse_known_args(argv)
    import e2e_ltx_video as common
    from common import record_meta as _record_meta

    def meta():
        return _record_meta("benchmarks/profile_e2e_step.py", sys.argv[1:] if argv is None else list(argv),
                            {"timer": "torch.profiler over one denoising step after two warm-up steps",
                             "statistic": "sum of each kernel's device time (CPU: top-level op time)"},
                            args.allow_dirty or args.device == "cpu", args.device, exclude=[args.out] if args.out else ())

    if args.out:
        meta()  # refuse before measuring

    mod = common if args.model == "ltx_video" else __import__("e2e_ltx2")
    spec = common.spec_of(vars(mod))
    eargs = spec.parser().parse_args(rest + ["--steps", "2"])
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(eargs.seed)
    model, _ = spec.build_model(eargs, device, dtype)
    problem = spec.make_problem(eargs, model, device, dtype)
    parts = args.variant.split("+")
    if "optimized" in args.variant:
        import ltx_kernels.integrations.diffusers as lkd

        attn = next((x[len("attn-"):] for x in parts if x.startswith("attn-")), None)
        quant = next((x for x in parts[1:] if not x.startswith("attn-") and x != "compile"), None)
        lkd.optimize(model, quantization=quant, attention=attn)
    elif parts[0].startswith("peer:scaled_mm-"):  # e2e_ltx_video.py --peers: FP8 linears through _scaled_mm
        from baselines import ScaledMMLinear, swap_linears

        swap_linears(model, common.quantizable_linears(model), lambda m: ScaledMMLinear(m, parts[0].split("-")[1]))
    if "compile" in args.variant:
        common.compile_blocks(model)
    for _ in range(2):  # compile and warm up
        common.denoise(problem, model, 2, eargs.guidance_scale, device)
    cuda = device.type == "cuda"
    walls = []
    for _ in range(3 if cuda else 0):  # before the profiler has run
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        common.denoise(problem, model, 1, eargs.guidance_scale, device)
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t0) * 1e3)
    act = torch.profiler.ProfilerActivity.CUDA if cuda else torch.profiler.ProfilerActivity.CPU
    with torch.profiler.profile(activities=[act]) as prof:
        common.denoise(problem, model, 1, eargs.guidance_scale, device)
        if cuda:
            torch.cuda.synchronize()
    per_kernel = defaultdict(float)
    kernels = 0
    for e in prof.events():
        if cuda and e.device_type == torch.autograd.DeviceType.CUDA:
            per_kernel[e.name] += e.device_time_total / 1e3  # us -> ms
            kernels += 1
        elif not cuda and e.cpu_parent is None:  # top-level CPU ops
            per_kernel[e.name] += e.cpu_time_total / 1e3
    host = {}
    if cuda:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as hprof:
            common.denoise(problem, model, 1, eargs.guidance_scale, device)
            torch.cuda.synchronize()
        ops = sorted(hprof.key_averages(), key=lambda a: -a.self_cpu_time_total)[:15]
        host = dict(wall_ms_unprofiled=statistics.median(walls), wall_runs_ms_unprofiled=walls, kernels=kernels,
                    host_top=[[a.key, a.self_cpu_time_total / 1e3, a.count] for a in ops])
    groups = defaultdict(float)
    for name, ms in per_kernel.items():
        groups[kind(name)] += ms
    total = sum(groups.values())
    print(f"{args.model} {args.variant}: {spec.describe(problem, eargs)}; GPU time of one step {total:.2f} ms")
    for g, ms in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {g:<40} {ms:8.2f} ms  {100 * ms / total:5.1f}%")
    top = sorted(per_kernel.items(), key=lambda kv: -kv[1])[:15]
    for name, ms in top:
        print(f"    {ms:7.2f} ms  {name[:110]}")
    if host:
        print(f"wall time of a one-step call before profiling {host['wall_ms_unprofiled']:.2f} ms (median of 3; the "
              f"GPU waited {host['wall_ms_unprofiled'] - total:.2f} ms), {kernels} kernels; self CPU time by "
              "operator (profiled):")
        for name, ms, n in host["host_top"]:
            print(f"    {ms:7.2f} ms  {n:5d} calls  {name[:100]}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta(), model=args.model, variant=args.variant, shape=spec.describe(problem, eargs),
                           step_gpu_ms=total, groups=groups, top=top, **host), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
