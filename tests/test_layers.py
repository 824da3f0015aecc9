"""`layers/` for kernels.kernelize: the RMSNorm layer replaces transformers' RMSNorm in a tiny
Llama through kernels' local repository mapping, and the output is unchanged."""

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import layers
from ltx_kernels import reference as ref

from bounds import rms_e32
from conftest import ALL_DEVICES, assert_close_to, assert_no_worse


def test_layers_have_forward_only():
    for cls in [layers.RMSNorm]:
        assert "__init__" not in cls.__dict__
        assert "forward" in cls.__dict__


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_rmsnorm_layer_on_torch_module(device):
    m = torch.nn.RMSNorm(96, eps=1e-5).to(device)
    torch.nn.init.normal_(m.weight)
    x = torch.randn(3, 5, 96, device=device)
    y = layers.RMSNorm.forward(m, x)
    want = ref.rms_norm(x, m.weight.detach(), 1e-5)
    assert_close_to(y, want, torch.float32, rms_e32(want, 96))
    # eps=None: torch.nn.RMSNorm then uses finfo(x.dtype).eps
    m2 = torch.nn.RMSNorm(96, elementwise_affine=False).to(device)
    want = ref.rms_norm(x, None, torch.finfo(torch.float32).eps)
    assert_close_to(layers.RMSNorm.forward(m2, x), want, torch.float32, rms_e32(want, 96))


def test_kernelize_tiny_llama(tmp_path):
    kernels = pytest.importorskip("kernels")
    transformers = pytest.importorskip("transformers")
    from pathlib import Path

    pkg = Path(lk.__file__).resolve().parent
    if not (pkg / "metadata.json").exists():
        pytest.skip("package not loaded from build/<variant>/")
    if "-cpu-" in pkg.name and torch.version.cuda:
        pytest.skip("kernels resolves the cu variant for a CUDA build of torch; this is a CPU-only build")
    repo_root = pkg.parent.parent  # the directory holding build/
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 64, (2, 11))
    with torch.no_grad():
        want = model(ids).logits
        exact = model.double()(ids).logits  # the same model in float64: the oracle
    model = model.float()
    mapping = {
        "RMSNorm": {
            "cpu": {kernels.Mode.INFERENCE: kernels.LocalLayerRepository(repo_path=repo_root, layer_name="RMSNorm")},
        }
    }
    # transformers marks its RMSNorm classes with the hub layer name "RMSNorm" when its
    # supported `kernels` version window matches the installed one; otherwise mark it here
    # with kernels' own decorator (the same thing transformers does).
    from transformers.models.llama import modeling_llama

    if getattr(modeling_llama.LlamaRMSNorm, "kernel_layer_name", None) is None:
        kernels.use_kernel_forward_from_hub("RMSNorm")(modeling_llama.LlamaRMSNorm)
    with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        model = kernels.kernelize(model, mode=kernels.Mode.INFERENCE, device="cpu")
    norms = [m for m in model.modules() if "RMSNorm" in type(m).__name__]
    assert norms
    replaced = [m for m in norms if getattr(m.forward, "__func__", None) is not type(m).forward]
    with torch.no_grad():
        got = model(ids).logits
    assert_no_worse(got, want, exact)
    assert replaced, "kernelize did not replace any RMSNorm forward"
