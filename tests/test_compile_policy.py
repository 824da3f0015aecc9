"""The integrations' compile policy (ltx_kernels.integrations._compile_policy): in eager mode a
replaced forward runs our kernels; while torch.compile traces it, the ops that Inductor runs
faster than our kernel are written as the original PyTorch composition, and the others keep our
kernel. Checked on the graphs Dynamo captures from tiny optimized models (CPU), and on their
outputs against the untouched model."""

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


# ---- diffusers ------------------------------------------------------------------------------

diffusers_tests = pytest.importorskip("test_integrations_diffusers")  # its tiny models and bounds


@pytest.mark.parametrize("keep_all", [False, True], indirect=True, ids=["policy", "keep-all"])
@pytest.mark.parametrize("model", ["ltx_video", "ltx2_gated"])
def test_diffusers_blocks_under_compile(keep_all, model):
    d = diffusers_tests
    if model == "ltx_video":
        m, kw = d.ltx_video(), d.video_inputs("cpu", torch.float32)
        left = {"adaln_rms_norm", "gated_residual_adaln_rms_norm", "gelu_tanh"}
        kept = {"rms_norm_rope"}
    else:
        m, kw = d.ltx2(gated=True), d.ltx2_inputs("cpu", torch.float32)
        left = {"adaln_rms_norm", "gated_residual_adaln_rms_norm", "gelu_tanh", "gated_attention"}
        kept = {"rms_norm_split_rope"}
    o = d.optimized_copy(m)
    want = d.run(m, kw)
    exact = d.exact_run(m, kw)
    targets = []
    compiled = torch.compile(o, backend=capturing_backend(targets))
    got = d.run(compiled, kw)
    called = ltx_ops(targets)
    assert called, "no ltx_kernels op in the captured graphs"
    assert kept <= called, called  # the RoPE norms stay ours either way
    if keep_all:
        assert left <= called, called
    else:
        assert not (called & left), called
    got, want, exact = (v if isinstance(v, (tuple, list)) else (v,) for v in (got, want, exact))
    for g, w, e in zip(got, want, exact):
        d.assert_no_worse(g, w, e, torch.float32)


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
    assert "rms_norm" in called
    if keep_all:
        assert {"add_rms_norm", "silu_and_mul"} <= called, called
    else:
        assert not (called & {"add_rms_norm", "silu_and_mul"}), called
    tf.assert_no_worse(got, want, tf._exact(model, ids))
