"""ltx_kernels.integrations.diffusers.optimize on tiny LTX-Video and LTX-2 transformers.

The oracle is the untouched diffusers model evaluated in float64 (a deep copy with the same
random weights, on the same inputs): a model's error has no closed-form bound, so the optimized
copy must be no worse than the untouched model in the test's dtype (relative L2 error against the
float64 output at most twice the untouched model's, plus 2^-24 in fp32 / 2^-8 in bf16). The
fused kernels differ from eager only in summation orders and in not rounding some
intermediates; a wrong formula or wiring gives errors orders of magnitude larger. Every
integration path is reached by some config: RMSNorm with and without weight, per-sample and
per-token AdaLN tables, interleaved and split RoPE, gated attention, LTX-2.3's prompt
modulation, the a2v/v2a switches, masks, FP8.

With quantization="fp8" the float64 model is no oracle (the FP8 rounding is the point): every FP8
linear call is checked against the float64 GEMM of the reference quantization of its own inputs
and the original weight (fp8_oracles.py), and the model's output stays within FP8_LINEARS_REL of
the untouched model's; test_fp8_linear_checks_fail_wrong_scales shows wrong scales fail them.
"""

import copy
import logging
import math

import pytest
import torch

import ltx_kernels  # noqa: F401
from ltx_kernels import quantization

from conftest import ALL_DEVICES, load_bench, needs_cuda
from fp8_oracles import assert_calls_within, recording_fp8_linears, worst

diffusers = pytest.importorskip("diffusers")
lkd = pytest.importorskip("ltx_kernels.integrations.diffusers")

from diffusers import LTX2VideoTransformer3DModel, LTXVideoTransformer3DModel  # noqa: E402

B, F_, H_, W_ = 2, 3, 4, 5  # latent grid: 60 video tokens
S = F_ * H_ * W_
L = 7  # prompt tokens
SA = 6  # audio tokens


