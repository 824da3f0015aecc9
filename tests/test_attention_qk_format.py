"""tools/tune/attention_qk_format.py, the accuracy model behind docs/design/attention.md's choice of
q / k format: its quantizers follow their rules (E4M3 codes equal the reference encoder's, INT8
codes are integers in [-127, 127] reaching 127 in every nonzero group), its E4M3 model equals the
library's FP8 attention on the CPU backend up to the output's rounding, and that check fails a
model whose k factors are 10% off. CPU only, small shapes."""

import importlib.util
import os

import pytest
import torch

from ltx_kernels import reference as ref

_SPEC = importlib.util.spec_from_file_location(
    "attention_qk_format", os.path.join(os.path.dirname(__file__), "..", "tools", "tune", "attention_qk_format.py"))
qf = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(qf)


def _inputs(seed=0, s=300, h=2, d=64, nq=40):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, s, h, d, generator=g).bfloat16() for _ in range(3))
    k = qf.realistic_k(k, seed=seed)
    return q[0, :nq], k[0], v[0]


@pytest.mark.parametrize("rows", [1, 64, 128])
def test_quantizers_follow_their_rules(rows):
    """Per (rows tokens, head) group, s = amax / 448 (E4M3) or amax / 127 (INT8); decoded values are
    code * s with code = e4m3(x / s) (the reference encoder) or round-half-even(x / s), which for
    INT8 reaches 127 in every nonzero group; a zero group decodes to zeros."""
    x = torch.randn(300, 2, 64) * torch.linspace(0.1, 5, 64)
    x[128:256] = 0  # one all-zero 128-row group
    for fmt, top in (("e4m3", 448.0), ("int8", 127.0)):
        g = qf._groups(x, rows)
        s = g.abs().amax(dim=(1, 3), keepdim=True) / top
        safe = torch.where(s > 0, s, torch.ones_like(s))
        if fmt == "e4m3":
            codes = ref.fp8_decode(ref.fp8_encode(g / safe)).float()
        else:
            codes = torch.round(g / safe)
            assert codes.abs().max() <= 127
            assert (codes.abs().amax(dim=(1, 3)).flatten()[s.flatten() > 0] == 127).all()
        want = (codes * s).reshape(-1, 2, 64)[:300]
        assert torch.equal(qf.quant(x, fmt, rows), want)
        if rows in (64, 128):
            assert (qf.quant(x, fmt, rows)[128:256] == 0).all()


def test_model_equals_the_library_and_the_check_catches_a_wrong_factor(monkeypatch):
    q, k, v = _inputs()
    want = ref.attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0))[0]
    assert qf.check_against_library(q, k, v, want) < 1e-3
    orig = qf.quant

    def k_off(x, fmt, rows):  # the k factors 10% off (k is the operand quantized per 128 rows)
        y = orig(x, fmt, rows)
        return y * 1.1 if rows == 128 else y

    monkeypatch.setattr(qf, "quant", k_off)
    assert qf.check_against_library(q, k, v, want) > 1e-3


def test_formats_order_on_realistic_keys():
    """What the design note reads from the model, on a small input: bf16 far below every 8-bit
    variant, INT8 q / k below E4M3 q / k with the same P / v rounding, and on offset keys k
    unsmoothed far worse than smoothed, with the mean of the first 128 keys about as good as the
    full mean."""
    q, k, v = _inputs(s=512, nq=64)
    want = ref.attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0))[0]
    err = {n: qf.errors(qf.model(q, k, v, **kw), want)[0] for n, kw in qf.VARIANTS.items()}
    assert err["bf16"] < 0.1 * min(e for n, e in err.items() if n != "bf16")
    assert err["int8 qk + e4m3 pv"] < err["e4m3 qk + e4m3 pv"]
    assert err["int8 qk + bf16 pv"] < err["e4m3 qk + bf16 pv"]
    for fmt in ("e4m3", "int8"):  # the offset left in k takes the range of the informative part
        assert err[f"{fmt} qk + e4m3 pv, k unsmoothed"] > 1.5 * err[f"{fmt} qk + e4m3 pv"], err
        assert err[f"{fmt} qk + e4m3 pv, k mean of 128"] < 1.5 * err[f"{fmt} qk + e4m3 pv"], err
