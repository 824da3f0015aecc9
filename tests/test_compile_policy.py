"""The integrations' compile policy (ltx_kernels.integrations._compile_policy): in eager mode a
replaced forward runs our kernels; while torch.compile traces it, the ops that Inductor runs
faster than our kernel are written as the original PyTorch composition, and the others keep our
kernel. Checked on the graphs Dynamo captures from tiny optimized models (CPU), and on their
outputs against the untouched model. Whether the policy's decisions agree with the H200 records
is benchmarks/check_policy.py's job, not this file's: these tests test the code."""

import copy

import pytest
import torch

import ltx_kernels  # noqa: F401
from ltx_kernels.integrations import _compile_policy

LEFT = sorted(_compile_policy.LEFT_TO_INDUCTOR)


def ltx_ops(graph_targets):
    """Names of the ltx_kernels ops called in captured graphs ('ns.op' or 'ns.op.overload')."""
    return {t.split(".")[1] for t in graph_targets if t.startswith("_ltx_kernels")}


def capturing_backend(targets):
    def backend(gm, example_inputs):
        targets.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    return backend


@pytest.fixture
def keep_all(monkeypatch, request):
    monkeypatch.setattr(_compile_policy, "KEEP_ALL", request.param)
    torch._dynamo.reset()
    yield request.param
    torch._dynamo.reset()


@pytest.mark.parametrize("keep_all", [False, True], indirect=True, ids=["policy", "keep-all"])
def test_use_kernel_eager_and_traced(keep_all):
    ops = LEFT + ["rms_norm", "rms_norm_rope", "attention"]

    def probe(x):
        return x + torch.tensor([float(_compile_policy.use_kernel(op)) for op in ops])

    zero = torch.zeros(len(ops))
    assert probe(zero).tolist() == [1.0] * len(ops)
    traced = torch.compile(probe, backend="eager", fullgraph=True)(zero).tolist()
    want = [1.0 if keep_all or op not in _compile_policy.LEFT_TO_INDUCTOR else 0.0 for op in ops]
    assert traced == want
    assert probe(zero).tolist() == [1.0] * len(ops)  # eager again after tracing


def test_keep_named_ops_under_compile(monkeypatch):
    """LTX_KERNELS_COMPILE_KEEP: the named ops keep our kernel while tracing, the rest of the policy
    stands, eager mode is unchanged (the fp32 tanh GELU still runs PyTorch's), and a name the
    policy does not know is refused."""
    keep = _compile_policy.parse_ops(" quantize_fp8_per_token_group,gelu_tanh ,")
    assert keep == {"quantize_fp8_per_token_group", "gelu_tanh"}
    with pytest.raises(ValueError, match="unknown op.*quantize_fp8"):
        _compile_policy.parse_ops("quantize_fp8")
    assert _compile_policy.parse_ops("") == frozenset()
    monkeypatch.setattr(_compile_policy, "KEEP", keep)
    torch._dynamo.reset()
    ops = LEFT + ["rms_norm"]

    def probe(x):
        return x + torch.tensor([float(_compile_policy.use_kernel(op)) for op in ops])

    zero = torch.zeros(len(ops))
    traced = torch.compile(probe, backend="eager", fullgraph=True)(zero).tolist()
    torch._dynamo.reset()
    assert traced == [1.0 if op in keep or op not in _compile_policy.LEFT_TO_INDUCTOR else 0.0 for op in ops]
    x32 = torch.empty(8, 64, device="meta")
    assert _compile_policy.use_kernel("gelu_tanh", x32) is False  # eager rule, not KEEP