def rel_err(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def calc_diff(a, b):  # DeepGEMM's: 1 - cos-like similarity, 0 for equal tensors
    a, b = a.double(), b.double()
    return (1 - 2 * (a * b).sum() / (a * a + b * b).sum()).item()


def to64(v):
    """Floating tensors (also inside tuples / dicts) as float64; anything else as is."""
    if isinstance(v, torch.Tensor):
        return v.double() if v.is_floating_point() else v
    if isinstance(v, (tuple, list)):
        return type(v)(to64(t) for t in v)
    if isinstance(v, dict):
        return {k: to64(t) for k, t in v.items()}
    return v


def exact_run(model, kw):
    """The untouched model's output in float64: the oracle."""
    return run(copy.deepcopy(model).double(), to64(kw))


def assert_no_worse(got, want, exact, dtype=torch.float32, what=""):
    """got (optimized) and want (untouched, same dtype) against the float64 output `exact`."""
    e_ours, e_eager = rel_err(got, exact), rel_err(want, exact)
    # measured on the CPU (fp32): ours 1.5e-7 - 3.6e-7, the untouched model's 1.6e-7 - 4.2e-7, the
    # limit 1.8x - 2.9x ours; bf16 (the same configs run on the CPU): ours 5.1e-3 - 1.0e-2 against
    # 5.4e-3 - 1.2e-2, the limit 2.3x - 3.4x ours
    floor = 2.0**-24 if dtype == torch.float32 else 2.0**-8
    assert e_ours <= 2 * e_eager + floor, f"{what}: relative L2 error {e_ours:.3g}, the untouched model's {e_eager:.3g}"


# ---- tiny models and realistic inputs ------------------------------------------------------


def ltx_video(affine=False, activation_fn="gelu-approximate", heads=2, head_dim=16):
    torch.manual_seed(1234)
    m = LTXVideoTransformer3DModel(
        in_channels=8, out_channels=8, patch_size=1, patch_size_t=1, num_attention_heads=heads,
        attention_head_dim=head_dim, cross_attention_dim=heads * head_dim, num_layers=2,
        caption_channels=16, norm_elementwise_affine=affine, activation_fn=activation_fn,
    ).eval()
    _randomize(m)
    return m


def ltx2(rope_type="split", gated=False, cross_mod=False, affine=False, heads=2, head_dim=16, a_heads=2, a_dim=8,
         perturbed=False):
    torch.manual_seed(4321)
    m = LTX2VideoTransformer3DModel(
        in_channels=8, out_channels=8, num_attention_heads=heads, attention_head_dim=head_dim,
        cross_attention_dim=heads * head_dim, audio_in_channels=4, audio_out_channels=4,
        audio_num_attention_heads=a_heads, audio_attention_head_dim=a_dim, audio_cross_attention_dim=a_heads * a_dim,
        num_layers=2, caption_channels=16, rope_type=rope_type, gated_attn=gated, audio_gated_attn=gated,
        cross_attn_mod=cross_mod, audio_cross_attn_mod=cross_mod, norm_elementwise_affine=affine,
        perturbed_attn=perturbed,
    ).eval()
    _randomize(m)
    return m


def _randomize(m):
    """Non-trivial weights everywhere (norm weights, gate logits, tables), scaled so
    activations stay O(1) through the blocks."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            parts = name.split(".")
            if len(parts) >= 2 and "norm" in parts[-2]:  # RMSNorm weights around 1
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif p.dim() >= 2 and "scale_shift_table" not in name:
                p.normal_(0, 1 / math.sqrt(p.shape[-1]))
            else:
                p.normal_(0, 0.3)


def video_inputs(device, dtype, per_token=False, mask=True):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(B, 8, F_, H_, W_, generator=g)  # latents [B, C, F, H, W]
    x = x.permute(0, 2, 3, 4, 1).reshape(B, S, 8)  # diffusers' _pack_latents with patch 1
    t = (torch.rand(B, S, generator=g) if per_token else torch.rand(B, generator=g)) * 1000
    enc = torch.randn(B, L, 16, generator=g)
    m = torch.ones(B, L)
    m[1, 5:] = 0  # padded prompt in the second sample
    return dict(hidden_states=x.to(device, dtype), encoder_hidden_states=enc.to(device, dtype),
                timestep=t.to(device), encoder_attention_mask=(m.to(device) if mask else None),
                num_frames=F_, height=H_, width=W_, rope_interpolation_scale=(8 / 25, 32, 32),
                return_dict=False)


def ltx2_inputs(device, dtype, per_token=False, cross_mod=False):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(B, 8, F_, H_, W_, generator=g).permute(0, 2, 3, 4, 1).reshape(B, S, 8)
    a = torch.randn(B, SA, 4, generator=g)
    t = torch.rand(B, generator=g) * 1000
    kw = dict(
        hidden_states=x.to(device, dtype), audio_hidden_states=a.to(device, dtype),
        encoder_hidden_states=torch.randn(B, L, 16, generator=g).to(device, dtype),
        audio_encoder_hidden_states=torch.randn(B, L, 16, generator=g).to(device, dtype),
        timestep=(t[:, None].expand(B, S).clone() if per_token else t).to(device),
        audio_timestep=(t[:, None].expand(B, SA).clone() if per_token else t).to(device),
        num_frames=F_, height=H_, width=W_, audio_num_frames=SA, fps=24.0, return_dict=False,
    )
    if per_token:  # first latent frame conditioned (timestep 0), like image-to-video
        kw["timestep"][:, : H_ * W_] = 0
    m = torch.ones(B, L, device=device)
    m[0, 4:] = 0
    kw["encoder_attention_mask"] = m
    kw["audio_encoder_attention_mask"] = m
    if cross_mod:
        kw["sigma"] = (t / 1000).to(device)
    return kw


def run(model, kw):
    with torch.no_grad():
        out = model(**kw)
    return out


def optimized_copy(model, **kw):
    o = copy.deepcopy(model)
    r = lkd.optimize(o, **kw)
    assert r is o
    return o


def _prep(model, device, dtype):
    needs_cuda(device)
    return model.to(device=device, dtype=dtype)


DEV_DTYPE = [("cpu", torch.float32), pytest.param("cuda", torch.bfloat16, marks=ALL_DEVICES[1].marks),
             pytest.param("cuda", torch.float32, marks=ALL_DEVICES[1].marks)]


# ---- LTX-Video ------------------------------------------------------------------------------


@pytest.mark.parametrize("device,dtype", DEV_DTYPE)
@pytest.mark.parametrize("affine", [False, True], ids=["norm-no-weight", "norm-weight"])
@pytest.mark.parametrize("per_token", [False, True], ids=["adaln-per-sample", "adaln-per-token"])
def test_ltx_video_matches_eager(device, dtype, affine, per_token):
    m = _prep(ltx_video(affine=affine), device, dtype)
    kw = video_inputs(device, dtype, per_token=per_token)
    o = optimized_copy(m)
    assert all(getattr(b, "_ltx_kernels_patched", False) for b in o.transformer_blocks)
    assert all(type(b.attn1.processor).__name__ == "LTXVideoFusedAttnProcessor" for b in o.transformer_blocks)
    assert all(getattr(b.ff, "_ltx_kernels_patched", False) for b in o.transformer_blocks)
    want, got = run(m, kw)[0], run(o, kw)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_no_worse(got, want, exact_run(m, kw)[0], dtype)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_ltx_video_qk_norm_without_weight_and_no_mask(device):
    dtype = torch.float32
    m = _prep(ltx_video(), device, dtype)
    for b in m.transformer_blocks:
        for attn in (b.attn1, b.attn2):
            attn.norm_q = torch.nn.RMSNorm(attn.inner_dim, eps=1e-5, elementwise_affine=False).to(device)
            attn.norm_k = torch.nn.RMSNorm(attn.inner_kv_dim, eps=None, elementwise_affine=False).to(device)
    kw = video_inputs(device, dtype, mask=False)
    o = optimized_copy(m)
    assert type(o.transformer_blocks[0].attn1.processor).__name__ == "LTXVideoFusedAttnProcessor"
    assert_no_worse(run(o, kw)[0], run(m, kw)[0], exact_run(m, kw)[0], dtype)


def test_ltx_video_pipeline_like_object_and_twice():
    m = ltx_video()
    kw = video_inputs("cpu", torch.float32)
    want = run(m, kw)[0]

    class Pipe:  # anything with .transformer, as a DiffusionPipeline
        pass

    pipe = Pipe()
    pipe.transformer = copy.deepcopy(m)
    params_before = {n: (p.data_ptr(), p.device, p.dtype) for n, p in pipe.transformer.named_parameters()}
    assert lkd.optimize(pipe) is pipe
    once = run(pipe.transformer, kw)[0]
    fwd = pipe.transformer.transformer_blocks[0].forward
    proc = pipe.transformer.transformer_blocks[0].attn1.processor
    lkd.optimize(pipe)  # second application: no double wrapping, same result
    assert pipe.transformer.transformer_blocks[0].forward == fwd
    assert pipe.transformer.transformer_blocks[0].attn1.processor is proc
    twice = run(pipe.transformer, kw)[0]
    torch.testing.assert_close(twice, once, rtol=0, atol=0)
    assert_no_worse(once, want, exact_run(m, kw)[0])
    # no parameter was added, moved, cast or replaced (safe before enable_model_cpu_offload)
    params_after = {n: (p.data_ptr(), p.device, p.dtype) for n, p in pipe.transformer.named_parameters()}
    assert params_after == params_before
    assert set(pipe.transformer.state_dict()) == set(m.state_dict())


def test_ltx_video_rope_tables_once_for_the_batch():
    """The rotary embedding returns one [1, S, C] table pair where every batch row's is the same
    (grid coordinates): equal to each row of the class's own [B, S, C], and the model's output
    is bit for bit the one with per-row tables; per-sample video_coords keep the class's forward."""
    m = ltx_video()
    kw = video_inputs("cpu", torch.float32)
    o = optimized_copy(m)
    x = kw["hidden_states"]
    args = (x, F_, H_, W_, kw["rope_interpolation_scale"])
    full, one = m.rope(*args), o.rope(*args)
    for f, t in zip(full, one):
        assert f.shape[0] == B and t.shape == (1,) + f.shape[1:]
        for b in range(B):
            assert torch.equal(t[0], f[b])
    coords = torch.rand(B, 3, S) * 10
    for f, t in zip(m.rope(x, video_coords=coords), o.rope(x, video_coords=coords)):
        assert t.shape[0] == B and torch.equal(t, f)
    got = run(o, kw)[0]
    o.rope.forward = type(o.rope).forward.__get__(o.rope)  # per-row tables, same kernels
    assert torch.equal(got, run(o, kw)[0])


def test_unsupported_modules_are_left_untouched_and_logged(caplog):
    m = ltx_video(activation_fn="gelu")  # exact GELU feed-forward: not ours
    kw = video_inputs("cpu", torch.float32)

    class MyProcessor:  # an attention processor we do not know
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None,
                     image_rotary_emb=None):
            return self.inner(attn, hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb)

    custom = MyProcessor(m.transformer_blocks[1].attn2.processor)
    m.transformer_blocks[1].attn2.set_processor(custom)
    want = run(m, kw)[0]
    o = copy.deepcopy(m)
    ff_forward = o.transformer_blocks[0].ff.forward
    with caplog.at_level(logging.INFO, logger="ltx_kernels"):
        lkd.optimize(o)
    text = caplog.text
    assert "feed-forward activation is not GELU(tanh), left as is" in text
    assert "attention processor MyProcessor not recognised, left as is" in text
    assert type(o.transformer_blocks[1].attn2.processor).__name__ == "MyProcessor"
    assert o.transformer_blocks[0].ff.forward == ff_forward
    assert not getattr(o.transformer_blocks[0].ff, "_ltx_kernels_patched", False)
    assert type(o.transformer_blocks[1].attn1.processor).__name__ == "LTXVideoFusedAttnProcessor"
    assert_no_worse(run(o, kw)[0], want, exact_run(m, kw)[0])

    caplog.clear()
    net = torch.nn.Linear(4, 4)
    with caplog.at_level(logging.INFO, logger="ltx_kernels"):
        assert lkd.optimize(net) is net
    assert "left as is" in caplog.text


