"""FP8 family: block-scaled FP8 quantization (DeepGEMM "1D2D" recipe) and its inverses.

Rule (one for every granularity, CPU and CUDA bit-identical):
  s = amax / fmax         fp32 DEQUANT scale; amax ignores NaN; fmax = 448 (e4m3fn) or 57344 (e5m2)
  q = encode(x / s)       a true fp32 division (not x * (1/s)); round to nearest even, saturating;
                          NaN elements encode to NaN (sign kept)
  s == 0 (all-zero group) q = encode(x): exact zero codes, never NaN/inf; scale 0
  NaN / +-inf elements    q = encode(x): NaN (sign kept) / +-max; an inf element makes its
                          group's scale inf (the group's finite elements then encode to +-0)
Dequantization: y = out_dtype(decode(q) * s), the product in fp32, one rounding to out_dtype.
"""

import math
from typing import Optional, Tuple

import torch

from ._common import out_like, register_fake
from ._ops import ops

__all__ = [
    "quantize_fp8_per_token_group",
    "quantize_fp8_block",
    "quantize_fp8_per_tensor",
    "dequantize_fp8_per_token_group",
    "dequantize_fp8_block",
    "dequantize_fp8_per_tensor",
    "mn_major_scales",
]

_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _check_fp8_dtype(op: str, dtype) -> None:
    if dtype not in _FP8:
        raise RuntimeError(f"ltx_kernels.{op}: fp8_dtype must be torch.float8_e4m3fn or torch.float8_e5m2 (got {dtype})")


def mn_major_scales(m: int, groups: int, device=None) -> torch.Tensor:
    """A zero-filled fp32 [m, groups] tensor in the DeepGEMM/LTX-2 M-major layout: strides
    (1, m_pad) with m_pad = m rounded up to a multiple of 4; the padding entries stay 0."""
    m_pad = (m + 3) // 4 * 4
    return torch.zeros(groups, m_pad, dtype=torch.float32, device=device).t()[:m]


def _mn_major_scales_out(m: int, groups: int, device=None) -> torch.Tensor:
    """mn_major_scales for a kernel that writes every [m, groups] entry: only the padding is
    zeroed (no fill kernel at all when m % 4 == 0)."""
    m_pad = (m + 3) // 4 * 4
    s = torch.empty(groups, m_pad, dtype=torch.float32, device=device)
    if m_pad > m:
        s[:, m:].zero_()
    return s.t()[:m]


