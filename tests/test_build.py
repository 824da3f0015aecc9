"""The build's contract (the Hugging Face kernel-builder's): variant layout, metadata digest,
loading through `kernels`, the ABI check, build.toml agreeing with the sources, and the
Hub rules on the Python package."""

import importlib
import json
import os
import re
import sys
from pathlib import Path

import pytest
import torch

import ltx_kernels as lk

ROOT = Path(__file__).resolve().parent.parent
PKG = Path(lk.__file__).resolve().parent  # build/<variant>/ (or the installed package)
IN_VARIANT = (PKG / "metadata.json").exists()
needs_variant = pytest.mark.skipif(not IN_VARIANT, reason="package not loaded from build/<variant>/")


@needs_variant
def test_variant_layout_and_metadata():
    v = PKG.name
    m = re.fullmatch(r"torch(\d)(\d+)-cxx11-(cu\d+|cpu)-x86_64-linux", v)
    assert m, v
    major, minor = torch.__version__.split(".")[:2]
    assert m.group(1) == major and m.group(2) == minor
    meta = json.loads((PKG / "metadata.json").read_text())
    assert meta["name"] == "ltx-kernels" and meta["license"] == "Apache-2.0"
    assert re.fullmatch(r"_ltx_kernels_(cuda|cpu)_[0-9a-f]{7}", meta["id"])
    assert meta["backend"]["type"] == ("cpu" if m.group(3) == "cpu" else "cuda")
    so = list(PKG.glob(meta["id"] + ".abi3.so"))
    assert len(so) == 1
    for f in ["__init__.py", "_ops.py", "layers/__init__.py", "ltx_kernels/__init__.py", "reference.py"]:
        assert (PKG / f).exists(), f
    assert f"torch.ops.{meta['id']}" in (PKG / "_ops.py").read_text()
    assert lk.add_op_namespace_prefix("rms_norm") == meta["id"] + "::rms_norm"


@needs_variant
def test_metadata_digest_validates_with_kernels():
    k = pytest.importorskip("kernels._rust")
    meta = k.Metadata.read_from_file(PKG / "metadata.json")
    actual = k.Digest.hash_variant(k.DigestAlgorithm.SHA256, PKG)
    meta.digest.validate(actual)  # raises on any mismatch


@needs_variant
def test_get_local_kernel_loads_and_runs():
    kernels = pytest.importorskip("kernels")
    mod = kernels.get_local_kernel(PKG.parent.parent, backend="cuda" if "-cu" in PKG.name else "cpu")
    x = torch.randn(3, 40)
    torch.testing.assert_close(mod.rms_norm(x), lk.rms_norm(x))


@needs_variant
def test_kernel_abi_check():
    kac = pytest.importorskip("kernel_abi_check")
    so = next(PKG.glob("*.abi3.so"))
    obj = kac.ObjectFile(str(so))
    assert obj.check_python_abi("3.9") == []
    assert obj.check_manylinux("manylinux_2_28") == []


def _toml_sources():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        pytest.skip("tomllib needs Python 3.11")
    cfg = tomllib.loads((ROOT / "build.toml").read_text())
    assert cfg["general"]["name"] == "ltx-kernels" and cfg["general"]["edition"] == 5
    assert "license" in cfg["general"]
    listed = set(cfg["torch"]["src"])
    for name, sec in cfg.get("kernel", {}).items():
        assert {"backend", "depends", "src"} <= set(sec), name
        listed |= set(sec["src"])
    return cfg, listed


def test_build_toml_lists_every_source():
    cfg, listed = _toml_sources()
    on_disk = set()
    for pattern in ["csrc/**/*.cu", "csrc/**/*.cuh", "csrc/**/*.h", "csrc/**/*.cpp", "torch-ext/*.cpp", "torch-ext/*.h"]:
        on_disk |= {p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern)}
    assert sorted(on_disk - listed) == [], "sources missing from build.toml"
    assert sorted(listed - on_disk) == [], "build.toml lists files that do not exist"


def test_hub_rules_on_sources():
    bad = re.compile(r"pybind11|PYBIND11_MODULE|torch/extension\.h|TORCH_LIBRARY\(|TORCH_LIBRARY_FRAGMENT|cpp_extension")
    for p in list((ROOT / "csrc").rglob("*")) + list((ROOT / "torch-ext").rglob("*")):
        if p.is_file() and p.suffix in {".cpp", ".h", ".cu", ".cuh", ".py"}:
            assert not bad.search(p.read_text()), p


def test_python_package_imports_are_relative_and_light():
    allowed = set(sys.stdlib_module_names) | {"torch"}
    for p in (ROOT / "torch-ext" / "ltx_kernels").rglob("*.py"):
        for line in p.read_text().splitlines():
            m = re.match(r"\s*(?:from|import)\s+([A-Za-z_][\w]*)", line)
            if m and not line.lstrip().startswith("from ."):
                assert m.group(1) in allowed, (p, line)