@pytest.mark.parametrize("keep_all", [False, True], indirect=True, ids=["policy", "keep-all"])
@pytest.mark.parametrize("op,shape,dtype,eager,traced", [
    # rms_norm: 16-bit, <= 4096 columns, more than 2^23 elements
    ("rms_norm", (2, 2048, 4096), torch.bfloat16, True, True),
    ("rms_norm", (2048, 4097), torch.float16, True, False),     # > 4096 columns
    ("rms_norm", (4, 1024, 2048), torch.bfloat16, True, False),  # exactly 2^23 elements
    ("rms_norm", (32, 4096), torch.bfloat16, True, False),       # decode
    ("rms_norm", (2, 2048, 4096), torch.float32, True, False),
    ("gelu_and_mul", (8, 64), torch.float16, True, True),
    ("gelu_and_mul", (8, 64), torch.float32, True, False),
    ("gelu_tanh", (8, 64), torch.bfloat16, True, True),    # kept under compile (end to end)
    ("silu_and_mul", (8, 64), torch.bfloat16, True, False),  # LEFT_TO_INDUCTOR while tracing
    ("gelu_tanh", (8, 64), torch.float32, False, False),   # eager: F.gelu(approximate="tanh")
    ("rms_norm_rope", (8, 64), torch.float32, True, True),
])
def test_use_kernel_rules(keep_all, op, shape, dtype, eager, traced):
    """The per-input rules, on inputs of the measured shapes (the tensors are never computed on:
    meta tensors in eager mode, a probe that only reads x's shape and dtype while tracing)."""
    x = torch.empty(shape, dtype=dtype, device="meta")
    assert _compile_policy.use_kernel(op, x) == (keep_all or eager)
    assert _compile_policy.use_kernel(op) is True  # without x: no per-input rule in eager mode

    def probe(t):
        return t.new_full((1,), float(_compile_policy.use_kernel(op, t)))

    t = torch.empty(shape, dtype=dtype)
    got = torch.compile(probe, backend="eager", fullgraph=True, dynamic=False)(t)
    assert bool(got.item()) == (keep_all or traced)


def test_policy_knobs_at_import():
    """LTX_KERNELS_COMPILE_LEAVE / _KEEP are read when the module is imported; a name the policy
    does not know stops the import with the knob's name in the error."""
    import os
    import subprocess
    import sys

    code = ("from ltx_kernels.integrations import _compile_policy as p; "
            "print(sorted(p.LEFT_TO_INDUCTOR), sorted(p.KEEP))")
    env = dict(os.environ, LTX_KERNELS_COMPILE_LEAVE="quantize_fp8_per_token_group",
               LTX_KERNELS_COMPILE_KEEP="silu_and_mul")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'quantize_fp8_per_token_group'" in out.stdout.split("]")[0] and "['silu_and_mul']" in out.stdout
    env["LTX_KERNELS_COMPILE_LEAVE"] = "gelu"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "LTX_KERNELS_COMPILE_LEAVE: unknown op(s) ['gelu']" in out.stderr, out.stderr[-2000:]


@pytest.fixture
def leave_quantizer(monkeypatch, request):
    if request.param:
        monkeypatch.setattr(_compile_policy, "LEFT_TO_INDUCTOR",
                            _compile_policy.LEFT_TO_INDUCTOR | {"quantize_fp8_per_token_group"})
    torch._dynamo.reset()
    yield request.param
    torch._dynamo.reset()


@pytest.mark.parametrize("leave_quantizer", [False, True], indirect=True, ids=["policy", "leave-quantizer"])
def test_fp8_linear_under_compile(leave_quantizer):
    """Under compile FP8BlockwiseLinear quantizes its input with our kernel; left to Inductor
    (LTX_KERNELS_COMPILE_LEAVE=quantize_fp8_per_token_group) it writes the same rule in PyTorch
    ops, and through Inductor's CPU code the result is bit for bit the eager layer's either way."""
    from ltx_kernels.quantization import FP8BlockwiseLinear

    torch.manual_seed(0)
    lin = FP8BlockwiseLinear.from_linear(torch.nn.Linear(256, 384).to(torch.bfloat16))
    x = torch.randn(2, 33, 256, dtype=torch.bfloat16) * 4
    x[0, 3, 7] = float("nan")
    x[1, 5, :128] = 0.0
    want = lin(x)
    targets = []
    got = torch.compile(lin, backend=capturing_backend(targets), fullgraph=True)(x)
    called = ltx_ops(targets)
    assert "fp8_blockwise_gemm" in called, called
    assert ("quantize_fp8_per_token_group" in called) != leave_quantizer, called
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    torch._dynamo.reset()
    got = torch.compile(lin, fullgraph=True, dynamic=False)(x)  # Inductor's generated code
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    # the M-major scales the layer uses on CUDA (strides (1, M_pad)), from Inductor's buffers
    # into our GEMM, M = 66 not a multiple of 4
    composed = ltx_kernels.fp8._quantize_fp8_per_token_group_composed

    def gemm_mn(t):
        q, s = composed(t, 128, "mn_major")
        return ltx_kernels.fp8_blockwise_gemm(q, s, lin.weight_q, lin.weight_scales, lin.bias)

    torch._dynamo.reset()
    got = torch.compile(gemm_mn, fullgraph=True, dynamic=False)(x)
    assert torch.equal(got.view(torch.int16), gemm_mn(x).view(torch.int16))
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))


