"""optimize(model, attention="bf16" | "fp8"): our attention inside diffusers' LTX-Video and LTX-2
attention processors (self-attention, prompt cross-attention with its padding mask, LTX-2's
audio and cross-modal attention), against the untouched model on the same inputs.

Bounds:
- "bf16": the model with our attention must be no worse than the untouched model in the same
  dtype, both against the untouched model in float64 (relative L2 at most twice the untouched
  model's own error: the kernel differs from SDPA only in summation order and, on the sm_90
  kernel, one rounding of P to the input dtype, each a fraction of the errors the model's other
  roundings make). Measured on the CPU: ours 1.9e-7 - 2.5e-7 against the untouched model's
  2.1e-7 - 2.7e-7 (fp32); 5.3e-3 - 7.5e-3 against 5.7e-3 - 7.4e-3 (bf16).
- "fp8", two checks (fp8_oracles.py):
  1. every FP8 attention call against the float64 attention of the reference quantization of
     its own q, k, v (with the sm_90 kernel's E4M3 rounding of P where that kernel ran), within
     the relative L2 norm of its derived elementwise bound (the output's bf16 rounding plus the
     accumulation error): 3.9e-3 on the CPU, where the calls measured 1.4e-3 - 1.9e-3 (the
     self-attention's operands from their producers: the reference of each producer, 1.6e-3 -
     1.9e-3);
  2. the model's output within FP8_ATTENTION_REL of the untouched model's (relative L2).
"""

import pytest
import torch

from conftest import ALL_DEVICES, needs_cuda
from fp8_oracles import assert_calls_within, recording_fp8_attention, recording_fp8_linears, worst

pytest.importorskip("diffusers")
lkd = pytest.importorskip("ltx_kernels.integrations.diffusers")

from test_integrations_diffusers import (  # noqa: E402
    FP8_LINEARS_REL, _prep, exact_run, ltx2, ltx2_inputs, ltx_video, optimized_copy, rel_err, run, video_inputs,
)

DEV_DTYPE = [("cpu", torch.float32), pytest.param("cuda", torch.bfloat16, marks=ALL_DEVICES[1].marks)]

# The model-level error of optimize(attention="fp8") (q, k, v and, on the sm_90 kernel, P in
# E4M3, through two blocks), relative L2 against the untouched model. Measured on the CPU (no P
# rounding): 0.0080 - 0.0100 (fp32 models, these tests), 0.0102 - 0.0116 (bf16 models); with the
# sm_90 kernel's rounding of P emulated (fp8_oracles.attention_fp8_oracle) in bf16 models, as the
# CUDA cases run: 0.0096 - 0.0147. 3x the CPU's largest, 2x the emulated sm_90's.
FP8_ATTENTION_REL = 0.03


def _every_attention(monkeypatch, rule=None):
    """Count the calls that reach ltx_kernels.attention from the processors: every attention of
    the tiny models, or those `rule(mode, keys, head_dim, masked)` lets through (the shipped
    rule, _compile_policy.use_kernel_attention, leaves their few keys to SDPA)."""
    import ltx_kernels.integrations._compile_policy as policy
    import ltx_kernels.integrations.diffusers.processors as procs

    monkeypatch.setattr(policy, "use_kernel_attention", rule or (lambda *a: True))
    calls = []
    real = procs.kernel_attention

    def counted(*a, **k):
        calls.append(a[0].dtype)
        return real(*a, **k)

    monkeypatch.setattr(procs, "kernel_attention", counted)
    return calls


def assert_no_worse(got, want, exact, what=""):
    """Ours (got) and the untouched model (want), same dtype, against its float64 output."""
    for g, w, e in zip(got, want, exact):
        e_ours, e_eager = rel_err(g, e), rel_err(w, e)
        assert e_ours <= 2 * e_eager, f"{what}: relative L2 error {e_ours:.3g}, the untouched model's {e_eager:.3g}"


