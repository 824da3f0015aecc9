"""Kernels on two GPUs of one process, one after the other (a model split over devices, or a
second pipeline on cuda:1). Kernels with more than 48 KB of dynamic shared memory opt in per
device (common/per_device.h): a launcher that remembered "done" once per process would fail on
the second GPU. Needs two CUDA devices of compute capability 9.0 (skipped otherwise)."""

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from test_attention import check16, mk
from test_gemm import check

pytestmark = pytest.mark.skipif(
    torch.cuda.device_count() < 2 or any(torch.cuda.get_device_capability(i) != (9, 0) for i in range(2)),
    reason="needs two compute capability 9.0 GPUs")


def _fp8_operands(m, n, k, device):
    a, sa = lk.quantize_fp8_per_token_group(torch.randn(m, k, device=device), 128, "mn_major")
    b, sb = lk.quantize_fp8_block(torch.randn(n, k, device=device))
    return a, sa, b, sb


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_sm90_kernels_on_each_device(order):
    for i in order:
        dev = f"cuda:{i}"
        with torch.cuda.device(i):  # also what a launcher sees as the current device
            q, k, v = (mk(2, 300, 4, 64, torch.bfloat16, dev, "bshd") for _ in range(3))
            out = lk.attention(q, k, v)
            check16(out, ref.attention(q, k, v), v, torch.bfloat16, f"attention on {dev}")
            a, sa, b, sb = _fp8_operands(300, 384, 512, dev)
            out = lk.fp8_blockwise_gemm(a, sa, b, sb, backend="sm90")
            check(out, a, sa, b, sb, what=f"fp8_blockwise_gemm sm90 on {dev}", backend="sm90")


def test_tensor_device_not_current_device():
    """Operands on cuda:1 while cuda:0 is current: the adapters launch on the tensors' device."""
    torch.cuda.set_device(0)
    q, k, v = (mk(1, 200, 2, 128, torch.bfloat16, "cuda:1", "bshd") for _ in range(3))
    out = lk.attention(q, k, v)
    assert out.device == q.device
    check16(out, ref.attention(q, k, v), v, torch.bfloat16, "attention on cuda:1")
