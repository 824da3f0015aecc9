"""Shared fixtures. The package under test is whatever `import ltx_kernels` finds: the
Makefile puts build/<variant>/ on PYTHONPATH; a pip-installed package works the same."""

import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import zlib

# torch.compile's on-disk kernel cache is not keyed on ATEN_CPU_CAPABILITY: a kernel compiled
# for one vector ISA and loaded under another fails to compile or crashes. Running the suite
# with ATEN_CPU_CAPABILITY=default / avx2 / avx512 (to show no test depends on the ISA) gives
# each value its own cache.
if os.environ.get("ATEN_CPU_CAPABILITY") and not os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
        tempfile.gettempdir(), f"ltx_kernels_inductor_{os.environ['ATEN_CPU_CAPABILITY']}")

import pytest
import torch

import ltx_kernels  # noqa: F401

# Under pytest-xdist every worker would run torch's CPU ops on all cores; N workers each with
# every core oversubscribe the machine (the CPU-side references of the CUDA tests then crawl).
# Each worker takes its share of the cores instead (OMP_NUM_THREADS, when set, still wins).
if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("OMP_NUM_THREADS"):
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))))

HAS_CUDA = torch.cuda.is_available()
DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])
# A CUDA parameter always exists so the suite reports it as skipped on machines without a GPU.
ALL_DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")),
]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


# A two-layer Llama small enough for the CPU (transformers config arguments; vocabulary of 100).
TINY_LLAMA = dict(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5)


def device_backends(*cuda_backends):
    """(device, backend) parameters: the CPU's "auto" and "torch", then each named CUDA backend
    (skipped without a GPU, reported as skipped)."""
    cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
    return [("cpu", "auto"), ("cpu", "torch")] + [pytest.param("cuda", b, marks=cuda) for b in cuda_backends]


def grid(*axes):
    """Decorator: parametrizes a test over the product of `axes`, each an (argnames, values) pair as
    pytest.mark.parametrize takes them; the first axis is outermost (as the top decorator of a
    stack of parametrize marks)."""
    def wrap(test):
        for names, values in reversed(axes):
            test = pytest.mark.parametrize(names, values)(test)
        return test
    return wrap

# ---- error bounds ---------------------------------------------------------------------------
# Kernels compute in fp32 and round once to the output dtype T; oracles (ltx_kernels.reference)
# compute the exact result in float64 from the same inputs. Each test bounds the kernel's fp32
# error e32 from its formula (every fp32 rounding is at most u = 2^-24 relative; a library
# function adds its documented error in ulps (1 ulp <= 2u relative) times the function's
# condition number; a sum of n terms in any order adds n u sum|terms|), and the final rounding:
#     |fl_T(y32) - y| <= u_T |y| + (1 + u_T) e32 + tiny_T
# u_T: half an ulp, relative (T's unit roundoff); tiny_T: half T's smallest subnormal (the
# absolute error of rounding a value near 0).
U32 = 2.0**-24
UNIT = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
TINY = {torch.float32: 2.0**-150, torch.float16: 2.0**-25, torch.bfloat16: 2.0**-134}


def rounded_bound(want, dtype, e32=0.0):
    """Bound on |kernel - want| for a kernel that rounds its fp32 result (within e32 of the exact
    `want`) once to `dtype` (see above). `want` and `e32` broadcast."""
    u = UNIT[dtype]
    return u * want.double().abs() + (1 + u) * e32 + TINY[dtype]


def assert_within(got, want, bound, what=""):
    """|got - want| <= bound elementwise (float64; same shapes after broadcasting). NaN must
    face NaN and an infinity the same infinity. Reports the worst elements on failure."""
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    b = torch.as_tensor(bound, dtype=torch.float64).to(got.device)
    g, w = got.detach().reshape(-1), want.detach().reshape(-1)
    b = b.expand(got.shape).reshape(-1) if b.dim() else b.reshape(1)
    step = 1 << 22  # float64 temporaries of 32 MiB at a time
    nbad, worst = 0, []
    for i in range(0, g.numel(), step):
        gc, wc = g[i:i + step].cpu().double(), w[i:i + step].cpu().double()
        bc = b[i:i + step].cpu() if b.numel() > 1 else b.cpu()
        err = (gc - wc).abs()
        ok = err <= bc
        if bool(ok.all()):
            continue
        # the rest: NaN facing NaN and equal infinities are fine (their difference is NaN)
        idx = (~ok).nonzero().squeeze(1)
        gb, wb = gc[idx], wc[idx]
        bb = bc[idx] if bc.numel() > 1 else bc.expand(idx.shape)
        same = (gb == wb) | (torch.isnan(gb) & torch.isnan(wb))
        idx, gb, wb, bb, eb = idx[~same], gb[~same], wb[~same], bb[~same], err[idx][~same]
        if idx.numel():
            nbad += idx.numel()
            ratio = (eb / bb.clamp_min(1e-300)).nan_to_num(nan=float("inf"))
            for j in ratio.topk(min(5, idx.numel())).indices.tolist():
                worst.append((float(ratio[j]), i + int(idx[j]), float(gb[j]), float(wb[j]), float(bb[j])))
    if nbad:
        shape = tuple(got.shape)
        rows = [(tuple(int(k) for k in torch.unravel_index(torch.tensor(j), shape)), gv, wv, bv)
                for _, j, gv, wv, bv in sorted(worst, reverse=True)[:5]]
        raise AssertionError(f"{what}: {nbad} of {g.numel()} elements out of bound; worst "
                             f"(index, got, want, bound): {rows}")


