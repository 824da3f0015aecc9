"""Assemble the kernel-builder output directory build/<variant>/ after a build.

Copies the Python package (torch-ext/ltx_kernels), the compiled extension and the generated
_ops.py into the variant directory, adds the `ltx_kernels/` compatibility package, writes
build_info.json (the commit this variant was built from, whether the source tree differed from it
and the sha256 of the difference, and the compilers: benchmark records take their commit from it) and metadata.json with a sha256 digest of every file (the format `kernels` validates).
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
    """The commit being built and whether the source tree differs from it: tracked changes and
    untracked files that git does not ignore, benchmarks/results/ aside (benchmark records are
    not built). Where it differs, the sha256 of the difference (the binary diff against HEAD,
    then each untracked file's name and content), so that a benchmark record marked dirty still
    names what it ran. None outside git, and where the source directory is not the top of its
    git checkout (a copy inside another repository, whose commit is not ours)."""
    results = ":(exclude)benchmarks/results"
    none = {"git_sha": None, "git_dirty": None, "git_diff_sha256": None}
    try:
        run = dict(cwd=source_dir, capture_output=True, check=True)
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], **run).stdout.decode().strip()
        if os.path.realpath(top) != os.path.realpath(source_dir):
            return none
        sha = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.decode().strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", ".", results],
                                **run).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return none
    changes = [ln for ln in status.splitlines() if ln.strip()]
    digest = None
    if changes:
        h = hashlib.sha256(subprocess.run(["git", "diff", "--binary", "HEAD", "--", ".", results], **run).stdout)
        for ln in changes:
            if ln.startswith("?? "):
                h.update(b"\0untracked\0" + ln[3:].encode() + b"\0")
                try:
                    h.update(hashlib.sha256((Path(source_dir) / ln[3:]).read_bytes()).digest())
                except OSError:
                    pass
        digest = h.hexdigest()
    return {"git_sha": sha, "git_dirty": bool(changes), "git_diff_sha256": digest}


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
        **(git_state(a.source_dir) if a.source_dir else {"git_sha": None, "git_dirty": None, "git_diff_sha256": None}),
        # the op namespace suffix the builder pinned (-DLTX_KERNELS_SHA): a name, not a commit
        # that anything checked; records take their commit from git_sha
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
