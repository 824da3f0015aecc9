"""Shared fixtures. The package under test is whatever `import ltx_kernels` finds: the
Makefile puts build/<variant>/ on PYTHONPATH; a pip-installed package works the same."""

import pytest
import torch

import ltx_kernels  # noqa: F401

HAS_CUDA = torch.cuda.is_available()
DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])
# A CUDA parameter always exists so the suite reports it as skipped on machines without a GPU.
ALL_DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")),
]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]

# Per-dtype tolerance of a kernel output against the fp32 oracle, relative to the value:
# one rounding of the result to the output dtype (half an ulp: 2^-9 bf16, 2^-12 fp16) plus
# fp32 accumulation-order differences (< 1e-6 relative for sums of 2^14 positive terms);
# we allow 2 ulps to cover the cast of intermediate products.
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.float16: dict(rtol=2.0**-10, atol=1e-5),
    torch.bfloat16: dict(rtol=2.0**-7, atol=1e-5),
}


def needs_cuda(device):
    if device == "cuda" and not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(torch.seed() % 2**31)  # fresh draws each run, printed on failure by pytest -l


def has_cuda_kernel(op_name: str) -> bool:
    """Whether this build registered a CUDA kernel for the op."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(ltx_kernels.add_op_namespace_prefix(op_name), "CUDA")


def skip_cuda_without_kernel(request, op_name: str):
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    wants_cuda = params.get("device") == "cuda" or "cuda" in request.node.name
    if HAS_CUDA and wants_cuda and not has_cuda_kernel(op_name):
        pytest.skip(f"{op_name}: CUDA kernel not registered in this build ")


def load_bench(name: str):
    """A script of benchmarks/ imported as a module (the e2e scripts' tiny-mode tests)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rand_bytes(shape, dtype, device):
    """Random BYTES viewed as `dtype` (NaN / inf patterns included): what a byte mover must return as is."""
    es = torch.empty((), dtype=dtype).element_size()
    n = 1
    for v in shape:
        n *= v
    raw = torch.randint(0, 256, (n * es,), dtype=torch.uint8)
    return raw.view(dtype).reshape(shape).to(device)


def assert_bytes(a, b):
    """a and b hold the same bytes (dtype and shape equal too)."""
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    ua, ub = a.contiguous().cpu().view(torch.uint8), b.contiguous().cpu().view(torch.uint8)
    if not torch.equal(ua, ub):
        bad = (ua != ub).nonzero()[:5].tolist()
        raise AssertionError(f"{int((ua != ub).sum())} bytes differ, first at {bad}")
