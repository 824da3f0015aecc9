# The two commands of the README:
#   make bench   build, then benchmark every family on the local GPU into benchmarks/results/<gpu>/
#                (without a GPU it says that GPU numbers need a GPU)
#   make test    build, C++ core tests (ctest), then pytest (CUDA tests skip without a GPU)
PYTHON ?= python3
BUILD  ?= build/cmake
JOBS   ?= $(shell nproc)
VARIANT = $(shell cat $(BUILD)/variant.txt 2>/dev/null)

.PHONY: deps build test bench gpu-check install clean

deps:
	bash scripts/install_deps.sh

build:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	ctest --test-dir $(BUILD) --output-on-failure
	PYTHONPATH=$$(cat $(BUILD)/variant.txt):tests $(PYTHON) -m pytest tests -q -rs

bench: deps build
	PYTHONPATH=$$(cat $(BUILD)/variant.txt) $(PYTHON) benchmarks/run.py

# Everything on a GPU machine: build for its GPU, all tests on CUDA, benchmarks, results.
gpu-check:
	bash scripts/gpu_check.sh

install:
	$(PYTHON) -m pip install --no-build-isolation .

clean:
	rm -rf build
