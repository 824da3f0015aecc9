"""GEMM family: blockwise-scaled FP8 GEMM (DeepGEMM "1D2D" recipe), rowwise-scaled FP8 GEMM and
bf16 GEMM with fused epilogues, the LTX-2 FP6-weight variant, and the NVFP4 scaled matmul.
Functional wrappers and fake implementations.

  fp8_blockwise_gemm:  y[m, n] = sum_kb (A[m, kb] . B[n, kb]) * sa[m, kb] * sb[n // 128, kb] + bias[n]
  fp8_rowwise_gemm:    y[m, n] = (A[m, :] . B[n, :]) * (sa[m] * sb[n]) + bias[n]   (one fp32 sum over
                       all of K; the scale product rounded once to fp32)
  bf16_gemm:           y = a @ b^T + bias (b [N, K] like nn.Linear.weight; fp32 accumulation)

then the epilogue, on y in fp32:
  "none"             out = y
  "gelu_tanh"        out = 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3)))
  "gated_residual"   out = residual + gate * y, residual of out's shape and dtype, gate per sample
                     [B, N] (B = a.shape[0]; the rows of one sample are M / B consecutive rows) or
                     per token (out's shape), of out's dtype; out may be residual itself (in place)
and one rounding to out_dtype (bf16 / fp16), or, with out_dtype=torch.float8_e4m3fn, the fp32
result quantized per token per 128 columns exactly as quantize_fp8_per_token_group does it
(returns (q, scales); scale_layout "row" or "mn_major"), so a GEMM feeds the next FP8 GEMM without
a separate quantize pass. N must then be a multiple of 128.

FP8 operands: A float8_e4m3fn [..., K] with per-token-group scales sa [M, K/128] (row-major or
M-major), B float8_e4m3fn [N, K] with per-128x128-block scales sb [ceil(N/128), K/128]
(quantize_fp8_block), bias fp32 or out's dtype [N].
FP8 rowwise operands: A float8_e4m3fn [..., K] with one scale per token sa [M] or [M, 1], B
float8_e4m3fn [N, K] with one scale per output channel sb [N] or [N, 1] (both as
quantize_fp8_per_token_group(x, group_size=K) writes them), K % 16 == 0, N % 8 == 0.

A fused QKV projection is one call with the three weights stacked along N (N = 3 * hidden) and
q, k, v = out[..., :h], out[..., h:2h], out[..., 2h:] (views, no copy).

backend: "auto" picks per call (CUDA compute capability 9.0: for FP8 with <= 64 tokens and no
fused epilogue the few-token kernel "skinny"; for a plain FP8 GEMM (a bf16 bias at most, bf16
out, M-major activation scales as FP8BlockwiseLinear makes them) cuBLASLt's blockwise GEMM
"cublaslt" (the rules and their records: docs/design/gemm.md, benchmarks/results/h200/gemm.json);
else the sm_90a persistent TMA + wgmma kernel "sm90" (or for other plain GEMMs the CUTLASS kernel
"sm90_cutlass"); other GPUs >= 8.9: the mma.sync kernel "sm89" for the plain epilogue; else
"torch"), or one of "sm90", "skinny", "sm89", "sm90_cutlass", "cublaslt" (cuBLASLt with 1x128 /
128x128 scales), "torch" (operands dequantized exactly, a float64 matmul rounded once to fp32, the epilogue in fp32; any
device; written in Python below, on reference.py) and "cpu" (the C++ backend; what "auto" means on
the CPU). A forced backend that cannot run a call raises instead of falling back.
fp8_rowwise_gemm: "auto" runs, on compute capability 9.0, cuBLASLt's rowwise GEMM "cublaslt"
(outer-vector scales, fast accumulation: the same math) for a plain call (a bf16 bias at most, bf16
out, contiguous scales) and the sm_90a kernel "sm90" (builds with sm_90a) for the rest; else
"torch"; or one of "sm90", "cublaslt", "torch", "cpu".
"""

from typing import Optional, Tuple, Union

import torch

from . import reference as _ref
from ._common import register_fake
from ._ops import add_op_namespace_prefix, ops
from .fp8 import mn_major_scales
from .lowbit import dequantize_nvfp4

__all__ = [
    "fp8_blockwise_gemm",
    "fp8_rowwise_gemm",
    "bf16_gemm",
    "fp8_gemm_backend",
    "bf16_gemm_backend",
    "gemm_config",
    "fp6_blockwise_gemm",
    "scaled_mm_nvfp4",
    "GEMM_EPILOGUES",
]

