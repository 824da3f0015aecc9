"""Per-call oracles of the FP8 paths inside an optimized model (the integration tests of
`optimize(attention="fp8")` and `optimize(quantization="fp8")`).

A model-level comparison with the unquantized model sees the FP8 rounding of every operand
(~1e-2 relative L2 on the tiny models), so a wrong factor of 10% in one tensor moves it by less
than 2x and no bound within a few times the correct path's error separates the two. These
recorders check every FP8 call where it happens instead: the call's own inputs go through the
reference quantizer (`ltx_kernels.reference`, written from the documented rule, which the
kernels' quantizers match bit for bit) and a float64 evaluation of the same math, so the only
differences left are the kernel's arithmetic and its single rounding of the output, and any
change of a code, a factor or a head shows as an error of the FP8 rounding's size or more.

Each recorded call gives (what, relative L2 error, bound), the bound being the relative L2 norm
of an elementwise error bound derived from the formula:

  attention (`_kernel_attend`, processors.py): o = sum_j p_j v_j / sum_j p_j on the dequantized
    operands of reference.quantize_attention_fp8, p_j = exp(s_j - max s), and on the sm_90 kernel
    p_j * 448 rounded to E4M3 before P V (the kernel's one extra rounding, docs/semantics.md; the
    tiny models' <= 60 keys are one key block, so its running max is the row max). Bound per
    element: u |o| (the output's rounding to bf16, u = 2^-8; fp16: 2^-11) + c sum_j p_j |v_j| /
    sum_j p_j (the accumulation of P V: c = 2^-12 on the sm_90 kernel, whose FP8 tensor core keeps
    about 14 bits while it sums, as in test_gemm.py; 2^-16 for fp32 sums of a few hundred terms
    elsewhere).
  FP8 linear (FP8BlockwiseLinear.forward): y = A W^T + b on the reference quantization of the
    original weight (quantize_fp8_block, 128 x 128 blocks) and of the activations (the call's
    own (q, scales) where a fused norm handed them, else quantize_fp8_per_token_group of x), then
    the layer's epilogue. Bound per element, from test_gemm_epilogue.py: u |ref| (output rounding,
    bf16 u = 2^-8) + L c S, with S = sum_k |a_k w_k| over the dequantized operands, L the
    epilogue's slope (1, 1.13 for gelu_tanh, |gate| for the gated residual), c = 2^-12 on CUDA
    (the wgmma kernels) and 2^-16 on the CPU (fp32 sums of 128-term blocks). An FP8 output
    (q, scales) is compared dequantized, u = 2^-4 (E4M3's 3 mantissa bits).

Measured on the CPU (tiny LTX-Video / LTX-2 of test_integrations_diffusers.py): attention calls
1.4e-3 - 1.9e-3 against bounds of 3.9e-3; linear calls 1.6e-3 - 1.8e-3 against 3.9e-3 - 4.0e-3
(the bf16 rounding of the output, ~u / sqrt(3) as the rounding error of random values, dominates
both). A 10% error in one factor tensor gives calls of 1e-2 to 1e-1.
"""

import contextlib
from types import SimpleNamespace
from typing import List, Tuple

import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

F8 = torch.float8_e4m3fn
UNIT = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}


def _cpu(t):
    """The oracles run on the CPU (float64, tiny models): tensors, and (q, scales) pairs."""
    if isinstance(t, (tuple, list)):
        return type(t)(_cpu(x) for x in t)
    return None if t is None else t.detach().cpu()


def rel_l2(a, b) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


# ---- attention --------------------------------------------------------------------------------


def _key_bias(mask, b: int, skv: int):
    """The processors' per-key mask ([B, Skv], [B, 1, Skv], [B, 1, 1, Skv], boolean or additive)
    as a float64 bias [B, Skv], as ltx_kernels.attention reads it."""
    if mask is None:
        return None
    m = mask.reshape(mask.shape[0], mask.shape[-1])
    if m.dtype == torch.bool:
        m = torch.zeros(m.shape, dtype=torch.float64, device=m.device).masked_fill(~m, float("-inf"))
    return m.double().expand(b, skv)