# ---- diffusers ------------------------------------------------------------------------------

diffusers_tests = pytest.importorskip("test_integrations_diffusers")  # its tiny models and bounds


@pytest.mark.parametrize("keep_all", [False, True], indirect=True, ids=["policy", "keep-all"])
@pytest.mark.parametrize("model", ["ltx_video", "ltx2_gated"])
def test_diffusers_blocks_under_compile(keep_all, model):
    d = diffusers_tests
    if model == "ltx_video":
        m, kw = d.ltx_video(), d.video_inputs("cpu", torch.float32)
        kept = {"rms_norm_rope", "adaln_rms_norm", "gated_residual_adaln_rms_norm"}
    else:
        m, kw = d.ltx2(gated=True), d.ltx2_inputs("cpu", torch.float32)
        kept = {"rms_norm_split_rope", "adaln_rms_norm", "gated_residual_adaln_rms_norm", "gated_attention"}
    if keep_all:  # the tanh GELU's rule leaves fp32 (these tiny models) to PyTorch
        kept = kept | {"gelu_tanh"}
    o = d.optimized_copy(m)
    want = d.run(m, kw)
    exact = d.exact_run(m, kw)
    targets = []
    compiled = torch.compile(o, backend=capturing_backend(targets))
    got = d.run(compiled, kw)
    called = ltx_ops(targets)
    assert called, "no ltx_kernels op in the captured graphs"
    assert kept <= called, called  # every op the diffusers integration installs stays ours
    got, want, exact = (v if isinstance(v, (tuple, list)) else (v,) for v in (got, want, exact))
    for g, w, e in zip(got, want, exact):
        d.assert_no_worse(g, w, e, torch.float32)


@pytest.mark.parametrize("keep_all", [False, True], indirect=True, ids=["policy", "keep-all"])
def test_diffusers_fp8_blocks_under_compile(keep_all):
    """optimize(quantization="fp8") under compile: the FP8 GEMMs, the FP8-output norms and the
    activation quantizer stay ours, and the outputs are bit for bit the eager model's, as close
    to the unquantized model as FP8 allows (test_integrations_diffusers' bound)."""
    d = diffusers_tests
    m, kw = d.ltx_video(heads=2, head_dim=64).to(torch.bfloat16), d.video_inputs("cpu", torch.bfloat16)
    o = d.optimized_copy(m, quantization="fp8")
    want = d.run(o, kw)
    targets = []
    got = d.run(torch.compile(o, backend=capturing_backend(targets)), kw)
    called = ltx_ops(targets)
    assert "fp8_blockwise_gemm" in called, called
    assert "adaln_rms_norm_fp8" in called, called
    assert "quantize_fp8_per_token_group" in called, called
    got, want = (v if isinstance(v, (tuple, list)) else (v,) for v in (got, want))
    plain = d.run(m, kw)
    plain = plain if isinstance(plain, (tuple, list)) else (plain,)
    for g, w, p in zip(got, want, plain):
        assert torch.equal(g, w)
        assert d.calc_diff(g, p) < 2e-2, d.calc_diff(g, p)
        assert d.calc_diff(w, p) < 2e-2, d.calc_diff(w, p)


# ---- transformers ---------------------------------------------------------------------------


@pytest.mark.parametrize("keep_all", [False, True], indirect=True, ids=["policy", "keep-all"])
def test_transformers_llama_under_compile(keep_all):
    tf = pytest.importorskip("test_integrations_transformers")
    from ltx_kernels.integrations import transformers as lk_tf

    model = tf._model("llama")
    ids = tf._ids("cpu")
    want = tf._logits(model, ids)
    opt = lk_tf.optimize(copy.deepcopy(model))
    targets = []
    got = tf._logits(torch.compile(opt, backend=capturing_backend(targets)), ids)
    called = ltx_ops(targets)
    # the tiny fp32 model's RMSNorms are left to Inductor too (rms_norm_wins_compiled); the
    # residual add + norm follows LEFT_TO_INDUCTOR like the gated MLP
    left = {op for op in ("add_rms_norm", "silu_and_mul") if op in _compile_policy.LEFT_TO_INDUCTOR} | {"rms_norm"}
    if keep_all:
        assert {"rms_norm", "add_rms_norm", "silu_and_mul"} <= called, called
    else:
        assert not (called & left), called
        assert {"add_rms_norm", "silu_and_mul"} - left <= called, called
    tf.assert_no_worse(got, want, tf._exact(model, ids))