_BACKENDS = tuple(ops.gemm_backends())  # by the index gemm_plan reports (ltx_kernels/gemm/backend.h)
_OUT_DTYPES = (torch.bfloat16, torch.float16)
GEMM_EPILOGUES = ("none", "gelu_tanh", "gated_residual")
_F8 = torch.float8_e4m3fn


def _check_out_dtype(op: str, out_dtype, fp8_ok: bool = False) -> None:
    if out_dtype in _OUT_DTYPES or (fp8_ok and out_dtype == _F8):
        return
    extra = " or torch.float8_e4m3fn" if fp8_ok else ""
    raise RuntimeError(f"ltx_kernels.{op}: out_dtype must be torch.bfloat16 or torch.float16{extra} (got {out_dtype})")


def _out(a: torch.Tensor, n: int, out_dtype, out: Optional[torch.Tensor]) -> torch.Tensor:
    if out is not None:
        return out
    shape = (*a.shape[:-1], n) if a.dim() else (n,)
    return torch.empty(shape, dtype=out_dtype, device=a.device)


def _outputs(op, a, n, out_dtype, out, out_scales, scale_layout):
    """(out, out_scales) for the call: given ones, or fresh ones (FP8: q and its scales)."""
    if out is not None:
        fp8 = out.dtype == _F8
    else:
        _check_out_dtype(op, out_dtype, fp8_ok=True)
        fp8 = out_dtype == _F8
        out = _out(a, n, out_dtype, None)
    if fp8 and out_scales is None:
        if scale_layout not in ("row", "mn_major"):
            raise RuntimeError(f"ltx_kernels.{op}: scale_layout must be 'row' or 'mn_major' (got {scale_layout!r})")
        m = out.numel() // n if n else 0
        g = n // 128
        if scale_layout == "mn_major":
            out_scales = mn_major_scales(m, g, a.device)
        else:
            out_scales = torch.empty(m, g, dtype=torch.float32, device=a.device)
    return out, out_scales


def _check_epilogue(op: str, epilogue: str) -> None:
    if epilogue not in GEMM_EPILOGUES:
        raise RuntimeError(f"ltx_kernels.{op}: epilogue must be 'none', 'gelu_tanh' or 'gated_residual' (got {epilogue!r})")


def fp8_blockwise_gemm(a: torch.Tensor, a_scales: torch.Tensor, b: torch.Tensor, b_scales: torch.Tensor,
                       bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.bfloat16,
                       out: Optional[torch.Tensor] = None, backend: str = "auto", *, epilogue: str = "none",
                       residual: Optional[torch.Tensor] = None, gate: Optional[torch.Tensor] = None,
                       out_scales: Optional[torch.Tensor] = None,
                       scale_layout: str = "mn_major") -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """a e4m3 [..., K], a_scales fp32 [M, K/128], b e4m3 [N, K] (N % 8 == 0), b_scales fp32
    [ceil(N/128), K/128], bias fp32 or out's dtype [N] or None -> out [..., N] in out_dtype
    (bf16 / fp16), or (q e4m3 [..., N], scales fp32 [M, N/128]) for out_dtype=torch.float8_e4m3fn
    (or an e4m3 `out` with `out_scales`). epilogue, residual, gate: see the module docstring."""
    op = "fp8_blockwise_gemm"
    _check_epilogue(op, epilogue)
    n = b.shape[0] if b.dim() else 0
    out, out_scales = _outputs(op, a, n, out_dtype, out, out_scales, scale_layout)
    ops.fp8_blockwise_gemm(out, out_scales, a, a_scales, b, b_scales, bias, epilogue, residual, gate, backend)
    return (out, out_scales) if out.dtype == _F8 else out


