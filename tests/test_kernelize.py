"""`layers/` through kernels' kernelize: the layer classes follow the Hub layer rules and compute
what the modules they replace compute; a tiny transformers Llama kernelized with
LocalLayerRepository (pointing at this built package's variant folder) has its RMSNorm and SiLU
forwards replaced by ours and gives the same logits.

kernels 0.17.2 supports "cpu" mappings (kernels.layer.repos._CPURepos), so the kernelize tests
run on CPU here and on CUDA where there is a GPU. transformers 5.17 decorates LlamaRMSNorm with
the hub name "RMSNorm" and SiLUActivation with "SiLU"; LlamaMLP itself is not hub-decorated
(there is no "SiluAndMul" module in it to replace), so SiluAndMul is tested as a layer only.
"""

from pathlib import Path

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import layers
from ltx_kernels import reference as ref

from bounds import U, and_mul_e32, gelu_e32, gelu_tanh_e32, norm_rel, silu_e32
from conftest import ALL_DEVICES, DTYPES, TINY_LLAMA, UNIT, assert_close_to, assert_no_worse, assert_within, needs_cuda

PKG = Path(lk.__file__).resolve().parent  # the variant folder holding layers/ (build/<variant>/)
VOCAB = TINY_LLAMA["vocab_size"]


def _and_mul(act, act_e32, act_first):
    """(float64 oracle, fp32 error bound) of act(a) * b (act_first) or a * act(b)."""
    d_ = lambda x: x.shape[-1] // 2  # noqa: E731

    def oracle(x):
        a, b = x[..., :d_(x)].double(), x[..., d_(x):].double()
        return act(a) * b if act_first else a * act(b)

    return oracle, lambda x: and_mul_e32(x, act, act_e32, act_first)


# name -> (attributes of the replaced module, float64 oracle, the kernel's fp32 error bound).
# transformers' FastGELU (0.7978845608 x (1 + 0.044715 x^2)) and NewGELU are the tanh GELU.
LAYER_CASES = {
    "SiluAndMul": ({}, *_and_mul(ref.silu, silu_e32, True)),
    "MulAndSilu": ({}, *_and_mul(ref.silu, silu_e32, False)),
    "GeluAndMul": ({}, *_and_mul(ref.gelu, gelu_e32, True)),
    "GeluAndMul-tanh": ({"approximate": "tanh"}, *_and_mul(ref.gelu_tanh, gelu_tanh_e32, True)),
    "GeluTanhAndMul": ({}, *_and_mul(ref.gelu_tanh, gelu_tanh_e32, True)),
    "Silu": ({}, ref.silu, silu_e32),
    "SiLU": ({}, ref.silu, silu_e32),
    "Gelu": ({}, ref.gelu, gelu_e32),
    "GeLU": ({}, ref.gelu, gelu_e32),
    "Gelu-tanh": ({"approximate": "tanh"}, ref.gelu_tanh, gelu_tanh_e32),
    "GeluTanh": ({}, ref.gelu_tanh, gelu_tanh_e32),
    "FastGELU": ({}, ref.gelu_tanh, gelu_tanh_e32),
    "NewGELU": ({}, ref.gelu_tanh, gelu_tanh_e32),
}


def test_layers_follow_hub_rules():
    assert set(layers.__all__) >= {"RMSNorm", "SiluAndMul", "GeluAndMul", "GeluTanhAndMul", "GeluTanh", "Gelu", "Silu"}
    module_members = {n for n in dir(torch.nn.Module)}
    for name in layers.__all__:
        cls = getattr(layers, name)
        assert issubclass(cls, torch.nn.Module), name
        assert cls.__init__ is torch.nn.Module.__init__, name
        assert {n for n in dir(cls)} - module_members <= {"can_torch_compile", "has_backward"}, name
        assert cls.can_torch_compile is True and cls.has_backward is False, name
        assert list(__import__("inspect").signature(cls.forward).parameters)[0] == "self"
        assert len(__import__("inspect").signature(cls.forward).parameters) == 2, name


def test_layers_pass_kernels_validation():
    kernels_layer = pytest.importorskip("kernels.layer.layer")
    validate = getattr(kernels_layer, "_validate_layer", None)
    if validate is None:
        pytest.skip("kernels has no _validate_layer")
    checks = {"RMSNorm": torch.nn.RMSNorm, "Silu": torch.nn.SiLU, "Gelu": torch.nn.GELU}
    for name in layers.__all__:
        validate(check_cls=checks.get(name, torch.nn.SiLU), cls=getattr(layers, name), repo=name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(LAYER_CASES))
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_activation_layers(device, case, dtype):
    needs_cuda(device)
    name = case.split("-")[0]
    attrs, oracle, e32 = LAYER_CASES[case]
    mod = getattr(layers, name)()
    for k, v in attrs.items():
        setattr(mod, k, v)
    x = torch.randn(3, 7, 2 * 37, device=device).to(dtype) * 3
    got = mod(x)
    want = oracle(x)
    assert got.dtype == dtype and got.shape == want.shape
    assert_close_to(got, want, dtype, e32(x), case)
    empty = x[:0]
    assert mod(empty).shape == want[:0].shape


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_rmsnorm_layer_weight_dtype_promotes_like_transformers(device):
    needs_cuda(device)
    mod = torch.nn.Module()
    mod.weight = torch.nn.Parameter(torch.randn(64, device=device))  # fp32 weight
    mod.variance_epsilon = 1e-5
    x = torch.randn(4, 64, device=device).to(torch.bfloat16)
    # transformers LlamaRMSNorm: the normalized row rounded to x's dtype (bf16), then times the
    # fp32 weight in fp32. Bound: the bf16 rounding of an fp32 value within norm_rel(64) of the
    # exact n (u_bf16 |n| + e32), times |w|, plus the fp32 product's rounding.
    n = ref.rms_norm(x, None, 1e-5)
    w = mod.weight.detach().double()
    got = layers.RMSNorm.forward(mod, x)
    assert got.dtype == torch.float32
    ub = UNIT[torch.bfloat16]
    bound = w.abs() * (ub * n.abs() + (1 + ub) * norm_rel(64) * n.abs() + 2.0**-134) * (1 + U) + U * (w * n).abs()
    assert_within(got, w * n, bound)