def attention_fp8_oracle(query, key, value, key_mask, sm90: bool):
    """(o, a) in float64 [B, Sq, H, D]: the FP8 attention of `_kernel_attend("fp8", ...)` on the
    reference quantization of q, k, v (k mean-subtracted, factors per 128 keys: the processor's
    defaults), and a = sum_j p_j |v_j| / sum_j p_j (the scale of its accumulation error); on the
    CPU."""
    query, key, value, key_mask = _cpu(query), _cpu(key), _cpu(value), _cpu(key_mask)
    return fp8_operands_oracle(ref.quantize_attention_fp8(query, key, value), key_mask, sm90)


def producer_operands_reference(attn, query, key, value, q_freqs, k_freqs, rope_type):
    """The FP8 operands `_fp8_attend_from_producers` should hand the kernel, from the definitions
    (on the CPU): q = the per-(token, head) FP8 group output of the float64 norm_q + RoPE,
    k = reference.attention_keys_fp8 of the key projection (norm_k + RoPE, the leading
    FP8_SMOOTH_KEYS keys' mean), v = reference.quantize_attention_fp8's v operand. The norms'
    weights and eps and the tables' layout as the processor's module holds them."""
    import ltx_kernels.integrations.diffusers.processors as procs
    from ltx_kernels.integrations.diffusers._common import cast_weight, nn_rms_eps
    from ltx_kernels.integrations.diffusers.hooks import hooked_param

    h = attn.heads
    b, s, c = query.shape
    d = c // h
    nr = ref.rms_norm_rope if rope_type == "interleaved" else ref.rms_norm_split_rope
    cq, sq = (_cpu(t) for t in procs._rope_tables(q_freqs, rope_type))
    ck, sk = (_cpu(t) for t in procs._rope_tables(k_freqs, rope_type))
    wq, wk = _cpu(cast_weight(hooked_param(attn.norm_q), query)), _cpu(cast_weight(hooked_param(attn.norm_k), key))
    q8, qs = ref.fp8_group_out(nr(_cpu(query), cq, sq, wq, nn_rms_eps(attn.norm_q, query)), d)
    k8, ks, _ = ref.attention_keys_fp8(_cpu(key), ck, sk, wk, nn_rms_eps(attn.norm_k, key), heads=h,
                                       split_rope=rope_type == "split", smooth_keys=procs.FP8_SMOOTH_KEYS)
    v4 = _cpu(value).unflatten(2, (h, -1))
    vop = ref.quantize_attention_fp8(v4[:, :1], v4, v4)
    return q8.view(b, s, h, d), k8, vop[2], qs.view(b, s, h), ks, vop[5]