def test_bad_quantization_argument():
    with pytest.raises(ValueError, match=r"^ltx_kernels\.integrations\.diffusers\.optimize: quantization must be"):
        lkd.optimize(ltx_video(), quantization="int4")


# ---- LTX-2 ------------------------------------------------------------------------------------


LTX2_CASES = [
    pytest.param(dict(rope_type="split"), id="split"),
    pytest.param(dict(rope_type="interleaved"), id="interleaved"),
    pytest.param(dict(rope_type="split", gated=True), id="split-gated"),
    pytest.param(dict(rope_type="split", gated=True, cross_mod=True, affine=True), id="split-gated-crossmod-affine"),
    pytest.param(dict(rope_type="interleaved", gated=True, a_heads=4, a_dim=4), id="interleaved-gated-audio4x4"),
]


@pytest.mark.parametrize("device,dtype", DEV_DTYPE)
@pytest.mark.parametrize("cfg", LTX2_CASES)
@pytest.mark.parametrize("per_token", [False, True], ids=["adaln-per-sample", "adaln-per-token"])
def test_ltx2_matches_eager(device, dtype, cfg, per_token):
    m = _prep(ltx2(**cfg), device, dtype)
    kw = ltx2_inputs(device, dtype, per_token=per_token, cross_mod=cfg.get("cross_mod", False))
    o = optimized_copy(m)
    blk = o.transformer_blocks[0]
    assert getattr(blk, "_ltx_kernels_patched", False)
    for name in ("attn1", "attn2", "audio_attn1", "audio_attn2", "audio_to_video_attn", "video_to_audio_attn"):
        assert type(getattr(blk, name).processor).__name__ == "LTX2FusedAttnProcessor", name
    want, got = run(m, kw), run(o, kw)
    for w, g, e in zip(want, got, exact_run(m, kw)):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_no_worse(g, w, e, dtype)


@pytest.mark.parametrize("isolate", [True, False])
def test_ltx2_modality_switches_and_stg(isolate):
    # isolate_modalities skips a2v/v2a; STG blocks use diffusers' perturbed processor, which
    # we leave in place (the fused block forward must still pass its arguments through)
    m = ltx2(rope_type="split", gated=True, perturbed=True)
    kw = ltx2_inputs("cpu", torch.float32)
    kw.update(isolate_modalities=isolate, spatio_temporal_guidance_blocks=[1],
              perturbation_mask=torch.tensor([1.0, 0.0]))
    o = optimized_copy(m)
    assert type(o.transformer_blocks[0].attn1.processor).__name__ == "LTX2PerturbedAttnProcessor"
    for w, g, e in zip(run(m, kw), run(o, kw), exact_run(m, kw)):
        assert_no_worse(g, w, e)


def test_ltx2_single_cross_modal_direction():
    m = ltx2(rope_type="split", gated=True)
    o = optimized_copy(m)
    kw = ltx2_inputs("cpu", torch.float32)
    blk_m, blk_o = m.transformer_blocks[0], o.transformer_blocks[0]
    # call the blocks directly with one of a2v / v2a switched off
    C, CA = 32, 16
    g = torch.Generator().manual_seed(3)

    def r(*shape):
        return torch.randn(*shape, generator=g)

    args = dict(
        hidden_states=r(B, S, C), audio_hidden_states=r(B, SA, CA), encoder_hidden_states=r(B, L, C),
        audio_encoder_hidden_states=r(B, L, CA), temb=r(B, 1, 6 * C), temb_audio=r(B, 1, 6 * CA),
        temb_ca_scale_shift=r(B, 1, 4 * C), temb_ca_audio_scale_shift=r(B, 1, 4 * CA),
        temb_ca_gate=r(B, 1, C), temb_ca_audio_gate=r(B, 1, CA),
    )
    with torch.no_grad():
        vr = o.rope(o.rope.prepare_video_coords(B, F_, H_, W_, "cpu"))
        ar = o.audio_rope(o.audio_rope.prepare_audio_coords(B, SA, "cpu"))
    for a2v, v2a in [(True, False), (False, True)]:
        kwb = dict(args, video_rotary_emb=vr, audio_rotary_emb=ar, use_a2v_cross_attention=a2v,
                   use_v2a_cross_attention=v2a)
        with torch.no_grad():
            want, got = blk_m(**kwb), blk_o(**kwb)
            exact = copy.deepcopy(blk_m).double()(**to64(kwb))
        for w, gg, e in zip(want, got, exact):
            assert_no_worse(gg, w, e)
    del kw


