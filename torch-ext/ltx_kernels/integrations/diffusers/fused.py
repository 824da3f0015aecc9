"""The fused pieces both LTX blocks are built from: RMSNorm + AdaLN modulation, with a pending
gated residual folded in and optionally FP8 output (`norm_mod`), and the tanh-GELU feed-forward."""

from typing import Optional

import torch

from ...activation import gelu_tanh
from ...gemm import bf16_gemm
from ...fused_norm import adaln_rms_norm, gated_residual_adaln_rms_norm
from ...norm import rms_norm
from .._compile_policy import use_kernel
from ._common import PATCHED, cast_weight, const_table, fp8_input_group, fp8_kwargs, is_fp8_linear, mod_table, \
    supports_fp8_out
from .hooks import diffusers_hooks, has_hooks, hooked_param


def fp8_ok(x: torch.Tensor, group: int = 128) -> bool:
    """Whether the fused ops can hand x's rows to an FP8 linear quantized per `group` columns (128,
    or the row width for one scale per token)."""
    return group > 0 and x.shape[-1] % 128 == 0 and x.shape[-1] % group == 0 and x.dtype in (torch.float16,
                                                                                                torch.bfloat16)


def norm_mod(norm, h, pending, scale, shift, fp8: int = 0):
    """Flush a pending gated residual into h and normalise: returns (h_new, y) with
    h_new = h + y_p * gate_p (pending = (y_p, gate_p or None); h itself when pending is None)
    and y = rms_norm(h_new, norm.weight, norm.eps) * (1 + scale) + shift (plain RMSNorm when
    scale/shift are None). With fp8 = the next linear's input group (fp8_input_group: 128, or the
    row width for one scale per token; and this build's fused norms able to emit FP8), y is the
    tuple (q, scales) for that FP8 linear."""
    group = int(fp8)
    fp8 = fp8_ok(h, group)
    op = "rms_norm" if pending is None and scale is None else "adaln_rms_norm" if pending is None \
        else "gated_residual_adaln_rms_norm"
    if not fp8 and not use_kernel(op, h):
        return _norm_mod_composed(norm, h, pending, scale, shift)
    w, eps = cast_weight(hooked_param(norm), h), norm.eps
    if pending is None:
        if scale is None:
            if fp8 and supports_fp8_out(rms_norm):
                return h, tuple(rms_norm(h, w, eps, **fp8_kwargs(rms_norm, h, group)))
            return h, rms_norm(h, w, eps)
        sc, sh = mod_table(scale, h), mod_table(shift, h)
        if fp8 and supports_fp8_out(adaln_rms_norm):
            return h, tuple(adaln_rms_norm(h, sc, sh, w, eps, **fp8_kwargs(adaln_rms_norm, h, group)))
        return h, adaln_rms_norm(h, sc, sh, w, eps)
    y, gate = pending
    if gate is None:
        gate = const_table(h, 1.0)
    if scale is None:
        scale = shift = const_table(h, 0.0)
    args = (h, y.to(h.dtype), mod_table(gate, h), mod_table(scale, h), mod_table(shift, h), w, eps)
    if fp8 and supports_fp8_out(gated_residual_adaln_rms_norm):
        h_new, q, s = gated_residual_adaln_rms_norm(*args, **fp8_kwargs(gated_residual_adaln_rms_norm, h, group))
        return h_new, (q, s)
    return gated_residual_adaln_rms_norm(*args)


def _norm_mod_composed(norm, h, pending, scale, shift):
    """norm_mod as the diffusers blocks write it (for torch.compile to fuse: _compile_policy)."""
    if pending is not None:
        y, gate = pending
        h = h + (y if gate is None else y * gate)
    y = norm(h)
    if scale is not None:
        y = y * (1 + scale) + shift
    return h, y


# The FP8 (q, scales) hand-off from a fused norm to the next module is only made to a module
# without hooks: hooks see that module's inputs (a cache hook reads hidden_states' batch size,
# context parallelism splits it) and expect a tensor.


def attn_prequant(attn) -> int:
    """The FP8 input group attention module `attn`'s processor takes pre-quantized (its projections'
    fp8_input_group), 0 for none."""
    if has_hooks(attn):
        return 0
    return int(getattr(getattr(attn, "processor", None), "accepts_prequant", 0) or 0)


def ff_prequant(ff) -> int:
    """The FP8 input group of feed-forward `ff`'s up projection when ff_forward runs it and nothing
    hooks it, else 0."""
    if not getattr(ff, PATCHED, False) or has_hooks(ff) or has_hooks(ff.net[0]):
        return 0
    return fp8_input_group(getattr(ff.net[0], "proj", None))


def _is_plain_fp8_linear(m) -> bool:
    """The FP8 layers with fused epilogues: FP8BlockwiseLinear (not FP6BlockwiseLinear: no epilogues
    there) and FP8RowwiseLinear."""
    return type(m).__name__ in ("FP8BlockwiseLinear", "FP8RowwiseLinear")