def assert_no_worse(got, eager, exact, factor=2.0, floor=2.0**-16, what=""):
    """Model-level checks (a model with our ops swapped in), where no formula bounds the
    error: `exact` is the same model evaluated in float64, `eager` the unmodified model in the
    test's dtype. Ours must be within `factor` times the eager model's own largest error, plus
    `floor` * max|exact|: either side's last bits move the two errors by a fraction of
    themselves, while a wrong formula (eps, weight, activation, order) gives errors orders of
    magnitude larger."""
    ex, g, e = (t.detach().double().cpu() for t in (exact, got, eager))
    # positions the model itself leaves undefined (NaN rows of fully masked attention) must be
    # undefined on both sides; the rest is compared
    assert torch.equal(torch.isnan(g), torch.isnan(e)), f"{what}: NaN at other positions than the eager model's"
    fin = torch.isfinite(ex) & torch.isfinite(e)
    ex, g, e = ex[fin], g[fin], e[fin]
    e_ours = (g - ex).abs().max().item()
    e_eager = (e - ex).abs().max().item()
    limit = factor * e_eager + floor * ex.abs().max().item()
    assert e_ours <= limit, f"{what}: max error {e_ours:.3g} vs the float64 model; the eager model's {e_eager:.3g}; limit {limit:.3g}"


def assert_close_to(got, want, dtype, e32=0.0, what=""):
    """A kernel's dtype output against the float64 oracle: rounded_bound(want, dtype, e32)."""
    assert_within(got, want, rounded_bound(want, dtype, e32), what)


# ---- the sanitized run (make sanitize) ------------------------------------------------------
# LTX_KERNELS_SANITIZE_SUBSET=1 keeps the CPU tests that exercise every op family's code paths
# (strided, misaligned, sentinel-filled, empty, special values), the codecs (every 16-bit
# pattern) and every error path, and drops the slow sweeps, opcheck and torch.compile (which
# test torch's machinery more than ours): a few minutes under AddressSanitizer on 2 cores.
SANITIZE_SUBSET = {
    "test_activation.py": ["test_elementwise_special_values", "test_elementwise_every_16bit", "test_elementwise_strided",
                           "test_elementwise_out_sentinel", "test_and_mul_strided_and_sentinel",
                           "test_gated_attention_strided", "test_empty"],
    "test_rms_norm.py": ["test_strided_inputs", "test_out_sentinel", "test_every_element", "test_empty", "test_zero_rows",
                         "test_leading_shapes"],
    "test_fused_norm.py": ["test_strided_inputs", "test_sentinel_outputs", "test_empty", "test_zero_rows",
                           "test_layer_norm_large_mean", "test_adaln_ranks"],
    "test_rope.py": ["test_apply_rope_strided", "test_out_sentinel", "test_innermost_stride", "test_empty",
                     "test_zero_rows", "test_fused_vs_unfused"],
    "test_fp8.py": ["test_all_16bit_patterns", "test_per_token_group_leading_dims", "test_zero_groups",
                    "test_block_zero_tile", "test_dequant_per_token_group_exact", "test_out_sentinel", "test_empty"],
    "test_lowbit.py": ["test_fp6_pack", "test_fp6_round_trip", "test_quantize_fp6_block_all_patterns",
                       "test_quantize_fp6_every_pattern", "test_fp6_codec_specials", "test_nvfp4_e2m1_every_pattern",
                       "test_nvfp4_zero_tensor", "test_nvfp4_ragged", "test_empty"],
    "test_fused_fp8.py": ["test_exact_inputs_bit_for_bit", "test_strided_and_misaligned", "test_zero_rows",
                          "test_empty_inputs", "test_gated_residual_h_out", "test_rope_tables_any_layout"],
    "test_gemm.py": ["test_fp8_gemm_zero_blocks_exact", "test_fp8_gemm_sentinel_and_strided", "test_fp8_gemm_empty",
                     "test_cpu_backend_rounds_once"],
    "test_natten.py": ["test_na1d_na2d", "test_strided_inputs_and_out", "test_border_rule", "test_empty", "test_causal"],
    "test_distributed.py": ["test_pack_heads_matches_permute", "test_strided_inputs_and_outputs", "test_empty"],
    "test_attention_quant.py": ["test_strided_inputs", "test_zero_groups_and_signed_zeros", "test_empty",
                                "test_sentinel_outputs_and_inputs_untouched", "test_other_head_dims"],
    # dense attention: bf16 and fp16 (both layouts, both CPU backends, GQA, a ragged last key
    # block at d 128, one key), fp32, kv_lengths + boolean and additive masks + all-masked rows,
    # strided / misaligned / expanded inputs and a sentinel out, a scale with GQA; FP8 with K
    # factors per key and per 128 keys (both layouts, masked, expanded factors, the per-key
    # factor layouts on the smallest shape), the quantizer's rule; every error path; empty
    # inputs (~2 s without the sanitizers)
    "test_attention.py": ["test_matches_reference[1x1x1x1x1x64", "test_matches_reference[2x37x70x4x2x64",
                          "test_matches_reference[1x129x257x2x2x128", "test_fp32_cpu_is_tight",
                          "test_kv_lengths_mask_and_empty_rows", "test_strided_inputs_and_sentinel_out",
                          "test_expanded_inputs", "test_scale_and_gqa", "test_fp8_matches_dequantized_reference[1x1x1x1x1x64",
                          "test_fp8_matches_dequantized_reference[2x70x300x4x2x64", "test_fp8_expanded_factors",
                          "test_fp8_per_key_factor_layouts[1x70x97x6x3x64", "test_fp8_key_mask[64",
                          "test_fp8_quantizer_follows_its_rule", "test_errors", "test_empty"],
}


