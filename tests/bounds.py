"""fp32 error bounds of the kernels, derived from their formulas (shared by the test files).

Each function returns e32, a float64 tensor bounding |y32 - y| elementwise, where y is the
exact result (the float64 oracle of ltx_kernels.reference) and y32 the kernel's fp32 result
before it is rounded to the output dtype (conftest.rounded_bound adds that rounding). Units:
u = 2^-24 (fp32's unit roundoff); a library function's error of k ulps is at most 2k u
relative; a sum of n terms in any order errs by at most n u times the sum of |terms|.
"""

import math

import torch

from ltx_kernels import reference as ref

U = 2.0**-24


# ---- activations ----------------------------------------------------------------------------------
def gelu_e32(x):
    """fp32 inputs (results kept in fp32): 0.5 x erfc(-x / sqrt 2) with the low part of the
    product carried (gelu_erfc.h's gelu_erfc_f32): erfcf's documented 4 ulps (CUDA; glibc's is
    smaller) = 8u, + 2u for the first-order correction and its rounding, + 1u for the product:
    11u |y|. Below x = -13 erfc(u) is subnormal in fp32: the absolute error stays under 2^-142
    (the C++ core test sweeps this).
    bf16 / fp16 inputs (results rounded to 16 bits; the CUDA kernels use gelu_erfc_fast_f32, the
    CPU backend the accurate form, which this also bounds): the fitted
    t exp(P(t) - x^2 / 2) with its derivation in gelu_erfc.h: (28 + 1.5 x^2) u |y|, and 2^-144
    absolute where exp2f's result is subnormal."""
    if x.dtype in (torch.float16, torch.bfloat16):
        return (28 + 1.5 * x.double() ** 2) * U * ref.gelu(x).abs() + 2.0**-144
    return 11 * U * ref.gelu(x).abs() + 2.0**-142


def gelu_tanh_e32(x):
    """x / (1 + e^{-2v}), v = sqrt(2/pi) (x + 0.044715 x^3): the CUDA kernels take
    -2v log2(e) = x (k0 + k1 x^2) with <= 4 roundings (4u, the constants' included; the CPU
    backend's v carries <= 7: 7u), which e^{-2v} multiplies by |2v|: <= 14 |v| u. The
    exponential: ex2.approx is the instruction of CUDA's __expf(t), documented to
    2 + floor(1.173 |t|) ulps (the CPU's expf errs by less), t = -2v: (4 + 4.7 |v|) u. 1 + e (1u),
    the reciprocal (rcp.approx, 1 ulp = 2u; the CPU divides, 1u) and the product (1u): 4u. With
    one u of slack: (9 + 19 |v|) u |y|. The tanh form's cancellation is gone; this conditioning is the
    formula's own (~100u at x = -5). x < -10.0 gives -0 (exact value below 2^-122 in magnitude)."""
    xd = x.double()
    v = math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)
    return (9 + 19 * v.abs()) * U * ref.gelu_tanh(x).abs() + 2.0**-122


def silu_e32(x):
    """x / (1 + e^{-x}): __expf(-x) (its argument is exact) errs by at most 2 + floor(1.173 |x|)
    ulps = (4 + 2.35 |x|) u, 1 + e 1u, the reciprocal 2u and the product 1u, and the product of
    roundings: (10 + 2.4 |x|) u |y|. x < -87.3 gives -0 (exact value below 2^-119)."""
    return (10 + 2.4 * x.double().abs()) * U * ref.silu(x).abs() + 2.0**-119


def and_mul_e32(x, act, act_e32, act_first):
    """act(a) * b in fp32 (a, b the halves of x): the activation's error times |b|, plus the
    product's rounding."""
    d = x.shape[-1] // 2
    a, b = (x[..., :d], x[..., d:]) if act_first else (x[..., d:], x[..., :d])
    bd = b.double().abs()
    return act_e32(a) * bd * (1 + U) + U * act(a).abs() * bd