def _bf16_gemm_ok(x: torch.Tensor, lin) -> bool:
    """The sm_90a bf16 GEMM can run x @ lin.weight^T with its fused epilogue."""
    w = getattr(lin, "weight", None)
    return (isinstance(lin, torch.nn.Linear) and x.is_cuda and x.dtype == torch.bfloat16 and w.dtype == torch.bfloat16
            and torch.cuda.get_device_capability(x.device) == (9, 0) and lin.in_features % 8 == 0
            and lin.out_features % 8 == 0)


def ff_configure(ff, fuse_epilogue: bool = False) -> None:
    """With `fuse_epilogue`, the up projection's GEMM applies the tanh-GELU: an FP8BlockwiseLinear
    gets epilogue "gelu_tanh" (and, when the down projection is FP8 too, emits the FP8 (q, scales)
    the down GEMM reads), a bf16 nn.Linear runs through bf16_gemm on sm_90. Off by default: at
    LTX-Video's feed-forward shape our fused-epilogue GEMM is slower than the plain GEMM followed
    by the separate activation (the fp8_gemm+gelu rows of benchmarks/results/h200/gemm.json), so
    optimize() keeps the separate passes."""
    ff._ltx_kernels_gemm_epilogue = bool(fuse_epilogue)
    proj = ff.net[0].proj
    if type(proj).__name__ == "FP8BlockwiseLinear":
        down = [m for m in ff.net[1:] if not isinstance(m, torch.nn.Dropout)]
        fp8_next = len(down) == 1 and is_fp8_linear(down[0]) and proj.out_features % 128 == 0
        if fuse_epilogue:
            proj.set_epilogue("gelu_tanh", fp8_output=fp8_next)
        elif proj.epilogue == "gelu_tanh":
            proj.set_epilogue("none")


def ff_forward(self, hidden_states: torch.Tensor, *args, residual: Optional[torch.Tensor] = None,
               gate: Optional[torch.Tensor] = None, **kwargs) -> torch.Tensor:
    """diffusers `FeedForward.forward` for net = [GELU(tanh), Dropout, Linear(, ...)]: the first
    projection with the tanh-GELU fused into its GEMM when ff_configure enabled it (FP8 layers with
    the epilogue set; bf16 linears through bf16_gemm on sm_90), else the projection then
    `gelu_tanh` in place; then the rest
    of `net` (dropouts are identities at inference). The deprecated `scale` argument is ignored, as
    diffusers does. With `residual` and `gate` (the block's `h + ff(x) * gate`), returns
    residual + gate * ff(x): in the down projection's GEMM epilogue where that is a plain FP8
    linear (linear_then_gated), else computed after it."""
    act = self.net[0]
    proj = act.proj
    rest = [m for m in self.net[1:] if not is_inert_dropout(m)]  # what follows the activation
    if has_hooks(act):
        # hooks on the activation module itself: call it as diffusers does (projection, then
        # GELU), which is only right while the projection does not apply the GELU itself
        if getattr(proj, "epilogue", "none") != "none":
            raise RuntimeError(
                "ltx_kernels.integrations.diffusers: the activation module of a feed-forward whose "
                "projection applies the GELU in its GEMM must not carry diffusers hooks "
                f"(got {', '.join(type(h).__name__ for h in diffusers_hooks(act))} on {type(act).__name__})"
            )
        hidden_states = act(hidden_states)
    elif getattr(proj, "epilogue", None) == "gelu_tanh":
        hidden_states = proj(hidden_states)  # GELU applied (FP8 (q, scales) when the next layer takes them)
    elif getattr(self, "_ltx_kernels_gemm_epilogue", False) and not has_hooks(proj) and _bf16_gemm_ok(hidden_states, proj):
        # reads proj's weight and bias directly: only when no hook (offloading, casting) owns them
        hidden_states = bf16_gemm(hidden_states, proj.weight, proj.bias, epilogue="gelu_tanh")
    else:
        hidden_states = proj(hidden_states)  # (the input may be an FP8 (q, scales) pair)
        if use_kernel("gelu_tanh", hidden_states):
            group = _fp8_down(rest, hidden_states)
            if group:
                # the down projection quantizes its input anyway: the GELU writes its FP8
                # (q, scales) directly (one pass instead of the GELU's and the quantizer's)
                hidden_states = tuple(gelu_tanh(hidden_states, **fp8_kwargs(gelu_tanh, hidden_states, group)))
            else:
                hidden_states = gelu_tanh(hidden_states, out=hidden_states)
        else:  # fp32 (PyTorch's own is faster), or left to Inductor by _compile_policy
            hidden_states = torch.nn.functional.gelu(hidden_states, approximate="tanh")
    if not rest:
        return hidden_states if residual is None else residual + hidden_states * gate
    for module in rest[:-1]:
        hidden_states = module(hidden_states)
    return linear_then_gated(rest[-1], hidden_states, residual, gate)