def pytest_collection_modifyitems(config, items):
    if os.environ.get("LTX_KERNELS_SANITIZE_SUBSET") != "1":
        return
    keep, drop = [], []
    for item in items:
        names = SANITIZE_SUBSET.get(item.path.name, [])
        wanted = item.get_closest_marker("isolated") is not None or any(item.name.startswith(n) for n in names)
        (keep if wanted and "cuda" not in item.name else drop).append(item)
    items[:] = keep
    config.hook.pytest_deselected(items=drop)


# ---- bad-input tests in a child process ------------------------------------------------------
# A test marked `isolated` runs in a child pytest process (the same node id, so the same
# parameters): a crash of the op under test (SIGSEGV, abort) then fails that test with the
# signal and the case it was running named, instead of ending the whole run.
ISOLATED_CHILD = os.environ.get("LTX_KERNELS_ISOLATED_CHILD") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "isolated: run the test in a child process (crashes fail it, naming the signal)")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if ISOLATED_CHILD or pyfuncitem.get_closest_marker("isolated") is None:
        return None
    _run_isolated(pyfuncitem)
    return True


def _run_isolated(item):
    env = dict(os.environ, LTX_KERNELS_ISOLATED_CHILD="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-s", "-rs", "-p", "no:cacheprovider", item.nodeid]
    try:
        p = subprocess.run(cmd, cwd=str(item.config.rootpath), env=env, capture_output=True, text=True, timeout=1200)
        stdout, stderr, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        stdout, stderr = ((s or b"").decode(errors="replace") for s in (e.stdout, e.stderr))
        rc = None
    out = stdout + stderr
    cases = re.findall(r"^ltx-case: (.*)$", out, re.M)
    last = cases[-1] if cases else "(before the first case)"
    # pytest's own report (the assertion that failed) is on stdout, the case announcements on
    # stderr: show the end of each, so the failing case and its message both appear.
    tail = "\n".join(stderr.splitlines()[-8:] + ["-- child's pytest report --"] + stdout.splitlines()[-40:])
    if rc is None:
        pytest.fail(f"the child process timed out (a hang?) during case: {last}\n{tail}", pytrace=False)
    if rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
        pytest.fail(f"crashed with {name} during case: {last}\n{tail}", pytrace=False)
    if rc != 0:
        pytest.fail(f"failed in the child process (exit {rc}):\n{tail}", pytrace=False)
    if re.search(r"\b1 skipped\b", out) and not re.search(r"\b1 passed\b", out):
        m = re.search(r"SKIPPED \[\d+\] [^\n]*?: (.*)", out)
        pytest.skip(m.group(1) if m else "skipped in the child process")


