#!/usr/bin/env bash
# Installs what the build and the tests need, once (a no-op when already there).
#   torch 2.11.0 from PyPI (a CUDA 13.0 build: its CUDA major matches nvcc 13), pytest,
#   kernels + kernel-abi-check (Hub loader and ABI check), scikit-build-core (pip install .),
#   diffusers (integration tests on tiny LTX configs), nvidia-cutlass (CUTLASS/CuTe headers for the
#   sm_90a GEMM; CUTLASS_DIR overrides), ninja/cmake from the system, GoogleTest from Debian.
set -euo pipefail
PY=${PYTHON:-python3}
need=()
$PY -c "import torch; assert torch.__version__.startswith('2.11.0')" 2>/dev/null || need+=("torch==2.11.0")
for m in pytest kernels kernel_abi_check scikit_build_core transformers diffusers cutlass_library; do
  $PY -c "import $m" 2>/dev/null || need+=("$m")
done
if [ ${#need[@]} -gt 0 ]; then
  pkgs=()
  for n in "${need[@]}"; do
    case "$n" in
      kernel_abi_check) pkgs+=("kernel-abi-check") ;;
      scikit_build_core) pkgs+=("scikit-build-core") ;;
      transformers) pkgs+=("transformers==5.17.0") ;;
      diffusers) pkgs+=("diffusers==0.42.1") ;;
      cutlass_library) pkgs+=("nvidia-cutlass==4.2.0.0") ;;
      *) pkgs+=("$n") ;;
    esac
  done
  echo "install_deps: pip install ${pkgs[*]}"
  $PY -m pip install -q "${pkgs[@]}"
fi
missing_apt=()
command -v ninja >/dev/null || missing_apt+=(ninja-build)
command -v cmake >/dev/null || missing_apt+=(cmake)
[ -e /usr/include/gtest/gtest.h ] || missing_apt+=(libgtest-dev)
if [ ${#missing_apt[@]} -gt 0 ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "install_deps: apt-get install ${missing_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_apt[@]}" >/dev/null
fi