def gated_e32(x, g):
    """x * 2 / (1 + e^{-g}): __expf(-g) (2 + floor(1.173 |g|) ulps: (4 + 2.35 |g|) u), 1 + e 1u,
    the reciprocal 2u (rcp.approx; the CPU's IEEE division 1u), the product 1u: (8 + 2.4 |g|) u
    |y|. For e^{-g} > 2^126 (g < -87.3) the gate is 0 (exact value below 2^-125): |x| 2^-125."""
    return (8 + 2.4 * g.double().abs().repeat_interleave(x.shape[-1] // g.shape[-1], dim=-1)) * U * \
        ref.gated_attention(x, g).abs() + x.double().abs() * 2.0**-125


# ---- norms ----------------------------------------------------------------------------------------
def norm_rel(c):
    """Relative fp32 error of y = x * rstd * w, rstd = (sum(x^2) / C + eps)^-1/2, u = 2^-24: the
    C squares summed in any order (a tree, a sequence, an fma chain) <= C u; the mean and + eps
    2u (eps itself rounded to fp32: its share of rstd moves by <= u); the reciprocal square
    root (rsqrtf: 2 ulps) 4u; rstd inherits half the argument's relative error: (C + 4) u / 2 +
    4u; the two products 2u: (C / 2 + 8) u."""
    return (c / 2 + 8) * U


def rms_e32(n, c):
    """n = x * rstd (* w) of a row of C: norm_rel(C) |n|."""
    return norm_rel(c) * n.abs()


def ln_e32(x, weight, bias, eps):
    """n = (x - mean) * rstd * w + b, two-pass in fp32. The mean: C terms, <= (C + 1) u mean|x|
    = dm. d = x - mean: dm + u |x - mean|. The variance of the d's: their squares and the sum
    (C + 4) u relative, + dm^2 (the sum of (x - mean - dm)^2 is C (var + dm^2): the cross term is
    0), + eps and / C 2u; rstd gets half of it, + 4u (rsqrtf): e_r = ((C + 6) u + dm^2 / (var +
    eps)) / 2 + 4u. n: rstd |w| ((1 + 2u) dm + |x - mean| (e_r + 4u)) + u (|b| + |n|)."""
    xd = x.double()
    c = x.shape[-1]
    mean = xd.mean(-1, keepdim=True)
    var = (xd - mean).pow(2).mean(-1, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    dm = (c + 1) * U * xd.abs().mean(-1, keepdim=True)
    e_r = ((c + 6) * U + dm**2 / (var + eps)) / 2 + 4 * U
    w = 1.0 if weight is None else weight.double().abs()
    b = 0.0 if bias is None else bias.double().abs()
    n = ref.layer_norm(x, weight, bias, eps)
    return rstd * w * ((1 + 2 * U) * dm + (xd - mean).abs() * (e_r + 4 * U)) + U * (b + n.abs())


def modulated(n, e_n, x, scale, shift):
    """o = n * (1 + scale) + shift: the table sum, the product and the shift's sum each round
    once: (e_n + 2u |n|) |1 + scale| + u |o|. Returns (o, e32)."""
    one_s = 1 + ref.broadcast_table(scale, x)
    o = n * one_s + ref.broadcast_table(shift, x)
    return o, (e_n + 2 * U * n.abs()) * one_s.abs() + U * o.abs()


# ---- RoPE -----------------------------------------------------------------------------------------
def rot_mag(x, cos, sin, interleaved):
    """M = |a c| + |b s| per output of apply_rope's convention (float64): every output is either
    a c - b s or a s + b c, so the larger of the rotations of |x| by (|cos|, |sin|) and by
    (|cos|, -|sin|) is M at every element."""
    xa, ca, sa = x.double().abs(), cos.double().abs(), sin.double().abs()
    return torch.maximum(ref.apply_rope(xa, ca, sa, interleaved), ref.apply_rope(xa, ca, -sa, interleaved))


def rope_e32(x, cos, sin, interleaved):
    """apply_rope: o = a c -+ b s may cancel: the two products and the sum round once each,
    2u M with M = rot_mag."""
    return 2 * U * rot_mag(x, cos, sin, interleaved)


def norm_rope_e32(x, cos, sin, weight, eps, interleaved):
    """rms_norm_rope (interleaved, full-width tables [B|1, S, C]) / rms_norm_split_rope (split,
    per-head tables [B|1, H, S, d/2]): the normalized row n carries norm_rel(C) relative, then
    the rotation: (norm_rel(C) + 2u) M(n)."""
    n = ref.rms_norm(x, weight, eps)
    return (norm_rel(x.shape[-1]) + 2 * U) * rot_mag(n, cos, sin, interleaved)


# ---- neighborhood attention ------------------------------------------------------------------------
def natten_e32(q, k, v, kernel_size, dilation=None, is_causal=None, scale=None, p_unit=0.0):
    """o = sum_j p_j v_j / sum_j p_j, p_j = exp(s_j - max s), s_j = scale q . k_j, over n <=
    prod(kernel_size) keys. With A = |scale| |q| max|k| (2-norms; the largest |s_j|, and the
    largest sum of |scale q_i k_ji|): each s_j is a d-term fp32 dot (+ the scale): (d + 1) u A;
    p_j inherits the errors of s_j and of the max, the rounding of s_j - max (<= 2A u) and
    expf's 2 ulps: e_p = 2 (d + 1) u A + 2A u + 4u relative; the two n-term sums and the
    division: (2n + 3) u. So |o - exact| <= (2 e_p + (2n + 3) u + 2 p_unit) V + u |o|, where
    V = sum p |v| / sum p (the oracle run on |v|) and p_unit the relative rounding of P to the
    input dtype before the P V product (the CUDA kernels' tensor-core step; 0 on the CPU). A is
    taken per query with the largest key norm of its (batch, head)."""
    qd, kd = q.double(), k.double()
    d = q.shape[-1]
    sc = d**-0.5 if scale is None else scale
    n = math.prod(kernel_size)
    qn = qd.norm(dim=-1, keepdim=True)  # [B, *spatial, heads, 1]
    nd = q.dim() - 3
    kmax = kd.norm(dim=-1, keepdim=True).amax(dim=tuple(range(1, 1 + nd)), keepdim=True)
    a = abs(sc) * qn * kmax
    e_p = 2 * (d + 1) * U * a + 2 * a * U + 4 * U
    vabs = ref.neighborhood_attention(q, k, v.abs(), kernel_size, dilation, is_causal, scale)
    o = ref.neighborhood_attention(q, k, v, kernel_size, dilation, is_causal, scale)
    return (2 * e_p + (2 * n + 3) * U + 2 * p_unit) * vabs + U * o.abs()


def sdpa_e32(q, k, v, p_unit=0.0):
    """Dense softmax attention over all T keys, q/k/v [B, T, H, D] (natten_e32's derivation
    with n = T and the largest key norm of each (batch, head))."""
    qd, kd, vd = q.double(), k.double(), v.double()
    d, n = q.shape[-1], k.shape[1]
    a = d**-0.5 * qd.norm(dim=-1, keepdim=True) * kd.norm(dim=-1, keepdim=True).amax(dim=1, keepdim=True)
    e_p = 2 * (d + 1) * U * a + 2 * a * U + 4 * U

    def attn(vv):
        return torch.nn.functional.scaled_dot_product_attention(
            qd.transpose(1, 2), kd.transpose(1, 2), vv.transpose(1, 2)).transpose(1, 2)

    return (2 * e_p + (2 * n + 3) * U + 2 * p_unit) * attn(vd.abs()) + U * attn(vd).abs()