def no_hooks(m) -> bool:
    """No diffusers / accelerate hook and no PyTorch forward hook on m."""
    return not has_hooks(m) and not m._forward_pre_hooks and not m._forward_hooks


def linear_then_gated(lin, x, residual: Optional[torch.Tensor], gate: Optional[torch.Tensor]):
    """lin(x); with `residual`, residual + lin(x) * gate: in the FP8 GEMM's epilogue where
    gated_linear_ok, else after it in PyTorch."""
    if residual is None:
        return lin(x)
    if gated_linear_ok(lin, x, residual, gate):
        return lin(x, residual=residual, gate=gate)
    return residual + lin(x) * gate


def gated_linear_ok(lin, x, residual: torch.Tensor, gate: torch.Tensor) -> bool:
    """Whether `lin(x, residual=residual, gate=gate)` computes residual + gate * lin(x) in the FP8
    GEMM's epilogue: a plain FP8BlockwiseLinear without hooks, residual of the layer's output
    dtype and shape, gate of that dtype, per sample ([B, 1.., N]) or per token (residual's shape).
    Faster than the GEMM followed by an eager torch.addcmul at LTX-Video's and LTX-2's attention
    output and feed-forward down projections (the fp8_gemm+gated rows of
    benchmarks/results/h200/gemm.json); used under torch.compile too (_compile_policy: faster end
    to end)."""
    if not _is_plain_fp8_linear(lin) or lin.epilogue != "none" or getattr(lin, "fp8_output", False) \
            or not no_hooks(lin):
        return False
    if not isinstance(residual, torch.Tensor) or not isinstance(gate, torch.Tensor) or residual.dim() < 2:
        return False
    rows = x[0].shape[:-1] if isinstance(x, (tuple, list)) else x.shape[:-1]
    if residual.dtype != lin.out_dtype or lin.result_dtype != lin.out_dtype or gate.dtype != residual.dtype \
            or tuple(residual.shape) != (*rows, lin.out_features):
        return False
    per_sample = (gate.dim() == residual.dim() and gate.shape[0] == residual.shape[0]
                  and gate.shape[-1] == residual.shape[-1] and all(d == 1 for d in gate.shape[1:-1]))
    return per_sample or tuple(gate.shape) == tuple(residual.shape)


def attn_gated_out(attn) -> bool:
    """Whether the block hands `h` and the gate to attention module `attn` (our processor, no
    hooks on the module, an FP8 output projection; _compile_policy) for it to return
    h + attn(...) * gate from the projection's GEMM epilogue (processors.py)."""
    return (use_kernel("gated_residual_epilogue")
            and bool(getattr(getattr(attn, "processor", None), "_ltx_kernels_fused", False)) and no_hooks(attn)
            and _is_plain_fp8_linear(getattr(attn, "to_out", [None])[0]))


def ff_gated_out(ff) -> bool:
    """Whether the block hands `h` and the gate to feed-forward `ff` (ff_forward installed, no
    hooks on the module, an FP8 down projection; _compile_policy) for it to return
    h + ff(x) * gate from the down projection's GEMM epilogue."""
    return (use_kernel("gated_residual_epilogue") and bool(getattr(ff, PATCHED, False)) and no_hooks(ff)
            and any(_is_plain_fp8_linear(m) for m in ff.net[1:]))


def is_inert_dropout(module) -> bool:
    return isinstance(module, torch.nn.Dropout) and (not module.training or module.p == 0)


def _fp8_down(rest, h: torch.Tensor) -> int:
    """The FP8 input group (fp8_input_group) of what follows the GELU (`rest`: ff.net after it,
    inert dropouts left out) when it is one FP8 linear without hooks that takes (q, scales) and this
    build's gelu_tanh can write them for h; else 0. In eager mode our GELU with FP8 output replaces
    the GELU pass and the down projection's quantizer pass, and is faster than the two (the
    gelu_tanh -> fp8 row of benchmarks/results/h200/fused_fp8.json)."""
    group = fp8_input_group(rest[0]) if len(rest) == 1 else 0
    # no hook of any kind: a hook would see the tuple where it expects a tensor
    return group if group and no_hooks(rest[0]) and fp8_ok(h, group) and supports_fp8_out(gelu_tanh) else 0


def ff_supported(ff) -> bool:
    net = getattr(ff, "net", None)
    if net is None or len(net) < 1:
        return False
    act = net[0]
    return (
        type(act).__name__ == "GELU"
        and getattr(act, "approximate", None) == "tanh"
        and isinstance(getattr(act, "proj", None), torch.nn.Module)
    )
