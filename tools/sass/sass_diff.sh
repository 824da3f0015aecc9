#!/usr/bin/env bash
# Compares the SASS of CUDA objects between a git revision and the working tree, kernel by kernel.
#
#   tools/sass/sass_diff.sh [--arch 9.0a] [--rename OLD=NEW]... REV FILE[=OLDFILE]...
#
#   REV              the revision to compare against (e.g. main, HEAD~3)
#   FILE             a .cu source of the working tree; =OLDFILE gives its path at REV when it moved
#   --arch A         the TORCH_CUDA_ARCH_LIST entry to build for (default 9.0a)
#   --rename OLD=NEW applied to REV's demangled kernel names (a namespace or type renamed since)
#   -v               list the identical kernels too
#
# Each side is configured with the project's own CMake (CUDA backend, one architecture) under
# build/sass/{rev,tree}, and only the named objects are built (ninja, through ccache when it is
# installed). `cuobjdump --dump-sass` of each object is split into functions; every kernel is
# reported as identical, DIFFERENT, only-at-REV or only-in-tree; a kernel only in one side whose
# SASS equals a kernel only in the other (a renamed template argument) counts as identical.
# Host code is not compared.
# Exit status: 0 when every kernel is identical, 1 otherwise, 2 on a usage or build error.
set -euo pipefail

arch=9.0a
verbose=0
renames=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --rename) renames+=("$2"); shift 2 ;;
    -v|--verbose) verbose=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
if [[ $# -lt 2 ]]; then
  sed -n '2,18p' "$0" >&2
  exit 2
fi
rev="$1"; shift

root="$(git rev-parse --show-toplevel)"
work="$root/build/sass"
mkdir -p "$work"

cuobjdump_bin="$(command -v cuobjdump || true)"
if [[ -z "$cuobjdump_bin" && -x "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump" ]]; then
  cuobjdump_bin="${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump"
fi
if [[ -z "$cuobjdump_bin" ]]; then  # the copy that ships with triton, when the toolkit has none
  cuobjdump_bin="$(python3 -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump"))' 2>/dev/null || true)"
fi
if [[ ! -x "$cuobjdump_bin" ]]; then
  echo "sass_diff: cuobjdump not found (PATH, \$CUDA_HOME/bin, triton)" >&2
  exit 2
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

# configure SRC BUILD: a CUDA build for one architecture, no tests.
configure() {
  TORCH_CUDA_ARCH_LIST="$arch" cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLTX_KERNELS_SHA=5a55d1f -DLTX_KERNELS_TESTS=OFF -DLTX_VARIANT_ROOT="$2/variant" \
    "${launcher[@]}" >"$2.configure.log" 2>&1 || { echo "sass_diff: cmake failed, see $2.configure.log" >&2; exit 2; }
}

# object BUILD SRCFILE: builds the object of SRCFILE and prints its path.
object() {
  local target
  target="$(ninja -C "$1" -t targets all | sed -n "s|^\(.*/$2\.o\): .*|\1|p" | head -n 1)"
  if [[ -z "$target" ]]; then
    echo "sass_diff: no object for $2 in $1" >&2
    exit 2
  fi
  ninja -C "$1" -j "${JOBS:-2}" "$target" >&2
  echo "$1/$target"
}

# The source tree at REV (inside the repository, so that ccache's base directory applies).
rev_src="$work/rev-src"
rm -rf "$rev_src"
mkdir -p "$rev_src"
git -C "$root" archive "$rev" | tar -x -C "$rev_src"
configure "$rev_src" "$work/rev"
configure "$root" "$work/tree"

status=0
for spec in "$@"; do
  new="${spec%%=*}"
  old="$new"
  [[ "$spec" == *=* ]] && old="${spec#*=}"
  obj_old="$(object "$work/rev" "$old")"
  obj_new="$(object "$work/tree" "$new")"
  "$cuobjdump_bin" --dump-sass "$obj_old" >"$work/old.sass"
  "$cuobjdump_bin" --dump-sass "$obj_new" >"$work/new.sass"
  echo "== $new (at $rev: $old)"
  python3 - "$work/old.sass" "$work/new.sass" "$verbose" "${renames[@]}" <<'EOF' || status=1
import re, subprocess, sys

def functions(path):
    """{demangled name: SASS lines without addresses' comments} of one cuobjdump listing."""
    out, name, body = {}, None, []
    for line in open(path):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            if name:
                out[name] = body
            name, body = m.group(1), []
        elif name and line.strip() and not line.lstrip().startswith("....."):
            body.append(" ".join(line.split()))  # cuobjdump's column padding varies
    if name:
        out[name] = body
    names = list(out)
    if names:
        dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
        out = {d: out[n] for n, d in zip(names, dem)}
    return out

old, new = functions(sys.argv[1]), functions(sys.argv[2])
verbose = sys.argv[3] == "1"
for spec in sys.argv[4:]:
    a, b = spec.split("=", 1)
    old = {k.replace(a, b): v for k, v in old.items()}
# a kernel whose name changed (a template argument renamed) is matched by its SASS
old_by_body = {}
for k, v in old.items():
    if k not in new:
        old_by_body.setdefault("\n".join(v), []).append(k)
renamed = {}
for k, v in new.items():
    if k not in old and old_by_body.get("\n".join(v)):
        renamed[k] = old_by_body["\n".join(v)].pop()
matched_old = set(renamed.values())
bad = 0
for k in sorted(set(old) | set(new)):
    if k in renamed:
        print(f"  identical    {k}\n      (at REV: {renamed[k]})")
    elif k in matched_old:
        continue
    elif k not in new:
        print(f"  only at REV  {k}"); bad += 1
    elif k not in old:
        print(f"  only in tree {k}"); bad += 1
    elif old[k] != new[k]:
        print(f"  DIFFERENT    {k} ({len(old[k])} vs {len(new[k])} lines)"); bad += 1
    elif verbose:
        print(f"  identical    {k} ({len(new[k])} lines)")
print(f"  {len(new)} kernels, {bad} not identical")
sys.exit(1 if bad else 0)
EOF
done
exit $status
