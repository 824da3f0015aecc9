"""Quantized linear layers and a model-wide swap (standard library and torch only).

  FP8BlockwiseLinear  weight e4m3 with one fp32 scale per 128x128 block (quantize_fp8_block,
                      once); activations e4m3 per token per 128 columns (per call, or given
                      pre-quantized as a tuple (q, scales), e.g. by a fused norm); fp8_blockwise_gemm
                      with its fused epilogues: epilogue="gelu_tanh" (feed-forward up),
                      "gated_residual" (forward(x, residual=h, gate=g) returns h + g * linear(x):
                      attention out / feed-forward down), and fp8_output=True (returns (q, scales)
                      per 128 columns, which the next FP8BlockwiseLinear takes as its input).
  FP8RowwiseLinear    weight e4m3 with one fp32 scale per output channel, activations e4m3 with
                      one scale per token (both quantize_fp8_per_token_group with group_size =
                      in_features); fp8_rowwise_gemm (no per-K-block promotion: it runs at the
                      plain FP8 tensor-core rate) with the epilogues "gelu_tanh" and
                      "gated_residual". Coarser scales than FP8BlockwiseLinear's: an outlier
                      anywhere in a token's row (or a weight row) sets the step for the whole row.
  FusedLinear         the same epilogues for bf16 weights (bf16_gemm on the sm_90a kernel; elsewhere
                      F.linear followed by the same math in PyTorch).
  FP6BlockwiseLinear  weight LTX-2 packed FP6 per 128x128 block (quantize_fp6_block, once);
                      activations as above; fp6_blockwise_gemm.
  NVFP4Linear         weight NVFP4 (per-tensor scale + E4M3 per-16 block scales, once);
                      activations NVFP4 per call; scaled_mm_nvfp4 (cuBLASLt on compute
                      capability >= 10.0, a dequantize + fp32 matmul fallback elsewhere).

Output dtype: the original linear's dtype. The GEMMs write bf16 or fp16, so an fp32 linear
computes in bf16 (same exponent range as fp32, no overflow risk) and its output is cast back to
fp32; its precision is that of the FP8 operands (~2^-4 relative per element) anyway.
The bias stays fp32 and is added inside the GEMM before the single rounding.
Under torch.compile an FP8BlockwiseLinear keeps our quantizer kernel (end to end it is faster
than Inductor's code for the same rule, integrations/_compile_policy.py);
LTX_KERNELS_COMPILE_LEAVE=quantize_fp8_per_token_group writes the quantization as PyTorch ops
(the same rule) for Inductor to generate instead. The GEMM stays ours either way.

quantize_linears(model, fmt) swaps nn.Linear modules in place (see its docstring for the
default policy, which follows LTX-2's: transformer-block linears only, never gates, AdaLN
tables, norms, the patchify / caption / time-embedding projections or the output head).
"""

import logging
import re
from typing import Callable, Iterable, List, Optional, Union

import torch
from torch import nn

from .fp8 import _quantize_fp8_per_token_group_composed, quantize_fp8_block, quantize_fp8_per_token_group
from .gemm import GEMM_EPILOGUES, bf16_gemm, fp6_blockwise_gemm, fp8_blockwise_gemm, fp8_rowwise_gemm, scaled_mm_nvfp4
from .lowbit import nvfp4_per_tensor_scale, quantize_fp6_block, quantize_nvfp4
from .integrations._compile_policy import use_kernel

__all__ = [
    "FP8BlockwiseLinear",
    "FP8RowwiseLinear",
    "FusedLinear",
    "FP6BlockwiseLinear",
    "NVFP4Linear",
    "quantize_linears",
    "linears_to_quantize",
    "concat_fp8_linears",
    "share_concat_rows",
    "fp8_linear_rows",
    "DEFAULT_INCLUDE",
    "DEFAULT_EXCLUDE",
]

log = logging.getLogger("ltx_kernels")


