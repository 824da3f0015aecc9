"""The PyTorch compositions the benchmarks time as "eager" and compile for "torch.compile".

Each is what a PyTorch user writes for the op's formula: the arithmetic in fp32
(``x.float() ... .to(x.dtype)``), rounded once to the input dtype at the end, so a baseline
does the same work at the same precision as our kernels. The formulas are those of
``ltx_kernels.reference`` (the test oracles, which compute in float64 and are not baselines:
float64 arithmetic would make every baseline slower than what a user runs). The benchmarks
still measure the error of what was timed against those float64 oracles.

Where PyTorch has a fused op (F.gelu, F.silu, F.rms_norm, F.layer_norm) the benchmarks time it
as a further baseline next to these.

Tables: AdaLN scale / shift / gate are [B, C] (per sample, broadcast over the tokens) or of x's
shape (per token); RoPE cos / sin follow ltx_kernels.apply_rope's convention.
"""

from typing import Optional

import torch

F8 = torch.float8_e4m3fn
F8_MAX = 448.0  # largest finite float8_e4m3fn value


# ---- helpers --------------------------------------------------------------------------------
def table(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """An AdaLN table as fp32, broadcastable against x: [B, C] -> [B, 1, ..., 1, C]."""
    t = t.float()
    if t.shape != x.shape:
        t = t.reshape(t.shape[0], *([1] * (x.dim() - 2)), t.shape[-1])
    return t


def _rms_f32(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight.float()


def _layer_norm_f32(x, weight, bias, eps):
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    xc = xf - mean
    y = xc * torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.float()
    if bias is not None:
        y = y + bias.float()
    return y


def _modulate_f32(y, x, scale, shift):
    return y * (1 + table(scale, x)) + table(shift, x)


# ---- activations ----------------------------------------------------------------------------
def _gelu_f32(xf):
    # 0.5 x (1 + erf(x / sqrt(2))) written as 0.5 x erfc(-x / sqrt(2)): the same function and
    # the same cost, without the cancellation of 1 + erf for x << 0.
    return 0.5 * xf * torch.special.erfc(-xf * 0.7071067811865476)


def _gelu_tanh_f32(xf):
    # 0.5 x (1 + tanh(v)) = x sigmoid(2 v), v = sqrt(2/pi) (x + 0.044715 x^3)
    v = 0.7978845608028654 * (xf + 0.044715 * xf * xf * xf)
    return xf * torch.sigmoid(2.0 * v)


def _silu_f32(xf):
    return xf * torch.sigmoid(xf)


def gelu(x):
    return _gelu_f32(x.float()).to(x.dtype)


def gelu_tanh(x):
    return _gelu_tanh_f32(x.float()).to(x.dtype)


def silu(x):
    return _silu_f32(x.float()).to(x.dtype)


def _act_and_mul_f32(x, act, act_first):
    d = x.shape[-1] // 2
    a, b = x[..., :d].float(), x[..., d:].float()
    return act(a) * b if act_first else a * act(b)


def gelu_and_mul(x, approximate: str = "none", act_first: bool = True):
    """x [..., 2d] -> act(x[..., :d]) * x[..., d:] (act_first) or x[..., :d] * act(x[..., d:])."""
    act = _gelu_tanh_f32 if approximate == "tanh" else _gelu_f32
    return _act_and_mul_f32(x, act, act_first).to(x.dtype)


def silu_and_mul(x, act_first: bool = True):
    return _act_and_mul_f32(x, _silu_f32, act_first).to(x.dtype)


def _gated_attention_f32(x, gate_logits):
    heads = gate_logits.shape[-1]
    xf = x.float().unflatten(-1, (heads, x.shape[-1] // heads))
    return (xf * (2.0 * torch.sigmoid(gate_logits.float())).unsqueeze(-1)).flatten(-2)


def gated_attention(x, gate_logits):
    """x [..., H*D] * 2 sigmoid(gate_logits [..., H]), each head's gate over its D columns."""
    return _gated_attention_f32(x, gate_logits).to(x.dtype)


# ---- norms ----------------------------------------------------------------------------------
def rms_norm(x, weight=None, eps: float = 1e-6):
    """x / sqrt(mean(x^2) + eps) * weight."""
    return _rms_f32(x, weight, eps).to(x.dtype)


def layer_norm(x, weight=None, bias=None, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias (biased variance)."""
    return _layer_norm_f32(x, weight, bias, eps).to(x.dtype)


def add_rms_norm(x, residual, weight=None, eps: float = 1e-6):
    """(rms_norm(h) * weight, h), h = x + residual. PyTorch adds fp16 / bf16 tensors in fp32 and
    rounds once, which is the stored residual the kernels write."""
    h = x + residual
    return rms_norm(h, weight, eps), h


def adaln_rms_norm(x, scale, shift, weight=None, eps: float = 1e-6):
    """rms_norm(x) * weight * (1 + scale) + shift."""
    return _modulate_f32(_rms_f32(x, weight, eps), x, scale, shift).to(x.dtype)


def adaln_layer_norm(x, scale, shift, weight=None, bias=None, eps: float = 1e-6):
    """layer_norm(x) * (1 + scale) + shift."""
    return _modulate_f32(_layer_norm_f32(x, weight, bias, eps), x, scale, shift).to(x.dtype)


def gated_residual(h, y, gate):
    """h + y * gate in fp32, rounded to h.dtype (the stored h_new)."""
    return (h.float() + y.float() * table(gate, h)).to(h.dtype)


def gated_residual_adaln_rms_norm(h, y, gate, scale, shift, weight=None, eps: float = 1e-6):
    """(h_new, adaln_rms_norm(h_new)), h_new = gated_residual(h, y, gate)."""
    hn = gated_residual(h, y, gate)
    return hn, adaln_rms_norm(hn, scale, shift, weight, eps)


# ---- RoPE -----------------------------------------------------------------------------------
def _rope_interleaved_f32(y, cos, sin):
    """Pairs (2i, 2i+1) of the last dim with full-width tables (diffusers' apply_rotary_emb):
    y cos + rot(y) sin, rot(y)[2i] = -y[2i+1], rot(y)[2i+1] = y[2i]."""
    real, imag = y.unflatten(-1, (-1, 2)).unbind(-1)
    rot = torch.stack([-imag, real], dim=-1).flatten(-2)
    return y * cos.float() + rot * sin.float()


def _rope_split_f32(y, cos, sin):
    """Halves of each head (LTX-2's split rotary embedding): y [B, S, C], cos / sin
    [B|1, H, S, d/2]: (y1 cos - y2 sin, y2 cos + y1 sin) per head."""
    b, s, c = y.shape
    heads, half = cos.shape[1], cos.shape[-1]
    yh = y.reshape(b, s, heads, 2, half).transpose(1, 2)  # [B, H, S, 2, d/2]
    y1, y2 = yh[..., 0, :], yh[..., 1, :]
    cf, sf = cos.float(), sin.float()
    out = torch.stack([y1 * cf - y2 * sf, y2 * cf + y1 * sf], dim=-2)  # [B, H, S, 2, d/2]
    return out.transpose(1, 2).reshape(b, s, c)


def rms_norm_rope(x, cos, sin, weight=None, eps: float = 1e-6):
    """RMSNorm over the whole row, then interleaved RoPE with tables [B|1, S, C]."""
    return _rope_interleaved_f32(_rms_f32(x, weight, eps), cos, sin).to(x.dtype)


def rms_norm_split_rope(x, cos, sin, weight=None, eps: float = 1e-6):
    """RMSNorm over the whole row, then split RoPE per head; tables [B|1, H, S, d/2]."""
    return _rope_split_f32(_rms_f32(x, weight, eps), cos, sin).to(x.dtype)


# ---- FP8 ------------------------------------------------------------------------------------
# s = amax / 448 per group or tile, q = (x / s).to(float8_e4m3fn) (q = x where s == 0); the
# division keeps |x / s| <= 448, so PyTorch's cast (round to nearest even) needs no clamp.
def quantize_fp8_per_token_group(x, group_size: int = 128):
    """x [..., K] -> (q of x's shape, fp32 scales [M, K / group_size])."""
    k = x.shape[-1]
    xg = x.float().reshape(-1, k // group_size, group_size)
    s = xg.abs().amax(-1, keepdim=True) / F8_MAX
    q = torch.where(s == 0, xg, xg / s).to(F8)
    return q.reshape(x.shape), s.squeeze(-1)


def dequantize_fp8_per_token_group(q, scales, group_size: int = 128, out_dtype=torch.bfloat16):
    k = q.shape[-1]
    v = q.float().reshape(-1, k // group_size, group_size) * scales.float().unsqueeze(-1)
    return v.reshape(q.shape).to(out_dtype)


def quantize_fp8_block(w, block: int = 128):
    """w [N, K] (multiples of block) -> (q, fp32 scales [N / block, K / block])."""
    n, k = w.shape
    wt = w.float().reshape(n // block, block, k // block, block)
    s = wt.abs().amax(dim=(1, 3), keepdim=True) / F8_MAX
    q = torch.where(s == 0, wt, wt / s).to(F8)
    return q.reshape(n, k), s.reshape(n // block, k // block)


def dequantize_fp8_block(q, scales, block: int = 128, out_dtype=torch.bfloat16):
    n, k = q.shape
    v = q.float().reshape(n // block, block, k // block, block) * scales.float().reshape(n // block, 1, k // block, 1)
    return v.reshape(n, k).to(out_dtype)


# The FP8-output ops: the op's fp32 result (not rounded to the input dtype) through the group
# quantizer, as the fused kernels do. Each returns (q, scales) or (h_new, q, scales).
def rms_norm_fp8(x, weight=None, eps: float = 1e-6, group_size: int = 128):
    return quantize_fp8_per_token_group(_rms_f32(x, weight, eps), group_size)


def adaln_rms_norm_fp8(x, scale, shift, weight=None, eps: float = 1e-6, group_size: int = 128):
    return quantize_fp8_per_token_group(_modulate_f32(_rms_f32(x, weight, eps), x, scale, shift), group_size)


def gated_residual_adaln_rms_norm_fp8(h, y, gate, scale, shift, weight=None, eps: float = 1e-6,
                                      group_size: int = 128):
    hn = gated_residual(h, y, gate)
    return (hn, *adaln_rms_norm_fp8(hn, scale, shift, weight, eps, group_size))


def rms_norm_rope_fp8(x, cos, sin, weight=None, eps: float = 1e-6, group_size: int = 128):
    return quantize_fp8_per_token_group(_rope_interleaved_f32(_rms_f32(x, weight, eps), cos, sin), group_size)


def rms_norm_split_rope_fp8(x, cos, sin, weight=None, eps: float = 1e-6, group_size: int = 128):
    return quantize_fp8_per_token_group(_rope_split_f32(_rms_f32(x, weight, eps), cos, sin), group_size)


def gelu_tanh_fp8(x, group_size: int = 128):
    return quantize_fp8_per_token_group(_gelu_tanh_f32(x.float()), group_size)


def gelu_and_mul_fp8(x, approximate: str = "tanh", act_first: bool = True, group_size: int = 128):
    act = _gelu_tanh_f32 if approximate == "tanh" else _gelu_f32
    return quantize_fp8_per_token_group(_act_and_mul_f32(x, act, act_first), group_size)


def silu_and_mul_fp8(x, act_first: bool = True, group_size: int = 128):
    return quantize_fp8_per_token_group(_act_and_mul_f32(x, _silu_f32, act_first), group_size)


def gated_attention_fp8(x, gate_logits, group_size: int = 128):
    return quantize_fp8_per_token_group(_gated_attention_f32(x, gate_logits), group_size)


# ---- FP8 attention operands (ltx_kernels.quantize_attention_fp8, [B, S, H, D] inputs) ---------
# The definition in PyTorch (what the library's Python wrapper used to run): q per (token, head),
# k minus its fp64-summed mean over the keys (or over the first smooth_keys) then per key or per
# 128 keys, v per channel, transposed and reordered by `order` ([Skv_pad] source key of each
# position, padding keys pointing past Skv into the zero padding).
def quantize_attention_fp8(q, k, v, order, k_block: int = 128, smooth_keys: int = 0):
    def e4m3(x, s):
        return torch.where(s == 0, x, x / torch.where(s == 0, torch.ones_like(s), s)).to(F8)

    b, skv, hk, d = k.shape
    qf = q.float()
    q_s = qf.abs().amax(-1, keepdim=True) / F8_MAX
    n = min(smooth_keys, skv) if smooth_keys > 0 else skv
    kf = k.float() - ((k[:, :n].double().sum(1, keepdim=True) + 0.0) / n).float()
    if k_block == 1:
        k_s = kf.abs().amax(-1, keepdim=True) / F8_MAX
        k8, k_d = e4m3(kf, k_s), k_s.squeeze(-1)
    else:
        nb = -(-skv // 128)
        blocks = torch.nn.functional.pad(kf, (0, 0, 0, 0, 0, nb * 128 - skv)).reshape(b, nb, 128, hk, d)
        k_d = blocks.abs().amax(dim=(2, 4)) / F8_MAX
        k8 = e4m3(kf, k_d.repeat_interleave(128, 1)[:, :skv].unsqueeze(-1))
    v8, v_d = attention_values_fp8(v, order)
    return e4m3(qf, q_s), k8, v8, q_s.squeeze(-1), k_d, v_d


def attention_values_fp8(v, order):
    """v's operand alone (lk.attention_values_fp8): per-channel factors over all keys, codes
    [B, Hkv, D, Skv_pad] in `order` within 32-key blocks."""
    vt = v.float().permute(0, 2, 3, 1)  # [B, Hkv, D, Skv]
    v_s = vt.abs().amax(-1, keepdim=True) / F8_MAX
    vt = torch.nn.functional.pad(vt, (0, order.numel() - v.shape[1]))
    v8 = torch.where(v_s == 0, vt, vt / torch.where(v_s == 0, torch.ones_like(v_s), v_s)).to(F8)
    return v8.index_select(-1, order).contiguous(), v_s.squeeze(-1)


# ---- FP8 linears as a PyTorch user writes them (the end-to-end peer) --------------------------
SCALED_MM_GRANULARITIES = ("tensorwise", "rowwise")


class ScaledMMLinear(torch.nn.Module):
    """An nn.Linear replaced by an FP8 GEMM through ``torch._scaled_mm`` (cuBLASLt), the way
    torchao's float8 inference and LTX-2's own FP8 path do it: the weight quantized once to
    e4m3 with one scale (``"tensorwise"``) or one per output channel (``"rowwise"``), the
    activation quantized on every call with its dynamic amax (of the whole tensor, or per token),
    scales and bias applied by the GEMM, fast accumulation on. Plain PyTorch, so torch.compile
    fuses the activation's quantization into the op before it; this is what a user writes in
    twenty lines, and the end-to-end benchmark's peer for ``optimize(quantization=...)``.

    y = (x8 * sx) @ (w8 * sw)^T + bias, x8 = e4m3(x / sx), sx = amax(|x|) / 448 (floored at a
    tiny value so an all-zero input gives zeros), likewise w8 and sw for the weight."""

    def __init__(self, linear: torch.nn.Linear, granularity: str):
        super().__init__()
        if granularity not in SCALED_MM_GRANULARITIES:
            raise ValueError(f"ScaledMMLinear: granularity must be one of {SCALED_MM_GRANULARITIES} "
                             f"(got {granularity!r})")
        self.granularity = granularity
        self.in_features, self.out_features = linear.in_features, linear.out_features
        w = linear.weight.detach().float()
        sw = self._scale(w)  # [] or [N, 1]
        self.register_buffer("weight_q", (w / sw).clamp(-F8_MAX, F8_MAX).to(F8))
        self.register_buffer("weight_scale", sw.t().contiguous() if sw.dim() else sw)  # [] or [1, N]
        self.bias = None if linear.bias is None else torch.nn.Parameter(linear.bias.detach(), requires_grad=False)

    def _scale(self, t: torch.Tensor) -> torch.Tensor:
        a = t.abs().amax() if self.granularity == "tensorwise" else t.abs().amax(dim=-1, keepdim=True)
        return a.float().clamp(min=1e-12) / F8_MAX

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.granularity == "rowwise" and not x.is_cuda:
            raise RuntimeError("ScaledMMLinear: rowwise scales need CUDA (PyTorch's CPU torch._scaled_mm takes one "
                               "scale per tensor)")
        x2 = x.reshape(-1, self.in_features)
        sx = self._scale(x2)
        xq = (x2.float() / sx).clamp(-F8_MAX, F8_MAX).to(F8)
        y = torch._scaled_mm(xq, self.weight_q.t(), scale_a=sx, scale_b=self.weight_scale, bias=self.bias,
                             out_dtype=x.dtype, use_fast_accum=True)
        return y.reshape(*x.shape[:-1], self.out_features)


def swap_linears(model: torch.nn.Module, names, make) -> "callable":
    """Replaces model's submodules `names` by make(module) in place, the originals parked in host
    memory meanwhile (so that a variant's peak memory is its own); returns a function that puts
    the original modules back on their device."""
    originals = {}
    for name in names:
        mod = model.get_submodule(name)
        device = next(mod.parameters()).device
        model.set_submodule(name, make(mod))
        originals[name] = (mod.to("cpu"), device)

    def restore():
        for name, (mod, device) in originals.items():
            model.set_submodule(name, mod.to(device))
    return restore
