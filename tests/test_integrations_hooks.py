"""ltx_kernels.integrations.diffusers.optimize together with diffusers' model hooks, on tiny
LTX-Video and LTX-2 transformers (CPU, fp32): the caches of `enable_cache` (FirstBlockCache,
MagCache, TaylorSeer, FasterCache, Pyramid Attention Broadcast, the text KV cache), group
offloading and layerwise casting, each applied before and after `optimize`, and torch.compile
on top.

The oracle is the same hook on the untouched diffusers model (a deep copy with the same random
weights). A cache makes each call depend on the calls before it, so both models run the same
denoising loop: STEPS Euler flow-matching steps over sigmas 1 -> 0 (timestep = 1000 sigma, the
scheduler-like sequence the LTX pipelines feed), each call inside `cache_context`, as the
pipelines do. Checked for every hook x order:

- final latents within TOL = 6e-7 relative L2 of the hooked eager model's. One optimized forward
  is ~2e-7 from eager in fp32 (summation orders: 1.8e-7 - 2.1e-7, test_integrations_attention.py);
  an Euler step adds (s_next - s) * v and the steps' |s_next - s| sum to 1, so over the loop the
  differences stay of that size as long as every cache decision is the same (checked next):
  measured 9.6e-8 - 2.2e-7 over every hook, model and order here; TOL is 2.7x the largest;
- the same number of block and attention executions as the hooked eager model (counted on the
  feed-forwards and the to_q projections) and, for the caches that skip work, fewer than without
  the hook: the cache still skips the same blocks;
- every block that runs, runs the fused forward (the fused norms are counted per execution);
- `disable_cache()` leaves the optimized model without hooks, fused, with the uncached output.
"""

import copy
import math
import re

import pytest
import torch

import ltx_kernels  # noqa: F401

diffusers = pytest.importorskip("diffusers")
lkd = pytest.importorskip("ltx_kernels.integrations.diffusers")

import diffusers.hooks as dh  # noqa: E402
import diffusers.hooks.group_offloading as go  # noqa: E402
from fp8_oracles import assert_calls_within, recording_fp8_linears  # noqa: E402
from test_integrations_diffusers import ltx2, ltx2_inputs, ltx_video, rel_err, video_inputs  # noqa: E402

STEPS = 6
TOL = 6e-7  # fp32, see the module docstring
# optimize(quantization="fp8") through the bf16 denoising loops below (2 and 4 steps), relative L2
# of the final latents against the bf16 model's: measured 0.021 - 0.025; 2.4x. (Each FP8 linear
# call is checked against its oracle too, fp8_oracles.py.)
FP8_LOOP_REL = 0.06
ORDERS = ["hook_then_optimize", "optimize_then_hook"]
# fused norm_mod calls per executed block, feed-forwards per block
NORMS_PER_BLOCK = {"ltx_video": 2, "ltx2": 10}
FF_PER_BLOCK = {"ltx_video": 1, "ltx2": 2}
BLOCK_FORWARD = {"ltx_video": lkd.ltx_video.block_forward, "ltx2": lkd.ltx2.block_forward}


def build(model, affine=False, **kw):
    if model == "ltx_video":
        return ltx_video(affine=affine, **kw)
    return ltx2(rope_type="split", gated=True, affine=affine, **kw)


class Loop:
    """The denoising loop both models run; `t` is the current timestep (for the hooks'
    current_timestep_callback, as `pipe.current_timestep`)."""

    def __init__(self, model_name, dtype=torch.float32, steps=STEPS):
        self.name, self.dtype, self.steps = model_name, dtype, steps
        self.t = 1000.0

    def inputs(self):
        if self.name == "ltx_video":
            return video_inputs("cpu", self.dtype)
        return ltx2_inputs("cpu", self.dtype)

    def __call__(self, model, run=None):
        kw = self.inputs()
        keys = ["hidden_states"] + (["audio_hidden_states"] if self.name == "ltx2" else [])
        lat = [kw[k].float() for k in keys]
        sig = torch.linspace(1.0, 0.0, self.steps + 1).tolist()
        run = model if run is None else run
        for i in range(self.steps):
            self.t = sig[i] * 1000.0
            for k, x in zip(keys, lat):
                kw[k] = x.to(self.dtype)
            kw["timestep"] = torch.full((lat[0].shape[0],), self.t)
            if self.name == "ltx2":
                kw["audio_timestep"] = kw["timestep"]
            with torch.no_grad(), model.cache_context("cond_uncond"):
                out = run(**kw)
            lat = [x + (sig[i + 1] - sig[i]) * v.float() for x, v in zip(lat, out)]
        return lat


