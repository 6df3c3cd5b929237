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

# The main job: a Llama-architecture model of 29.4M parameters (embedding
# 512, 8 layers, 8 heads / 4 KV heads, FFN 1536, vocabulary 8192, random
# weights from a fixed seed, so the text is not meaningful) is written as a
# GGUF file, then hesper-run compiles its decode step for the default device
# (a GPU through CUDA or Vulkan, else native code for this machine's CPU on
# all its cores), tokenizes
# the prompt, generates 48 tokens and prints the text, prefill and decode
# tok/s, kernels per token and device memory.
PYTHON ?= /usr/bin/python3
DEMO_MODEL := $(BUILD_DIR)/demo-model.gguf

$(DEMO_MODEL): utils/gguf/make_model.py | setup
	$(PYTHON) utils/gguf/make_model.py $@ --preset demo --quiet

demo: build $(DEMO_MODEL)
	$(BUILD_DIR)/bin/hesper-run $(DEMO_MODEL) -p "Once upon a time" -n 48 \
	  -c 256 --seed 42

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
	  if [ -f $(BUILD_DIR)/docs/Dialects/$$d/$${d}Passes.md ]; then \
	    cp $(BUILD_DIR)/docs/Dialects/$$d/$${d}Passes.md docs/Dialects/$$d/; \
	  fi; \
	done

clean:
	rm -rf $(BUILD_DIR)