# ---- torch.compile --------------------------------------------------------------------------


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph_optimized_block(device):
    needs_cuda(device)
    torch._dynamo.reset()
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    m = ltx_video().to(device, dtype)
    o = optimized_copy(m)
    blk = o.transformer_blocks[0]
    C = 32
    g = torch.Generator().manual_seed(5)
    x = torch.randn(B, S, C, generator=g).to(device, dtype)
    enc = torch.randn(B, L, C, generator=g).to(device, dtype)
    temb = torch.randn(B, 1, 6 * C, generator=g).to(device, dtype)
    cos, sin = o.rope(x, F_, H_, W_, (8 / 25, 32, 32))
    mask = torch.zeros(B, 1, L, device=device, dtype=dtype)
    mask[1, :, 5:] = -10000.0
    args = (x, enc, temb, (cos, sin), mask)
    with torch.no_grad():
        want = m.transformer_blocks[0](*args)
        exact = copy.deepcopy(m.transformer_blocks[0]).double()(*to64(args))
        eager = blk(*args)
        # CPU: aot_eager traces the whole block (fake impls, functionalized out= ops) without
        # the minutes a C++ inductor build takes on a small CI box; CUDA: inductor
        backend = "aot_eager" if device == "cpu" else "inductor"
        compiled = torch.compile(blk, fullgraph=True, backend=backend)
        got = compiled(*args)
    # compiled and eager runs of the optimized block, each no worse than the untouched block
    # (bf16: inductor fuses the glue around our ops in fp32 where eager rounds every op)
    assert_no_worse(eager, want, exact, dtype, "eager")
    assert_no_worse(got, want, exact, dtype, "compiled")


# ---- FP8 ------------------------------------------------------------------------------------


# The model-level error of optimize(quantization="fp8") (the blocks' linears with E4M3 weights
# per 128 x 128 block and E4M3 activations per token and 128 channels), relative L2 against the
# untouched bf16 model: measured on the CPU 0.033 - 0.045 (0.034 - 0.046 with attention="fp8"
# too; DeepGEMM's calc_diff, about half its square, 5.5e-4 - 1.1e-3); 2.2x the largest. Every FP8
# linear call is also checked against its oracle (fp8_oracles.py): a wrong scale shows there.
FP8_LINEARS_REL = 0.1


def _fp8_model(model, device):
    dtype = torch.bfloat16
    if model == "ltx_video":  # hidden 128 = one FP8 group of 128
        return ltx_video(heads=2, head_dim=64).to(device, dtype), video_inputs(device, dtype)
    m = ltx2(rope_type="split", gated=True, heads=2, head_dim=64, a_heads=2, a_dim=64).to(device, dtype)
    return m, ltx2_inputs(device, dtype)


def fp8_linear_errors(m, o, kw, monkeypatch):
    """Run the FP8-quantized `o` with every FP8 linear call checked against its oracle: (the
    model's relative L2 error against the untouched `m` per output, the calls' (what, error,
    bound))."""
    want = run(m, kw)
    with recording_fp8_linears(m, o) as calls:
        got = run(o, kw)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and not torch.isnan(g).any()
    return [rel_err(g, w) for g, w in zip(got, want)], calls