ATTENTION_MODULES = r"transformer_blocks\.\d+\.(attn\d|audio_attn\d|audio_to_video_attn|video_to_audio_attn)"


def cache_config(name, loop):
    clock = lambda: loop.t  # noqa: E731
    n = loop.steps
    if name == "first_block":
        return dh.FirstBlockCacheConfig(threshold=0.3)
    if name == "mag":  # flat ratios: skips decided by the schedule (retention, max_skip_steps)
        return dh.MagCacheConfig(threshold=0.5, max_skip_steps=2, retention_ratio=0.2, num_inference_steps=n,
                                 mag_ratios=[1.0] * n)
    if name == "taylorseer":  # the default patterns match no LTX-Video attention: name them
        return dh.TaylorSeerCacheConfig(
            cache_interval=2, disable_cache_before_step=2, taylor_factors_dtype=torch.float32,
            cache_identifiers=[ATTENTION_MODULES],
        )
    if name == "taylorseer_blocks":  # whole blocks predicted
        return dh.TaylorSeerCacheConfig(cache_interval=2, disable_cache_before_step=2,
                                        taylor_factors_dtype=torch.float32, cache_identifiers=[r"transformer_blocks\.\d+"])
    if name == "taylorseer_lite":  # blocks skipped, proj_out predicted
        return dh.TaylorSeerCacheConfig(cache_interval=2, disable_cache_before_step=2,
                                        taylor_factors_dtype=torch.float32, use_lite_mode=True)
    if name == "faster":  # guidance-distilled mode: diffusers' CFG mode needs a [B, C, F, H, W] output
        return dh.FasterCacheConfig(is_guidance_distilled=True, spatial_attention_timestep_skip_range=(-1, 901),
                                    current_timestep_callback=clock)
    if name == "pab":
        return dh.PyramidAttentionBroadcastConfig(
            spatial_attention_block_skip_range=2, cross_attention_block_skip_range=3,
            spatial_attention_timestep_skip_range=(-1, 901), cross_attention_timestep_skip_range=(-1, 901),
            current_timestep_callback=clock,
        )
    if name == "text_kv":
        return dh.TextKVCacheConfig()
    raise AssertionError(name)


CACHES = ["first_block", "mag", "taylorseer", "taylorseer_blocks", "taylorseer_lite", "faster", "pab", "text_kv"]
NO_SKIP = {"text_kv"}  # a no-op on LTX (diffusers caches text K/V for one other block class only)


def counters(model):
    """Torch forward pre-hooks (not diffusers hooks) counting feed-forward and to_q calls."""
    c = {"ff": 0, "to_q": 0}

    def bump(key):
        def f(*_):
            c[key] += 1
        return f

    for n, m in model.named_modules():
        if n.endswith((".ff", ".audio_ff")):
            m.register_forward_pre_hook(bump("ff"))
        elif n.endswith(".to_q"):
            m.register_forward_pre_hook(bump("to_q"))
    return c


@pytest.fixture
def fused_norms(monkeypatch):
    """Counts the fused norm_mod calls of the fused block forwards."""
    n = {"calls": 0}
    for mod in (lkd.ltx_video, lkd.ltx2):
        orig = mod.norm_mod

        def counting(*a, _orig=orig, **k):
            n["calls"] += 1
            return _orig(*a, **k)

        monkeypatch.setattr(mod, "norm_mod", counting)
    return n


def apply(order, model, hook, **opt):
    if order == "hook_then_optimize":
        hook(model)
        lkd.optimize(model, **opt)
    else:
        lkd.optimize(model, **opt)
        hook(model)


def assert_fused(model_name, m):
    for b in m.transformer_blocks:
        assert getattr(b, "_ltx_kernels_patched", False)
        proc = type(b.attn1.processor).__name__
        assert proc in ("LTXVideoFusedAttnProcessor", "LTX2FusedAttnProcessor"), proc


_plain_cache = {}


