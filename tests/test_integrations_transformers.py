"""ltx_kernels.integrations.transformers.optimize on tiny transformers models (Llama, Qwen2,
Mistral, Qwen3, Gemma): logits and generate() against the unmodified model, each flag alone and
all together, after model.to(dtype), under torch.compile, and the modules it must leave alone.

Tolerances. A model's error has no closed-form bound, so the oracle is the same model in float64
(its definition evaluated precisely) and the optimized model must be no worse than the
unmodified one: fp32, within twice the original fp32 model's largest error plus 2^-22 of the
largest logit (conftest.assert_no_worse with FP32_FLOOR); the last bits of either side's kernels
(summation orders, which cuBLAS kernel the fused gate_up GEMM picks) move these errors by a
fraction of themselves. Measured on the CPU: ours 2.0e-7 - 4.4e-7 of the largest logit, the
original's 2.1e-7 - 4.2e-7; the limit is 1.7x - 3.2x ours. bf16 (CUDA, and CPU after model.to(bfloat16)): the original rounds to bf16 after
every step (normed row, then weight product; act(gate), then * up) where the fused ops round
once; the optimized model must be no further from the float64 model than the original bf16
model is (times 1.5, plus one bf16 ulp of the largest logit), and the direct difference is
bounded by twice the original's own bf16 error plus that ulp.
"""

import copy
import inspect
import logging

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels.integrations import transformers as lk_tf

from bounds import U, norm_rel
from conftest import ALL_DEVICES, TINY_LLAMA, UNIT, assert_no_worse, assert_within, needs_cuda

transformers = pytest.importorskip("transformers")
FP32_FLOOR = 2.0**-22  # of the largest logit (see the module docstring)


def no_worse(got, eager, exact, what=""):
    """fp32: conftest.assert_no_worse with this file's floor."""
    assert_no_worse(got, eager, exact, factor=2.0, floor=FP32_FLOOR, what=what)

VOCAB = TINY_LLAMA["vocab_size"]


def _config(arch, **over):
    common = dict(TINY_LLAMA, tie_word_embeddings=False)
    common.update(over)
    if arch == "llama":
        return transformers.LlamaConfig(**common)
    if arch == "llama_bias":
        return transformers.LlamaConfig(mlp_bias=True, **common)
    if arch == "qwen2":
        return transformers.Qwen2Config(**common)
    if arch == "mistral":
        return transformers.MistralConfig(**common)
    if arch == "qwen3":
        return transformers.Qwen3Config(head_dim=16, **common)
    if arch == "gemma":
        return transformers.GemmaConfig(head_dim=16, hidden_activation="gelu_pytorch_tanh", **common)
    raise ValueError(arch)


def _model(arch, device="cpu", dtype=torch.float32, **over):
    torch.manual_seed(1234)
    model = transformers.AutoModelForCausalLM.from_config(_config(arch, **over), attn_implementation="eager")
    with torch.no_grad():
        for m in model.modules():  # norms start as ones (or zeros for Gemma): make them matter
            if type(m).__name__.endswith("RMSNorm"):
                m.weight.normal_(0.5 if "Gemma" in type(m).__name__ else 1.0, 0.3)
    return model.to(device=device, dtype=dtype).eval()


def _ids(device, batch=2, seq=13):
    return torch.randint(0, VOCAB, (batch, seq), device=device)


def _logits(model, ids, **kw):
    with torch.no_grad():
        return model(ids, **kw).logits


def _exact(model, ids, **kw):
    """The logits of a float64 copy of the (unmodified) model: the oracle."""
    return _logits(copy.deepcopy(model).double(), ids, **kw)


def _is_ours(module, fn):
    return getattr(module.__dict__.get("forward"), "__func__", None) is fn


def _count(model, fn):
    return sum(_is_ours(m, fn) for m in model.modules())


FLAGS = {
    "rms_norm": dict(rms_norm=True, fuse_residual=False, fuse_mlp=False),
    "fuse_residual": dict(rms_norm=False, fuse_residual=True, fuse_mlp=False),
    "fuse_mlp": dict(rms_norm=False, fuse_residual=False, fuse_mlp=True),
    "all": dict(rms_norm=True, fuse_residual=True, fuse_mlp=True),
}