def fp8_attention_errors(m, o, kw, monkeypatch):
    """Run the optimized model `o` with every FP8 attention call checked: (the model's relative
    L2 error against the untouched `m` per output, the calls' (what, error, bound))."""
    want = run(m, kw)
    with recording_fp8_attention(monkeypatch) as calls:
        got = run(o, kw)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and not torch.isnan(g).any()
    return [rel_err(g, w) for g, w in zip(got, want)], calls


def check_mode(mode, m, o, kw, monkeypatch, what=""):
    if mode == "bf16":
        assert_no_worse(run(o, kw), run(m, kw), exact_run(m, kw), what)
        return
    errs, calls = fp8_attention_errors(m, o, kw, monkeypatch)
    assert_calls_within(calls, what)
    assert max(errs) <= FP8_ATTENTION_REL, f"{what}: relative L2 error {errs} against the untouched model"


@pytest.mark.parametrize("device,dtype", DEV_DTYPE)
@pytest.mark.parametrize("mode", ["bf16", "fp8"])
@pytest.mark.parametrize("head_dim", [16, 64])
def test_ltx_video_attention(device, dtype, mode, head_dim, monkeypatch):
    m = _prep(ltx_video(heads=2, head_dim=head_dim), device, dtype)
    kw = video_inputs(device, dtype)
    o = optimized_copy(m, attention=mode)
    proc = o.transformer_blocks[0].attn2.processor
    assert proc.kernel_attention == mode
    calls = _every_attention(monkeypatch)
    check_mode(mode, m, o, kw, monkeypatch, f"{mode} d{head_dim}")
    assert len(calls) == 4, "self- and cross-attention of both blocks"  # masked cross-attention too
    assert all(c == (torch.float8_e4m3fn if mode == "fp8" else dtype) for c in calls)


@pytest.mark.parametrize("device,dtype", DEV_DTYPE)
@pytest.mark.parametrize("mode", ["bf16", "fp8"])
def test_ltx2_attention(device, dtype, mode, monkeypatch):
    m = _prep(ltx2(rope_type="split", gated=True, heads=2, head_dim=64), device, dtype)
    kw = ltx2_inputs(device, dtype)
    o = optimized_copy(m, attention=mode)
    calls = _every_attention(monkeypatch)
    check_mode(mode, m, o, kw, monkeypatch, f"ltx2 {mode}")
    assert len(calls) == 12, len(calls)  # 6 attention modules per block, 2 blocks


@pytest.mark.parametrize("mode", ["bf16", "fp8"])
def test_rule_routes_to_sdpa(mode, monkeypatch):
    """What _compile_policy.use_kernel_attention refuses runs SDPA, and the output still matches
    the untouched model: the shipped rule (the tiny model's few keys: no call reaches our kernel),
    then a rule that takes only the unmasked self-attention."""
    import ltx_kernels.integrations._compile_policy as policy

    dtype = torch.float32
    m = _prep(ltx_video(heads=2, head_dim=64), "cpu", dtype)
    kw = video_inputs("cpu", dtype)
    assert kw["encoder_attention_mask"] is not None
    o = optimized_copy(m, attention=mode)
    calls = _every_attention(monkeypatch, policy.use_kernel_attention)
    assert_no_worse(run(o, kw), run(m, kw), exact_run(m, kw), "shipped rule")
    assert not calls
    seen = []

    def unmasked_only(md, keys, d, masked):
        seen.append((md, keys, d, masked))
        return not masked

    calls = _every_attention(monkeypatch, unmasked_only)
    check_mode(mode, m, o, kw, monkeypatch, "unmasked only")
    assert len(calls) == 2, "the (unmasked) self-attention of both blocks only"
    self_call, cross_call = (kw["hidden_states"].shape[1], 64, False), (kw["encoder_hidden_states"].shape[1], 64, True)
    want = {(mode,) + self_call, (mode,) + cross_call}
    if mode == "fp8":  # the refused FP8 call asks whether the 16-bit kernel pays (kernel_attention_mode)
        want.add(("bf16",) + cross_call)
    assert sorted(set(seen)) == sorted(want), seen