def assert_every_layer_ran(o, cls_name, ran):
    """Every `cls_name` layer of `o` ran (its name in `ran`), itself or, for an attention module's
    to_q / to_k / to_v, through that module's projections in one layer (processors.FusedProjections:
    `qkv` covers all three, `kv` to_k and to_v)."""
    from ltx_kernels.integrations.diffusers.processors import PROJECTIONS

    for name, mod in o.named_modules():
        if type(mod).__name__ != cls_name or PROJECTIONS in name or name in ran:
            continue
        parent, _, leaf = name.rpartition(".")
        fused = f"{parent}.{PROJECTIONS}"
        covered = leaf in ("to_q", "to_k", "to_v") and (f"{fused}.qkv" in ran or (leaf != "to_q" and f"{fused}.kv" in ran))
        assert covered, f"{name} never ran"


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("model", ["ltx_video", "ltx2"])
def test_fp8_quantization_close(device, model, monkeypatch):
    needs_cuda(device)
    m, kw = _fp8_model(model, device)
    o = optimized_copy(m, quantization="fp8")
    errs, calls = fp8_linear_errors(m, o, kw, monkeypatch)
    assert_calls_within(calls, f"{model} FP8 linears")
    assert max(errs) <= FP8_LINEARS_REL, errs
    if lkd._FP8_OUT and model == "ltx_video":  # norm1 + AdaLN emits (q, scales) for to_q/k/v
        assert o.transformer_blocks[0].attn1.processor.accepts_prequant
    n_fp8 = sum(type(mod).__name__ == "FP8BlockwiseLinear" for mod in o.modules())
    assert_every_layer_ran(o, "FP8BlockwiseLinear", {c[0] for c in calls})  # and was checked
    # policy: gate logits, patchify, caption projection and proj_out stay nn.Linear
    for name, mod in o.named_modules():
        if name.endswith(("to_gate_logits", "proj_out")) or name in ("proj_in", "audio_proj_in") \
                or "caption_projection" in name:
            assert type(mod).__name__ != "FP8BlockwiseLinear", name
    lkd.optimize(o, quantization="fp8")  # twice: no re-quantization
    assert sum(type(mod).__name__ == "FP8BlockwiseLinear" for mod in o.modules()) == n_fp8


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("model", ["ltx_video", "ltx2"])
def test_fp8_rowwise_quantization(device, model, monkeypatch):
    """optimize(quantization="fp8_rowwise"): the blocks' linears become FP8RowwiseLinear, every call
    matches the float64 oracle of its own quantized operands within the rowwise GEMM's bound
    (tests/test_gemm_rowwise.py; times |gate| where the call fuses the gated residual), and the
    model stays within the FP8 linears' model-level bound. The fused norms and the GELU hand the
    rowwise layers their input quantized per token (one scale per row: the tuple's scales have
    one column), and the attention output and feed-forward down projections of LTX-Video fuse the
    block's gated residual."""
    from test_gemm_rowwise import e_y
    from ltx_kernels import reference as ref

    needs_cuda(device)
    m, kw = _fp8_model(model, device)
    o = optimized_copy(m, quantization="fp8_rowwise")
    layers = [mod for mod in o.modules() if type(mod).__name__ == "FP8RowwiseLinear"]
    assert layers and not any(type(mod).__name__ == "FP8BlockwiseLinear" for mod in o.modules())
    calls = []
    forward = quantization.FP8RowwiseLinear.forward

    kinds = {"prequant": 0, "gated": 0}

    names = {id(mod): name for name, mod in o.named_modules()}
    ran = set()

    def recording(self, x, residual=None, gate=None, out=None):
        ran.add(names[id(self)])
        h0 = None if residual is None else residual.detach().double().cpu().clone()
        y = forward(self, x, residual, gate, out)
        if isinstance(x, tuple):  # (q, scales) per token from a fused norm or the GELU
            assert x[1].shape[-1] == 1 and x[1].numel() * x[0].shape[-1] == x[0].numel(), x[1].shape
            q, s = x[0].cpu(), x[1].cpu()
            kinds["prequant"] += 1
        else:
            q, s = ref.quantize_fp8_per_token_group(x.detach().float().cpu(), x.shape[-1])
        k = q.shape[-1]
        q, s = q.reshape(-1, k), s.reshape(-1, 1)
        bias = None if self.bias is None else self.bias.cpu()
        want = ref.fp8_rowwise_gemm(q, s, self.weight_q.cpu(), self.weight_scales.cpu(), bias).reshape(y.shape)
        used = "cpu" if q.device.type == "cpu" and y.device.type == "cpu" else "sm90"  # the looser CUDA bound
        e = e_y(q, s, self.weight_q.cpu(), self.weight_scales.cpu(), bias, used).reshape(y.shape)
        if residual is not None:
            kinds["gated"] += 1
            g = gate.detach().double().cpu()
            want = h0 + g * want
            e = e * g.abs()
        tol = (2.0**-7 + 2.0**-22) * want.abs() + e
        calls.append(float(((y.double().cpu() - want).abs() - tol).max()))
        return y

    monkeypatch.setattr(quantization.FP8RowwiseLinear, "forward", recording)
    got, want = run(o, kw), run(m, kw)
    monkeypatch.undo()
    assert calls and max(calls) <= 0, "a rowwise FP8 linear call is outside its bound"
    assert_every_layer_ran(o, "FP8RowwiseLinear", ran)
    if model == "ltx_video" and lkd._FP8_OUT:
        assert o.transformer_blocks[0].attn1.processor.accepts_prequant == 128  # hidden 128: one row
        assert kinds["prequant"] > 0 and kinds["gated"] > 0, kinds
    errs = [rel_err(g, w) for g, w in zip(got, want)]
    assert max(errs) <= FP8_LINEARS_REL, errs


# The checks above fail wrong weight scales. Measured on the CPU (worst call's error / its bound;
# model error vs FP8_LINEARS_REL = 0.1), with and without attention="fp8":
#   every weight scale x 1.1 (quantize_fp8_block, as the layers are built)
#                            calls 25x the bound; model 0.075 - 0.13
#   one layer's scales x 2 (block 1's feed-forward down projection)
#                            calls 51x - 58x;     model 0.23
FP8_WEIGHT_MUTATIONS = ["every_weight_scale_x1.1", "one_layer_scales_x2"]


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("model", ["ltx_video", "ltx2"])
@pytest.mark.parametrize("mutation", FP8_WEIGHT_MUTATIONS)
def test_fp8_linear_checks_fail_wrong_scales(device, model, mutation, monkeypatch):
    needs_cuda(device)
    m, kw = _fp8_model(model, device)
    if mutation == "every_weight_scale_x1.1":
        real = quantization.quantize_fp8_block
        monkeypatch.setattr(quantization, "quantize_fp8_block",
                            lambda w, block: (lambda q, s: (q, s * 1.1))(*real(w, block)))
    o = optimized_copy(m, quantization="fp8")
    monkeypatch.undo()
    if mutation == "one_layer_scales_x2":
        with torch.no_grad():
            o.transformer_blocks[1].ff.net[2].weight_scales.mul_(2)
    errs, calls = fp8_linear_errors(m, o, kw, monkeypatch)
    name, err, bound = worst(calls)
    assert err > bound, f"{mutation}: the per-call check passes ({name}: {err:.3g} <= {bound:.3g})"
    if mutation == "one_layer_scales_x2":
        assert max(errs) > FP8_LINEARS_REL, f"{mutation}: the model-level check passes ({errs})"


def _fp8_ltx_video_calls(device, monkeypatch, names, model="ltx_video"):
    """The tiny LTX-Video (or LTX-2) model in bf16, its output, and an FP8-optimized copy whose
    FP8BlockwiseLinear calls are recorded for the layers names(block) maps to a label:
    returns (want, optimized, kw, calls) with calls a list of (label, x is a (q, scales) pair,
    residual given)."""
    m, kw = _fp8_model(model, device)
    want = run(m, kw)
    o = optimized_copy(m, quantization="fp8")
    labels = {id(layer): label for b in o.transformer_blocks for label, layer in names(b).items()}
    calls = []
    forward = quantization.FP8BlockwiseLinear.forward

    def recording(self, x, *args, **kwargs):
        if id(self) in labels:
            calls.append((labels[id(self)], isinstance(x, (tuple, list)), kwargs.get("residual") is not None))
        return forward(self, x, *args, **kwargs)

    monkeypatch.setattr(quantization.FP8BlockwiseLinear, "forward", recording)
    return want, o, kw, calls


