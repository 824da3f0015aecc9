"""optimize(model, attention="bf16" | "fp8"): our attention inside diffusers' LTX-Video and LTX-2
attention processors (self-attention, prompt cross-attention with its padding mask, LTX-2's
audio and cross-modal attention), against the untouched model on the same inputs.

Bounds: "bf16" on an fp32 model runs the fp32 CPU backend / fp32 torch path (same math as SDPA
up to summation order): 1e-5 relative L2, as the other fused pieces. On a bf16 model (CUDA) the
kernel rounds P to bf16 (2^-9 relative per weight) on top of the bf16 rounding eager does: the
usual bf16 bound of the integration tests, 3e-2. "fp8": q, k, v and P in E4M3 (2^-4 relative
rounding) through two blocks: 0.1 relative L2 (measured 0.02-0.05 on these tiny models).
"""

import pytest
import torch

from conftest import ALL_DEVICES

pytest.importorskip("diffusers")
lkd = pytest.importorskip("ltx_kernels.integrations.diffusers")

from test_integrations_diffusers import (  # noqa: E402
    _prep, ltx2, ltx2_inputs, ltx_video, optimized_copy, rel_err, run, video_inputs,
)

DEV_DTYPE = [("cpu", torch.float32), pytest.param("cuda", torch.bfloat16, marks=ALL_DEVICES[1].marks)]


def _bound(mode, dtype):
    if mode == "fp8":
        return 0.1
    return 1e-5 if dtype == torch.float32 else 3e-2


def _counting(monkeypatch, rule=None):
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


@pytest.mark.parametrize("device,dtype", DEV_DTYPE)
@pytest.mark.parametrize("mode", ["bf16", "fp8"])
@pytest.mark.parametrize("head_dim", [16, 64])
def test_ltx_video_attention(device, dtype, mode, head_dim, monkeypatch):
    m = _prep(ltx_video(heads=2, head_dim=head_dim), device, dtype)
    kw = video_inputs(device, dtype)
    o = optimized_copy(m, attention=mode)
    proc = o.transformer_blocks[0].attn2.processor
    assert proc.kernel_attention == mode
    calls = _counting(monkeypatch)
    want, got = run(m, kw)[0], run(o, kw)[0]
    assert len(calls) == 4, "self- and cross-attention of both blocks"  # masked cross-attention too
    assert all(c == (torch.float8_e4m3fn if mode == "fp8" else dtype) for c in calls)
    assert got.shape == want.shape and got.dtype == want.dtype and not torch.isnan(got).any()
    assert rel_err(got, want) < _bound(mode, dtype), rel_err(got, want)


@pytest.mark.parametrize("device,dtype", DEV_DTYPE)
@pytest.mark.parametrize("mode", ["bf16", "fp8"])
def test_ltx2_attention(device, dtype, mode, monkeypatch):
    m = _prep(ltx2(rope_type="split", gated=True, heads=2, head_dim=64), device, dtype)
    kw = ltx2_inputs(device, dtype)
    o = optimized_copy(m, attention=mode)
    calls = _counting(monkeypatch)
    want = run(m, kw)
    got = run(o, kw)
    assert len(calls) == 12, len(calls)  # 6 attention modules per block, 2 blocks
    for w, g in zip(want, got):
        assert g.shape == w.shape and not torch.isnan(g).any()
        assert rel_err(g, w) < _bound(mode, dtype), rel_err(g, w)


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
    want = run(m, kw)[0]
    calls = _counting(monkeypatch, policy.use_kernel_attention)
    got = run(o, kw)[0]
    assert not calls
    assert rel_err(got, want) < _bound(mode, dtype), rel_err(got, want)
    seen = []

    def unmasked_only(md, keys, d, masked):
        seen.append((md, keys, d, masked))
        return not masked

    calls = _counting(monkeypatch, unmasked_only)
    got = run(o, kw)[0]
    assert len(calls) == 2, "the (unmasked) self-attention of both blocks only"
    assert sorted(set(seen)) == sorted({(mode, kw["hidden_states"].shape[1], 64, False),
                                        (mode, kw["encoder_hidden_states"].shape[1], 64, True)}), seen
    assert rel_err(got, want) < _bound(mode, dtype), rel_err(got, want)


def test_kernel_attention_rule_defaults():
    """As shipped: bf16 for unmasked head-dim-64 attention over >= 2048 keys, FP8 (with its
    quantization pass) over >= 8192 keys; a masked attention never."""
    import ltx_kernels.integrations._compile_policy as policy

    rule = policy.use_kernel_attention
    assert rule("bf16", 2688, 64, False) and rule("bf16", 14080, 64, False)
    assert not rule("bf16", 1024, 64, False) and not rule("bf16", 2688, 128, False)
    assert not rule("bf16", 2688, 64, True) and not rule("fp8", 16384, 128, True)
    assert rule("fp8", 8192, 128, False) and rule("fp8", 14080, 64, False)
    assert not rule("fp8", 2688, 64, False) and not rule("fp8", 2688, 128, False)


def test_attention_mode_is_the_last_optimize_call():
    m = ltx_video()
    o = optimized_copy(m, attention="fp8")
    lkd.optimize(o)  # a second call without attention= goes back to diffusers' dispatcher
    assert o.transformer_blocks[0].attn1.processor.kernel_attention is None
    kw = video_inputs("cpu", torch.float32)
    assert rel_err(run(o, kw)[0], run(m, kw)[0]) < 1e-5


def test_bad_attention_argument():
    with pytest.raises(ValueError, match="attention must be None, 'bf16' or 'fp8'"):
        lkd.optimize(ltx_video(), attention="fp4")


def test_compile_fullgraph_with_attention():
    m = ltx_video(heads=2, head_dim=16)
    o = optimized_copy(m, attention="bf16")
    blk = o.transformer_blocks[0]
    kw = video_inputs("cpu", torch.float32)
    want = run(o, kw)[0]
    o.transformer_blocks[0] = torch.compile(blk, fullgraph=True)
    got = run(o, kw)[0]
    assert rel_err(got, want) < 1e-5
