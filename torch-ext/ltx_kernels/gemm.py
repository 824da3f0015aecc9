"""GEMM family: blockwise-scaled FP8 GEMM (DeepGEMM "1D2D" recipe), its LTX-2 FP6-weight
variant, and the NVFP4 scaled matmul. Functional wrappers and fake implementations.

  out[m, n] = sum_kb (A[m, kb*128:(kb+1)*128] . B[n, kb*128:(kb+1)*128]) * sa[m, kb] * sb[n // 128, kb]
              + bias[n]

A float8_e4m3fn [..., K] with per-token-group scales sa [M, K/128] (row-major or M-major, as
quantize_fp8_per_token_group writes them), B float8_e4m3fn [N, K] with per-128x128-block scales
sb [ceil(N/128), K/128] (quantize_fp8_block), bias fp32 [N]. Accumulation in fp32 per 128-K
block, the scaled block sums in fp32 (kernels) or double (CPU), one rounding to bf16/fp16.

backend: "auto" (CUDA: for M <= 64 tokens the "skinny" mma.sync kernel, which streams the
weights through registers and splits K across SMs; otherwise the sm_90a wgmma kernel on compute
capability 9.0, else the mma.sync kernel on >= 8.9, else "torch"), "skinny", "sm90", "sm89", "torch" (dequantize both operands exactly in
fp32 and matmul in fp32; any device) or "cpu" (the C++ backend; what "auto" means on CPU). A
forced backend that cannot run a call raises instead of falling back.
"""

from typing import Optional

import torch

from ._common import register_fake
from ._ops import ops

__all__ = [
    "fp8_blockwise_gemm",
    "fp8_gemm_backend",
    "fp6_blockwise_gemm",
    "scaled_mm_nvfp4",
]

_BACKENDS = ("cpu", "torch", "sm89", "sm90", "skinny")
_OUT_DTYPES = (torch.bfloat16, torch.float16)


def _check_out_dtype(op: str, out_dtype) -> None:
    if out_dtype not in _OUT_DTYPES:
        raise RuntimeError(f"ltx_kernels.{op}: out_dtype must be torch.bfloat16 or torch.float16 (got {out_dtype})")


def _out(a: torch.Tensor, n: int, out_dtype, out: Optional[torch.Tensor]) -> torch.Tensor:
    if out is not None:
        return out
    shape = (*a.shape[:-1], n) if a.dim() else (n,)
    return torch.empty(shape, dtype=out_dtype, device=a.device)


def fp8_blockwise_gemm(
    a: torch.Tensor,
    a_scales: torch.Tensor,
    b: torch.Tensor,
    b_scales: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.bfloat16,
    out: Optional[torch.Tensor] = None,
    backend: str = "auto",
) -> torch.Tensor:
    """a e4m3 [..., K], a_scales fp32 [M, K/128], b e4m3 [N, K] (N % 8 == 0), b_scales fp32
    [ceil(N/128), K/128], bias fp32 [N] or None -> out [..., N] in out_dtype (bf16 or fp16)."""
    if out is None:
        _check_out_dtype("fp8_blockwise_gemm", out_dtype)
    out = _out(a, b.shape[0] if b.dim() else 0, out_dtype, out)
    ops.fp8_blockwise_gemm(out, a, a_scales, b, b_scales, bias, backend)
    return out