def fp8_rowwise_gemm(a: torch.Tensor, a_scales: torch.Tensor, b: torch.Tensor, b_scales: torch.Tensor,
                     bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.bfloat16,
                     out: Optional[torch.Tensor] = None, backend: str = "auto", *, epilogue: str = "none",
                     residual: Optional[torch.Tensor] = None, gate: Optional[torch.Tensor] = None,
                     out_scales: Optional[torch.Tensor] = None,
                     scale_layout: str = "mn_major") -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """a e4m3 [..., K] (K % 16 == 0), a_scales fp32 [M] or [M, 1] (one per token), b e4m3 [N, K]
    (N % 8 == 0), b_scales fp32 [N] or [N, 1] (one per output channel), bias fp32 or out's dtype
    [N] or None -> out [..., N] = (a . b_n) * a_scales[m] * b_scales[n] + bias after the epilogue,
    in out_dtype (bf16 / fp16), or (q e4m3 [..., N], scales fp32 [M, N/128]) for
    out_dtype=torch.float8_e4m3fn (or an e4m3 `out` with `out_scales`). epilogue, residual, gate:
    see the module docstring. backend "auto" | "sm90" | "cublaslt" | "torch" | "cpu"."""
    op = "fp8_rowwise_gemm"
    _check_epilogue(op, epilogue)
    n = b.shape[0] if b.dim() else 0
    out, out_scales = _outputs(op, a, n, out_dtype, out, out_scales, scale_layout)
    ops.fp8_rowwise_gemm(out, out_scales, a, a_scales, b, b_scales, bias, epilogue, residual, gate, backend)
    return (out, out_scales) if out.dtype == _F8 else out


def bf16_gemm(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor] = None, *, epilogue: str = "none",
              residual: Optional[torch.Tensor] = None, gate: Optional[torch.Tensor] = None,
              out: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None,
              out_scales: Optional[torch.Tensor] = None, scale_layout: str = "mn_major",
              backend: str = "auto") -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """a bf16 [..., K] @ b bf16 [N, K]^T (fp32 accumulation) + bias (fp32 or out's dtype [N]), then
    the epilogue (module docstring). out_dtype: bf16 (default), fp16, or torch.float8_e4m3fn for
    (q, scales) per 128 columns. backend "auto" | "sm90" | "torch" | "cpu"."""
    op = "bf16_gemm"
    _check_epilogue(op, epilogue)
    n = b.shape[0] if b.dim() else 0
    out, out_scales = _outputs(op, a, n, torch.bfloat16 if out_dtype is None else out_dtype, out, out_scales,
                               scale_layout)
    ops.bf16_gemm(out, out_scales, a, b, bias, epilogue, residual, gate, backend)
    return (out, out_scales) if out.dtype == _F8 else out


def _plan(op, a, a_scales, b, b_scales, bias, out_dtype, backend, epilogue, residual, gate):
    n = b.shape[0] if b.dim() else 0
    out, out_scales = _outputs(op, a, n, out_dtype, None, None, "mn_major")
    return list(ops.gemm_plan(op, out, out_scales, a, a_scales, b, b_scales, bias, epilogue, residual, gate, backend))


