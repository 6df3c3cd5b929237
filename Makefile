# Hesper: the two commands of the README (`make demo`, `make test`) and the
# steps they are made of. Every target installs and builds what it needs.

BUILD_DIR ?= build
JOBS ?= 2
LLVM_PREFIX ?= /usr/lib/llvm-22
BUILD_TYPE ?= Release

# Hits in ccache survive a fresh clone in another folder.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all setup configure build demo test check-lit check-unit docs clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD_DIR)/build.ninja: CMakeLists.txt | setup
	cmake -G Ninja -S . -B $(BUILD_DIR) \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_PREFIX)/bin/lit

configure: setup $(BUILD_DIR)/build.ninja

build: configure
	ninja -C $(BUILD_DIR) -j$(JOBS)

# The main job: a small model head (RMSNorm, matvec + bias, softmax) written
# in Circuit, fused (9 ops -> 4 kernels), compiled for the default device
# (CUDA, else Vulkan -- Mesa lavapipe on a machine without a GPU), run 20
# times with the validation layer on, and checked against the reference
# interpreter; the result is written to build/demo-p.npy.
demo: build
	$(BUILD_DIR)/bin/hesper-run examples/rmsnorm-matvec-softmax.mlir \
	  --input x=random:1 --input g=random:2 --input w=random:3 \
	  --input b=random:4 --repeat 20 --determinism-runs 4 --check \
	  --validation --output p=$(BUILD_DIR)/demo-p.npy

check-lit: build
	$(LLVM_PREFIX)/bin/lit -sv $(BUILD_DIR)/test

check-unit: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)

# All tests: the lit/FileCheck suite, then the GoogleTest unit tests.
test: check-lit check-unit

# Regenerate the dialect reference in docs/ from the ODS definitions.
docs: build
	ninja -C $(BUILD_DIR) mlir-doc
	for d in Exp ShaderM Circuit; do \
	  cp $(BUILD_DIR)/docs/Dialects/$$d/$${d}Ops.md docs/Dialects/$$d/$${d}Ops.md; \
	done

clean:
	rm -rf $(BUILD_DIR)
