"""RoPE family: functional wrappers, fake implementations and LTX-Video's cos/sin builder.

Conventions (the argument order is always (cos, sin); arithmetic in fp32; cos/sin may be
float32 or x's dtype; any outer strides, stride 0 broadcasts; an innermost stride other than 1
costs one contiguous copy of the table):

- ``rms_norm_rope``: x ``[B, S, C]``, cos/sin ``[B or 1, S, C]`` full width (each frequency
  repeated twice), interleaved pairs ``(2i, 2i+1)`` over the whole row: diffusers LTX-Video
  (``norm_q``/``norm_k`` then ``apply_rotary_emb``).
- ``rms_norm_split_rope``: x ``[B, S, C]`` with ``C = H * d``, cos/sin ``[B or 1, H, S, d/2]``
  (heads and d read from cos), halves ``[0, d/2)`` and ``[d/2, d)`` of each head share a
  frequency: LTX-2 (``apply_split_rotary_emb``).
- ``apply_rope``: the rotation alone, for x ``[B, S, C]`` or ``[B, S, H, d]``; cos/sin either
  ``[B or 1, S, w]`` (one table shared by every head) or ``[B or 1, H, S, w]`` (one per head),
  with ``w = d`` (interleaved) or ``w = d/2`` (split). The head width d is x's last dim for
  4-D x; for 3-D x it is ``C / H`` with a per-head table and ``w`` (interleaved) or ``2w``
  (split) with a shared table. So LTX-Video is ``apply_rope(x, cos, sin, True)`` with x
  ``[B, S, C]`` and cos ``[1, S, C]``; LTX-2 is ``apply_rope(x, cos, sin, False)`` with cos
  ``[B, H, S, d/2]``; a per-head layout ``[B, S, H, d]`` with cos ``[B, S, d]`` rotates every
  head with the same table.
"""

import math
from typing import Optional, Sequence, Tuple, Union

import torch

from . import fused_fp8 as _fp8
from ._common import call_out, register_fake
from ._ops import ops

__all__ = ["rms_norm_rope", "rms_norm_split_rope", "apply_rope", "ltx_video_rope_cos_sin"]


def rms_norm_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, weight: Optional[torch.Tensor] = None,
                  eps: float = 1e-6, out: Optional[torch.Tensor] = None, *, out_dtype: Optional[torch.dtype] = None,
                  group_size: int = 128, scale_layout: str = "row"):
    """RMSNorm over the whole row of x ``[B, S, C]`` (times ``weight [C]`` if given), then
    interleaved RoPE: ``o[2i] = y[2i]*cos[2i] - y[2i+1]*sin[2i]``,
    ``o[2i+1] = y[2i]*sin[2i+1] + y[2i+1]*cos[2i+1]``; cos/sin ``[B or 1, S, C]``.
    `out` may be `x` itself (in place).

    FP8 output: `out_dtype=torch.float8_e4m3fn` returns `(q, scales)`: the fp32 result (not
    rounded to x's dtype first) quantized per token per `group_size` columns as
    `rms_norm(..., out_dtype=torch.float8_e4m3fn)` does (scale_layout "row" or "mn_major").
    On CUDA the FP8 path takes what the fused FP8 ops take (group_size a power-of-two number of
    16-byte vectors, at most 32)."""
    if _fp8.wants_fp8("rms_norm_rope", x, out_dtype, out):
        return _fp8.rms_norm_rope_fp8(x, cos, sin, weight, eps, group_size, scale_layout)
    return call_out(ops.rms_norm_rope, x, out, cos, sin, weight, float(eps))


def rms_norm_split_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, weight: Optional[torch.Tensor] = None,
                        eps: float = 1e-6, out: Optional[torch.Tensor] = None, *,
                        out_dtype: Optional[torch.dtype] = None, group_size: int = 128, scale_layout: str = "row"):
    """RMSNorm over the whole row of x ``[B, S, C]`` (times ``weight [C]`` if given), then
    split RoPE per head of width d: ``o1 = x1*cos - x2*sin``, ``o2 = x2*cos + x1*sin`` with
    ``x1 = [0, d/2)``, ``x2 = [d/2, d)``; cos/sin ``[B or 1, H, S, d/2]``, ``H * d = C``.
    `out` may be `x` itself (in place).

    FP8 output: `out_dtype=torch.float8_e4m3fn` returns `(q, scales)`: the fp32 result (not
    rounded to x's dtype first) quantized per token per `group_size` columns as
    `rms_norm(..., out_dtype=torch.float8_e4m3fn)` does (scale_layout "row" or "mn_major").
    On CUDA the FP8 path takes what the fused FP8 ops take (group_size a power-of-two number of
    16-byte vectors, at most 32; d a multiple of 16 for 16-bit x, of 8 for float32)."""
    if _fp8.wants_fp8("rms_norm_split_rope", x, out_dtype, out):
        return _fp8.rms_norm_split_rope_fp8(x, cos, sin, weight, eps, group_size, scale_layout)
    return call_out(ops.rms_norm_split_rope, x, out, cos, sin, weight, float(eps))


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool,
               out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """RoPE alone (see the module docstring for the table conventions). `out` may be `x`
    itself (in place)."""
    return call_out(ops.apply_rope, x, out, cos, sin, bool(interleaved))