def fp8_gemm_backend(a: torch.Tensor, b: torch.Tensor, a_scales: torch.Tensor,
                     b_scales: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
                     out_dtype: torch.dtype = torch.bfloat16, backend: str = "auto", *, epilogue: str = "none",
                     residual: Optional[torch.Tensor] = None, gate: Optional[torch.Tensor] = None) -> str:
    """Which backend fp8_blockwise_gemm(a, a_scales, b, b_scales, bias, out_dtype, backend=...,
    epilogue=...) would run with a freshly allocated out: "cpu", "torch", "sm89", "sm90", "skinny",
    "sm90_cutlass" or "cublaslt" (raises what the GEMM would raise). b_scales None: ones of the right
    shape (the choice does not depend on their values)."""
    if b_scales is None:
        n, k = (b.shape[0], b.shape[1]) if b.dim() == 2 else (0, 0)
        b_scales = torch.ones(-(-n // 128), k // 128, dtype=torch.float32, device=b.device)
    plan = _plan("fp8_blockwise_gemm", a, a_scales, b, b_scales, bias, out_dtype, backend, epilogue, residual, gate)
    return _BACKENDS[int(plan[0])]


def bf16_gemm_backend(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor] = None,
                      out_dtype: torch.dtype = torch.bfloat16, backend: str = "auto", *, epilogue: str = "none",
                      residual: Optional[torch.Tensor] = None, gate: Optional[torch.Tensor] = None) -> str:
    """Which backend bf16_gemm would run for these arguments ("cpu", "torch" or "sm90")."""
    plan = _plan("bf16_gemm", a, None, b, None, bias, out_dtype, backend, epilogue, residual, gate)
    return _BACKENDS[int(plan[0])]


def gemm_config(op: str, a: torch.Tensor, b: torch.Tensor, a_scales: Optional[torch.Tensor] = None,
                b_scales: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
                out_dtype: torch.dtype = torch.bfloat16, backend: str = "auto", *, epilogue: str = "none",
                residual: Optional[torch.Tensor] = None, gate: Optional[torch.Tensor] = None) -> dict:
    """What `op` ("fp8_blockwise_gemm", "fp8_rowwise_gemm" or "bf16_gemm") would run: {"backend",
    "bm", "bn", "cluster", "group_m", "sms"} (the tile fields are those of the sm_90a kernel, 0 for
    other backends; sms 0 = every SM). b_scales None: ones of the right shape (the choice does not
    depend on their values). LTX_KERNELS_GEMM_CONFIG, when set, is taken into account."""
    if op == "fp8_blockwise_gemm" and b_scales is None:
        n, k = (b.shape[0], b.shape[1]) if b.dim() == 2 else (0, 0)
        b_scales = torch.ones(-(-n // 128), k // 128, dtype=torch.float32, device=b.device)
    if op == "fp8_rowwise_gemm" and b_scales is None:
        b_scales = torch.ones(b.shape[0] if b.dim() else 0, dtype=torch.float32, device=b.device)
    plan = _plan(op, a, a_scales, b, b_scales, bias, out_dtype, backend, epilogue, residual, gate)
    keys = ("backend", "bm", "bn", "cluster", "group_m", "sms")
    res = dict(zip(keys, (int(v) for v in plan)))
    res["backend"] = _BACKENDS[res["backend"]]
    return res


def fp6_blockwise_gemm(a: torch.Tensor, a_scales: torch.Tensor, b_packed: torch.Tensor, b_scales: torch.Tensor,
                       bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.bfloat16,
                       out: Optional[torch.Tensor] = None, backend: str = "auto") -> torch.Tensor:
    """fp8_blockwise_gemm with B given as LTX-2 packed FP6 (quantize_fp6_block): b_packed uint8
    [N, 3K/4], b_scales fp32 [ceil(N/128), K/128]; B's values are e4m3(unpack(b_packed)) * scale.
    backend "auto" (CUDA: the sm89 FP6 kernel, which unpacks while loading, else fp6_unpack and
    the FP8 "auto" path), "sm89", "torch" (unpack, then the fp32 fallback) or "cpu"."""
    if out is None:
        _check_out_dtype("fp6_blockwise_gemm", out_dtype)
    out = _out(a, b_packed.shape[0] if b_packed.dim() else 0, out_dtype, out)
    ops.fp6_blockwise_gemm(out, a, a_scales, b_packed, b_scales, bias, backend)
    return out


def scaled_mm_nvfp4(a_packed: torch.Tensor, b_packed: torch.Tensor, block_a: torch.Tensor, block_b: torch.Tensor,
                    alpha: torch.Tensor, bias: Optional[torch.Tensor] = None,
                    out_dtype: torch.dtype = torch.bfloat16, out: Optional[torch.Tensor] = None,
                    hi_first: bool = True, backend: str = "auto") -> torch.Tensor:
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


# ---- the "torch" backend: the exact fallback. The ops run it (through the gemm_exact op, which
# this module implements) when "torch" is asked for, or under "auto" when no kernel can take the
# call (no kernel for this device or build, an empty K, a kernel that declined the arguments).
# Both operands dequantized exactly as reference.py defines them, the matmul and the bias in float64
# (every dequantized product is exact there) rounded once to fp32, the epilogue in fp32, then one
# rounding to out's dtype or the FP8 quantizer (reference.quantize_fp8_per_token_group, which the
# kernels match bit for bit). float64 rather than an fp32 matmul: the result does not depend on the
# BLAS's summation order or on PyTorch's global matmul precision (TF32), which another caller in the
# process may have lowered. It is there to be right, not fast. NVFP4 operands are dequantized by dequantize_nvfp4 (s_t = 1, exact in fp32),
# and the product is scaled by alpha.
def _exact(op, out, out_scales, a, a_scales, b, b_scales, bias, epilogue, residual, gate, alpha, hi_first):
    f32 = torch.float32
    n = out.shape[-1]
    if op == "scaled_mm_nvfp4":
        k = 2 * a.shape[-1]
    else:
        k = a.shape[-1]
    m = out.numel() // n if n else 0
    if k == 0:
        y = torch.zeros(m, n, dtype=f32, device=out.device)
        if bias is not None:
            y = y + bias.to(f32)
    elif op == "scaled_mm_nvfp4":
        one = torch.ones((), dtype=f32, device=a.device)
        af = dequantize_nvfp4(a.reshape(m, k // 2), a_scales, one, k, f32, hi_first)
        bf = dequantize_nvfp4(b, b_scales, one, k, f32, hi_first)
        y = ((af.double() @ bf.double().t()).float()) * alpha.to(f32).reshape(())
        if bias is not None:
            y = y + bias.to(f32)
    elif op == "bf16_gemm":
        y = _ref.bf16_gemm(a, b, bias).float()
    elif op == "fp8_rowwise_gemm":
        y = _ref.fp8_rowwise_gemm(a, a_scales, b, b_scales, bias).float()
    else:
        if op == "fp6_blockwise_gemm":
            b = _ref.fp6_unpack(b, k)
        y = _ref.fp8_blockwise_gemm(a, a_scales, b, b_scales, bias).float()
    y = _ref.gemm_epilogue(y.reshape(out.shape), epilogue, residual, gate, dtype=f32)
    if out.dtype == _F8:
        # on the CPU: the reference quantizer's float64 arithmetic there is the definition the
        # kernels match bit for bit (on CUDA PyTorch's division of a value by its scale can land
        # one code off at a rounding midpoint)
        q, scales = _ref.quantize_fp8_per_token_group(y.cpu(), 128)
        out.copy_(q)
        out_scales.copy_(scales)
    else:
        out.copy_(y)


def _register_exact():
    """The Python kernel of gemm_exact (every device), once per process."""
    name = add_op_namespace_prefix("gemm_exact")
    if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd"):
        return None
    lib = torch.library.Library(name.split("::")[0], "IMPL")
    lib.impl("gemm_exact", _exact, "CompositeExplicitAutograd")
    return lib


_EXACT_LIB = _register_exact()  # kept alive: the registration lasts as long as the library object


# ---- fake implementations (shapes only; the wrappers allocate out)
def _fake_common(op, out, a, b, k_of_b):
    torch._check(a.dim() >= 1, lambda: f"ltx_kernels.{op}: a must have at least one dimension")
    torch._check(b.dim() == 2, lambda: f"ltx_kernels.{op}: b must be 2-D")
    torch._check(k_of_b(a.shape[-1]) == b.shape[1], lambda: f"ltx_kernels.{op}: b must match K")
    torch._check(out.shape[:-1] == a.shape[:-1] and out.shape[-1] == b.shape[0],
                 lambda: f"ltx_kernels.{op}: out must have shape a.shape[:-1] + [N]")


@register_fake("fp8_blockwise_gemm")
def _fp8_blockwise_gemm_fake(out, out_scales, a, a_scales, b, b_scales, bias, epilogue, residual, gate, backend):
    torch._check(a.shape[-1] % 128 == 0, lambda: "ltx_kernels.fp8_blockwise_gemm: K must be a multiple of 128")
    _fake_common("fp8_blockwise_gemm", out, a, b, lambda k: k)


@register_fake("fp8_rowwise_gemm")
def _fp8_rowwise_gemm_fake(out, out_scales, a, a_scales, b, b_scales, bias, epilogue, residual, gate, backend):
    torch._check(a.shape[-1] % 16 == 0, lambda: "ltx_kernels.fp8_rowwise_gemm: K must be a multiple of 16")
    _fake_common("fp8_rowwise_gemm", out, a, b, lambda k: k)


@register_fake("bf16_gemm")
def _bf16_gemm_fake(out, out_scales, a, b, bias, epilogue, residual, gate, backend):
    _fake_common("bf16_gemm", out, a, b, lambda k: k)


@register_fake("fp6_blockwise_gemm")
def _fp6_blockwise_gemm_fake(out, a, a_scales, b_packed, b_scales, bias, backend):
    torch._check(a.shape[-1] % 128 == 0, lambda: "ltx_kernels.fp6_blockwise_gemm: K must be a multiple of 128")
    _fake_common("fp6_blockwise_gemm", out, a, b_packed, lambda k: k // 4 * 3)


@register_fake("scaled_mm_nvfp4")
def _scaled_mm_nvfp4_fake(out, a_packed, b_packed, block_a, block_b, alpha, bias, hi_first, backend):
    torch._check(b_packed.dim() == 2 and b_packed.shape[1] == a_packed.shape[-1],
                 lambda: "ltx_kernels.scaled_mm_nvfp4: b_packed must be [N, K/2]")
    torch._check(out.shape[-1] == b_packed.shape[0], lambda: "ltx_kernels.scaled_mm_nvfp4: out must be [..., N]")
