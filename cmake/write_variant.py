"""Assemble the kernel-builder output directory build/<variant>/ after a build.

Copies the Python package (torch-ext/ltx_kernels), the compiled extension and the generated
_ops.py into the variant directory, adds the `ltx_kernels/` compatibility package, writes
build_info.json (the commit and the compilers this variant was built from, which the benchmarks
record) and metadata.json with a sha256 digest of every file (the format `kernels` validates).
Standard library only: it runs at build time, on every build.
"""

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

COMPAT_INIT = '''# Compatibility package: `import ltx_kernels` with this variant directory on sys.path loads
# the kernel from the directory above (kernel-builder layout).
import importlib.util as _util
import sys as _sys
from pathlib import Path as _Path

_root = _Path(__file__).resolve().parent.parent
_spec = _util.spec_from_file_location(
    __name__, _root / "__init__.py", submodule_search_locations=[str(_root)]
)
_module = _util.module_from_spec(_spec)
_sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
'''


def digest(variant: Path) -> dict:
    files = {}
    for p in sorted(variant.rglob("*")):
        rel = p.relative_to(variant).as_posix()
        if p.is_dir() or "__pycache__" in rel or rel.startswith("metadata.json"):
            continue
        files[rel] = base64.b64encode(hashlib.sha256(p.read_bytes()).digest()).decode()
    return {"algorithm": "sha256", "files": files}


def git_state(source_dir: str) -> dict:
    """The commit being built and whether tracked files differ from it (None outside git)."""
    try:
        run = dict(cwd=source_dir, capture_output=True, text=True, check=True)
        sha = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **run).stdout.strip())
        return {"git_sha": sha, "git_dirty": dirty}
    except (OSError, subprocess.CalledProcessError):
        return {"git_sha": None, "git_dirty": None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant-dir", required=True)
    ap.add_argument("--package-src", required=True)
    ap.add_argument("--so", required=True)
    ap.add_argument("--ops-py", required=True)
    ap.add_argument("--ops-name", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--archs", default="")
    ap.add_argument("--version", type=int, default=1)
    ap.add_argument("--license", default="Apache-2.0")
    ap.add_argument("--source-dir", default="")
    ap.add_argument("--cxx-compiler", default="", help="'<id> <version>' of the C++ compiler")
    ap.add_argument("--cuda-compiler", default="", help="'<id> <version>' of the CUDA compiler")
    ap.add_argument("--cuda-host-compiler", default="")
    ap.add_argument("--build-type", default="")
    ap.add_argument("--sha-pin", default="", help="LTX_KERNELS_SHA when the build pinned the namespace suffix")
    a = ap.parse_args()

    variant = Path(a.variant_dir)
    if variant.exists():
        shutil.rmtree(variant)
    shutil.copytree(a.package_src, variant, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_ops.py"))
    shutil.copy2(a.ops_py, variant / "_ops.py")
    shutil.copy2(a.so, variant / os.path.basename(a.so))
    compat = variant / "ltx_kernels"
    compat.mkdir(exist_ok=True)
    (compat / "__init__.py").write_text(COMPAT_INIT)

    info = {
        **(git_state(a.source_dir) if a.source_dir else {"git_sha": None, "git_dirty": None}),
        # the commit the builder named (-DLTX_KERNELS_SHA), e.g. for a copy of a tree whose git
        # metadata is stale: git_sha above is what git says in the source directory
        "sha_pin": a.sha_pin or None,
        "backend": a.backend,
        "archs": a.archs.split(";") if a.archs else [],
        "cxx_compiler": a.cxx_compiler.strip() or None,
        "cuda_compiler": a.cuda_compiler.strip() or None,
        "cuda_host_compiler": a.cuda_host_compiler.strip() or None,
        "build_type": a.build_type or None,
    }
    (variant / "build_info.json").write_text(json.dumps(info, indent=2) + "\n")

    backend = {"type": a.backend}
    if a.backend == "cuda" and a.archs:
        backend["archs"] = a.archs.split(";")
    meta = {
        "id": a.ops_name,
        "name": "ltx-kernels",
        "version": a.version,
        "license": a.license,
        "backend": backend,
        "python-depends": [],
        "digest": digest(variant),
    }
    (variant / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