def _within_fp8_bound(got, want):
    for w, g in zip(want, got):
        assert rel_err(g, w) <= FP8_LINEARS_REL, rel_err(g, w)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp8_feed_forward_gelu_writes_fp8(device, monkeypatch):
    """With FP8 linears, the feed-forward's GELU writes the down projection's FP8 (q, scales)
    itself (one pass instead of the GELU's and the down projection's quantizer), unless a hook on
    the down projection expects a tensor; either way the block stays within the FP8 bound."""
    needs_cuda(device)
    want, o, kw, calls = _fp8_ltx_video_calls(device, monkeypatch, lambda b: {"ff": b.ff.net[2]})
    n = len(o.transformer_blocks)
    _within_fp8_bound(run(o, kw), want)
    assert [pair for _, pair, _ in calls] == [True] * n, calls
    calls.clear()
    o.transformer_blocks[0].ff.net[2].register_forward_pre_hook(lambda mod, args: None)
    _within_fp8_bound(run(o, kw), want)
    assert [pair for _, pair, _ in calls] == [False] + [True] * (n - 1), calls


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp8_gated_residuals_in_gemm_epilogue(device, monkeypatch):
    """With FP8 linears, in eager mode LTX-Video's two gated residuals (h + attn1 * gate_msa,
    h + ff * gate_mlp) run in the FP8 GEMM's epilogue of attn1's output projection and the
    feed-forward's down projection; a hook on attn1 (which would see h_new where it expects the
    attention output) keeps that one in PyTorch. Either way the block stays within the FP8 bound."""
    needs_cuda(device)
    want, o, kw, calls = _fp8_ltx_video_calls(
        device, monkeypatch, lambda b: {"attn1": b.attn1.to_out[0], "ff": b.ff.net[2]})
    n = len(o.transformer_blocks)
    _within_fp8_bound(run(o, kw), want)
    assert [(label, res) for label, _, res in calls] == [("attn1", True), ("ff", True)] * n, calls
    calls.clear()
    seen = []
    o.transformer_blocks[0].attn1.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    _within_fp8_bound(run(o, kw), want)
    assert [(label, res) for label, _, res in calls] == [("attn1", False), ("ff", True)] + [
        ("attn1", True), ("ff", True)] * (n - 1), calls
    assert len(seen) == 1


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp8_ltx2_feed_forward_residuals_in_gemm_epilogue(device, monkeypatch):
    """LTX-2's video and audio feed-forward residuals (h + ff * gate_mlp) in the down projection's
    FP8 GEMM epilogue in eager mode, within the FP8 bound."""
    needs_cuda(device)
    want, o, kw, calls = _fp8_ltx_video_calls(
        device, monkeypatch, lambda b: {"ff": b.ff.net[2], "audio_ff": b.audio_ff.net[2]}, model="ltx2")
    _within_fp8_bound(run(o, kw), want)
    assert [(label, res) for label, _, res in calls] == [("ff", True), ("audio_ff", True)] * len(
        o.transformer_blocks), calls


# ---- end-to-end benchmark scripts (tiny, CPU) ------------------------------------------------


@pytest.mark.parametrize("script", ["e2e_ltx_video", "e2e_ltx2"])
def test_e2e_tiny_smoke(script, tmp_path, capsys):
    import json

    mod = load_bench(script)
    out = tmp_path / "r.json"
    rc = mod.main(["--tiny", "--device", "cpu", "--steps", "2", "--warmup-iterations", "1", "--out", str(out)])
    assert rc in (None, 0)
    res = json.loads(out.read_text())
    assert res["steps"] == 2 and res["per_step_ms"] > 0 and math.isfinite(res["rel_l2_vs_eager"])
    assert res["rel_l2_vs_eager"] < 1e-4  # tiny config in fp32 on CPU: optimized == eager
    assert "random weights" in capsys.readouterr().out
    # the record names what made it: the command, the commit and the build
    assert res["command"].startswith("python3 ") and "--tiny" in res["command"]
    assert "git_sha" in res and isinstance(res["build"], dict)

    out2 = tmp_path / "c.json"
    mod.main(["--tiny", "--device", "cpu", "--steps", "2", "--warmup-iterations", "0", "--compare", "--no-compile-variants",
              "--timed-runs", "2", "--out", str(out2)])
    rows = json.loads(out2.read_text())["rows"]
    assert {r["variant"] for r in rows} >= {"eager", "optimized"}
    for r in rows:  # every variant timed twice, ms/step the median over both runs' steps
        assert len(r["run_median_ms"]) == 2 and r["run_spread_pct"] >= 0
        assert min(r["run_median_ms"]) <= r["per_step_ms"] <= max(r["run_median_ms"])


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("granularity", ["tensorwise", "rowwise"])
def test_scaled_mm_peer_linear(device, granularity):
    """The end-to-end benchmark's FP8 peer (benchmarks/baselines.py ScaledMMLinear) computes
    x @ w^T + b with x and w rounded to e4m3 under its scales. Each operand's relative rounding
    error is uniform in about [-2^-4, 2^-4] (3 mantissa bits), std 2^-4 / sqrt(3) = 0.036, so a
    product's is about sqrt(2) x 0.036 = 0.051 and, over K independent terms, so is the output's
    relative L2: bound 0.06. A weight scale 10% off gives ~0.1 and must fail it."""
    needs_cuda(device)
    if granularity == "rowwise" and device == "cpu":
        pytest.skip("PyTorch's CPU torch._scaled_mm takes one scale per tensor (the module says so)")
    bl = load_bench("baselines")
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    lin = torch.nn.Linear(256, 192).to(device, dtype)
    x = torch.randn(3, 37, 256, device=device, dtype=dtype) * torch.linspace(0.1, 4, 256, device=device, dtype=dtype)
    m = bl.ScaledMMLinear(lin, granularity)
    want = x.double() @ lin.weight.double().t() + lin.bias.double()

    def err(y):
        return ((y.double() - want).norm() / want.norm()).item()

    y = m(x)
    assert y.shape == (3, 37, 192) and y.dtype == dtype
    assert err(y) < 0.06, err(y)
    m.weight_scale.mul_(1.1)  # mutation: the weight's scale 10% off
    assert err(m(x)) > 0.06