def plain_run(model_name):
    """Uncached eager loop and its execution counts (once per model)."""
    if model_name not in _plain_cache:
        m = build(model_name)
        c = counters(m)
        _plain_cache[model_name] = (Loop(model_name)(m), dict(c))
    return _plain_cache[model_name]


# ---- caches ---------------------------------------------------------------------------------


_ref_cache = {}


def hooked_eager_run(model_name, cache):
    """The cache on the unoptimized model: (final latents, execution counts), or the ValueError
    diffusers raises when enabling it (once per model and cache, shared by both orders)."""
    key = (model_name, cache)
    if key not in _ref_cache:
        ref, loop = build(model_name), Loop(model_name)
        try:
            ref.enable_cache(cache_config(cache, loop))
        except ValueError as e:
            _ref_cache[key] = e
        else:
            c = counters(ref)
            _ref_cache[key] = (loop(ref), dict(c))
    return _ref_cache[key]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("model_name", ["ltx_video", "ltx2"])
def test_cache_composes_with_optimize(model_name, cache, order, fused_norms):
    loop = Loop(model_name)
    plain, plain_counts = plain_run(model_name)
    ref = hooked_eager_run(model_name, cache)
    o = build(model_name)
    if isinstance(ref, ValueError):
        # diffusers 0.42.1 itself refuses FirstBlockCache and MagCache on LTX-2 (its block class
        # is not in diffusers' TransformerBlockRegistry): the same error in either order, and
        # the optimized model keeps working uncached
        assert model_name == "ltx2" and cache in ("first_block", "mag"), ref
        with pytest.raises(ValueError, match=re.escape(str(ref))):
            apply(order, o, lambda m: m.enable_cache(cache_config(cache, loop)))
        if order == "hook_then_optimize":
            lkd.optimize(o)
        assert_fused(model_name, o)
        for g, w in zip(loop(o), plain):
            assert rel_err(g, w) < TOL
        return
    want, ref_counts = ref

    apply(order, o, lambda m: m.enable_cache(cache_config(cache, loop)))
    assert_fused(model_name, o)
    counts = counters(o)
    fused_norms["calls"] = 0
    got = loop(o)

    assert counts == ref_counts, (counts, ref_counts)
    if cache not in NO_SKIP:
        assert counts["ff"] < plain_counts["ff"] or counts["to_q"] < plain_counts["to_q"], (counts, plain_counts)
        assert max(rel_err(w, p) for w, p in zip(want, plain)) > 1e-3  # the cache changed the result
    blocks_run = counts["ff"] // FF_PER_BLOCK[model_name]
    assert fused_norms["calls"] == NORMS_PER_BLOCK[model_name] * blocks_run > 0
    for g, w in zip(got, want):
        assert rel_err(g, w) < TOL, rel_err(g, w)

    # disable_cache(): no hooks left on the blocks, the fused forward and processors in place,
    # the uncached result (one call against the unoptimized, unhooked model)
    o.disable_cache()
    assert_fused(model_name, o)
    for b in o.transformer_blocks:
        assert getattr(b.forward, "__func__", None) is BLOCK_FORWARD[model_name]
        assert not getattr(getattr(b, "_diffusers_hook", None), "hooks", None)
    kw = loop.inputs()
    with torch.no_grad():
        for g, w in zip(o(**kw), build(model_name)(**kw)):
            assert rel_err(g, w) < TOL, rel_err(g, w)


def test_taylorseer_default_patterns_on_ltx():
    """TaylorSeer's default patterns ('^transformer_blocks.*attn', full match) select LTX-2's
    cross-modal attentions only and nothing in LTX-Video: documented, and what the tests above
    name explicitly."""
    for model_name, want in (("ltx_video", set()), ("ltx2", {"audio_to_video_attn", "video_to_audio_attn"})):
        m = build(model_name)
        lkd.optimize(m)
        m.enable_cache(dh.TaylorSeerCacheConfig())
        hooked = {n.split(".")[-1] for n, mod in m.named_modules() if getattr(mod, "_diffusers_hook", None)
                  and mod._diffusers_hook.get_hook("taylorseer_cache") is not None}
        assert hooked == want, hooked


# ---- torch.compile on top -------------------------------------------------------------------