def expect_error(op, fn, rule, what=None):
    """fn() must raise RuntimeError or ValueError whose message starts with
    'ltx_kernels.<op>: ' and contains `rule` (literally). In an isolated child the case is
    announced first (unbuffered), so a crash names it."""
    desc = f"{op}: {what or rule}"
    if ISOLATED_CHILD:
        os.write(2, f"\nltx-case: {desc}\n".encode())
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        msg = str(e)
        assert msg.startswith(f"ltx_kernels.{op}: ") and rule in msg, f"{desc}: wrong message: {msg[:400]!r}"
        return
    except Exception as e:  # noqa: BLE001 - any other type is a failure of the contract
        raise AssertionError(f"{desc}: raised {type(e).__name__} (want RuntimeError or ValueError): {e}") from e
    raise AssertionError(f"{desc}: no error raised")


def wide_row(dtype, device):
    """A [1, 2^31 + 128] tensor: one row wider than the kernels' 2^31 - 1 column limit. Never
    written or read (the ops reject it first); on the CPU its pages are never touched."""
    return torch.empty(1, 2**31 + 128, dtype=dtype, device=device)


def needs_cuda(device):
    if device == "cuda" and not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")


# ---- one fixed seed per test ------------------------------------------------------------------
# Every test starts from torch's (CPU and CUDA) and Python's global generators seeded with a
# number fixed by the test's id (file name, function, parameters: crc32 of "test_x.py::test[p]",
# the same from any working directory and in an isolated child), so a failure reproduces by
# running the same test again. LTX_KERNELS_TEST_SEED=N (read here only, never by the library)
# seeds every test with N instead, to explore other draws. The seed is printed with each
# failure (a "seed" section of its report, and one line per failed test in the summary).
SEED_ENV = "LTX_KERNELS_TEST_SEED"
_SEED_KEY = pytest.StashKey[int]()
_FAILED_SEEDS = []


def seed_of(item) -> int:
    """The seed `item` runs with: LTX_KERNELS_TEST_SEED when set, else crc32 of its id."""
    forced = os.environ.get(SEED_ENV, "").strip()
    if forced:
        return int(forced, 0) % 2**31
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return zlib.crc32(f"{item.path.name}::{rest}".encode()) % 2**31


def _seed_line(item, seed) -> str:
    how = f"{SEED_ENV} was set" if os.environ.get(SEED_ENV, "").strip() else "crc32 of the test id"
    return (f"seed {seed} ({how}); rerun this test alone for the same draws, or with "
            f"{SEED_ENV}=<n> for others: {item.nodeid}")


@pytest.fixture(autouse=True)
def _seed(request):
    seed = seed_of(request.node)
    request.node.stash[_SEED_KEY] = seed
    torch.manual_seed(seed)  # every device's generator
    random.seed(seed)


def pytest_report_header(config):
    forced = os.environ.get(SEED_ENV, "").strip()
    return [f"test seeds: {SEED_ENV}={forced} for every test" if forced else
            f"test seeds: crc32 of each test's id ({SEED_ENV}=<n> overrides), printed with each failure"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    seed = item.stash.get(_SEED_KEY, None)
    if seed is not None and rep.failed:
        rep.sections.append(("seed", _seed_line(item, seed)))


def pytest_runtest_logreport(report):
    # (on the controller under pytest-xdist too: the section travels with the report)
    if report.failed:
        _FAILED_SEEDS.extend((report.nodeid, text) for name, text in report.sections if name == "seed")


def pytest_terminal_summary(terminalreporter):
    if _FAILED_SEEDS:
        terminalreporter.section("seeds of the failed tests")
        for nodeid, text in _FAILED_SEEDS:
            terminalreporter.write_line(f"{nodeid}: {text.split(' (', 1)[0]}")


def has_cuda_kernel(op_name: str) -> bool:
    """Whether this build registered a CUDA kernel for the op."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(ltx_kernels.add_op_namespace_prefix(op_name), "CUDA")


def skip_cuda_without(device, op_name: str):
    """Skips a CUDA case when this build has no CUDA kernel for the op."""
    if device == "cuda" and not has_cuda_kernel(op_name):
        pytest.skip("no CUDA kernel")


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


class DevSettings:
    """The library's developer settings (docs/knobs.md) for one test, with monkeypatch's verbs:
    setenv(name, value) / delenv(name); each is restored when the test ends. The library reads
    the environment once, so a test sets them through ltx_kernels.set_developer_setting."""

    def __init__(self):
        self._saved = {}

    def setenv(self, name, value):
        import ltx_kernels as lk

        if name not in self._saved:
            self._saved[name] = lk.developer_setting(name)
        lk.set_developer_setting(name, str(value))

    def delenv(self, name, raising=True):
        self.setenv(name, "")

    def restore(self):
        import ltx_kernels as lk

        for name, value in self._saved.items():
            lk.set_developer_setting(name, value)
        self._saved.clear()


@pytest.fixture
def dev_settings():
    s = DevSettings()
    yield s
    s.restore()
