"""Quantized linear layers and quantize_linears. Each layer is compared with a float64 linear
of its own dequantized operands (written from the formats in ltx_kernels.reference), with the
GEMM bound of tests/test_gemm.py (calc_diff <= 1e-5: one bf16 rounding of the output is ~2e-6),
and with the original float linear loosely (FP8's 2^-4 relative rounding per operand: calc_diff
~1e-3; the bound 5e-3 catches a wrong scale or a transposed weight, which give ~1)."""

import re

import pytest
import torch
from torch import nn

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import HAS_CUDA, has_cuda_kernel

ALL_DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU"))]


def calc_diff(x, y):
    x, y = x.double().cpu(), y.double().cpu()
    return float(1 - 2 * (x * y).sum() / ((x * x).sum() + (y * y).sum()))


def needs_kernel(device, op="fp8_blockwise_gemm"):
    if device == "cuda" and not has_cuda_kernel(op):
        pytest.skip(f"{op}: no CUDA kernel in this build")


def fp8_dequant_input(x):
    q, s = ref.quantize_fp8_per_token_group(x.cpu(), 128)
    return ref.dequantize_fp8_per_token_group(q, s, 128).double()


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("with_bias", [False, True])
def test_fp8_linear(device, dtype, with_bias):
    needs_kernel(device)
    lin = nn.Linear(384, 136, bias=with_bias).to(device=device, dtype=dtype)
    q = lk.FP8BlockwiseLinear.from_linear(lin)
    assert q.weight_q.dtype == torch.float8_e4m3fn and q.weight_scales.shape == (2, 3)
    x = torch.randn(2, 33, 384, device=device, dtype=dtype)
    y = q(x)
    assert y.shape == (2, 33, 136) and y.dtype == dtype
    w = ref.dequantize_fp8_block(q.weight_q.cpu(), q.weight_scales.cpu()).double()
    want = fp8_dequant_input(x).reshape(-1, 384) @ w.t()
    if with_bias:
        want = want + lin.bias.detach().double().cpu()
    assert calc_diff(y.reshape(-1, 136), want) <= 1e-5
    with torch.no_grad():
        assert calc_diff(y, lin(x)) <= 5e-3
    # pre-quantized input (e.g. from a fused norm), either scale layout: same result
    for layout in ["row", "mn_major"]:
        qa, sa = lk.quantize_fp8_per_token_group(x, 128, layout)
        y2 = q((qa, sa))
        if layout == ("mn_major" if x.is_cuda else "row"):  # the layer's own layout: same kernel
            assert torch.equal(y2, y)
        else:
            assert calc_diff(y2, y) <= 1e-5


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp8_linear_state_not_requantized(device, monkeypatch):
    needs_kernel(device)
    lin = nn.Linear(256, 64).to(device)
    q = lk.FP8BlockwiseLinear.from_linear(lin)
    before = (q.weight_q.clone(), q.weight_scales.clone(), q.weight_q.data_ptr())
    import ltx_kernels.quantization as qmod

    def boom(*a, **k):
        raise AssertionError("weight requantized in forward")

    monkeypatch.setattr(qmod, "quantize_fp8_block", boom)
    x = torch.randn(5, 256, device=device)
    y1 = q(x)
    y2 = q(x)
    assert torch.equal(y1, y2)
    assert q.weight_q.data_ptr() == before[2]
    assert torch.equal(q.weight_q.view(torch.uint8), before[0].view(torch.uint8))
    assert torch.equal(q.weight_scales, before[1])
    # buffers travel with the module and its state dict
    sd = q.state_dict()
    assert set(sd) == {"weight_q", "weight_scales", "bias"}


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_fp6_linear(device, dtype):
    needs_kernel(device, "fp6_blockwise_gemm")
    lin = nn.Linear(256, 24).to(device=device, dtype=dtype)
    q = lk.FP6BlockwiseLinear.from_linear(lin)
    assert q.weight_packed.shape == (24, 192) and q.weight_packed.dtype == torch.uint8
    x = torch.randn(7, 256, device=device, dtype=dtype)
    y = q(x)
    assert y.dtype == dtype
    w = ref.dequantize_fp6_block(q.weight_packed.cpu(), q.weight_scales.cpu(), 256, torch.float32).double()
    want = fp8_dequant_input(x) @ w.t() + lin.bias.detach().double().cpu()
    assert calc_diff(y, want) <= 1e-5
    with torch.no_grad():
        assert calc_diff(y, lin(x)) <= 2e-2  # FP6: 3 mantissa bits, but a 2-bit exponent per block