def _check_replaced(model, flags, n_layers=2):
    rms = _count(model, lk_tf._llama_rms_forward)
    dec = _count(model, lk_tf._fused_decoder_forward)
    mlp = _count(model, lk_tf._mlp_forward_silu)
    # per layer: input + post-attention norm (Qwen3 also q_norm, k_norm), one final norm
    assert (rms >= 2 * n_layers + 1) if flags["rms_norm"] else rms == 0
    assert dec == (n_layers if flags["fuse_residual"] else 0)
    assert mlp == (n_layers if flags["fuse_mlp"] else 0)
    for m in model.modules():
        if type(m).__name__.endswith("MLP"):
            assert hasattr(m, "gate_up_proj") == flags["fuse_mlp"]
            assert hasattr(m, "gate_proj") != flags["fuse_mlp"]


def _assert_bf16_close(got, ref_bf16, exact):
    """got (optimized, bf16) vs the original bf16 model, both judged against the float64 model."""
    got, ref_bf16, exact = got.double(), ref_bf16.double(), exact.double()
    err_orig = (ref_bf16 - exact).abs().max().item()
    err_ours = (got - exact).abs().max().item()
    scale = exact.abs().max().item()
    ulp = 2.0**-8 * scale  # one bf16 ulp at the largest logit
    assert err_ours <= 1.5 * err_orig + ulp, (err_ours, err_orig, ulp)
    assert_within(got, ref_bf16, 2 * err_orig + ulp)


@pytest.mark.parametrize("flags", list(FLAGS))
@pytest.mark.parametrize("arch", ["llama", "llama_bias", "qwen2", "mistral", "qwen3"])
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_logits_match_fp32(device, arch, flags):
    needs_cuda(device)
    model = _model(arch, device)
    ids = _ids(device)
    want = _logits(model, ids)
    opt = lk_tf.optimize(copy.deepcopy(model), **FLAGS[flags])
    _check_replaced(opt, FLAGS[flags])
    got = _logits(opt, ids)
    no_worse(got, want, _exact(model, ids))
    # and with an attention mask (left padding), which goes through **kwargs-free paths too
    mask = torch.ones_like(ids)
    mask[0, :4] = 0
    no_worse(_logits(opt, ids, attention_mask=mask), _logits(model, ids, attention_mask=mask),
             _exact(model, ids, attention_mask=mask), what="masked")