def test_kernel_attention_rule_follows_its_thresholds():
    """use_kernel_attention takes a mode's kernel from its key count threshold on, for its head
    dims, unmasked and with a key mask by their own settings (a mode without masked settings never
    takes a masked attention), whatever those settings are."""
    import ltx_kernels.integrations._compile_policy as policy

    rule = policy.use_kernel_attention
    for masked, thresholds, all_dims in ((False, policy.MIN_KERNEL_ATTENTION_KEYS, policy.KERNEL_ATTENTION_HEAD_DIMS),
                                         (True, policy.MIN_MASKED_KERNEL_ATTENTION_KEYS,
                                          policy.MASKED_KERNEL_ATTENTION_HEAD_DIMS)):
        for mode, keys in thresholds.items():
            dims = all_dims[mode]
            assert dims, mode
            for d in dims:
                assert rule(mode, keys, d, masked) and rule(mode, 10 * keys, d, masked), (mode, keys, d, masked)
                assert not rule(mode, keys - 1, d, masked), (mode, keys, d, masked)
            other = next(d for d in (8, 16, 32, 64, 96, 128, 256) if d not in dims)
            assert not rule(mode, 10 * keys, other, masked), (mode, other, masked)
    for mode in policy.MIN_KERNEL_ATTENTION_KEYS:
        if mode not in policy.MIN_MASKED_KERNEL_ATTENTION_KEYS:
            assert not any(rule(mode, 10 ** 6, d, True) for d in (64, 128)), mode


@pytest.mark.parametrize("mode", ["bf16", "fp8"])
def test_routing_follows_the_thresholds(mode, monkeypatch):
    """In the model: with the key threshold at the tiny model's video token count, its two
    (unmasked) self-attentions run our kernel and the masked cross-attentions SDPA; one key more
    and none does; a head dim outside the rule's, none either."""
    import ltx_kernels.integrations._compile_policy as policy
    import ltx_kernels.integrations.diffusers.processors as procs

    m = ltx_video(heads=2, head_dim=64)
    kw = video_inputs("cpu", torch.float32)
    o = optimized_copy(m, attention=mode)
    tokens = kw["hidden_states"].shape[1]
    calls = []
    real = procs.kernel_attention
    monkeypatch.setattr(procs, "kernel_attention", lambda *a, **k: calls.append(a[0].shape) or real(*a, **k))
    for keys, dims, want in [(tokens, (64,), 2), (tokens + 1, (64,), 0), (tokens, (128,), 0), (1, (64,), 2)]:
        monkeypatch.setitem(policy.MIN_KERNEL_ATTENTION_KEYS, mode, keys)
        monkeypatch.setitem(policy.KERNEL_ATTENTION_HEAD_DIMS, mode, dims)
        calls.clear()
        run(o, kw)
        assert len(calls) == want, (keys, dims, calls)
        assert all(c[1] == tokens for c in calls), calls  # self-attention only (cross: 7 masked keys)


def test_fp8_falls_back_to_the_16bit_kernel(monkeypatch):
    """Where FP8 attention does not pay and the 16-bit kernel does (kernel_attention_mode),
    optimize(attention="fp8") runs the 16-bit kernel on the bf16 model's own q, k, v (no FP8
    operand pass), not SDPA; an fp32 model goes to SDPA there; the output still matches."""
    import ltx_kernels.integrations._compile_policy as policy
    import ltx_kernels.integrations.diffusers.processors as procs

    monkeypatch.setitem(policy.MIN_KERNEL_ATTENTION_KEYS, "fp8", 10 ** 9)
    monkeypatch.setitem(policy.MIN_KERNEL_ATTENTION_KEYS, "bf16", 1)
    assert policy.kernel_attention_mode("fp8", 4096, 64, False) == "bf16"
    assert policy.kernel_attention_mode("fp8", 4096, 64, True) == "bf16"  # a key mask: the masked rule
    assert policy.kernel_attention_mode("fp8", 4096, 32, False) is None  # neither pays
    assert policy.kernel_attention_mode("bf16", 4096, 64, False) == "bf16"
    calls = []
    real = procs.kernel_attention
    monkeypatch.setattr(procs, "kernel_attention", lambda *a, **k: calls.append(a[0].dtype) or real(*a, **k))
    for dtype, want in ((torch.bfloat16, [torch.bfloat16] * 2), (torch.float32, [])):
        m = _prep(ltx_video(heads=2, head_dim=64), "cpu", dtype)
        kw = video_inputs("cpu", dtype)
        o = optimized_copy(m, attention="fp8")
        calls.clear()
        got = run(o, kw)
        assert calls == want, (dtype, calls)  # the two self-attentions; the cross-attention's 7 keys: SDPA
        assert_no_worse(got, run(m, kw), exact_run(m, kw), str(dtype))