def test_e2e_several_quantizations_and_peer(tmp_path):
    """--compare with two quantizations measures the second on the original weights (the same
    error as a run that asks for it alone) and adds the eager _scaled_mm peer row."""
    import json

    mod = load_bench("e2e_ltx_video")
    base = ["--tiny", "--device", "cpu", "--steps", "2", "--warmup-iterations", "0", "--timed-runs", "1",
            "--compare", "--no-compile-variants"]
    both, alone = tmp_path / "both.json", tmp_path / "alone.json"
    mod.main(base + ["--quantization", "fp8", "fp8_rowwise", "--peers", "tensorwise", "--out", str(both)])
    mod.main(base + ["--quantization", "fp8_rowwise", "--out", str(alone)])
    rows = {r["variant"]: r for r in json.loads(both.read_text())["rows"]}
    single = {r["variant"]: r for r in json.loads(alone.read_text())["rows"]}
    assert {"eager", "peer:scaled_mm-tensorwise", "optimized", "optimized+fp8", "optimized+fp8_rowwise"} <= set(rows)
    assert rows["optimized+fp8_rowwise"]["rel_l2_vs_eager"] == single["optimized+fp8_rowwise"]["rel_l2_vs_eager"]
    assert rows["optimized+fp8_rowwise"]["rel_l2_vs_eager"] != rows["optimized+fp8"]["rel_l2_vs_eager"]
    peer = rows["peer:scaled_mm-tensorwise"]
    assert peer["peer"]["scales"] == "tensorwise" and peer["peer"]["linears"] > 0
    assert 1e-4 < peer["rel_l2_vs_eager"] < 0.1  # FP8 rounding, not the unquantized model
    assert rows["optimized"]["rel_l2_vs_eager"] < 1e-4  # the peer's linears were put back


