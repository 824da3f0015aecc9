"""Sweep of the row norms' launch shapes against the heuristic's pick (norm_shape in
ltx_kernels/common/rowwise_launch.h). Every shape the kernels compile (warp or CTA per row,
1-16 accesses of 16 bytes per thread, with or without the epilogue operands preloaded, the
looping kernel) is forced in turn through LTX_KERNELS_NORM_SHAPE (read per call) and timed by
CUDA-graph replay with inputs rotated past L2, at the norm and fused_norm benchmarks' shapes.
Prints per op and shape torch.compile's time (the fp32 composition of benchmarks/baselines.py,
same run), the pick's and the best shape's, each as compile's time over it; shapes a row cannot
run are skipped.

  python3 benchmarks/sweep_norm.py [--quick] [--json out.json] [--allow-dirty]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ltx_kernels as lk  # noqa: E402

import baselines as bl  # noqa: E402
from common import add_record_arguments, check_record, env_var, graph_timing, n_copies, time_graph, write_record  # noqa: E402

SHAPES = ["w1", "w2", "w4", "w8", "w1p", "w2p", "b1", "b2", "b4", "b8", "b16", "b1p", "b2p", "b4p", "loop"]
NORM_SHAPES = [(1, 1024, 2048), (2, 1024, 2048), (4, 1024, 2048), (2, 4096, 3072), (4, 4096, 3072),
               (2, 2688, 2048), (2, 6144, 4096), (1, 32760, 4096), (1, 4096), (32, 4096), (4096, 4096),
               (16384, 8192)]
LTX = [(2, 2688, 2048), (2, 6144, 4096), (1, 32760, 4096)]
EPS = 1e-6


def compiled(fn):
    return torch.compile(fn, dynamic=False)


def cases(quick):
    """(op label, shape, bytes moved, make(k) -> (ours(i), torch.compile of the fp32 composition(i)))
    for every benchmarked call."""
    c_rms, c_add, c_ln = compiled(bl.rms_norm), compiled(bl.add_rms_norm), compiled(bl.layer_norm)
    c_adaln, c_adaln_ln = compiled(bl.adaln_rms_norm), compiled(bl.adaln_layer_norm)
    c_gated = compiled(bl.gated_residual_adaln_rms_norm)
    dt, es = torch.bfloat16, 2
    out = []

    def rnd(shape, k, s=1.0):
        return [torch.randn(shape, device="cuda", dtype=dt) * s for _ in range(k)]

    for shape in (NORM_SHAPES[5:8] if quick else NORM_SHAPES):
        def mk(k, shape=shape):
            xs, w = rnd(shape, k), torch.randn(shape[-1], device="cuda", dtype=dt)
            outs = [torch.empty_like(x) for x in xs]
            return (lambda i: lk.rms_norm(xs[i], w, EPS, out=outs[i]), lambda i: c_rms(xs[i], w, EPS))
        out.append(("rms_norm", shape, 2 * torch.Size(shape).numel() * es, mk))
    for shape in LTX + [(4096, 4096)]:
        def mk(k, shape=shape):
            xs, rs, w = rnd(shape, k), rnd(shape, k), torch.randn(shape[-1], device="cuda", dtype=dt)
            ys, ros = [torch.empty_like(x) for x in xs], [torch.empty_like(x) for x in xs]
            return (lambda i: lk.add_rms_norm(xs[i], rs[i], w, EPS, out=ys[i], residual_out=ros[i]),
                    lambda i: c_add(xs[i], rs[i], w, EPS))
        out.append(("add_rms_norm", shape, 4 * torch.Size(shape).numel() * es, mk))
    for shape in (LTX[:1] if quick else LTX):
        B, S, C = shape
        n = B * S * C

        def mk_ln(k, shape=shape, C=C):
            xs, w, b = rnd(shape, k), torch.randn(C, device="cuda", dtype=dt), torch.randn(C, device="cuda", dtype=dt)
            outs = [torch.empty_like(x) for x in xs]
            return (lambda i: lk.layer_norm(xs[i], w, b, 1e-5, out=outs[i]), lambda i: c_ln(xs[i], w, b, 1e-5))
        out.append(("layer_norm", shape, 2 * n * es, mk_ln))
        for form in ["per_sample", "per_token"]:
            tshape = (B, C) if form == "per_sample" else shape
            tn = torch.Size(tshape).numel()

            def tables(k, m, tshape=tshape, form=form):
                if form == "per_token":
                    return [rnd(tshape, k, 0.1) for _ in range(m)]
                return [rnd(tshape, 1, 0.1) * k for _ in range(m)]

            def mk_adaln(k, shape=shape, tables=tables, layer=False):
                xs = rnd(shape, k)
                scs, shs = tables(k, 2)
                outs = [torch.empty_like(x) for x in xs]
                if layer:
                    return (lambda i: lk.adaln_layer_norm(xs[i], scs[i], shs[i], None, None, EPS, out=outs[i]),
                            lambda i: c_adaln_ln(xs[i], scs[i], shs[i], None, None, EPS))
                return (lambda i: lk.adaln_rms_norm(xs[i], scs[i], shs[i], None, EPS, out=outs[i]),
                        lambda i: c_adaln(xs[i], scs[i], shs[i], None, EPS))
            out.append((f"adaln_rms_norm ({form})", shape, 2 * n * es + 2 * tn * es, mk_adaln))
            out.append((f"adaln_layer_norm ({form})", shape, 2 * n * es + 2 * tn * es,
                        lambda k, f=mk_adaln: f(k, layer=True)))

            def mk_gated(k, shape=shape, tables=tables):
                hs, ys = rnd(shape, k), rnd(shape, k)
                gs, scs, shs = tables(k, 3)
                hos, os_ = [torch.empty_like(h) for h in hs], [torch.empty_like(h) for h in hs]
                return (lambda i: lk.gated_residual_adaln_rms_norm(hs[i], ys[i], gs[i], scs[i], shs[i], None, EPS,
                                                                   out=os_[i], h_out=hos[i]),
                        lambda i: c_gated(hs[i], ys[i], gs[i], scs[i], shs[i], None, EPS))
            out.append((f"gated_residual_adaln_rms_norm ({form})", shape, 4 * n * es + 3 * tn * es, mk_gated))
    return out


def time_shape(fn, k, shape):
    """Median us of fn under LTX_KERNELS_NORM_SHAPE=shape (None: the heuristic), or None when the
    shape cannot run the row (the op's error names the variable; any other error is raised)."""
    with env_var("LTX_KERNELS_NORM_SHAPE", shape):
        try:
            fn(0)
            torch.cuda.synchronize()
        except RuntimeError as e:
            if "LTX_KERNELS_NORM_SHAPE" not in str(e):
                raise
            return None
        return time_graph(fn, k, trials=9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="")
    add_record_arguments(ap)
    args = ap.parse_args()
    check_record(args.json, args.allow_dirty)
    rows = []
    for op, shape, nbytes, make in cases(args.quick):
        k = n_copies(nbytes)
        fn, base = make(k)
        comp = time_graph(base, k, trials=9)
        auto = time_shape(fn, k, None)
        times = {s: t for s in SHAPES if (t := time_shape(fn, k, s)) is not None}
        best = min(times, key=times.get)
        ranked = sorted(times, key=times.get)[:3]
        rows.append(dict(op=op, shape=list(shape), bytes=nbytes, auto_us=auto, best=best, best_us=times[best],
                         auto_over_best=auto / times[best], compile_us=comp, times=times))
        print(f"{op:40s} {str(list(shape)):17s} compile {comp:7.2f} auto {auto:7.2f} ({comp / auto:.3f}x)  "
              f"best {best:4s} {times[best]:7.2f} ({comp / times[best]:.3f}x)  next: "
              + ", ".join(f"{s} {times[s]:.2f}" for s in ranked[1:]), flush=True)
        del fn, base
        torch.cuda.empty_cache()
        if args.json:  # after every case, so that a run cut short keeps what it measured
            write_record(args.json, rows, "benchmarks/sweep_norm.py", sys.argv[1:], graph_timing(trials=9),
                         args.allow_dirty)


if __name__ == "__main__":
    main()