def quantize_fp8_per_token_group(x: torch.Tensor, group_size: int = 128, scale_layout: str = "row",
                                 fp8_dtype: torch.dtype = torch.float8_e4m3fn,
                                 out: Optional[Tuple[torch.Tensor,
                                 torch.Tensor]] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """x [..., K] (fp32/fp16/bf16; leading dims flattened to M), K % group_size == 0.

    Returns (q of x's shape in fp8_dtype, scales fp32 [M, K / group_size]). scale_layout "row":
    row-major scales; "mn_major": stored M-major with M padded to a multiple of 4, strides
    (1, M_pad), padding entries 0 (the layout DeepGEMM and cuBLASLt's VEC128 scaling read).
    """
    op = "quantize_fp8_per_token_group"
    if scale_layout not in ("row", "mn_major"):
        raise RuntimeError(f"ltx_kernels.{op}: scale_layout must be 'row' or 'mn_major' (got {scale_layout!r})")
    _check_fp8_dtype(op, fp8_dtype)
    if out is not None:
        q, scales = out
    else:
        k = x.shape[-1] if x.dim() > 0 else 1
        m = math.prod(x.shape[:-1])
        g = k // group_size if group_size > 0 else 0
        q = torch.empty(x.shape, dtype=fp8_dtype, device=x.device)
        if scale_layout == "row":
            scales = torch.empty(m, g, dtype=torch.float32, device=x.device)
        else:
            scales = _mn_major_scales_out(m, g, x.device)
    ops.quantize_fp8_per_token_group(q, scales, x, int(group_size), scale_layout)
    return q, scales


def _quantize_fp8_per_token_group_composed(x: torch.Tensor, group_size: int = 128,
                                           scale_layout: str = "row") -> Tuple[torch.Tensor, torch.Tensor]:
    """quantize_fp8_per_token_group (e4m3fn) written as plain PyTorch ops, for torch.compile to
    turn into one generated kernel (fused with its producer where it can) instead of calling ours.

    In eager mode and in Inductor's CPU code it is bit for bit the rule above (the tests hold it
    to the reference):
      - s = amax / 448 computed in float64 and rounded once to fp32. That is the correctly
        rounded fp32 quotient even where the float64 division becomes a multiplication by the
        reciprocal (PyTorch's CUDA eager kernels do that for a Python-scalar divisor; in fp32
        it would be off by an ulp at times): amax / 448 = (amax / 7) 2^-6 is exact, or its
        binary expansion repeats with period 3 and stays far (>> 2^-50 relative) from every
        fp32 rounding midpoint;
      - x / s with a tensor divisor (a true division), clamped to +-448 so that the cast never
        overflows to NaN, PyTorch's round-to-nearest-even cast;
      - the sign bit of x OR-ed into every code, NaN elements the NaN code (casts do not agree
        on the sign of a NaN).
    Under torch.compile on CUDA the element division is Inductor's: Triton's approximate
    `div.full` (within 2 fp32 ulps) unless TORCHINDUCTOR_EMULATE_DIVISION_ROUNDING=1, so there a
    code can differ from the rule's by one step where x / s lies within 2 ulps of a rounding
    midpoint; the scales stay exact. Like every composition the integrations leave to Inductor,
    its numerics there are Inductor's."""
    op = "quantize_fp8_per_token_group"
    if scale_layout not in ("row", "mn_major"):
        raise RuntimeError(f"ltx_kernels.{op}: scale_layout must be 'row' or 'mn_major' (got {scale_layout!r})")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise RuntimeError(f"ltx_kernels.{op}: x must be float32, float16 or bfloat16 (got {x.dtype})")
    if x.dim() < 1:
        raise RuntimeError(f"ltx_kernels.{op}: x must have at least one dimension (got a scalar)")
    k = x.shape[-1]
    if group_size <= 0:
        raise RuntimeError(f"ltx_kernels.{op}: group_size must be > 0 (got {group_size})")
    if k % group_size != 0:
        raise RuntimeError(f"ltx_kernels.{op}: x.shape[-1] must be a multiple of group_size (got {k} and "
                           f"group_size {group_size})")
    m = math.prod(x.shape[:-1])
    g = k // group_size
    fmax = 448.0
    xg = x.float().reshape(m, g, group_size)
    amax = torch.where(torch.isnan(xg), 0.0, xg.abs()).amax(-1, keepdim=True)
    s = (amax.double() / fmax).float()
    v = torch.where(torch.isfinite(xg), xg / torch.where(s == 0, 1.0, s), xg).clamp(-fmax, fmax)
    # The cast's own NaN is not reliably signed (x86's default NaN is negative, Triton's
    # positive): every code takes the sign bit of its x, and NaN elements the NaN code 0x7F.
    mag = torch.where(torch.isnan(xg), 0x7F, v.to(torch.float8_e4m3fn).view(torch.uint8) & 0x7F)
    q = (mag | torch.signbit(xg).to(torch.uint8) * 0x80).view(torch.float8_e4m3fn).reshape(x.shape)
    s = s.reshape(m, g)
    if scale_layout == "mn_major":  # strides (1, M_pad), the padding 0, as _mn_major_scales_out
        m_pad = (m + 3) // 4 * 4
        s = torch.nn.functional.pad(s.t(), (0, m_pad - m)).t()[:m]
    return q, s


def quantize_fp8_block(w: torch.Tensor, block: Tuple[int, int] = (128, 128),
                       fp8_dtype: torch.dtype = torch.float8_e4m3fn,
                       out: Optional[Tuple[torch.Tensor, torch.Tensor]] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """w [N, K] -> (q [N, K] fp8, scales fp32 [ceil(N / bn), ceil(K / bk)] row-major); one
    scale per (bn x bk) tile, tiles at the edges cover what exists."""
    _check_fp8_dtype("quantize_fp8_block", fp8_dtype)
    bn, bk = int(block[0]), int(block[1])
    if out is not None:
        q, scales = out
    else:
        q = torch.empty(w.shape, dtype=fp8_dtype, device=w.device)
        n, k = (w.shape[0], w.shape[1]) if w.dim() == 2 else (0, 0)
        tn = -(-n // bn) if bn > 0 else 0
        tk = -(-k // bk) if bk > 0 else 0
        scales = torch.empty(tn, tk, dtype=torch.float32, device=w.device)
    ops.quantize_fp8_block(q, scales, w, bn, bk)
    return q, scales


def quantize_fp8_per_tensor(x: torch.Tensor, scale: Optional[torch.Tensor] = None,
                            fp8_dtype: torch.dtype = torch.float8_e4m3fn,
                            out: Optional[Tuple[torch.Tensor,
                            torch.Tensor]] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """x (any shape) -> (q fp8 of x's shape, scale fp32 0-dim). scale None: amax / fmax (0 for
    an all-zero x); otherwise the given fp32 one-element tensor is used as is (and returned)."""
    _check_fp8_dtype("quantize_fp8_per_tensor", fp8_dtype)
    if out is not None:
        q, s = out
    else:
        q = torch.empty(x.shape, dtype=fp8_dtype, device=x.device)
        s = torch.empty((), dtype=torch.float32, device=x.device)
    ops.quantize_fp8_per_tensor(q, s, x, scale)
    return q, s


def dequantize_fp8_per_token_group(q: torch.Tensor, scales: torch.Tensor, group_size: int = 128,
                                   out_dtype: torch.dtype = torch.bfloat16,
                                   out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """q [..., K] fp8, scales [M, K / group_size] (either layout) -> decode(q) * s in out_dtype."""
    out = out_like(q, out, dtype=out_dtype)
    ops.dequantize_fp8_per_token_group(out, q, scales, int(group_size))
    return out


def dequantize_fp8_block(q: torch.Tensor, scales: torch.Tensor, block: Tuple[int, int] = (128, 128),
                         out_dtype: torch.dtype = torch.bfloat16, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """q [N, K] fp8, scales [ceil(N / bn), ceil(K / bk)] -> decode(q) * s in out_dtype."""
    out = out_like(q, out, dtype=out_dtype)
    ops.dequantize_fp8_block(out, q, scales, int(block[0]), int(block[1]))
    return out


def dequantize_fp8_per_tensor(q: torch.Tensor, scale: torch.Tensor, out_dtype: torch.dtype = torch.bfloat16,
                              out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """q fp8 (any shape), scale one fp32 element -> decode(q) * scale in out_dtype."""
    out = out_like(q, out, dtype=out_dtype)
    ops.dequantize_fp8_per_tensor(out, q, scale)
    return out


@register_fake("quantize_fp8_per_token_group")
def _quantize_fp8_per_token_group_fake(q, scales, x, group_size, scale_layout):
    torch._check(q.shape == x.shape, lambda: "ltx_kernels.quantize_fp8_per_token_group: q must have the shape of x")


@register_fake("quantize_fp8_block")
def _quantize_fp8_block_fake(q, scales, w, block_n, block_k):
    torch._check(q.shape == w.shape, lambda: "ltx_kernels.quantize_fp8_block: q must have the shape of w")


@register_fake("quantize_fp8_per_tensor")
def _quantize_fp8_per_tensor_fake(q, scale, x, given_scale):
    torch._check(q.shape == x.shape, lambda: "ltx_kernels.quantize_fp8_per_tensor: q must have the shape of x")


@register_fake("dequantize_fp8_per_token_group")
def _dequantize_fp8_per_token_group_fake(out, q, scales, group_size):
    torch._check(out.shape == q.shape, lambda: "ltx_kernels.dequantize_fp8_per_token_group: out must have the shape of q")


@register_fake("dequantize_fp8_block")
def _dequantize_fp8_block_fake(out, q, scales, block_n, block_k):
    torch._check(out.shape == q.shape, lambda: "ltx_kernels.dequantize_fp8_block: out must have the shape of q")


@register_fake("dequantize_fp8_per_tensor")
def _dequantize_fp8_per_tensor_fake(out, q, scale):
    torch._check(out.shape == q.shape, lambda: "ltx_kernels.dequantize_fp8_per_tensor: out must have the shape of q")