@pytest.mark.parametrize("flags", ["all", "fuse_residual", "fuse_mlp"])
@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral"])
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_logits_match_bf16(device, arch, flags):
    needs_cuda(device)
    model = _model(arch, device)
    ids = _ids(device, seq=29)
    ref_fp32 = _exact(model, ids)
    model_bf16 = copy.deepcopy(model).to(torch.bfloat16)
    ref_bf16 = _logits(model_bf16, ids)
    opt = lk_tf.optimize(copy.deepcopy(model_bf16), **FLAGS[flags])
    _check_replaced(opt, FLAGS[flags])
    got = _logits(opt, ids)
    assert got.dtype == torch.bfloat16
    _assert_bf16_close(got, ref_bf16, ref_fp32)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_to_dtype_and_device_after_optimize(device):
    needs_cuda(device)
    model = _model("llama")  # optimize on CPU in fp32, then move and cast
    ids = _ids(device)
    ref_fp32 = _exact(copy.deepcopy(model).to(device), ids)
    ref_bf16 = _logits(copy.deepcopy(model).to(device=device, dtype=torch.bfloat16), ids)
    opt = lk_tf.optimize(model).to(device=device, dtype=torch.bfloat16)
    _check_replaced(opt, FLAGS["all"])
    mlp = opt.model.layers[0].mlp
    assert mlp.gate_up_proj.weight.dtype == torch.bfloat16 and mlp.gate_up_proj.weight.device.type == device
    assert any(n.endswith("gate_up_proj.weight") for n, _ in opt.named_parameters())
    _assert_bf16_close(_logits(opt, ids), ref_bf16, ref_fp32)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral"])
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_generate_identical_fp32(device, arch):
    needs_cuda(device)
    model = _model(arch, device)
    opt = lk_tf.optimize(copy.deepcopy(model))
    ids = _ids(device, batch=2, seq=7)
    kw = dict(max_new_tokens=6, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        want = model.generate(ids, **kw)
        got = opt.generate(ids, **kw)
    assert got.shape == (2, 13)
    if not torch.equal(got, want):
        # Greedy decoding is a discontinuous function of the logits: the two may part only where
        # the float64 model's top two logits are within a few fp32 errors of each other.
        step = int((got != want).any(0).nonzero()[0])
        prefix = want[:, :step]
        lg = _exact(model, prefix)[:, -1].double()
        top2 = lg.topk(2, dim=-1).values
        gap = (top2[:, 0] - top2[:, 1]).min().item()
        assert gap <= 2.0**-16 * lg.abs().max().item(), f"generation parts at step {step} with a logit gap of {gap:.3g}"


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_gemma_norms_left_untouched_and_correct(device, caplog):
    needs_cuda(device)
    model = _model("gemma", device)
    ids = _ids(device)
    want = _logits(model, ids)
    with caplog.at_level(logging.INFO, logger="ltx_kernels"):
        opt = lk_tf.optimize(copy.deepcopy(model))
    norms = [m for m in opt.modules() if type(m).__name__ == "GemmaRMSNorm"]
    assert norms and all("forward" not in m.__dict__ for m in norms)
    # Gemma's decoder layer has Llama's forward but a (1 + weight) post-attention norm: untouched
    assert _count(opt, lk_tf._fused_decoder_forward) == 0
    # its MLP (gelu_pytorch_tanh) is fused with gelu_and_mul(tanh)
    assert _count(opt, lk_tf._mlp_forward_gelu_tanh) == 2
    no_worse(_logits(opt, ids), want, _exact(model, ids))
    text = caplog.text
    assert "GemmaRMSNorm module(s) untouched: Gemma-style" in text
    assert "GemmaDecoderLayer module(s) untouched" in text


def test_log_lines(caplog):
    model = _model("qwen3")
    with caplog.at_level(logging.INFO, logger="ltx_kernels"):
        lk_tf.optimize(model)
    lines = [r.getMessage() for r in caplog.records if r.name == "ltx_kernels"]
    assert "ltx_kernels.optimize: RMSNorm -> rms_norm: replaced the forward of 9 Qwen3RMSNorm module(s)" in lines
    assert any("add_rms_norm: replaced the forward of 2 Qwen3DecoderLayer" in s for s in lines)
    assert any("silu_and_mul: replaced the forward of 2 Qwen3MLP" in s for s in lines)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ltx_kernels"):
        lk_tf.optimize(model)  # second call: nothing new to do, nothing broken
    assert not [r for r in caplog.records if "replaced" in r.getMessage()]


def test_decoder_layer_signature_kept():
    model = _model("llama")
    layer = model.model.layers[0]
    before = inspect.signature(layer.forward)
    lk_tf.optimize(model)
    assert _is_ours(layer, lk_tf._fused_decoder_forward)
    after = inspect.signature(layer.forward)
    assert list(after.parameters) == list(before.parameters)
    assert [p.kind for p in after.parameters.values()] == [p.kind for p in before.parameters.values()]
    assert [p.default for p in after.parameters.values()] == [p.default for p in before.parameters.values()]


def test_hidden_states_and_hooks_still_work():
    model = _model("llama")
    ids = _ids("cpu")
    with torch.no_grad():
        want = model(ids, output_hidden_states=True).hidden_states
        exact = copy.deepcopy(model).double()(ids, output_hidden_states=True).hidden_states
    opt = lk_tf.optimize(copy.deepcopy(model))
    seen = []
    opt.model.layers[1].register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    with torch.no_grad():
        got = opt(ids, output_hidden_states=True).hidden_states
    assert len(got) == len(want) == 3
    for g, w, e in zip(got, want, exact):
        no_worse(g, w, e)
    assert seen == [torch.Size([2, 13, 64])]


def test_unknown_rmsnorm_variant_and_torch_rmsnorm(caplog):
    class ShiftedRMSNorm(torch.nn.Module):  # not a formula optimize knows: must stay as is
        def __init__(self, n):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(n))
            self.variance_epsilon = 1e-6

        def forward(self, x):
            v = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(v + self.variance_epsilon) + self.weight).to(x.dtype)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ShiftedRMSNorm(48)
            self.b = torch.nn.RMSNorm(48, eps=1e-5)
            self.c = torch.nn.RMSNorm(48)  # eps=None: finfo(dtype).eps
            torch.nn.init.normal_(self.b.weight)
            torch.nn.init.normal_(self.c.weight)

        def forward(self, x):
            return self.c(self.b(self.a(x)))

    net = Net().eval()
    x = torch.randn(3, 5, 48)
    with torch.no_grad():
        want = net(x)
        exact = copy.deepcopy(net).double()(x.double())
    with caplog.at_level(logging.INFO, logger="ltx_kernels"):
        lk_tf.optimize(net)
    assert "forward" not in net.a.__dict__
    assert _is_ours(net.b, lk_tf._torch_rms_forward) and _is_ours(net.c, lk_tf._torch_rms_forward)
    assert "left 1 ShiftedRMSNorm module(s) untouched: forward is not a known RMSNorm formula" in caplog.text
    with torch.no_grad():
        no_worse(net(x), want, exact)