def test_attention_mode_is_the_last_optimize_call():
    m = ltx_video()
    o = optimized_copy(m, attention="fp8")
    lkd.optimize(o)  # a second call without attention= goes back to diffusers' dispatcher
    assert o.transformer_blocks[0].attn1.processor.kernel_attention is None
    kw = video_inputs("cpu", torch.float32)
    assert_no_worse(run(o, kw), run(m, kw), exact_run(m, kw))


def test_bad_attention_argument():
    with pytest.raises(ValueError, match="attention must be None, 'bf16' or 'fp8'"):
        lkd.optimize(ltx_video(), attention="fp4")


def test_compile_fullgraph_with_attention(monkeypatch):
    """The first block under torch.compile(fullgraph=True) with every attention on our kernel."""
    import ltx_kernels.integrations._compile_policy as policy

    monkeypatch.setattr(policy, "use_kernel_attention", lambda *a: True)
    m = ltx_video(heads=2, head_dim=16)
    o = optimized_copy(m, attention="bf16")
    blk = o.transformer_blocks[0]
    kw = video_inputs("cpu", torch.float32)
    # aot_eager: the whole block traced (fake impls, functionalized out= ops) without the
    # minutes a C++ Inductor build takes on a small CI box (Inductor around the op:
    # test_attention.py's test_opcheck_and_compile)
    torch._dynamo.reset()
    o.transformer_blocks[0] = torch.compile(blk, fullgraph=True, backend="aot_eager")
    got = run(o, kw)
    assert_no_worse(got, run(m, kw), exact_run(m, kw), "compiled")


# ---- the bounds fail wrong answers -------------------------------------------------------------
# Each mutation perturbs what the FP8 path hands the kernel (in the processors' call of
# quantize_attention_fp8 and of the producers, monkeypatched) and runs the checks of the FP8 tests
# above; measured on
# the CPU (worst call's error / its bound; model error vs FP8_ATTENTION_REL = 0.03):
#   K factors x 1.1          calls 9.5x - 11.6x the bound; model 0.018 - 0.027 (within)
#   V factors x 1.1          calls 25x;                   model 0.038 - 0.054
#   q factors swapped        calls 22x - 54x;             model 0.036 - 0.11
#     between the two heads
#   K smoothing dropped      calls 2.8x - 5.1x;           model 0.0095 - 0.012 (within: without
#     (smooth_k=False)                                     its mean K is a valid, less accurate
#                                                          encoding; the codes differ from the rule's)
MUTATIONS = {
    "k_factors_x1.1": (lambda ops: ops._replace(k_descale=ops.k_descale * 1.1), False),
    "v_factors_x1.1": (lambda ops: ops._replace(v_descale=ops.v_descale * 1.1), True),
    "q_factors_heads_swapped": (lambda ops: ops._replace(q_descale=ops.q_descale.flip(-1).contiguous()), True),
    "k_smoothing_dropped": (None, False),
}