@pytest.mark.parametrize("model_name,cache,order", [
    ("ltx_video", "first_block", "hook_then_optimize"),  # block-level hooks, fused forward beneath
    ("ltx_video", "taylorseer", "optimize_then_hook"),  # attention-level hooks over the fused processors
])
def test_cache_optimize_compile(model_name, cache, order):
    # the whole transformer under torch.compile (aot_eager on CPU: the graph machinery without a
    # C++ inductor build); the cache hooks' decisions run eagerly (torch.compiler.disable in
    # diffusers), the blocks in compiled regions
    torch._dynamo.reset()
    loop = Loop(model_name)
    want, ref_counts = hooked_eager_run(model_name, cache)
    o = build(model_name)
    apply(order, o, lambda m: m.enable_cache(cache_config(cache, loop)))
    counts = counters(o)
    compiled = torch.compile(o, backend="aot_eager")
    got = loop(o, run=compiled)
    assert counts == ref_counts, (counts, ref_counts)
    for g, w in zip(got, want):
        assert rel_err(g, w) < TOL, rel_err(g, w)
    torch._dynamo.reset()


# ---- group offloading -----------------------------------------------------------------------


def _send_to_device(x, device, non_blocking=False):
    # accelerate's send_to_device, which diffusers' group offloading imports from accelerate
    if torch.is_tensor(x):
        return x.to(device, non_blocking=non_blocking)
    if isinstance(x, (list, tuple)):
        return type(x)(_send_to_device(v, device, non_blocking) for v in x)
    if isinstance(x, dict):
        return {k: _send_to_device(v, device, non_blocking) for k, v in x.items()}
    return x


@pytest.fixture
def poisoned_offload(monkeypatch):
    """Group offloading between CPU and CPU, with offloaded tensors filled with NaN until their
    group is onloaded again: a kernel that reads a weight its group has not onloaded (as on a GPU,
    where it would still be on the CPU, or a disk-offloaded placeholder) gives NaN."""
    if not hasattr(go, "send_to_device"):  # accelerate is not installed
        monkeypatch.setattr(go, "send_to_device", _send_to_device, raising=False)
    saved = {}
    onload, offload = go.ModuleGroup.onload_, go.ModuleGroup.offload_

    def tensors(g):
        ts = [t for m in g.modules for t in (*m.parameters(), *m.buffers())] + list(g.parameters) + list(g.buffers)
        return list({id(t): t for t in ts if t.is_floating_point()}.values())

    def poisoning_offload(self):
        offload(self)
        for t in tensors(self):
            saved.setdefault(id(t), t.data)
            t.data = torch.full_like(t.data, math.nan)

    def restoring_onload(self):
        for t in tensors(self):
            if id(t) in saved:
                t.data = saved.pop(id(t))
        onload(self)

    monkeypatch.setattr(go.ModuleGroup, "offload_", poisoning_offload)
    monkeypatch.setattr(go.ModuleGroup, "onload_", restoring_onload)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("offload_type", ["block_level", "leaf_level"])
@pytest.mark.parametrize("model_name", ["ltx_video", "ltx2"])
def test_group_offload_composes_with_optimize(model_name, offload_type, order, poisoned_offload):
    base = build(model_name, affine=True)  # norms with weights: the fused kernels read them
    loop = Loop(model_name, steps=2)
    cpu = torch.device("cpu")

    def offload(m):
        m.enable_group_offload(cpu, cpu, offload_type=offload_type, num_blocks_per_group=1)

    plain = loop(copy.deepcopy(base))
    ref = copy.deepcopy(base)
    offload(ref)
    norm_q = ref.transformer_blocks[0].attn1.norm_q.weight
    assert torch.isnan(norm_q).all()  # offloaded: the harness would expose a read that bypasses hooks
    want = loop(ref)
    for w, p in zip(want, plain):
        assert rel_err(w, p) == 0.0

    o = copy.deepcopy(base)
    apply(order, o, offload)
    assert_fused(model_name, o)
    got = loop(o)
    for g, w in zip(got, want):
        assert torch.isfinite(g).all()
        assert rel_err(g, w) < TOL, rel_err(g, w)


