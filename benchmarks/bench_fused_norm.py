"""Fused-norm benchmarks: ours vs the eager fp32 composition (benchmarks/baselines.py),
PyTorch's fused norms (F.rms_norm / F.layer_norm) plus torch ops, and torch.compile of the fp32
composition; same run, same method (benchmarks/common.py). The error of what was timed is
measured against the float64 oracles of ltx_kernels.reference.

Bytes = every tensor read + every tensor written once; broadcast tables (weight, bias,
per-sample scale / shift / gate) are counted once.
"""

import torch
import torch.nn.functional as F

import ltx_kernels as lk
from ltx_kernels import reference as ref

import baselines as bl
from common import Row, n_copies, time_graph

LTX_SHAPES = [(2, 2688, 2048), (2, 6144, 4096), (1, 32760, 4096)]
LLM_SHAPES = [(4096, 4096)]


# ---- PyTorch's fused norms plus torch ops (the fp32 compositions are in baselines.py) -------
def torch_add_rms_norm(x, r, w, eps):
    h = x + r
    return F.rms_norm(h, (h.shape[-1],), w, eps), h


def _bcast(t, x):
    return t if t.shape == x.shape else t.unsqueeze(1)


def torch_adaln_rms_norm(x, scale, shift, eps):
    n = F.rms_norm(x, (x.shape[-1],), None, eps)
    return torch.addcmul(_bcast(shift, x), n, 1 + _bcast(scale, x))


def torch_adaln_layer_norm(x, scale, shift, eps):
    n = F.layer_norm(x, (x.shape[-1],), None, None, eps)
    return torch.addcmul(_bcast(shift, x), n, 1 + _bcast(scale, x))


def torch_gated(h, y, gate, scale, shift, eps):
    h = torch.addcmul(h, y, _bcast(gate, h))
    n = F.rms_norm(h, (h.shape[-1],), None, eps)
    return h, torch.addcmul(_bcast(shift, h), n, 1 + _bcast(scale, h))


def _row(op, shape, dtype, ours, base, nbytes, note, copy_gbps):
    return Row(op, list(shape), str(dtype).replace("torch.", ""), ours, base, bytes=nbytes,
               note=note).finish(copy_gbps)