# ---------------------------------------------------------------------------------------------
# kernelize a tiny transformers Llama


def _tiny_llama(device, dtype):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(**TINY_LLAMA, hidden_act="silu")
    torch.manual_seed(4321)
    model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():
        for m in model.modules():
            if type(m).__name__.endswith("RMSNorm"):
                m.weight.normal_(1.0, 0.3)
    return model.to(device=device, dtype=dtype).eval()


def _hub_decorate(kernels):
    """transformers 5.17 decorates these classes itself when its `kernels` version window
    matches the installed one; otherwise do what it does, with kernels' own decorator."""
    from transformers import activations
    from transformers.models.llama import modeling_llama

    for cls, name in [(modeling_llama.LlamaRMSNorm, "RMSNorm"), (activations.SiLUActivation, "SiLU")]:
        if getattr(cls, "kernel_layer_name", None) is None:
            kernels.use_kernel_forward_from_hub(name)(cls)
        assert cls.kernel_layer_name == name


def _forward_is_our_layer(module, layer_name):
    fn = getattr(module.__dict__.get("forward"), "__func__", None)
    return (
        fn is not None
        and fn is not type(module).forward
        and fn.__qualname__ == f"{layer_name}.forward"
        and fn.__module__.rsplit(".", 1)[-1] == "layers"
    )


@pytest.mark.parametrize("compile_mode", [False, True], ids=["inference", "inference+compile"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_kernelize_tiny_llama_local_repo(device, dtype, compile_mode):
    needs_cuda(device)
    kernels = pytest.importorskip("kernels")
    if not (PKG / "metadata.json").exists():
        pytest.skip("ltx_kernels not loaded from a built variant folder (build/<variant>/)")
    model = _tiny_llama(device, torch.float32)
    ids = torch.randint(0, VOCAB, (2, 11), device=device)
    with torch.no_grad():
        exact = model.double()(ids).logits  # the same model in float64: the oracle
    model = model.to(dtype)
    with torch.no_grad():
        eager = model(ids).logits
    _hub_decorate(kernels)
    mode = kernels.Mode.INFERENCE | kernels.Mode.TORCH_COMPILE if compile_mode else kernels.Mode.INFERENCE
    mapping = {
        hub_name: {device: {mode: kernels.LocalLayerRepository(repo_path=PKG, layer_name=layer)}}
        for hub_name, layer in [("RMSNorm", "RMSNorm"), ("SiLU", "SiLU")]
    }
    with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        model = kernels.kernelize(model, mode=mode, device=device)
    norms = [m for m in model.modules() if type(m).__name__ == "LlamaRMSNorm"]
    acts = [m for m in model.modules() if type(m).__name__ == "SiLUActivation"]
    assert len(norms) == 5 and len(acts) == 2
    assert all(_forward_is_our_layer(m, "RMSNorm") for m in norms)
    assert all(_forward_is_our_layer(m, "Silu") for m in acts)  # SiLU is an alias of Silu
    run = model
    if compile_mode:
        torch._dynamo.reset()
        run = torch.compile(model, fullgraph=False, backend="aot_eager" if device == "cpu" else "inductor")
    with torch.no_grad():
        got = run(ids).logits
    assert got.dtype == dtype
    # bf16: the original rounds twice (normed row, then * weight), ours once; fp32 and bf16
    # alike, ours against the float64 model no worse than the eager model is
    assert_no_worse(got, eager, exact, floor=2.0**-16 if dtype == torch.float32 else 2.0**-8)


def test_kernelize_with_optimize_afterwards():
    """kernelize (RMSNorm) then integrations.transformers.optimize (residual + MLP fusion):
    the two compose; logits unchanged."""
    kernels = pytest.importorskip("kernels")
    if not (PKG / "metadata.json").exists():
        pytest.skip("ltx_kernels not loaded from a built variant folder (build/<variant>/)")
    from ltx_kernels.integrations import transformers as lk_tf

    model = _tiny_llama("cpu", torch.float32)
    ids = torch.randint(0, VOCAB, (2, 9))
    with torch.no_grad():
        eager = model(ids).logits
        exact = model.double()(ids).logits
    model = model.float()
    _hub_decorate(kernels)
    mapping = {"RMSNorm": {"cpu": {kernels.Mode.INFERENCE: kernels.LocalLayerRepository(repo_path=PKG, layer_name="RMSNorm")}}}
    with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        model = kernels.kernelize(model, mode=kernels.Mode.INFERENCE, device="cpu")
    lk_tf.optimize(model, rms_norm=False)
    assert hasattr(model.model.layers[0].mlp, "gate_up_proj")
    assert _forward_is_our_layer(model.model.norm, "RMSNorm")
    with torch.no_grad():
        assert_no_worse(model(ids).logits, eager, exact)