def fp8_gemm_backend(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scales: torch.Tensor,
    b_scales: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.bfloat16,
    backend: str = "auto",
) -> str:
    """Which backend fp8_blockwise_gemm(a, a_scales, b, b_scales, bias, out_dtype, backend=...)
    would run with a freshly allocated out: "cpu", "torch", "sm89" or "sm90" (raises what the
    GEMM would raise). b_scales None: ones of the right shape (the choice does not depend on
    their values)."""
    if b_scales is None:
        n, k = (b.shape[0], b.shape[1]) if b.dim() == 2 else (0, 0)
        b_scales = torch.ones(-(-n // 128), k // 128, dtype=torch.float32, device=b.device)
    out = _out(a, b.shape[0] if b.dim() else 0, out_dtype, None)
    return _BACKENDS[int(ops.fp8_blockwise_gemm_backend(out, a, a_scales, b, b_scales, bias, backend))]


def fp6_blockwise_gemm(
    a: torch.Tensor,
    a_scales: torch.Tensor,
    b_packed: torch.Tensor,
    b_scales: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.bfloat16,
    out: Optional[torch.Tensor] = None,
    backend: str = "auto",
) -> torch.Tensor:
    """fp8_blockwise_gemm with B given as LTX-2 packed FP6 (quantize_fp6_block): b_packed uint8
    [N, 3K/4], b_scales fp32 [ceil(N/128), K/128]; B's values are e4m3(unpack(b_packed)) * scale.
    backend "auto" (CUDA: the sm89 FP6 kernel, which unpacks while loading, else fp6_unpack and
    the FP8 "auto" path), "sm89", "torch" (unpack, then the fp32 fallback) or "cpu"."""
    if out is None:
        _check_out_dtype("fp6_blockwise_gemm", out_dtype)
    out = _out(a, b_packed.shape[0] if b_packed.dim() else 0, out_dtype, out)
    ops.fp6_blockwise_gemm(out, a, a_scales, b_packed, b_scales, bias, backend)
    return out


def scaled_mm_nvfp4(
    a_packed: torch.Tensor,
    b_packed: torch.Tensor,
    block_a: torch.Tensor,
    block_b: torch.Tensor,
    alpha: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.bfloat16,
    out: Optional[torch.Tensor] = None,
    hi_first: bool = True,
    backend: str = "auto",
) -> torch.Tensor:
    """NVFP4 GEMM of operands from quantize_nvfp4: a_packed uint8 [..., K/2], b_packed uint8
    [N, K/2] (N % 8 == 0), block_a / block_b their swizzled E4M3 block scales, alpha fp32
    one-element tensor = s_a * s_w (stays on the device), bias fp32 [N] ->
    out [..., N] = alpha * dequant(a) @ dequant(b)^T + bias (dequantized with s_t = 1).

    backend "auto": cuBLASLt's block-scaled FP4 GEMM on compute capability >= 10.0 (CUDA >= 12.8;
    LTX-2's hi_first nibbles are swapped into cuBLASLt's order first), else "torch": both operands
    dequantized exactly in fp32 and an fp32 matmul (Hopper and older, and the CPU)."""
    if out is None:
        _check_out_dtype("scaled_mm_nvfp4", out_dtype)
    out = _out(a_packed, b_packed.shape[0] if b_packed.dim() else 0, out_dtype, out)
    ops.scaled_mm_nvfp4(out, a_packed, b_packed, block_a, block_b, alpha, bias, bool(hi_first), backend)
    return out


# ---- fake implementations (shapes only; the wrappers allocate out)
def _fake_common(op, out, a, b, k_of_b):
    torch._check(a.dim() >= 1, lambda: f"ltx_kernels.{op}: a must have at least one dimension")
    torch._check(b.dim() == 2, lambda: f"ltx_kernels.{op}: b must be 2-D")
    torch._check(a.shape[-1] % 128 == 0, lambda: f"ltx_kernels.{op}: K must be a multiple of 128")
    torch._check(k_of_b(a.shape[-1]) == b.shape[1], lambda: f"ltx_kernels.{op}: b must match K")
    torch._check(out.shape[:-1] == a.shape[:-1] and out.shape[-1] == b.shape[0],
                 lambda: f"ltx_kernels.{op}: out must have shape a.shape[:-1] + [N]")


@register_fake("fp8_blockwise_gemm")
def _fp8_blockwise_gemm_fake(out, a, a_scales, b, b_scales, bias, backend):
    _fake_common("fp8_blockwise_gemm", out, a, b, lambda k: k)


@register_fake("fp6_blockwise_gemm")
def _fp6_blockwise_gemm_fake(out, a, a_scales, b_packed, b_scales, bias, backend):
    _fake_common("fp6_blockwise_gemm", out, a, b_packed, lambda k: k // 4 * 3)


@register_fake("scaled_mm_nvfp4")
def _scaled_mm_nvfp4_fake(out, a_packed, b_packed, block_a, block_b, alpha, bias, hi_first, backend):
    torch._check(b_packed.dim() == 2 and b_packed.shape[1] == a_packed.shape[-1],
                 lambda: "ltx_kernels.scaled_mm_nvfp4: b_packed must be [N, K/2]")
    torch._check(out.shape[-1] == b_packed.shape[0], lambda: "ltx_kernels.scaled_mm_nvfp4: out must be [..., N]")