def _gemm_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype in (torch.bfloat16, torch.float16) else torch.bfloat16


def _weight_op(fn, w: torch.Tensor):
    """Run a weight quantizer on w's device; if that device has no kernel for it in this build,
    quantize on the CPU (bit-identical by contract) and move the result back."""
    try:
        return fn(w)
    except NotImplementedError:
        if w.device.type == "cpu":
            raise
        res = fn(w.cpu())
        return tuple(t.to(w.device) for t in res)


class _QuantLinearBase(nn.Module):
    """Shared bookkeeping: in/out features, fp32 bias buffer, output dtype."""

    def _init_common(self, linear: nn.Linear, bias_in_out_dtype: bool = False):
        # the bias in fp32, or with bias_in_out_dtype in the output dtype where it already has it
        # (exact: the GEMM adds it in fp32 either way)
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.result_dtype = linear.weight.dtype
        self.out_dtype = _gemm_dtype(linear.weight.dtype)
        b = linear.bias
        if b is not None:
            b = b.detach().clone() if bias_in_out_dtype and b.dtype == self.out_dtype else b.detach().float().clone()
        self.register_buffer("bias", b)

    def _finish(self, y: torch.Tensor) -> torch.Tensor:
        return y if self.result_dtype == self.out_dtype else y.to(self.result_dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _check_layer_epilogue(epilogue: str, fp8_output: bool) -> None:
    if epilogue not in GEMM_EPILOGUES:
        raise ValueError(f"ltx_kernels: epilogue must be one of {GEMM_EPILOGUES} (got {epilogue!r})")
    if fp8_output and epilogue == "gated_residual":
        raise ValueError("ltx_kernels: the gated residual writes the residual stream's dtype, not FP8")


def _call_epilogue(layer: str, epilogue: str, fp8_output: bool, residual, gate) -> str:
    """The epilogue one call of a fused linear runs: the layer's, or the gated residual when the
    call passes residual and gate to a layer without an epilogue (the per-call form of epilogue
    "gated_residual"). Half of the pair, or a pair the layer's epilogue cannot take, is an error
    (never silently ignored)."""
    given = residual is not None or gate is not None
    if epilogue == "gated_residual" or (given and epilogue == "none"):
        if residual is None or gate is None:
            raise RuntimeError(f"ltx_kernels.{layer}: the gated residual needs residual and gate")
        if fp8_output:
            raise ValueError(f"ltx_kernels.{layer}: the gated residual writes the residual stream's dtype, not FP8")
        return "gated_residual"
    if given:
        raise ValueError(f"ltx_kernels.{layer}: residual and gate ask for the gated residual, which epilogue "
                         f"{epilogue!r} does not combine with")
    return epilogue


def _mn_layout(x) -> str:
    t = x[0] if isinstance(x, (tuple, list)) else x
    return "mn_major" if t.is_cuda else "row"


class FP8BlockwiseLinear(_QuantLinearBase):
    """y = x W^T + b with W e4m3 per 128x128 block and x e4m3 per token per 128 columns, followed
    by the fused epilogue.

    forward(x, residual=None, gate=None): x [..., in_features] float (quantized here, M-major
    scales on CUDA, as the TMA kernels read them) or a tuple (q e4m3 [..., in_features], scales
    fp32 [M, in/128]) already quantized (either scale layout).
      epilogue "none":            returns y
      epilogue "gelu_tanh":       returns gelu_tanh(y)
      epilogue "gated_residual":  returns residual + gate * y (residual of y's shape and the layer's
                                  output dtype; gate per sample [B, out] or per token); pass
                                  out=residual to update the residual stream in place. A layer
                                  without an epilogue does the same for a call that passes
                                  residual and gate
      fp8_output=True:            returns (q e4m3 [..., out], scales fp32 [M, out/128]) of that
                                  value instead (out_features % 128 == 0), ready for the next
                                  FP8BlockwiseLinear (feed-forward up -> down without a quantize pass)."""

    epilogue = "none"
    fp8_output = False

    @classmethod
    def from_linear(cls, linear: nn.Linear, epilogue: str = "none", fp8_output: bool = False) -> "FP8BlockwiseLinear":
        _check_layer_epilogue(epilogue, fp8_output)
        self = cls()
        self._init_common(linear)
        q, s = _weight_op(lambda w: quantize_fp8_block(w, (128, 128)), linear.weight.detach())
        self.register_buffer("weight_q", q)
        self.register_buffer("weight_scales", s)
        self.epilogue = epilogue
        self.fp8_output = fp8_output
        return self

    def set_epilogue(self, epilogue: str = "none", fp8_output: bool = False) -> "FP8BlockwiseLinear":
        """Change what forward returns (see the class docstring); returns self."""
        _check_layer_epilogue(epilogue, fp8_output)
        self.epilogue = epilogue
        self.fp8_output = fp8_output
        return self

    def _quantize_input(self, x):
        if isinstance(x, (tuple, list)):
            return x[0], x[1]
        if use_kernel("quantize_fp8_per_token_group", x):
            return quantize_fp8_per_token_group(x, 128, _mn_layout(x))
        # while torch.compile traces with the quantizer left to Inductor (_compile_policy's
        # LTX_KERNELS_COMPILE_LEAVE): the same rule as PyTorch ops
        return _quantize_fp8_per_token_group_composed(x, 128, _mn_layout(x))

    def _gemm_kwargs(self, x, residual, gate, out):
        epilogue = _call_epilogue(type(self).__name__, self.epilogue, self.fp8_output, residual, gate)
        kw = {"epilogue": epilogue}
        if epilogue == "gated_residual":
            kw.update(residual=residual, gate=gate, out=out)
        if self.fp8_output:
            kw.update(out_dtype=torch.float8_e4m3fn, scale_layout=_mn_layout(x))
        return kw

    def forward(self, x, residual=None, gate=None, out=None):
        q, s = self._quantize_input(x)
        kw = self._gemm_kwargs(x, residual, gate, out)
        if not self.fp8_output:
            kw.setdefault("out_dtype", self.out_dtype)
        y = fp8_blockwise_gemm(q, s, self.weight_q, self.weight_scales, self.bias, **kw)
        return y if self.fp8_output else self._finish(y)

    def extra_repr(self) -> str:
        extra = "" if self.epilogue == "none" else f", epilogue={self.epilogue}"
        return super().extra_repr() + extra + (", fp8_output=True" if self.fp8_output else "")


class FP8RowwiseLinear(_QuantLinearBase):
    """y = x W^T + b with W e4m3 with one scale per output channel and x e4m3 with one scale per
    token (quantize_fp8_per_token_group with group_size = in_features: s = amax / 448 over the
    whole row), followed by the fused epilogue: fp8_rowwise_gemm, where the two scales multiply
    the fp32 accumulator once, in the epilogue.

    forward(x, residual=None, gate=None, out=None): x [..., in_features] float (quantized here)
    or a tuple (q e4m3 [..., in_features], scales fp32 [M] or [M, 1]) already quantized per
    token. epilogue "none" | "gelu_tanh" | "gated_residual" as FP8BlockwiseLinear's (a layer
    without an epilogue runs the gated residual for a call that passes residual and gate). No
    fp8_output: the GEMM's FP8 output is scaled per 128 columns, which is what the blockwise
    layer reads, not this one. Not a subclass of FP8BlockwiseLinear: it reads one scale per token
    (the fused norms' and activations' FP8 output with group_size = in_features), not per 128
    columns. A bias in the output dtype (a bf16 model's) is kept in it, else in fp32."""

    epilogue = "none"

    @classmethod
    def from_linear(cls, linear: nn.Linear, epilogue: str = "none") -> "FP8RowwiseLinear":
        _check_layer_epilogue(epilogue, False)
        self = cls()
        # a bf16 model's bias in bf16: the form cuBLASLt's rowwise GEMM reads, so that "auto" can run it there
        self._init_common(linear, bias_in_out_dtype=True)
        q, s = _weight_op(lambda w: quantize_fp8_per_token_group(w, w.shape[1]), linear.weight.detach())
        self.register_buffer("weight_q", q)
        self.register_buffer("weight_scales", s)
        self.epilogue = epilogue
        return self

    def set_epilogue(self, epilogue: str = "none", fp8_output: bool = False) -> "FP8RowwiseLinear":
        """Change what forward returns (see the class docstring); returns self."""
        if fp8_output:
            raise ValueError("ltx_kernels.FP8RowwiseLinear: no fp8_output (the GEMM's FP8 output is scaled per "
                             "128 columns; use FP8BlockwiseLinear for FP8 chains)")
        _check_layer_epilogue(epilogue, False)
        self.epilogue = epilogue
        return self

    def _quantize_input(self, x):
        if isinstance(x, (tuple, list)):
            return x[0], x[1]
        k = x.shape[-1]
        if use_kernel("quantize_fp8_per_token_group", x):
            return quantize_fp8_per_token_group(x, k, "row")
        return _quantize_fp8_per_token_group_composed(x, k, "row")

    def forward(self, x, residual=None, gate=None, out=None):
        q, s = self._quantize_input(x)
        epilogue = _call_epilogue(type(self).__name__, self.epilogue, False, residual, gate)
        kw = {"epilogue": epilogue, "out_dtype": self.out_dtype}
        if epilogue == "gated_residual":
            kw.update(residual=residual, gate=gate, out=out)
        y = fp8_rowwise_gemm(q, s, self.weight_q, self.weight_scales, self.bias, **kw)
        return self._finish(y)

    def extra_repr(self) -> str:
        return super().extra_repr() + ("" if self.epilogue == "none" else f", epilogue={self.epilogue}")


def concat_fp8_linears(layers: Iterable[nn.Module], persistent: bool = True) -> Optional[_QuantLinearBase]:
    """One layer whose output is `layers`' outputs side by side, cat([l(x) for l in layers], -1),
    in one GEMM (one launch and one larger problem instead of one per layer): FP8BlockwiseLinear
    or FP8RowwiseLinear layers of one class (not a subclass) that read the same input. Their
    weights, scales and biases are concatenated along the output dimension, so every output
    channel keeps its own weight row, scale(s) and bias: each output is computed exactly as its
    layer computes it (the same products and scales; a GEMM's summation order may differ with N).
    The new layer owns copies; share_concat_rows(fused, layers) points the layers at its rows.
    persistent: whether its buffers belong in state_dict.

    None where they cannot be one layer: fewer than two, different classes, in_features,
    dtypes or devices, an epilogue or FP8 output, a bias on some only (or of different dtypes),
    or a blockwise layer whose out_features is not a multiple of 128 (a 128-row weight-scale block
    would span two layers)."""
    layers = list(layers)
    if len(layers) < 2:
        return None
    cls = type(layers[0])
    if cls not in (FP8BlockwiseLinear, FP8RowwiseLinear) or any(type(m) is not cls for m in layers):
        return None
    first = layers[0]
    for m in layers:
        same = (m.in_features == first.in_features and m.result_dtype == first.result_dtype
                and m.out_dtype == first.out_dtype and m.weight_q.device == first.weight_q.device
                and (m.bias is None) == (first.bias is None)
                and (m.bias is None or m.bias.dtype == first.bias.dtype))
        if not same or m.epilogue != "none" or getattr(m, "fp8_output", False):
            return None
        if cls is FP8BlockwiseLinear and m.out_features % 128:
            return None
    fused = _layer_like(first, sum(m.out_features for m in layers))
    for name in ("weight_q", "weight_scales", "bias"):
        parts = [getattr(m, name) for m in layers]
        fused.register_buffer(name, None if parts[0] is None else torch.cat(parts, 0), persistent=persistent)
    return fused


def _layer_like(like: _QuantLinearBase, out_features: int) -> _QuantLinearBase:
    """An empty layer of like's class with like's input width and dtypes and `out_features`
    outputs (no buffers yet; epilogue and FP8 output at the class defaults: none)."""
    m = type(like)()
    m.in_features, m.out_features = like.in_features, out_features
    m.result_dtype, m.out_dtype = like.result_dtype, like.out_dtype
    return m


def _rows(fused: _QuantLinearBase, row: int, n: int):
    """Views of fused's weight, scales and bias for its output columns [row, row + n)."""
    srow, sn = (row // 128, n // 128) if type(fused) is FP8BlockwiseLinear else (row, n)
    bias = None if fused.bias is None else fused.bias[row:row + n]
    return fused.weight_q[row:row + n], fused.weight_scales[srow:srow + sn], bias


def share_concat_rows(fused: _QuantLinearBase, layers: Iterable[nn.Module], first_row: int = 0) -> None:
    """Point `layers` (layers of fused's class whose outputs are fused's output columns from
    `first_row` on, in order: those concat_fp8_linears built it from) at their rows of fused's
    weight, scales and bias: views, so the weights are held once, and a change to either side is
    seen by both."""
    row = first_row
    for m in layers:
        m.weight_q, m.weight_scales, bias = _rows(fused, row, m.out_features)
        if bias is not None:
            m.bias = bias
        row += m.out_features


def fp8_linear_rows(fused: _QuantLinearBase, first_row: int, out_features: int,
                    persistent: bool = True) -> _QuantLinearBase:
    """A layer of fused's class computing fused's output columns [first_row, first_row +
    out_features) (a multiple of 128 each for a blockwise layer): its weight, scales and bias are
    views of fused's rows, nothing is copied (share_concat_rows(fused, (layer,), first_row) points
    it at them again after fused's buffers were replaced)."""
    m = _layer_like(fused, out_features)
    for name, t in zip(("weight_q", "weight_scales", "bias"), _rows(fused, first_row, out_features)):
        m.register_buffer(name, t, persistent=persistent)
    return m


class FusedLinear(nn.Module):
    """nn.Linear (bf16 weights kept as they are) with the fused epilogues of FP8BlockwiseLinear:
    epilogue "none" | "gelu_tanh" | "gated_residual" (forward(x, residual, gate[, out])) and
    fp8_output. On a compute capability 9.0 GPU with bf16 activations it runs bf16_gemm (the
    sm_90a kernel, epilogue fused, one rounding); elsewhere F.linear (cuBLAS / the CPU, whose
    x W^T is rounded to the weight dtype before the bias) followed by the same epilogue in fp32
    PyTorch arithmetic, and quantize_fp8_per_token_group for the FP8 output."""

    def __init__(self, linear: nn.Linear, epilogue: str = "none", fp8_output: bool = False):
        super().__init__()
        _check_layer_epilogue(epilogue, fp8_output)
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self.epilogue = epilogue
        self.fp8_output = fp8_output

    @classmethod
    def from_linear(cls, linear: nn.Linear, epilogue: str = "none", fp8_output: bool = False) -> "FusedLinear":
        return cls(linear, epilogue, fp8_output)

    def _fused_ok(self, x) -> bool:
        return (isinstance(x, torch.Tensor) and x.is_cuda and x.dtype == torch.bfloat16
                and self.weight.dtype == torch.bfloat16 and torch.cuda.get_device_capability(x.device) == (9, 0)
                and self.in_features % 8 == 0 and self.out_features % 8 == 0)

    def forward(self, x, residual=None, gate=None, out=None):
        epilogue = _call_epilogue("FusedLinear", self.epilogue, self.fp8_output, residual, gate)
        if self._fused_ok(x):
            kw = {"epilogue": epilogue}
            if epilogue == "gated_residual":
                kw.update(residual=residual, gate=gate, out=out)
            if self.fp8_output:
                kw.update(out_dtype=torch.float8_e4m3fn, scale_layout="mn_major")
            return bf16_gemm(x, self.weight, self.bias, **kw)
        y = torch.nn.functional.linear(x, self.weight).float()
        if self.bias is not None:
            y = y + self.bias.float()
        if epilogue == "gelu_tanh":
            y = torch.nn.functional.gelu(y, approximate="tanh")
        elif epilogue == "gated_residual":
            g = gate if gate.shape == residual.shape else gate.reshape(gate.shape[0], *([1] * (residual.dim() - 2)),
                                                                        gate.shape[-1])
            y = residual.float() + g.float() * y
            if out is not None:
                return out.copy_(y)
            return y.to(residual.dtype)
        if self.fp8_output:
            return quantize_fp8_per_token_group(y, 128, _mn_layout(x))
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"epilogue={self.epilogue}" + (", fp8_output=True" if self.fp8_output else ""))


class FP6BlockwiseLinear(FP8BlockwiseLinear):
    """As FP8BlockwiseLinear with the weight stored as LTX-2 packed FP6 (quantize_fp6_block:
    per 128x128 block scale amax / 0.1171875, 6-bit codes = e4m3 without exponent bits 6..5)."""

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> "FP6BlockwiseLinear":
        self = cls()
        self._init_common(linear)
        packed, s = _weight_op(lambda w: quantize_fp6_block(w, (128, 128)), linear.weight.detach())
        self.register_buffer("weight_packed", packed)
        self.register_buffer("weight_scales", s)
        return self

    def set_epilogue(self, epilogue: str = "none", fp8_output: bool = False):
        if epilogue != "none" or fp8_output:
            raise ValueError("ltx_kernels.FP6BlockwiseLinear: the FP6-weight GEMM fuses no epilogue")
        return self

    def forward(self, x, residual=None, gate=None, out=None):
        if residual is not None or gate is not None or out is not None:
            raise ValueError("ltx_kernels.FP6BlockwiseLinear: the FP6-weight GEMM fuses no epilogue "
                             "(residual, gate and out are not taken)")
        q, s = self._quantize_input(x)
        y = fp6_blockwise_gemm(q, s, self.weight_packed, self.weight_scales, self.bias, out_dtype=self.out_dtype)
        return self._finish(y)


class NVFP4Linear(_QuantLinearBase):
    """y = x W^T + b with W and x in NVFP4 (E2M1 values, E4M3 scales per 16 elements in the
    cuBLASLt swizzled layout, fp32 per-tensor scales s_w (once) and s_x (per call));
    alpha = s_x * s_w is applied on the device."""

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> "NVFP4Linear":
        self = cls()
        self._init_common(linear)
        w = linear.weight.detach()
        s_w = nvfp4_per_tensor_scale(w)
        packed, block = _weight_op(lambda t: quantize_nvfp4(t, s_w.to(t.device), True), w)
        self.register_buffer("weight_packed", packed)
        self.register_buffer("weight_block_scales", block)
        self.register_buffer("weight_scale", s_w.to(w.device))
        return self

    def forward(self, x):
        s_x = nvfp4_per_tensor_scale(x)
        qa, ba = quantize_nvfp4(x, s_x, True)
        alpha = (s_x * self.weight_scale).float()
        y = scaled_mm_nvfp4(qa, self.weight_packed, ba, self.weight_block_scales, alpha, self.bias,
                            out_dtype=self.out_dtype)
        return self._finish(y)


_LAYERS = {"fp8": FP8BlockwiseLinear, "fp8_rowwise": FP8RowwiseLinear, "fp6": FP6BlockwiseLinear,
           "nvfp4": NVFP4Linear}
# in_features a multiple of: the scaling block (fp8, fp6), the NVFP4 block, 16 bytes of e4m3 (fp8_rowwise)
_K_MULTIPLE = {"fp8": 128, "fp8_rowwise": 16, "fp6": 128, "nvfp4": 16}
# LTX-2's policy: quantize the linears inside the transformer blocks ...
DEFAULT_INCLUDE = [r"(^|\.)(transformer_blocks|blocks|layers)\."]
# ... but never gate logits, AdaLN tables, norms, patchify / caption / time-embedding
# projections, the first and last projections or an LM head.
DEFAULT_EXCLUDE = [
    r"(^|\.)(to_gate_logits|gate|patchify_proj|proj_in|proj_out|caption_projection|lm_head)($|\.)",
    r"scale_shift_table|adaln|norm|time_embed",
]

Pattern = Union[None, str, Iterable[str], Callable[[str, nn.Module], bool]]


def _matcher(p: Pattern, default: List[str]) -> Callable[[str, nn.Module], bool]:
    if callable(p) and not isinstance(p, str):
        return p
    pats = default if p is None else ([p] if isinstance(p, str) else list(p))
    rx = [re.compile(x) for x in pats]
    return lambda name, mod: any(r.search(name) for r in rx)


def linears_to_quantize(
    module: nn.Module,
    fmt: str = "fp8",
    include: Pattern = None,
    exclude: Pattern = None,
) -> List[str]:
    """The names of the nn.Linear submodules quantize_linears(module, fmt, include, exclude)
    replaces (see there), without replacing them; a linear the format's kernels cannot take is
    left out with one log line."""
    if fmt not in _LAYERS:
        raise ValueError(f"ltx_kernels.quantize_linears: fmt must be 'fp8', 'fp8_rowwise', 'fp6' or 'nvfp4' "
                         f"(got {fmt!r})")
    inc = _matcher(include, DEFAULT_INCLUDE)
    exc = _matcher(exclude, DEFAULT_EXCLUDE)
    k_mult = _K_MULTIPLE[fmt]
    names = []
    for name, child in module.named_modules():
        if type(child) is not nn.Linear or not name:
            continue
        if not inc(name, child) or exc(name, child):
            continue
        if child.in_features % k_mult or child.out_features % 8:
            log.info("ltx_kernels.quantize_linears: keeping %s (in_features %d %% %d != 0 or out_features %d %% 8 != 0)",
                     name, child.in_features, k_mult, child.out_features)
            continue
        names.append(name)
    return names


def quantize_linears(
    module: nn.Module,
    fmt: str = "fp8",
    include: Pattern = None,
    exclude: Pattern = None,
) -> List[str]:
    """Replace nn.Linear submodules of `module` in place by FP8BlockwiseLinear (fmt "fp8"),
    FP8RowwiseLinear ("fp8_rowwise"), FP6BlockwiseLinear ("fp6") or NVFP4Linear ("nvfp4"); returns
    the replaced names (linears_to_quantize lists them without replacing).

    include / exclude: a regex (re.search on the dotted module name), a list of them, or a
    callable (name, linear) -> bool. None means the defaults DEFAULT_INCLUDE (names containing
    "transformer_blocks.", "blocks." or "layers.") and DEFAULT_EXCLUDE (gates, AdaLN, norms,
    patchify / proj_in / proj_out / caption / time-embedding projections, lm_head); passing a
    value replaces that default (exclude=[] excludes nothing). A linear the kernels cannot take
    (in_features % 128 != 0 for fp8/fp6, % 16 for fp8_rowwise and nvfp4, or out_features % 8 != 0)
    is left as is with one log line."""
    todo = linears_to_quantize(module, fmt, include, exclude)
    layer = _LAYERS[fmt]
    for name in todo:
        module.set_submodule(name, layer.from_linear(module.get_submodule(name)))
    log.info("ltx_kernels.quantize_linears: %d linears -> %s", len(todo), fmt)
    return todo
