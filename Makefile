# The two commands of the README:
#   make bench   build, then benchmark every family on the local GPU into benchmarks/results/<gpu>/
#                (without a GPU it says that GPU numbers need a GPU)
#   make test    build, C++ core tests (ctest), then pytest (CUDA tests skip without a GPU)
#   make sanitize  the CPU backend built again with AddressSanitizer + UndefinedBehaviorSanitizer
#                (build/sanitize), its C++ core tests, and a fast subset of the CPU tests (every
#                op family, the codecs, every error path) with the sanitizer runtimes preloaded
#                into Python; any sanitizer report fails it
PYTHON ?= python3
BUILD  ?= build/cmake
JOBS   ?= $(shell nproc)
VARIANT = $(shell cat $(BUILD)/variant.txt 2>/dev/null)

# CUDA targets of `make build` / `make test`: TORCH_CUDA_ARCH_LIST when set; else the GPUs of this
# machine (nvidia-smi's compute capabilities, 9.0 built as 9.0a for the wgmma/TMA kernels); else,
# on a machine without a GPU, sm_90a alone: one architecture is enough to prove that every kernel
# (the sm_90a ones included) compiles. Release builds (pip, kernel-builder) list their targets.
LOCAL_ARCHS := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | \
	sed 's/^9\.0$$/9.0a/' | sort -u | tr '\n' ' ')
export TORCH_CUDA_ARCH_LIST ?= $(if $(strip $(LOCAL_ARCHS)),$(strip $(LOCAL_ARCHS)),9.0a)

SAN_BUILD ?= build/sanitize
# Python is not instrumented: the runtimes are preloaded, those of the compiler that built the
# extension (read from the CMake cache when the recipe runs). detect_leaks=0: CPython and torch
# keep allocations alive at exit by design.
SAN_CXX = $$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' $(SAN_BUILD)/CMakeCache.txt)
SAN_ENV = LD_PRELOAD="$$($(SAN_CXX) -print-file-name=libasan.so):$$($(SAN_CXX) -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1

.PHONY: deps build test sanitize bench gpu-check install clean

deps:
	bash tools/install_deps.sh

build:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	ctest --test-dir $(BUILD) --output-on-failure
	PYTHONPATH=$$(cat $(BUILD)/variant.txt):tests $(PYTHON) -m pytest tests -q -rs

sanitize: deps
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DLTX_KERNELS_CPU_ONLY=ON \
	  -DLTX_KERNELS_SANITIZE=ON -DLTX_VARIANT_ROOT=$(CURDIR)/$(SAN_BUILD)/variant
	cmake --build $(SAN_BUILD) -j $(JOBS)
	ctest --test-dir $(SAN_BUILD) --output-on-failure
	@nm -D $$(ls $$(cat $(SAN_BUILD)/variant.txt)/_ltx_kernels_*.so) | grep -q __asan_report_load || \
	  { echo "sanitize: the extension is not instrumented"; exit 1; }
	$(SAN_ENV) $(PYTHON) -c "import ctypes; ctypes.CDLL(None).__asan_init; ctypes.CDLL(None).__ubsan_handle_add_overflow_abort; print('sanitize: runtimes loaded')"
	$(SAN_ENV) LTX_KERNELS_SANITIZE_SUBSET=1 PYTHONPATH=$$(cat $(SAN_BUILD)/variant.txt):tests \
	  $(PYTHON) -m pytest tests -q -p no:cacheprovider

bench: deps build
	PYTHONPATH=$$(cat $(BUILD)/variant.txt) $(PYTHON) benchmarks/run.py

# Everything on a GPU machine: build for its GPU, all tests on CUDA, benchmarks, results.
gpu-check:
	bash tools/gpu/full_check.sh

install:
	$(PYTHON) -m pip install --no-build-isolation .

clean:
	rm -rf build