def run(copy_gbps, quick=False):
    rows = []
    eps = 1e-6
    dt = torch.bfloat16
    es = 2
    c_eager_add = torch.compile(bl.add_rms_norm, dynamic=False)
    c_eager_adaln = torch.compile(bl.adaln_rms_norm, dynamic=False)
    c_ln = torch.compile(bl.adaln_layer_norm, dynamic=False)
    c_gated = torch.compile(bl.gated_residual_adaln_rms_norm, dynamic=False)
    c_layer = torch.compile(bl.layer_norm, dynamic=False)
    ltx = LTX_SHAPES[:1] if quick else LTX_SHAPES

    # add_rms_norm: read x, residual; write y, residual_out (+ weight once)
    for shape in ltx + LLM_SHAPES:
        n, c = torch.Size(shape).numel(), shape[-1]
        nbytes = 4 * n * es + c * es
        k = n_copies(nbytes)
        xs = [torch.randn(shape, device="cuda", dtype=dt) for _ in range(k)]
        rs = [torch.randn(shape, device="cuda", dtype=dt) for _ in range(k)]
        w = torch.randn(c, device="cuda", dtype=dt)
        ys = [torch.empty_like(x) for x in xs]
        ros = [torch.empty_like(x) for x in xs]
        ours = time_graph(lambda i: lk.add_rms_norm(xs[i], rs[i], w, eps, out=ys[i], residual_out=ros[i]), k)
        base = {
            "eager": time_graph(lambda i: bl.add_rms_norm(xs[i], rs[i], w, eps), k),
            "add+F.rms_norm": time_graph(lambda i: torch_add_rms_norm(xs[i], rs[i], w, eps), k),
            "torch.compile": time_graph(lambda i: c_eager_add(xs[i], rs[i], w, eps), k),
        }
        want, _ = ref.add_rms_norm(xs[0], rs[0], w, eps)
        err = (ys[0].float() - want).abs().max().item()
        rows.append(_row("add_rms_norm", shape, dt, ours, base, nbytes, f"max abs err vs fp64 oracle {err:.2e}",
                         copy_gbps))
        del xs, rs, ys, ros
        torch.cuda.empty_cache()

    for shape in ltx:
        B, S, C = shape
        n = B * S * C
        # layer_norm: read x, write out (+ weight, bias once)
        nbytes = 2 * n * es + 2 * C * es
        k = n_copies(nbytes)
        xs = [torch.randn(shape, device="cuda", dtype=dt) for _ in range(k)]
        outs = [torch.empty_like(x) for x in xs]
        w = torch.randn(C, device="cuda", dtype=dt)
        b = torch.randn(C, device="cuda", dtype=dt)
        ours = time_graph(lambda i: lk.layer_norm(xs[i], w, b, 1e-5, out=outs[i]), k)
        base = {
            "F.layer_norm": time_graph(lambda i: F.layer_norm(xs[i], (C,), w, b, 1e-5), k),
            "torch.compile": time_graph(lambda i: c_layer(xs[i], w, b, 1e-5), k),
        }
        err = (outs[0].float() - ref.layer_norm(xs[0], w, b, 1e-5)).abs().max().item()
        rows.append(_row("layer_norm", shape, dt, ours, base, nbytes, f"max abs err vs fp64 oracle {err:.2e}",
                         copy_gbps))

        # adaln (rms and layer), per-sample and per-token tables
        for form in ["per_sample", "per_token"]:
            tshape = (B, C) if form == "per_sample" else shape
            tbytes = 2 * torch.Size(tshape).numel() * es  # scale + shift, per-sample ones once
            if form == "per_token":
                scs = [torch.randn(tshape, device="cuda", dtype=dt) * 0.1 for _ in range(k)]
                shs = [torch.randn(tshape, device="cuda", dtype=dt) * 0.1 for _ in range(k)]
            else:
                scs = [torch.randn(tshape, device="cuda", dtype=dt) * 0.1] * k
                shs = [torch.randn(tshape, device="cuda", dtype=dt) * 0.1] * k
            nbytes = 2 * n * es + tbytes
            kk = min(n_copies(nbytes), k)
            ours = time_graph(lambda i: lk.adaln_rms_norm(xs[i], scs[i], shs[i], None, eps, out=outs[i]), kk)
            base = {
                "eager": time_graph(lambda i: bl.adaln_rms_norm(xs[i], scs[i], shs[i], None, eps), kk),
                "F.rms_norm+addcmul": time_graph(lambda i: torch_adaln_rms_norm(xs[i], scs[i], shs[i], eps), kk),
                "torch.compile": time_graph(lambda i: c_eager_adaln(xs[i], scs[i], shs[i], None, eps), kk),
            }
            want = ref.adaln_rms_norm(xs[0], scs[0], shs[0], None, eps)
            err = (outs[0].float() - want).abs().max().item()
            rows.append(_row(f"adaln_rms_norm ({form})", shape, dt, ours, base, nbytes,
                             f"max abs err vs fp64 oracle {err:.2e}", copy_gbps))

            ours = time_graph(lambda i: lk.adaln_layer_norm(xs[i], scs[i], shs[i], None, None, eps, out=outs[i]), kk)
            base = {
                "F.layer_norm+addcmul": time_graph(lambda i: torch_adaln_layer_norm(xs[i], scs[i], shs[i], eps), kk),
                "torch.compile": time_graph(lambda i: c_ln(xs[i], scs[i], shs[i], None, None, eps), kk),
            }
            want = ref.adaln_layer_norm(xs[0], scs[0], shs[0], None, None, eps)
            err = (outs[0].float() - want).abs().max().item()
            rows.append(_row(f"adaln_layer_norm ({form})", shape, dt, ours, base, nbytes,
                             f"max abs err vs fp64 oracle {err:.2e}", copy_gbps))
            del scs, shs

            # gated residual: read h, y (+ gate, scale, shift); write h_new, out
            gbytes = 3 * torch.Size(tshape).numel() * es
            nbytes_g = 4 * n * es + gbytes
            kg = n_copies(nbytes_g)
            hs = [torch.randn(shape, device="cuda", dtype=dt) for _ in range(kg)]
            ys = [torch.randn(shape, device="cuda", dtype=dt) for _ in range(kg)]
            mk = (lambda: [torch.randn(tshape, device="cuda", dtype=dt) * 0.1 for _ in range(kg)]) if form == "per_token" \
                else (lambda: [torch.randn(tshape, device="cuda", dtype=dt) * 0.1] * kg)
            gs, scs, shs = mk(), mk(), mk()
            hos = [torch.empty_like(h) for h in hs]
            os_ = [torch.empty_like(h) for h in hs]
            ours = time_graph(lambda i: lk.gated_residual_adaln_rms_norm(
                hs[i], ys[i], gs[i], scs[i], shs[i], None, eps, out=os_[i], h_out=hos[i]), kg)
            base = {
                "eager": time_graph(lambda i: bl.gated_residual_adaln_rms_norm(
                    hs[i], ys[i], gs[i], scs[i], shs[i], None, eps), kg),
                "addcmul+F.rms_norm+addcmul": time_graph(lambda i: torch_gated(hs[i], ys[i], gs[i], scs[i], shs[i], eps), kg),
                "torch.compile": time_graph(lambda i: c_gated(hs[i], ys[i], gs[i], scs[i], shs[i], None, eps), kg),
            }
            _, want = ref.gated_residual_adaln_rms_norm(hs[0], ys[0], gs[0], scs[0], shs[0], None, eps)
            err = (os_[0].float() - want).abs().max().item()
            rows.append(_row(f"gated_residual_adaln_rms_norm ({form})", shape, dt, ours, base, nbytes_g,
                             f"max abs err vs fp64 oracle {err:.2e}", copy_gbps))
            del hs, ys, gs, scs, shs, hos, os_
            torch.cuda.empty_cache()
        del xs, outs
        torch.cuda.empty_cache()
    return rows