def fp8_operands_oracle(ops8, key_mask, sm90: bool):
    """(o, a) of attention_fp8_oracle for given FP8 operands (q8, k8, v8, q_s, k_s, v_s)."""
    qd, kd, vd = ref.attention_fp8_dequantize(*ops8)
    q, k, v = (t.transpose(1, 2).double() for t in (qd, kd, vd))  # [B, H, S, D]
    b, h, sq, d = q.shape
    hk = k.shape[1]
    if hk != h:
        k, v = k.repeat_interleave(h // hk, 1), v.repeat_interleave(h // hk, 1)
    s = torch.einsum("bhid,bhjd->bhij", q, k) * d ** -0.5
    bias = _key_bias(key_mask, b, k.shape[2])
    if bias is not None:
        s = s + bias.to(s.device).reshape(b, 1, 1, -1)
    m = s.amax(-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    p = torch.exp(s - m)
    den = p.sum(-1, keepdim=True)
    den = torch.where(den > 0, den, torch.ones_like(den))
    pv = p
    if sm90:  # P scaled into E4M3's range and rounded (the sm_90 kernel); divided by the unrounded sum
        pv = ref.fp8_decode(ref.fp8_encode(p * 448.0)).to(p.device).double() / 448.0
    o = torch.einsum("bhij,bhjd->bhid", pv, v) / den
    a = torch.einsum("bhij,bhjd->bhid", p, v.abs()) / den
    return o.transpose(1, 2), a.transpose(1, 2)


@contextlib.contextmanager
def recording_fp8_attention(monkeypatch):
    """Within the block, every `_kernel_attend("fp8", ...)` call of the processors is checked
    against attention_fp8_oracle, and every `_fp8_attend_from_producers` call against the same
    attention of producer_operands_reference; yields the list of (what, error, bound) it fills."""
    import ltx_kernels.integrations.diffusers.processors as procs

    calls: List[Tuple[str, float, float]] = []
    real = procs._kernel_attend

    def checked(mode, query, key, value, key_mask):
        out = real(mode, query, key, value, key_mask)
        if mode == "fp8":
            odt = query.dtype if query.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
            ops8 = lk.quantize_attention_fp8(query, key, value)
            sm90 = lk.attention_backend(*ops8, attn_mask=key_mask, out_dtype=odt) == "sm90"
            o, a = attention_fp8_oracle(query, key, value, key_mask, sm90)
            c = 2.0**-12 if sm90 else 2.0**-16
            bound = (UNIT[odt] * o.abs() + c * a).norm().item() / o.norm().clamp_min(1e-300).item()
            what = f"attention {tuple(query.shape)} x {key.shape[1]} keys{' masked' if key_mask is not None else ''}"
            calls.append((what, rel_l2(out, o), bound))
        return out

    real_prod = procs._fp8_attend_from_producers

    def checked_producers(attn, query, key, value, q_freqs, k_freqs, rope_type):
        out = real_prod(attn, query, key, value, q_freqs, k_freqs, rope_type)
        odt = query.dtype if query.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
        ops8 = producer_operands_reference(attn, query, key, value, q_freqs, k_freqs, rope_type)
        sm90 = lk.attention_backend(*(t.to(query.device) for t in ops8), out_dtype=odt) == "sm90"
        o, a = fp8_operands_oracle(ops8, None, sm90)
        c = 2.0**-12 if sm90 else 2.0**-16
        bound = (UNIT[odt] * o.abs() + c * a).norm().item() / o.norm().clamp_min(1e-300).item()
        calls.append((f"attention from producers {tuple(query.shape)} x {key.shape[1]} keys", rel_l2(out, o), bound))
        return out

    monkeypatch.setattr(procs, "_kernel_attend", checked)
    monkeypatch.setattr(procs, "_fp8_attend_from_producers", checked_producers)
    yield calls
    monkeypatch.setattr(procs, "_kernel_attend", real)
    monkeypatch.setattr(procs, "_fp8_attend_from_producers", real_prod)


# ---- FP8 linears ------------------------------------------------------------------------------


def _dequant_tokens(q, s):
    """E4M3 codes [..., K] with fp32 scales [M, K / 128] -> float64 values (exact)."""
    k = q.shape[-1]
    x = ref.fp8_decode(q).double().reshape(-1, k // 128, 128)
    return (x * s.to(x.device).double().unsqueeze(-1)).reshape(q.shape)


def fp8_linear_oracle(epilogue, weight, bias, x, residual, gate):
    """(ref, err_scale) in float64: what an FP8BlockwiseLinear call with `epilogue` computes,
    from the reference quantization of `weight` (the original nn.Linear's, with its `bias`) and of
    x (or x's own (q, scales)), and L S, the accumulation error's scale (see the module
    docstring); on the CPU."""
    x, weight, bias, residual, gate = _cpu(x), _cpu(weight), _cpu(bias), _cpu(residual), _cpu(gate)
    if isinstance(x, (tuple, list)):
        q, s = x
    else:
        q, s = ref.quantize_fp8_per_token_group(x, 128)
    wq, ws = ref.quantize_fp8_block(weight, (128, 128))
    n, k = wq.shape
    a = _dequant_tokens(q, s).reshape(-1, k)
    ws = ws.double().to(a.device).repeat_interleave(128, 0)[:n].repeat_interleave(128, 1)[:, :k]
    w = ref.fp8_decode(wq).double().to(a.device) * ws
    y = a @ w.t()
    if bias is not None:
        y = y + bias.double()
    y = y.reshape(*q.shape[:-1], n)
    big_s = (a.abs() @ w.abs().t()).reshape(y.shape)  # sum_k |a_k w_k|
    if epilogue == "none" and residual is not None:
        epilogue = "gated_residual"  # the per-call form (forward(x, residual, gate))
    if epilogue == "gated_residual":  # |gate| broadcast to y's shape (per sample or per token)
        g = gate.to(y.device).double().abs()
        slope = g if g.shape == y.shape else g.reshape(g.shape[0], *([1] * (y.dim() - 2)), g.shape[-1]).expand(y.shape)
    else:
        slope = 1.13 if epilogue == "gelu_tanh" else 1.0
    return ref.gemm_epilogue(y, epilogue, residual, gate), slope * big_s


def untouched_linear(model_untouched, name):
    """The nn.Linear of `model_untouched` that the optimized model's FP8 layer `name` replaces, or
    for the attention projections in one layer (processors.FusedProjections: `<attn>.<PROJECTIONS>.qkv`
    or `.kv`) the concatenation of the untouched to_q / to_k / to_v it stands for."""
    from ltx_kernels.integrations.diffusers.processors import PROJECTIONS

    parent, _, leaf = name.rpartition(".")
    if not parent.endswith(PROJECTIONS):
        return model_untouched.get_submodule(name)
    attn = model_untouched.get_submodule(parent[: -len(PROJECTIONS) - 1])
    parts = [getattr(attn, p) for p in (("to_q", "to_k", "to_v") if leaf == "qkv" else ("to_k", "to_v"))]
    bias = None if parts[0].bias is None else torch.cat([p.bias for p in parts])
    return SimpleNamespace(weight=torch.cat([p.weight for p in parts]), bias=bias)


@contextlib.contextmanager
def recording_fp8_linears(model_untouched, model_optimized):
    """Within the block, every FP8BlockwiseLinear call of `model_optimized` is checked against
    fp8_linear_oracle with the weight of the same-named nn.Linear of `model_untouched`; yields the
    list of (what, error, bound) it fills. Module hooks (not a patched class): they also see
    layers whose forward diffusers' hooks (leaf-level offloading) have wrapped."""
    from ltx_kernels import quantization

    layers = {name: mod for name, mod in model_optimized.named_modules() if type(mod) is quantization.FP8BlockwiseLinear}
    assert layers, "no FP8BlockwiseLinear in the optimized model"
    calls: List[Tuple[str, float, float]] = []
    handles = []

    def watch(name, layer, linear):
        given = {}

        def pre(mod, args, kwargs):
            arg = dict(zip(("x", "residual", "gate", "out"), args), **kwargs)
            res = arg.get("residual")
            given.update(x=_cpu(arg["x"]), residual=None if res is None else _cpu(res).clone(), gate=_cpu(arg.get("gate")))

        def post(mod, args, kwargs, r):
            # the original linear's weight and bias (the layer's own buffers may be offloaded by now)
            want, e_scale = fp8_linear_oracle(mod.epilogue, linear.weight, linear.bias, given["x"], given["residual"],
                                              given["gate"])
            c = 2.0**-12 if mod.weight_q.is_cuda else 2.0**-16
            if isinstance(r, tuple):  # FP8 output: dequantized, E4M3's own rounding
                got, u = _dequant_tokens(*_cpu(r)), 2.0**-4
            else:
                got, u = r, UNIT[mod.out_dtype]
            bound = (u * want.abs() + c * e_scale).norm().item() / want.norm().clamp_min(1e-300).item()
            calls.append((name, rel_l2(got, want), bound))

        handles.append(layer.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(layer.register_forward_hook(post, with_kwargs=True))

    for name, layer in layers.items():
        watch(name, layer, untouched_linear(model_untouched, name))
    try:
        yield calls
    finally:
        for h in handles:
            h.remove()


def worst(calls):
    """The call with the largest error / bound ratio: (what, error, bound)."""
    assert calls, "no call was recorded"
    return max(calls, key=lambda c: c[1] / c[2])


def assert_calls_within(calls, what=""):
    name, err, bound = worst(calls)
    assert err <= bound, f"{what}: {name}: relative L2 error {err:.3g} against the oracle, bound {bound:.3g}"