class _Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.to_q = nn.Linear(d, d)
        self.to_k = nn.Linear(d, d)
        self.to_v = nn.Linear(d, d)
        self.to_out = nn.ModuleList([nn.Linear(d, d), nn.Dropout(0.0)])
        self.to_gate_logits = nn.Linear(d, 8)

    def forward(self, x):
        return self.to_out[0](self.to_q(x) + self.to_k(x) + self.to_v(x)) * torch.sigmoid(self.to_gate_logits(x)).mean()


class _Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn1 = _Attn(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.adaln_proj = nn.Linear(d, d)
        self.scale_shift_table = nn.Parameter(torch.zeros(6, d))
        self.odd_in = nn.Linear(200, 8)  # in_features % 128 != 0: kept
        self.odd_out = nn.Linear(d, 12)  # out_features % 8 != 0: kept

    def forward(self, x):
        h = x + self.attn1(self.norm1(x))
        return h + self.ff(h) + self.adaln_proj(h) * 0.0


class _Model(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.patchify_proj = nn.Linear(128, d)
        self.time_embed = nn.Sequential(nn.Linear(d, d))
        self.caption_projection = nn.Linear(d, d)
        self.transformer_blocks = nn.ModuleList([_Block(d), _Block(d)])
        self.proj_out = nn.Linear(d, 128)

    def forward(self, x):
        h = self.patchify_proj(x)
        for b in self.transformer_blocks:
            h = b(h)
        return self.proj_out(h)


EXPECTED_DEFAULT = sorted(
    f"transformer_blocks.{i}.{n}"
    for i in range(2)
    for n in ["attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0", "ff.0", "ff.2"]
)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("fmt", ["fp8", "fp6"])
def test_quantize_linears_default_policy(device, fmt, caplog):
    needs_kernel(device, "fp8_blockwise_gemm" if fmt == "fp8" else "fp6_blockwise_gemm")
    torch.manual_seed(0)
    m = _Model().to(device)
    x = torch.randn(2, 16, 128, device=device)
    with torch.no_grad():
        y0 = m(x)
    import logging

    listed = lk.quantization.linears_to_quantize(m, fmt)  # names them, replaces nothing
    assert all(type(m.get_submodule(n)) is nn.Linear for n in listed)
    with caplog.at_level(logging.INFO, logger="ltx_kernels"):
        names = lk.quantize_linears(m, fmt)
    assert sorted(names) == EXPECTED_DEFAULT and names == listed
    layer = lk.FP8BlockwiseLinear if fmt == "fp8" else lk.FP6BlockwiseLinear
    for n, mod in m.named_modules():
        if n in names:
            assert type(mod) is layer
        elif isinstance(mod, nn.Linear):
            assert type(mod) is nn.Linear, n
    # one log line per linear kept for its shape
    kept = [r.getMessage() for r in caplog.records if "keeping" in r.getMessage()]
    assert sorted(re.search(r"keeping (\S+)", k).group(1) for k in kept) == sorted(
        f"transformer_blocks.{i}.{n}" for i in range(2) for n in ["odd_in", "odd_out"])
    assert type(m.transformer_blocks[0].attn1.to_gate_logits) is nn.Linear
    assert type(m.transformer_blocks[0].adaln_proj) is nn.Linear
    assert type(m.proj_out) is nn.Linear and type(m.patchify_proj) is nn.Linear
    with torch.no_grad():
        y1 = m(x)
    assert calc_diff(y1, y0) <= (5e-3 if fmt == "fp8" else 3e-2)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_quantize_linears_include_exclude(device):
    needs_kernel(device)
    m = _Model().to(device)
    assert sorted(lk.quantize_linears(m, "fp8", include=r"\.ff\.")) == sorted(
        f"transformer_blocks.{i}.ff.{j}" for i in range(2) for j in (0, 2))
    m = _Model().to(device)
    names = lk.quantize_linears(m, "fp8", exclude=[r"to_[qkv]$", "ff"])
    assert sorted(names) == sorted(
        f"transformer_blocks.{i}.{n}" for i in range(2)
        for n in ["attn1.to_out.0", "attn1.to_gate_logits", "adaln_proj"])
    m = _Model().to(device)
    names = lk.quantize_linears(m, "fp8", include=lambda n, mod: mod.out_features == 128, exclude=[])
    assert names == ["proj_out"]
    # already quantized modules are left alone: a second pass replaces nothing new
    assert lk.quantize_linears(m, "fp8", include=lambda n, mod: mod.out_features == 128, exclude=[]) == []
    with pytest.raises(ValueError, match=re.escape("ltx_kernels.quantize_linears: fmt must be 'fp8', 'fp8_rowwise', 'fp6' or 'nvfp4'")):
        lk.quantize_linears(m, "int4")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_nvfp4_linear(device, dtype):
    needs_kernel(device, "scaled_mm_nvfp4")
    needs_kernel(device, "quantize_nvfp4")
    lin = nn.Linear(256, 24).to(device=device, dtype=dtype)
    q = lk.NVFP4Linear.from_linear(lin)
    assert q.weight_packed.shape == (24, 128) and q.weight_block_scales.shape == (128, 16)
    x = torch.randn(2, 5, 256, device=device, dtype=dtype)
    y = q(x)
    assert y.shape == (2, 5, 24) and y.dtype == dtype
    s_x = ref.nvfp4_per_tensor_scale(x.cpu())
    qa, ba = ref.quantize_nvfp4(x.cpu(), s_x)
    want = ref.scaled_mm_nvfp4(qa, q.weight_packed.cpu(), ba, q.weight_block_scales.cpu(),
                               (s_x * q.weight_scale.cpu()).float(), 256, lin.bias.detach().cpu())
    assert calc_diff(y, want) <= 1e-5
    with torch.no_grad():
        assert calc_diff(y, lin(x)) <= 3e-2  # E2M1: 1 mantissa bit, scaled per 16 elements


@pytest.mark.parametrize("cls_name", ["FP8BlockwiseLinear", "FP8RowwiseLinear"])
def test_concat_fp8_linears(cls_name):
    """concat_fp8_linears: the layers' outputs side by side, bit for bit on the CPU (each output
    channel the same products, scales and bias); fp8_linear_rows / share_concat_rows: views of
    its rows, nothing copied, the same outputs; None for layers that cannot be one."""
    from ltx_kernels import quantization as Q

    cls = getattr(Q, cls_name)
    torch.manual_seed(0)
    layers = [cls.from_linear(nn.Linear(256, n)) for n in (256, 128, 384)]
    x = torch.randn(3, 5, 256)
    want = torch.cat([m(x) for m in layers], -1)
    fused = Q.concat_fp8_linears(layers)
    assert torch.equal(fused(x), want)
    Q.share_concat_rows(fused, layers)
    assert all(m.weight_q.untyped_storage().data_ptr() == fused.weight_q.untyped_storage().data_ptr() for m in layers)
    assert torch.equal(torch.cat([m(x) for m in layers], -1), want)
    tail = Q.fp8_linear_rows(fused, 256, 512)
    assert tail.weight_q.untyped_storage().data_ptr() == fused.weight_q.untyped_storage().data_ptr()
    assert torch.equal(tail(x), want[..., 256:])
    # what cannot be one layer
    assert Q.concat_fp8_linears(layers[:1]) is None
    assert Q.concat_fp8_linears([layers[0], cls.from_linear(nn.Linear(128, 128))]) is None  # in_features
    assert Q.concat_fp8_linears([layers[0], cls.from_linear(nn.Linear(256, 128, bias=False))]) is None  # bias
    other = Q.FP8RowwiseLinear if cls is Q.FP8BlockwiseLinear else Q.FP8BlockwiseLinear
    assert Q.concat_fp8_linears([layers[0], other.from_linear(nn.Linear(256, 128))]) is None  # class
    assert Q.concat_fp8_linears([layers[0], cls.from_linear(nn.Linear(256, 128), epilogue="gelu_tanh")]) is None
    if cls is Q.FP8BlockwiseLinear:  # a 128-row scale block would span two layers
        assert Q.concat_fp8_linears([cls.from_linear(nn.Linear(256, 136)), layers[1]]) is None
