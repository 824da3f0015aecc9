"""Helpers shared by the diffusers integration's modules: modulation tables in the form the fused
ops take, the FP8-output capability of this build, and module predicates."""

import inspect
import logging
from typing import Any, Optional

import torch

from ...activation import gelu_tanh
from ...fused_norm import adaln_rms_norm, gated_residual_adaln_rms_norm
from ...norm import rms_norm

logger = logging.getLogger("ltx_kernels")

PATCHED = "_ltx_kernels_patched"  # set on every module whose forward we replaced
FP8 = torch.float8_e4m3fn


def mod_table(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A modulation table (scale / shift / gate) in the form the fused ops take: x's dtype and
    either [B, C], [B, 1, .., 1, C] (per sample) or x.shape (per token). Anything else that
    broadcasts against x (as eager PyTorch would) is expanded to x.shape."""
    if t.dtype != x.dtype:
        t = t.to(x.dtype)
    if t.shape == x.shape:
        return t
    if t.dim() == x.dim() and t.shape[0] == x.shape[0] and t.shape[-1] == x.shape[-1]:
        if all(s == 1 for s in t.shape[1:-1]):
            return t
    return t.expand(x.shape)


def const_table(x: torch.Tensor, value: float) -> torch.Tensor:
    """A per-sample table [B, 1, .., 1, C] filled with `value` (gate 1, scale 0, shift 0)."""
    return x.new_full((x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],), value)


def cast_weight(w: Optional[torch.Tensor], x: torch.Tensor) -> Optional[torch.Tensor]:
    return None if w is None else w.to(x.dtype)


def nn_rms_eps(norm: torch.nn.RMSNorm, x: torch.Tensor) -> float:
    return norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps


def is_prequant(x: Any) -> bool:
    return isinstance(x, tuple)


def signature_params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


# which fused ops of this build can emit FP8 (q, scales) directly, decided once at import
# (never inside a traced forward): name -> accepts scale_layout
FP8_OUT = {
    f.__name__: "scale_layout" in signature_params(f)
    for f in (rms_norm, adaln_rms_norm, gated_residual_adaln_rms_norm, gelu_tanh)
    if "out_dtype" in signature_params(f)
}


def supports_fp8_out(fn) -> bool:
    return fn.__name__ in FP8_OUT


def fp8_kwargs(fn, x: torch.Tensor, group: int = 128) -> dict:
    """out_dtype e4m3 with scales per `group` columns: 128 with, on CUDA, the M-major scale layout
    FP8BlockwiseLinear itself uses there; the row width (one scale per token, FP8RowwiseLinear's
    input) row-major."""
    kw = {"out_dtype": FP8}
    if group != 128:
        kw["group_size"] = group
    elif x.is_cuda and FP8_OUT[fn.__name__]:
        kw["scale_layout"] = "mn_major"
    return kw


def is_fp8_linear(m: Any) -> bool:
    """ltx_kernels.quantization's FP8BlockwiseLinear or a subclass (FP6BlockwiseLinear): layers
    whose forward also takes FP8 activations pre-quantized per 128 columns as (q, scales)."""
    return any(c.__name__ == "FP8BlockwiseLinear" for c in type(m).__mro__)


def is_rowwise_linear(m: Any) -> bool:
    """ltx_kernels.quantization's FP8RowwiseLinear: takes (q, scales) quantized per token."""
    return type(m).__name__ == "FP8RowwiseLinear"


def fp8_input_group(m: Any) -> int:
    """The FP8 input a linear takes pre-quantized as (q, scales): scales per 128 columns (128) for
    the blockwise layers, one per token (its in_features) for FP8RowwiseLinear; 0 for any other
    module."""
    if is_fp8_linear(m):
        return 128
    if is_rowwise_linear(m):
        return int(m.in_features)
    return 0
