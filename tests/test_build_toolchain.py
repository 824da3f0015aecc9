"""What the build takes from the toolchain and the source tree.

- The extension links the process's shared libstdc++, never a static copy of it: a second copy of
  libstdc++'s locale machinery in the process crashes the first stream that formats an integer
  (every error message that names a size), which is what a compiler installation without the
  libstdc++.so development link produced.
- The op namespace suffix: the commit when the source tree is the project's own git checkout,
  otherwise a hash of the version and the sources' content, never a foreign repository's commit.
  Configure-only runs of CMake on copies of the tree (CPU backend, a few seconds each)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import ltx_kernels as lk

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["CMakeLists.txt", "build.toml", "pyproject.toml", "cmake", "csrc", "torch-ext"]

needs_cmake_git = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("git") is None,
                                     reason="needs cmake and git")


def _extension_so() -> Path:
    pkg = Path(lk.__file__).resolve().parent
    ns = lk.add_op_namespace_prefix("x").split("::")[0]
    found = list(pkg.glob(ns + "*.so"))
    if not found:
        pytest.skip(f"no {ns}*.so next to the package")
    return found[0]


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_extension_defines_no_libstdcxx_internals():
    so = _extension_so()
    out = subprocess.run(["nm", "-C", "--defined-only", str(so)], capture_output=True, text=True, check=True).stdout
    pat = re.compile(r" std::(locale::|ios_base::|basic_ostream<char, std::char_traits<char> >::_M_insert<)")
    bad = [line for line in out.splitlines() if pat.search(line)]
    assert not bad, f"{so.name} carries its own libstdc++ code (a static copy):\n" + "\n".join(bad[:10])


def test_error_naming_a_size_raises_in_a_fresh_process():
    """The crash this guards against killed the process, so it runs in a child."""
    code = ("import torch, ltx_kernels as lk\n"
            "try:\n"
            "    lk.rms_norm(torch.randn(4, 2048), torch.randn(1024))\n"
            "except RuntimeError as e:\n"
            "    print('raised:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"child died with {r.returncode}: {r.stderr[-2000:]}"
    assert "raised: ltx_kernels.rms_norm: weight must be 1-D with x.shape[-1] = 2048 elements (got shape [1024])" in r.stdout


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _copy_tree(dst: Path) -> Path:
    dst.mkdir(parents=True)
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dst / name)
    return dst


def _namespace(src: Path, build: Path) -> str:
    r = subprocess.run(
        ["cmake", "-S", str(src), "-B", str(build), "-DLTX_KERNELS_CPU_ONLY=ON", "-DLTX_KERNELS_TESTS=OFF",
         f"-DPython3_EXECUTABLE={sys.executable}", f"-DLTX_VARIANT_ROOT={build}/variants"],
        capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    m = re.search(r"ops namespace (_ltx_kernels_cpu_([0-9a-f]{7})) \(from ([^)]*)\)", r.stdout)
    assert m, r.stdout[-2000:]
    return m.group(2), m.group(3)


def _commit_all(repo: Path):
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "outer")
    return _git(repo, "rev-parse", "--short=7", "HEAD")


@needs_cmake_git
def test_namespace_inside_foreign_repo_uses_content_hash(tmp_path):
    outer = tmp_path / "outer"
    src = _copy_tree(outer / "vendor" / "ltx-kernels")
    foreign = _commit_all(outer)
    ns1, how1 = _namespace(src, tmp_path / "b1")
    assert ns1 != foreign and "content" in how1, (ns1, foreign, how1)
    ns2, _ = _namespace(src, tmp_path / "b2")
    assert ns2 == ns1, "the same sources must give the same namespace"
    (src / "csrc" / "torch" / "common.h").write_text((src / "csrc" / "torch" / "common.h").read_text() + "\n// x\n")
    ns3, _ = _namespace(src, tmp_path / "b3")
    assert ns3 != ns1, "a changed source must change the namespace"


@needs_cmake_git
def test_namespace_of_a_tarball_copy_uses_content_hash(tmp_path):
    src = _copy_tree(tmp_path / "sdist")  # no .git anywhere above (tmp_path is outside the repo)
    ns, how = _namespace(src, tmp_path / "b")
    assert "content" in how, how


@needs_cmake_git
def test_namespace_of_own_checkout_is_its_commit(tmp_path):
    src = _copy_tree(tmp_path / "clone")
    sha = _commit_all(src)
    ns, how = _namespace(src, tmp_path / "b")
    assert (ns, how) == (sha, "git HEAD")
