"""Low-bit family: LTX-2 FP6 (E4M3 bytes without exponent bits 6..5, 4 values in 3 bytes),
OCP FP6 codecs (E2M3, E3M2) and NVFP4 (E2M1 data, E4M3 block scales in the cuBLASLt layout).
Functional wrappers and fake implementations. Bit-level contracts: docs/semantics.md, sections
"FP6" and "NVFP4".
"""

from typing import Optional, Tuple

import torch

from ._common import out_like, register_fake
from ._ops import ops

__all__ = [
    "fp6_pack",
    "fp6_unpack",
    "quantize_fp6_block",
    "dequantize_fp6_block",
    "quantize_fp6",
    "dequantize_fp6",
    "nvfp4_per_tensor_scale",
    "quantize_nvfp4",
    "dequantize_nvfp4",
    "nvfp4_block_scale_shape",
]


def _lead(t: torch.Tensor, last: int):
    return (*t.shape[:-1], last)


def fp6_pack(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """LTX-2 FP6 packing: `x` float8_e4m3fn `[..., n]` (n % 4 == 0) -> uint8 `[..., 3n/4]`.

    Each E4M3 byte keeps its sign (bit 7) and bits 4..0 (the 6-bit value sign<<5 | low5);
    bits 6..5 are DROPPED without a check, so an E4M3 value outside the FP6 subset
    (|x| > 0.1171875 or using those exponent bits) packs as a different value. Four values
    go into three bytes, big-endian: b0 = v0<<2 | v1>>4, b1 = v1<<4 | v2>>2, b2 = v2<<6 | v3.
    """
    if out is None:
        out = torch.empty(_lead(x, x.shape[-1] // 4 * 3) if x.dim() else (), dtype=torch.uint8,
                          device=x.device)
    ops.fp6_pack(out, x)
    return out


def fp6_unpack(packed: torch.Tensor, n: int, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Inverse of fp6_pack: uint8 `[..., 3n/4]` -> float8_e4m3fn `[..., n]` with zeros in bits 6..5."""
    if out is None:
        out = torch.empty(_lead(packed, int(n)) if packed.dim() else (), dtype=torch.float8_e4m3fn,
                          device=packed.device)
    ops.fp6_unpack(out, packed)
    return out


def quantize_fp6_block(w: torch.Tensor, block: Tuple[int, int] = (128, 128)) -> Tuple[torch.Tensor, torch.Tensor]:
    """LTX-2 per-block FP6 weights: `w` [N, K] (K % 4 == 0) float32/float16/bfloat16 ->
    (packed uint8 [N, 3K/4], scales fp32 [ceil(N/br), ceil(K/bc)]).

    scale = amax(|block|) / 0.1171875 (NaN ignored; 0 for an all-zero block); codes are
    e4m3_rne(w / scale) (within the 6-bit subset), packed as fp6_pack. NaN -> code 0.
    """
    br, bc = int(block[0]), int(block[1])
    n, k = w.shape if w.dim() == 2 else (0, 0)
    packed = torch.empty((n, k // 4 * 3), dtype=torch.uint8, device=w.device)
    scales = torch.empty((-(-n // max(br, 1)), -(-k // max(bc, 1))), dtype=torch.float32,
                         device=w.device)
    ops.quantize_fp6_block(packed, scales, w, br, bc)
    return packed, scales


def dequantize_fp6_block(packed: torch.Tensor, scales: torch.Tensor, n: int, out_dtype: torch.dtype = torch.bfloat16,
                         block: Tuple[int, int] = (128, 128), out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """packed [N, 3n/4] + scales -> [N, n] = e4m3(code) * scale (fp32 product, one rounding)."""
    if out is None:
        out = torch.empty((packed.shape[0] if packed.dim() else 0, int(n)), dtype=out_dtype,
                          device=packed.device)
    ops.dequantize_fp6_block(out, packed, scales, int(block[0]), int(block[1]))
    return out


def quantize_fp6(x: torch.Tensor, fmt: str = "e2m3", out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """OCP FP6 codes (one per byte, low 6 bits, sign in bit 5): fmt "e2m3" (bias 1, max 7.5)
    or "e3m2" (bias 3, max 28). Round to nearest even, saturating (+-Inf -> +-max); NaN -> +0
    (code 0), since the formats have no NaN."""
    out = out_like(x, out, dtype=torch.uint8)
    ops.quantize_fp6(out, x, fmt)
    return out


def dequantize_fp6(codes: torch.Tensor, fmt: str = "e2m3", out_dtype: torch.dtype = torch.bfloat16,
                   out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """OCP FP6 codes -> values (exact in fp32, rounded once to out_dtype); bits 7..6 ignored."""
    out = out_like(codes, out, dtype=out_dtype)
    ops.dequantize_fp6(out, codes, fmt)
    return out


def nvfp4_per_tensor_scale(x: torch.Tensor) -> torch.Tensor:
    """NVFP4 per-tensor decode scale s_t = amax(|x|, NaN ignored) / (448 * 6), fp32 0-dim."""
    a = x.detach().abs().float()
    a = torch.where(torch.isnan(a), torch.zeros_like(a), a)
    amax = a.amax() if a.numel() else torch.zeros((), dtype=torch.float32, device=x.device)
    # The fp32 quotient correctly rounded on every backend: CUDA eager turns a division by a
    # Python scalar into a multiply by its reciprocal, and Triton's fp32 '/' is approximate;
    # an fp64 division rounded to fp32 is exact-then-once-rounded (53 >= 2 * 24 + 2).
    return (amax.double() / 2688.0).float()


def nvfp4_block_scale_shape(rows: int, k: int) -> Tuple[int, int]:
    """[roundup(rows, 128), roundup(k / 16, 4)]: the padded cuBLASLt scale array."""
    return (-(-rows // 128) * 128, -(-(k // 16) // 4) * 4)


def quantize_nvfp4(x: torch.Tensor, per_tensor_scale: torch.Tensor,
hi_first: bool = True) -> Tuple[torch.Tensor, torch.Tensor]:
    """NVFP4: x [..., K] (K % 16 == 0) -> (packed uint8 [..., K/2], block_scales uint8
    [roundup(rows,128), roundup(K/16,4)] in the cuBLASLt 128x4 swizzled layout, zero padded).

    s_b = e4m3_rne(min((amax16 / 6) / s_t, 448)) (two fp32 divisions); data = E2M1 RNE
    saturating of x / d with d = s_t * s_b computed as one fp32 product, then one fp32 division
    (d == 0 -> code 0). hi_first: element 2j in the high nibble (LTX-2 checkpoints).
    """
    k = x.shape[-1] if x.dim() else 0
    rows = x.numel() // k if k else 0
    packed = torch.empty(_lead(x, k // 2) if x.dim() else (), dtype=torch.uint8, device=x.device)
    scales = torch.empty(nvfp4_block_scale_shape(rows, k), dtype=torch.uint8, device=x.device)
    ops.quantize_nvfp4(packed, scales, x, per_tensor_scale, bool(hi_first))
    return packed, scales


def dequantize_nvfp4(packed: torch.Tensor, block_scales: torch.Tensor, per_tensor_scale: torch.Tensor, k: int,
                     out_dtype: torch.dtype = torch.bfloat16, hi_first: bool = True,
                     out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """packed [..., k/2] -> [..., k] = (q * s_b) * s_t in fp32, rounded once to out_dtype."""
    if out is None:
        out = torch.empty(_lead(packed, int(k)) if packed.dim() else (), dtype=out_dtype,
                          device=packed.device)
    ops.dequantize_nvfp4(out, packed, block_scales, per_tensor_scale, bool(hi_first))
    return out


# ---- fake implementations (shapes and dtypes only; the wrappers allocate every output)
@register_fake("fp6_pack")
def _fp6_pack_fake(out, x):
    torch._check(x.shape[-1] % 4 == 0, lambda: "ltx_kernels.fp6_pack: x.shape[-1] must be a multiple of 4")
    torch._check(out.shape[-1] == x.shape[-1] // 4 * 3, lambda: "ltx_kernels.fp6_pack: out must be [..., 3n/4]")


@register_fake("fp6_unpack")
def _fp6_unpack_fake(out, packed):
    torch._check(out.shape[-1] % 4 == 0, lambda: "ltx_kernels.fp6_unpack: n must be a multiple of 4")


@register_fake("quantize_fp6_block")
def _quantize_fp6_block_fake(packed, scales, w, block_rows, block_cols):
    torch._check(w.dim() == 2, lambda: "ltx_kernels.quantize_fp6_block: w must be 2-D")


@register_fake("dequantize_fp6_block")
def _dequantize_fp6_block_fake(out, packed, scales, block_rows, block_cols):
    torch._check(out.dim() == 2, lambda: "ltx_kernels.dequantize_fp6_block: out must be 2-D")


@register_fake("quantize_fp6")
def _quantize_fp6_fake(out, x, fmt):
    torch._check(out.shape == x.shape, lambda: "ltx_kernels.quantize_fp6: out must have the shape of x")


@register_fake("dequantize_fp6")
def _dequantize_fp6_fake(out, codes, fmt):
    torch._check(out.shape == codes.shape, lambda: "ltx_kernels.dequantize_fp6: out must have the shape of codes")


@register_fake("quantize_nvfp4")
def _quantize_nvfp4_fake(packed, block_scales, x, per_tensor_scale, hi_first):
    torch._check(x.shape[-1] % 16 == 0, lambda: "ltx_kernels.quantize_nvfp4: K must be a multiple of 16")


@register_fake("dequantize_nvfp4")
def _dequantize_nvfp4_fake(out, packed, block_scales, per_tensor_scale, hi_first):
    torch._check(out.shape[-1] % 16 == 0, lambda: "ltx_kernels.dequantize_nvfp4: k must be a multiple of 16")