@pytest.mark.parametrize("offload_type", ["block_level", "leaf_level"])
def test_group_offload_with_quantization(offload_type, poisoned_offload):
    # quantize first, then offload: the FP8 layers (their codes and scales, the FP8 hand-offs
    # between the fused norm, the up GEMM's epilogue and the down GEMM) under offloading hooks;
    # the other order is refused (the quantized layers would be built from offloaded weights)
    cpu = torch.device("cpu")
    base = build("ltx_video", affine=True, heads=2, head_dim=64).to(torch.bfloat16)  # hidden 128: one FP8 group
    loop = Loop("ltx_video", dtype=torch.bfloat16, steps=2)
    want = loop(copy.deepcopy(base))
    o = copy.deepcopy(base)
    lkd.optimize(o, quantization="fp8")
    o.enable_group_offload(cpu, cpu, offload_type=offload_type, num_blocks_per_group=1)
    with recording_fp8_linears(base, o) as calls:
        got = loop(o)
    assert_calls_within(calls, f"FP8 linears under {offload_type} offloading")
    assert torch.isfinite(got[0]).all() and rel_err(got[0], want[0]) <= FP8_LOOP_REL, rel_err(got[0], want[0])

    o = copy.deepcopy(base)
    o.enable_group_offload(cpu, cpu, offload_type=offload_type, num_blocks_per_group=1)
    with pytest.raises(ValueError, match=r"^ltx_kernels\.integrations\.diffusers\.optimize: quantization cannot be "
                                         r"combined with diffusers' group offloading applied before it"):
        lkd.optimize(o, quantization="fp8")


# ---- layerwise casting ----------------------------------------------------------------------


def _layerwise_casting(kind):
    def f(m):
        if kind == "default":  # linears stored in FP8; norms, proj_in/out skipped (diffusers' patterns)
            m.enable_layerwise_casting(storage_dtype=torch.float8_e4m3fn, compute_dtype=torch.float32)
        else:  # one hook on the transformer: every weight, norms included, stored in FP8
            dh.apply_layerwise_casting(m, torch.float8_e4m3fn, torch.float32, skip_modules_pattern=None)
    return f


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["default", "whole_model"])
@pytest.mark.parametrize("model_name", ["ltx_video", "ltx2"])
def test_layerwise_casting_composes_with_optimize(model_name, kind, order):
    base = build(model_name, affine=True)
    loop = Loop(model_name, steps=2)
    ref = copy.deepcopy(base)
    _layerwise_casting(kind)(ref)
    want = loop(ref)
    assert max(rel_err(w, p) for w, p in zip(want, loop(copy.deepcopy(base)))) > 1e-3  # FP8 storage is lossy
    o = copy.deepcopy(base)
    apply(order, o, _layerwise_casting(kind))
    assert_fused(model_name, o)
    for g, w in zip(loop(o), want):
        assert rel_err(g, w) < TOL, rel_err(g, w)


@pytest.mark.parametrize("order", ORDERS)
def test_quantization_with_layerwise_casting_is_refused(order):
    m = build("ltx_video")
    if order == "hook_then_optimize":
        _layerwise_casting("default")(m)
        with pytest.raises(ValueError, match=r"^ltx_kernels\.integrations\.diffusers\.optimize: quantization "
                                             r"cannot be combined with diffusers' layerwise casting"):
            lkd.optimize(m, quantization="fp8")
    else:
        lkd.optimize(m)  # unquantized first, then layerwise casting, then asking for quantization
        _layerwise_casting("default")(m)
        with pytest.raises(ValueError, match="cannot be combined with diffusers' layerwise casting"):
            lkd.optimize(m, quantization="fp8")


def test_whole_model_layerwise_casting_after_quantization_fails_loudly():
    # one casting hook on the root casts every floating tensor, the FP8 codes included: the FP8
    # GEMM then rejects its operand (an error, not a wrong result); diffusers' default patterns
    # leave the quantized layers alone
    base = build("ltx_video", heads=2, head_dim=64).to(torch.bfloat16)
    kw = Loop("ltx_video", dtype=torch.bfloat16).inputs()
    m = copy.deepcopy(base)
    lkd.optimize(m, quantization="fp8")
    m.enable_layerwise_casting(storage_dtype=torch.float8_e4m3fn, compute_dtype=torch.bfloat16)
    with torch.no_grad():  # default patterns: only the remaining nn.Linear layers are cast
        assert torch.isfinite(m(**kw)[0]).all()
    m = copy.deepcopy(base)
    lkd.optimize(m, quantization="fp8")
    dh.apply_layerwise_casting(m, torch.float8_e4m3fn, torch.bfloat16, skip_modules_pattern=None)
    with pytest.raises(RuntimeError, match=r"^ltx_kernels\.fp8_blockwise_gemm: .* must be float8_e4m3fn"):
        with torch.no_grad():
            m(**kw)