def test_e2e_several_compile_modes(tmp_path, monkeypatch):
    """--compare with two --compile-mode values: the compile, peer and optimized+compile rows run
    once per mode, each compiled in its own mode (rows in a mode other than the default carry
    '[mode]'), and the rows that change the compile policy run in the first mode only; with
    reduce-overhead first, its rows are named so and the default ones are not.
    Compilation itself is stubbed (recorded), so that this runs in seconds on the CPU."""
    import json

    mod = load_bench("e2e_ltx_video")
    compiled = []
    monkeypatch.setattr(mod, "compile_blocks", lambda m: compiled.append(mod.COMPILE_MODE))
    monkeypatch.setattr(mod, "uncompile_blocks", lambda m: None)
    out = tmp_path / "modes.json"
    mod.main(["--tiny", "--device", "cpu", "--steps", "2", "--warmup-iterations", "0", "--timed-runs", "1",
              "--compare", "--compile-mode", "default", "reduce-overhead", "--quantization", "fp8",
              "--peers", "tensorwise", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    names = [r["variant"] for r in rows]
    pairs = ["compile", "peer:scaled_mm-tensorwise+compile", "optimized+compile", "optimized+fp8+compile"]
    for n in pairs:
        ro = n.replace("compile", "compile[reduce-overhead]")
        assert names.index(ro) == names.index(n) + 1, names  # right after its default-mode row
    by = {r["variant"]: r for r in rows}
    assert {by[n]["compile_mode"] for n in pairs} == {"default"}
    assert {by[n.replace("compile", "compile[reduce-overhead]")]["compile_mode"] for n in pairs} == {"reduce-overhead"}
    assert "optimized+fp8+compile(all kernels)" in names
    assert not any("all kernels" in n and "[" in n for n in names)
    assert compiled == [by[n]["compile_mode"] for n in names if "compile" in n], compiled
    assert mod.COMPILE_MODE == "default"  # the first mode again after the table

    compiled.clear()
    mod.main(["--tiny", "--device", "cpu", "--steps", "2", "--warmup-iterations", "0", "--timed-runs", "1",
              "--compare", "--compile-mode", "reduce-overhead", "default", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    names = [r["variant"] for r in rows]
    assert len(set(names)) == len(names), names
    assert names.index("compile") == names.index("compile[reduce-overhead]") + 1
    modes = {r["variant"]: r["compile_mode"] for r in rows if "compile" in r["variant"]}
    assert "optimized+compile(all kernels)" not in modes  # the policy rows: the first mode only
    assert modes["optimized+compile[reduce-overhead](all kernels)"] == "reduce-overhead"
    assert modes["compile"] == "default" and compiled == [modes[n] for n in names if "compile" in n]


# ---- the attention projections in one GEMM (processors.FusedProjections) ----------------------

FUSED_FORMATS = ["fp8", "fp8_rowwise"]


def _fused_calls_match(o, kw):
    """Runs o with every call of an attention module's projections in one layer recorded, and
    checks each against the separate layers it replaces on the same input: equal on the CPU (each
    output channel is the same products, scales and bias, summed in the same order); on CUDA,
    where the GEMM's algorithm may change with N, relative L2 <= 2^-7 (two bf16 roundings of
    the same fp32 sum differ by at most one unit each: ~2^-8 / sqrt(3) when every element
    differs). Returns the number of calls checked; raises AssertionError on a mismatch."""
    from ltx_kernels.integrations.diffusers.processors import PROJECTIONS

    calls = []
    handles = []
    for mod in o.modules():
        p = mod._modules.get(PROJECTIONS)
        if p is None:
            continue
        for fused, layers in ((p.qkv, p.layers), (p.kv, p.layers[1:])):
            if fused is not None:
                hook = (lambda layers: lambda m, args, y: calls.append((args[0], y, layers)))(layers)
                handles.append(fused.register_forward_hook(hook))
    try:
        run(o, kw)
    finally:
        for h in handles:
            h.remove()
    for x, y, layers in calls:
        with torch.no_grad():
            want = torch.cat([lin(x) for lin in layers], -1)
        if y.device.type == "cpu":
            assert torch.equal(y, want), "a fused projection differs from its layers"
        else:
            assert rel_err(y, want) <= 2.0**-7, rel_err(y, want)
    return len(calls)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("model", ["ltx_video", "ltx2"])
@pytest.mark.parametrize("fmt", FUSED_FORMATS)
@pytest.mark.parametrize("attention", [None, "fp8"], ids=["sdpa", "attn-fp8"])
def test_fused_projections(device, model, fmt, attention, monkeypatch):
    """optimize(quantization=fp8 | fp8_rowwise) gives every attention module whose to_q / to_k /
    to_v can be one layer its FusedProjections: the layers' weights are views of its rows (held
    once), every self-attention call runs qkv and every cross-attention call kv, each call equals
    the separate layers on its input, and the model's output equals the output with the separate
    layers (on the CPU exactly). Nothing new in state_dict. With attention="fp8" every call runs
    our kernel (the key-count rule patched), so the FP8 operands' producers read q, k and v as
    views of the fused output."""
    from ltx_kernels.integrations import _compile_policy as policy
    from ltx_kernels.integrations.diffusers.processors import PROJECTIONS

    if attention:
        monkeypatch.setattr(policy, "use_kernel_attention", lambda *a: True)
    m, kw = _fp8_model(model, device)
    o = optimized_copy(m, quantization=fmt, attention=attention)
    attns = [mod for mod in o.modules() if type(mod).__name__ in ("LTXAttention", "LTX2Attention")]
    projs = [a._modules.get(PROJECTIONS) for a in attns]
    assert attns and all(p is not None for p in projs)
    for a, p in zip(attns, projs):
        fused = p.qkv if p.qkv is not None else p.kv
        assert p.kv is not None and a.to_k.weight_q.untyped_storage().data_ptr() == fused.weight_q.untyped_storage().data_ptr()
        if p.qkv is not None:
            assert p.kv.weight_q.untyped_storage().data_ptr() == p.qkv.weight_q.untyped_storage().data_ptr()
    assert not any(PROJECTIONS in k for k in o.state_dict())
    n = _fused_calls_match(o, kw)
    assert n >= len(attns), n  # at least one call per module (LTX-2's audio / cross-modal ones too)
    got = run(o, kw)
    separate = copy.deepcopy(o)
    for a in separate.modules():
        a._modules.pop(PROJECTIONS, None)
    want = run(separate, kw)
    for g, w in zip(got, want):
        if device == "cpu":
            assert torch.equal(g, w)
        else:
            assert rel_err(g, w) <= FP8_LINEARS_REL / 4, rel_err(g, w)


@pytest.mark.parametrize("fmt", FUSED_FORMATS)
def test_fused_projections_check_fails_wrong_rows(fmt):
    """The per-call check above fails a fused layer whose scales are 10% off, or whose rows hold
    the layers in another order."""
    from ltx_kernels.integrations.diffusers.processors import PROJECTIONS

    m, kw = _fp8_model("ltx_video", "cpu")
    for mutation in ("scales_x1.1", "k_v_swapped"):
        o = optimized_copy(m, quantization=fmt)
        p = o.transformer_blocks[0].attn1._modules[PROJECTIONS]
        if mutation == "scales_x1.1":
            p.qkv.weight_scales = p.qkv.weight_scales * 1.1  # its own copy: the layers keep theirs
        else:  # v's rows where k's belong: the split hands v's columns to the key
            q, k, v = p.layers
            p.qkv = quantization.concat_fp8_linears((q, v, k), persistent=False)
        with pytest.raises(AssertionError):
            _fused_calls_match(o, kw)


def test_fused_projections_hooks_moves_and_replaced_layers():
    """A hook on a replaced layer keeps the separate layers (its hook runs); a move of the module
    (`_apply`, as `.to()` does) points the layers at the moved rows again; a layer replaced
    after optimize() is used as it is, and a second optimize() rebuilds the projections."""
    from ltx_kernels.integrations.diffusers.processors import PROJECTIONS

    m, kw = _fp8_model("ltx_video", "cpu")
    o = optimized_copy(m, quantization="fp8_rowwise")
    want = run(o, kw)
    attn = o.transformer_blocks[0].attn1
    p = attn._modules[PROJECTIONS]
    seen = []
    h = attn.to_k.register_forward_hook(lambda *a: seen.append(1))
    fused_calls = []
    h2 = p.qkv.register_forward_hook(lambda *a: fused_calls.append(1))
    got = run(o, kw)
    h.remove()
    h2.remove()
    assert seen and not fused_calls  # the hooked layer ran itself
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    o._apply(lambda t: t.clone())  # every buffer a new tensor, as a device move makes them
    assert attn.to_q.weight_q.untyped_storage().data_ptr() == p.qkv.weight_q.untyped_storage().data_ptr()
    assert p.kv.weight_q.untyped_storage().data_ptr() == p.qkv.weight_q.untyped_storage().data_ptr()
    assert all(torch.equal(g, w) for g, w in zip(run(o, kw), want))
    # replaced after optimize(): the new layer runs (its weights scaled by 2: the output changes)
    old_q = attn.to_q
    new_q = copy.deepcopy(old_q)
    new_q.weight_scales = new_q.weight_scales * 2
    attn.to_q = new_q
    changed = run(o, kw)
    assert not all(torch.equal(g, w) for g, w in zip(changed, want))
    lkd.optimize(o)  # rebuilt for the new layers
    p2 = attn._modules[PROJECTIONS]
    assert p2 is not p and p2.layers[0] is new_q
    assert all(torch.equal(g, w) for g, w in zip(run(o, kw), changed))
