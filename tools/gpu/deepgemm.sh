#!/usr/bin/env bash
# Builds DeepGEMM from source on a GPU machine, as the baseline `benchmarks/bench_gemm.py` times
# beside ours (the library never imports it).
#
#   DG_TARBALL=<deepseek-ai/DeepGEMM archive> FMT_TARBALL=<fmtlib/fmt archive> \
#     [DG_DESCRIBE=<git describe>] [DG_COMMIT=<sha>] bash tools/gpu/deepgemm.sh [DEST]
#
# The archives are `git archive --prefix=DeepGEMM/ <commit>` and `git archive --prefix=fmt/ <commit>`
# (the GPU machine has no network; its submodules are not in the archive). CUTLASS/CuTe come from
# the nvidia-cutlass wheel's headers; setup.py also imports `wheel` and `packaging`.
# DEST (default build/deepgemm) receives src/ (the built, importable package), DG_SOURCE.txt
# (describe and commit, which the benchmark prints as DeepGEMM's version), env.sh (source it:
# PYTHONPATH and a JIT cache under DEST) and build.log. Prints one line: built or why not.
#
# Compiler: the system g++ (/usr/bin/g++), whatever CUDAHOSTCXX says. torch's extension builder
# picks CUDAHOSTCXX for the host code; where that is a second g++ install whose libstdc++ differs
# from the one the Python process loads, DeepGEMM's first call crashes in libstdc++'s locale code
# (std::regex and ostream formatting in its JIT), so the host code is built with the compiler
# whose libstdc++ the process already has.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:-$ROOT/build/deepgemm}
: "${DG_TARBALL:?set DG_TARBALL to a git archive of deepseek-ai/DeepGEMM}"
: "${FMT_TARBALL:?set FMT_TARBALL to a git archive of fmtlib/fmt}"
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
LOG=$DEST/build.log
rm -rf "$DEST/src" "$DEST/fmt"
mkdir -p "$DEST/src" "$DEST/fmt"
tar -xzf "$DG_TARBALL" -C "$DEST/src" --strip-components=1 || { echo "deepgemm: cannot unpack $DG_TARBALL"; exit 1; }
tar -xzf "$FMT_TARBALL" -C "$DEST/fmt" --strip-components=1 || { echo "deepgemm: cannot unpack $FMT_TARBALL"; exit 1; }

cutlass_inc() {
  python3 -c "import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), 'source', 'include'))" 2>/dev/null
}
CUTLASS_INC=$(cutlass_inc)
# not importable (a script that installs the wheels later, in parallel): the carried wheel's
# headers into DEST/site (DeepGEMM's include links point there)
if [ ! -d "$CUTLASS_INC/cute" ] && ls "$ROOT"/.whl/nvidia_cutlass-*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$DEST/site" "$ROOT"/.whl/nvidia_cutlass-*.whl \
    > "$DEST/pip.log" 2>&1 && export PYTHONPATH="$DEST/site${PYTHONPATH:+:$PYTHONPATH}"
  CUTLASS_INC=$(cutlass_inc)
fi
[ -d "$CUTLASS_INC/cute" ] || { echo "deepgemm: no CUTLASS headers (install the nvidia-cutlass wheel)"; exit 1; }
cd "$DEST/src"
rm -rf third-party/fmt third-party/cutlass
mkdir -p third-party/cutlass
ln -s "$DEST/fmt" third-party/fmt
ln -s "$CUTLASS_INC" third-party/cutlass/include
ln -sfn "$CUTLASS_INC/cutlass" deep_gemm/include/cutlass
ln -sfn "$CUTLASS_INC/cute" deep_gemm/include/cute
printf 'describe=%s\ncommit=%s\n' "${DG_DESCRIBE:-unknown}" "${DG_COMMIT:-unknown}" > "$DEST/src/DG_SOURCE.txt"
cp "$DEST/src/DG_SOURCE.txt" "$DEST/DG_SOURCE.txt"

t0=$(date +%s)
# DG_USE_LOCAL_VERSION=0: the archive is no git checkout; DG_FORCE_BUILD: never look for a wheel
if CC=/usr/bin/gcc CXX=/usr/bin/g++ LDSHARED="/usr/bin/g++ -shared" CUDAHOSTCXX=/usr/bin/g++ \
   DG_USE_LOCAL_VERSION=0 DG_FORCE_BUILD=1 MAX_JOBS=${MAX_JOBS:-16} \
   python3 setup.py build_ext --inplace > "$LOG" 2>&1; then
  cat > "$DEST/env.sh" <<EOF
export PYTHONPATH=$DEST/src:\${PYTHONPATH:-}
export DG_JIT_CACHE_DIR=$DEST/jit-cache
EOF
  echo "deepgemm: built ${DG_DESCRIBE:-?} in $(( $(date +%s) - t0 )) s with $(/usr/bin/g++ --version | head -1); source $DEST/env.sh"
else
  echo "deepgemm: build failed after $(( $(date +%s) - t0 )) s; last lines of $LOG:"
  tail -15 "$LOG"
  exit 1
fi