# ---- what cannot work is refused -------------------------------------------------------------


def test_forward_replacing_hook_on_a_fused_norm_is_refused():
    # a cache hook on q-norm: the fused q/k norm + RoPE kernel never calls the module, so it
    # cannot run the hook; the unoptimized model can
    loop = Loop("ltx_video", steps=3)
    cfg = dict(cache_interval=2, disable_cache_before_step=1, taylor_factors_dtype=torch.float32,
               cache_identifiers=[r"transformer_blocks\.0\.attn1\.norm_q"])
    ref = build("ltx_video")
    ref.enable_cache(dh.TaylorSeerCacheConfig(**cfg))
    loop(ref)
    o = build("ltx_video")
    lkd.optimize(o)
    o.enable_cache(dh.TaylorSeerCacheConfig(**cfg))
    with pytest.raises(RuntimeError, match=r"^ltx_kernels\.integrations\.diffusers: a norm computed inside a fused "
                                           r"kernel must not carry diffusers hooks that replace its forward"):
        loop(o)


def test_fp8_handoff_skipped_for_hooked_attention():
    # with FP8 linears the fused norm hands (q, scales) to the attention; FasterCache's hook on
    # that attention reads hidden_states as a tensor, so the block quantizes in the projection
    # instead. bf16 (the FP8 paths need it), hidden 128 (one FP8 group)
    base = build("ltx_video", heads=2, head_dim=64).to(torch.bfloat16)
    loop = Loop("ltx_video", dtype=torch.bfloat16, steps=4)
    ref = copy.deepcopy(base)
    ref.enable_cache(cache_config("faster", loop))
    ref_counts = counters(ref)
    want = loop(ref)
    for order in ORDERS:
        o = copy.deepcopy(base)
        apply(order, o, lambda m: m.enable_cache(cache_config("faster", loop)), quantization="fp8")
        counts = counters(o)
        with recording_fp8_linears(base, o) as calls:
            got = loop(o)
        assert counts == ref_counts
        assert_calls_within(calls, f"FP8 linears, {order}")
        assert rel_err(got[0], want[0]) <= FP8_LOOP_REL, rel_err(got[0], want[0])


# ---- the end-to-end benchmarks' --cache mode (tiny, CPU) --------------------------------------


@pytest.mark.parametrize("script,caches", [
    ("e2e_ltx_video", ["first_block", "mag", "taylorseer"]),
    ("e2e_ltx2", ["first_block", "taylorseer"]),
])
def test_e2e_cache_tiny_smoke(script, caches, tmp_path):
    import json

    from conftest import load_bench

    mod = load_bench(script)
    out = tmp_path / "c.json"
    rc = mod.main(["--tiny", "--device", "cpu", "--steps", "6", "--warmup-iterations", "0", "--cache", *caches,
                   "--cache-threshold", "0.3", "--out", str(out)])
    assert rc in (None, 0)
    res = json.loads(out.read_text())
    assert res["cache"] == caches and res["steps"] == 6
    rows = {r["variant"]: r for r in res["rows"]}
    assert list(rows) == [s if c is None else f"{s}+{c}" for s in ("eager", "optimized") for c in [None, *caches]]
    full = rows["eager"]["last_block_calls"]
    assert full > 0 and rows["eager"]["rel_l2_vs_eager"] == 0.0
    for stage in ("eager", "optimized"):
        for c in caches:
            r = rows[f"{stage}+{c}"]
            if script == "e2e_ltx2" and c == "first_block":  # diffusers refuses it on LTX-2
                assert "not registered" in r["error"]
                continue
            assert r["mean_step_ms"] > 0 and r["last_block_calls"] < full  # the cache skipped work
            assert 1e-4 < r["rel_l2_vs_eager"] < 0.5  # a cached run differs from the uncached one
    assert rows["optimized"]["rel_l2_vs_eager"] < 1e-4  # fp32: optimized == eager
    for c in caches:  # the same cache decisions with and without optimize()
        e, o = rows[f"eager+{c}"], rows[f"optimized+{c}"]
        if "error" not in e:
            assert o["last_block_calls"] == e["last_block_calls"]
            assert abs(o["rel_l2_vs_eager"] - e["rel_l2_vs_eager"]) < 1e-4