def ltx_video_rope_cos_sin(num_frames: int, height: int, width: int, dim: int = 2048, theta: float = 10000.0,
                           patch_size: int = 1, patch_size_t: int = 1, base_num_frames: int = 20,
                           base_height: int = 2048, base_width: int = 2048,
                           rope_interpolation_scale: Optional[Sequence[Union[float, torch.Tensor]]] = None,
                           device: Optional[Union[str, torch.device]] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """LTX-Video's interleaved RoPE tables for a ``(T, H, W)`` latent grid, fp32
    ``[1, T*H*W, dim]`` each (tokens in (t, h, w) order), as diffusers'
    ``LTXVideoRotaryPosEmbed`` builds them.

    Token (t, h, w) has coordinates ``p = (t, h, w)``, each scaled (when
    ``rope_interpolation_scale = (st, sh, sw)`` is given) by ``st * patch_size_t /
    base_num_frames``, ``sh * patch_size / base_height``, ``sw * patch_size / base_width``.
    With ``n = dim // 6`` frequencies ``f_k = theta^(k / (n - 1)) * pi / 2`` (log-spaced from 1
    to theta), the angle of frequency k on axis a is ``f_k * (2 p_a - 1)``; the angles are
    ordered frequency-major, axis-minor (``3n`` of them), each repeated twice for the pair it
    rotates, and the ``dim % 6`` leading channels get cos 1, sin 0 (no rotation).
    """
    f32 = torch.float32
    coords = torch.meshgrid(
        torch.arange(num_frames, dtype=f32, device=device),
        torch.arange(height, dtype=f32, device=device),
        torch.arange(width, dtype=f32, device=device),
        indexing="ij",
    )
    t, h, w = (c.reshape(-1) for c in coords)  # (S,) each
    if rope_interpolation_scale is not None:
        st, sh, sw = rope_interpolation_scale
        t = t * st * patch_size_t / base_num_frames
        h = h * sh * patch_size / base_height
        w = w * sw * patch_size / base_width
    pos = torch.stack([t, h, w], dim=-1)  # (S, 3)
    n = dim // 6
    freqs = theta ** torch.linspace(0.0, 1.0, n, dtype=f32, device=device)  # (n,)
    freqs = freqs * (math.pi / 2.0)
    angles = (pos * 2 - 1).unsqueeze(1) * freqs.view(1, n, 1)  # (S, n, 3)
    angles = angles.reshape(pos.shape[0], 3 * n)  # frequency-major, axis-minor
    cos = angles.cos().repeat_interleave(2, dim=-1)
    sin = angles.sin().repeat_interleave(2, dim=-1)
    pad = dim % 6
    if pad:
        cos = torch.cat([torch.ones_like(cos[:, :pad]), cos], dim=-1)
        sin = torch.cat([torch.zeros_like(sin[:, :pad]), sin], dim=-1)
    return cos.unsqueeze(0), sin.unsqueeze(0)


@register_fake("rms_norm_rope")
def _rms_norm_rope_fake(out, x, cos, sin, weight, eps):
    torch._check(out.shape == x.shape, lambda: "ltx_kernels.rms_norm_rope: out must have the shape of x")


@register_fake("rms_norm_split_rope")
def _rms_norm_split_rope_fake(out, x, cos, sin, weight, eps):
    torch._check(
        out.shape == x.shape, lambda: "ltx_kernels.rms_norm_split_rope: out must have the shape of x"
    )


@register_fake("apply_rope")
def _apply_rope_fake(out, x, cos, sin, interleaved):
    torch._check(out.shape == x.shape, lambda: "ltx_kernels.apply_rope: out must have the shape of x")