def test_rms_weight_dtype_differs_from_input():
    # transformers: `weight * normed.to(input_dtype)` -> an fp32 weight gives an fp32 result
    model = _model("llama")
    norm = model.model.norm
    x = torch.randn(2, 7, 64).to(torch.bfloat16)
    with torch.no_grad():
        want = norm(x)
        lk_tf.optimize(model)
        assert _is_ours(norm, lk_tf._llama_rms_forward)
        got = norm(x)
    assert got.dtype == want.dtype == torch.float32
    # the normalized row rounded to bf16 (within u_bf16 |n| + e32 of the exact n), times the
    # fp32 weight (one more fp32 rounding); torch's own result may round the row the other way
    from ltx_kernels import reference as ref

    n = ref.rms_norm(x, None, norm.variance_epsilon)
    w = norm.weight.detach().double()
    ub = UNIT[torch.bfloat16]
    bound = w.abs() * (ub + (1 + ub) * norm_rel(64)) * n.abs() * (1 + U) + U * (w * n).abs() + 2.0**-133
    assert_within(got, w * n, bound)


def test_fused_mlp_weights_are_gate_then_up():
    model = _model("llama_bias")
    mlp = model.model.layers[0].mlp
    gate_w, up_w = mlp.gate_proj.weight.detach().clone(), mlp.up_proj.weight.detach().clone()
    gate_b, up_b = mlp.gate_proj.bias.detach().clone(), mlp.up_proj.bias.detach().clone()
    x = torch.randn(4, 64)
    with torch.no_grad():
        want = mlp(x)
        exact = copy.deepcopy(mlp).double()(x.double())
    lk_tf.optimize(model, rms_norm=False, fuse_residual=False)
    torch.testing.assert_close(mlp.gate_up_proj.weight, torch.cat([gate_w, up_w]), rtol=0, atol=0)
    torch.testing.assert_close(mlp.gate_up_proj.bias, torch.cat([gate_b, up_b]), rtol=0, atol=0)
    with torch.no_grad():
        no_worse(mlp(x), want, exact)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_torch_compile_optimized_model(device):
    """fullgraph=False: transformers' own code has graph breaks. On CPU the aot_eager backend
    (dynamo + fake tensors through our fake impls + functionalisation, no C++ compile: the CI
    machine is small); on CUDA the default inductor backend."""
    needs_cuda(device)
    torch._dynamo.reset()
    model = _model("llama", device)
    ids = _ids(device)
    want = _logits(model, ids)
    opt = lk_tf.optimize(copy.deepcopy(model))
    compiled = torch.compile(opt, fullgraph=False, backend="aot_eager" if device == "cpu" else "inductor")
    got = _logits(compiled, ids)
    exact = _exact(model, ids)
    no_worse(got, want, exact)
    got2 = _logits(compiled, ids)  # second call runs the cached graph
    no_worse(got2, want, exact)


def test_optimize_rejects_non_module():
    with pytest.raises(TypeError, match="ltx_kernels.optimize: model must be a torch.nn.Module"):
        lk_tf.optimize("not a model")


def test_integrations_package_is_lazy():
    import ltx_kernels.integrations as integ

    assert "transformers" in integ.__all__
    assert integ.transformers is lk_tf
    with pytest.raises(AttributeError):
        integ.no_such_integration
    assert callable(lk.layers.SiluAndMul.forward)