def mutate_fp8_attention(monkeypatch, name):
    """The mutation in both FP8 paths of the processors: quantize_attention_fp8's operands, and
    the producers' (q's factors from the norm + RoPE FP8 output, attention_keys_fp8,
    attention_values_fp8)."""
    import ltx_kernels.integrations.diffusers.processors as procs

    real = procs.quantize_attention_fp8
    change, _ = MUTATIONS[name]

    def mutated(q, k, v, **kw):
        if change is None:
            return real(q, k, v, **dict(kw, smooth_k=False))
        return change(real(q, k, v, **kw))

    monkeypatch.setattr(procs, "quantize_attention_fp8", mutated)
    F8 = torch.float8_e4m3fn
    if name == "k_factors_x1.1" or name == "k_smoothing_dropped":
        real_k = procs.attention_keys_fp8

        def keys(*a, **kw):
            if name == "k_smoothing_dropped":
                return real_k(*a, **dict(kw, smooth_keys=0))
            k8, kd = real_k(*a, **kw)
            return k8, kd * 1.1

        monkeypatch.setattr(procs, "attention_keys_fp8", keys)
    elif name == "v_factors_x1.1":
        real_v = procs.attention_values_fp8
        monkeypatch.setattr(procs, "attention_values_fp8", lambda *a, **kw: (lambda o: (o[0], o[1] * 1.1))(real_v(*a, **kw)))
    elif name == "q_factors_heads_swapped":
        for fn in ("rms_norm_rope", "rms_norm_split_rope"):
            real_q = getattr(procs, fn)

            def q_swapped(*a, real_q=real_q, **kw):
                out = real_q(*a, **kw)
                if kw.get("out_dtype") != F8:
                    return out
                q8, s = out  # scales [B * S, H]: the heads' factors swapped
                return q8, s.flip(-1).contiguous()

            monkeypatch.setattr(procs, fn, q_swapped)


@pytest.mark.parametrize("device,dtype", DEV_DTYPE)
@pytest.mark.parametrize("model", ["ltx_video", "ltx2"])
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_fp8_attention_checks_fail_wrong_operands(device, dtype, model, mutation, monkeypatch):
    if model == "ltx_video":
        m, kw = _prep(ltx_video(heads=2, head_dim=64), device, dtype), video_inputs(device, dtype)
    else:
        m, kw = _prep(ltx2(rope_type="split", gated=True, heads=2, head_dim=64), device, dtype), ltx2_inputs(device, dtype)
    o = optimized_copy(m, attention="fp8")
    _every_attention(monkeypatch)
    mutate_fp8_attention(monkeypatch, mutation)
    errs, calls = fp8_attention_errors(m, o, kw, monkeypatch)
    name, err, bound = worst(calls)
    assert err > bound, f"{mutation}: the per-call check passes ({name}: {err:.3g} <= {bound:.3g})"
    if MUTATIONS[mutation][1]:
        assert max(errs) > FP8_ATTENTION_REL, f"{mutation}: the model-level check passes ({errs})"


# ---- FP8 linears and FP8 attention together ------------------------------------------------------


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("model", ["ltx_video", "ltx2"])
def test_fp8_quantization_with_fp8_attention(device, model, monkeypatch):
    """optimize(quantization="fp8", attention="fp8") on a bf16 model: every FP8 linear and every
    FP8 attention call against its oracle, the model within the FP8 linears' bound (the
    attention's own ~1e-2 adds to their ~4e-2 in quadrature: measured 0.034 - 0.046, the same as
    with the linears alone)."""
    needs_cuda(device)
    dtype = torch.bfloat16
    if model == "ltx_video":  # hidden 128 = one FP8 group
        m, kw = ltx_video(heads=2, head_dim=64).to(device, dtype), video_inputs(device, dtype)
    else:
        m = ltx2(rope_type="split", gated=True, heads=2, head_dim=64, a_heads=2, a_dim=64).to(device, dtype)
        kw = ltx2_inputs(device, dtype)
    o = optimized_copy(m, quantization="fp8", attention="fp8")
    calls = _every_attention(monkeypatch)
    want = run(m, kw)
    with recording_fp8_linears(m, o) as lin, recording_fp8_attention(monkeypatch) as att:
        got = run(o, kw)
    assert len(calls) == (4 if model == "ltx_video" else 12) and all(c == torch.float8_e4m3fn for c in calls)
    assert len(att) == len(calls)
    assert_calls_within(lin, "FP8 linears")
    assert_calls_within(att, "FP8 attention")
    for g, w in zip(got, want):
        assert g.shape == w.shape and not torch.isnan(g).any()
        assert rel_err(g, w) <= FP8_LINEARS_REL, rel_err(g, w)
