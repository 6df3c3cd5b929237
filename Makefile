# Hesper: the two commands of the README (`make demo`, `make test`) and the
# steps they are made of. Every target installs and builds what it needs.

BUILD_DIR ?= build
JOBS ?= 2
LLVM_PREFIX ?= /usr/lib/llvm-22
BUILD_TYPE ?= Release

# Hits in ccache survive a fresh clone in another folder.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all setup configure build demo test check-lit check-unit docs clean \
	check-sanitized fuzz dist

all: build

setup:
	@bash scripts/setup.sh

$(BUILD_DIR)/build.ninja: CMakeLists.txt | setup
	cmake -G Ninja -S . -B $(BUILD_DIR) \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DPython_EXECUTABLE=$(PYTHON) \
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

# hesper-server's tests drive it with npm packages (the official OpenAI
# client, puppeteer-core for headless chromium), pinned by
# test/Server/package-lock.json and installed into the build folder.
NPM_TEST_FILES := test/Server/package.json test/Server/package-lock.json
%/test-npm/node_modules/.package-lock.json: $(NPM_TEST_FILES)
	mkdir -p $*/test-npm
	cp $(NPM_TEST_FILES) $*/test-npm/
	cd $*/test-npm && npm ci --no-audit --no-fund --loglevel=error
	touch $@

check-lit: build $(BUILD_DIR)/test-npm/node_modules/.package-lock.json
	$(LLVM_PREFIX)/bin/lit -sv $(BUILD_DIR)/test

check-unit: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)

# All tests: the lit/FileCheck suite, then the GoogleTest unit tests.
test: check-lit check-unit

# The whole suite again, built with AddressSanitizer and
# UndefinedBehaviorSanitizer (LLVM's LLVM_USE_SANITIZER), by the same GCC as
# the main build: the lowering passes create some ops inside call arguments,
# whose evaluation order differs between GCC and clang, so the textual IR
# that FileCheck reads is the same only with the same compiler. CI runs it
# beside `make test`. Leaks inside the system's Vulkan driver, validation
# layers and LLVM are not ours: see utils/sanitizers/lsan.supp. Tests marked
# `UNSUPPORTED: asan` (the Vulkan twins of CPU parity tests) run only in the
# main build: lit sees the asan and ubsan features in this one.
SAN_DIR ?= build-san
# allow_user_poisoning=0: the static MLIR libraries are not instrumented, and
# LLVM's allocators poison memory from our (instrumented) copies of their
# inline functions that the libraries' copies never unpoison.
# quarantine_size_mb=32: freed memory is held back from reuse (to catch
# uses after free) up to 32 MiB instead of 256, so that the tests that
# check a long-running process's resident memory stays steady (a server
# under thousands of requests) see leaks, not the quarantine filling up.
export ASAN_OPTIONS := detect_leaks=1:allow_user_poisoning=0:detect_stack_use_after_return=0:quarantine_size_mb=32
export LSAN_OPTIONS := suppressions=$(CURDIR)/utils/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS := print_stacktrace=1:halt_on_error=1
# Mesa's lavapipe loads its own LLVM, which keeps memory in its globals; the
# Vulkan loader unloads both at vkDestroyInstance, after which LeakSanitizer
# sees that memory as leaked by an unknown module. The runtime keeps them
# loaded when asked (docs/Runtime.md).
export HESPER_VULKAN_KEEP_DRIVERS_LOADED := 1

$(SAN_DIR)/build.ninja: CMakeLists.txt | setup
	cmake -G Ninja -S . -B $(SAN_DIR) \
	  -DPython_EXECUTABLE=$(PYTHON) \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DLLVM_USE_SANITIZER="Address;Undefined" \
	  -DHESPER_BUILD_BENCH=OFF \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_PREFIX)/bin/lit

check-sanitized: $(SAN_DIR)/build.ninja \
		$(SAN_DIR)/test-npm/node_modules/.package-lock.json
	ninja -C $(SAN_DIR) -j$(JOBS)
	$(LLVM_PREFIX)/bin/lit -sv $(SAN_DIR)/test
	ctest --test-dir $(SAN_DIR) --output-on-failure -j$(JOBS)

# A self-contained release (scripts/dist.sh): the tools linked statically
# against LLVM, MLIR, libstdc++ and libgcc, in their own build, packed into
# $(DIST_OUT)/hesper-VERSION-linux-x86_64.tar.gz, which needs only the C
# library and a GPU driver. The same objects as the main build (ccache hits);
# the links use lld. Not part of `make test`.
DIST_DIR ?= build-dist
DIST_OUT ?= dist
DIST_TOOLS := hesper-run hesper-run-compiler hesper-opt hesper-eval \
	hesper-tune hesper-train hesper-bundle-run

$(DIST_DIR)/build.ninja: CMakeLists.txt cmake/HesperStaticLLVM.cmake | setup
	cmake -G Ninja -S . -B $(DIST_DIR) \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DPython_EXECUTABLE=$(PYTHON) \
	  -DHESPER_STATIC_LLVM=ON -DLLVM_USE_LINKER=lld \
	  -DHESPER_BUILD_TESTS=OFF -DHESPER_BUILD_BENCH=OFF \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_PREFIX)/bin/lit

dist: $(DIST_DIR)/build.ninja build
	ninja -C $(DIST_DIR) -j$(JOBS) $(DIST_TOOLS)
	PYTHON=$(PYTHON) bash scripts/dist.sh $(DIST_DIR) $(DIST_OUT)

# libFuzzer harnesses (fuzz/): clang with AddressSanitizer, UBSan and
# coverage, in their own build. Each harness runs for FUZZ_SECONDS on a
# corpus seeded from the test suite (build-fuzz/corpus/NAME); crashes land
# in build-fuzz/crashes/. Not part of `make test`: run it by hand.
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZERS := mlir npy bundle gguf tokenizer json
CLANG ?= $(LLVM_PREFIX)/bin/clang

$(FUZZ_DIR)/build.ninja: CMakeLists.txt | setup
	cmake -G Ninja -S . -B $(FUZZ_DIR) \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=$(CLANG) -DCMAKE_CXX_COMPILER=$(CLANG)++ \
	  -DLLVM_USE_SANITIZER="Address;Undefined" \
	  -DLLVM_USE_SANITIZE_COVERAGE=ON -DHESPER_BUILD_FUZZERS=ON \
	  -DHESPER_BUILD_BENCH=OFF -DHESPER_BUILD_TESTS=OFF \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_PREFIX)/bin/lit

fuzz: $(FUZZ_DIR)/build.ninja build
	ninja -C $(FUZZ_DIR) -j$(JOBS) $(addprefix hesper-fuzz-,$(FUZZERS))
	$(PYTHON) utils/fuzz_seeds.py $(FUZZ_DIR)/corpus $(BUILD_DIR)/bin
	mkdir -p $(FUZZ_DIR)/crashes
	for f in $(FUZZERS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$f.run && \
	  $(FUZZ_DIR)/bin/hesper-fuzz-$$f $(FUZZ_DIR)/corpus/$$f.run \
	    $(FUZZ_DIR)/corpus/$$f -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
	    -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/crashes/$$f- 2>&1 \
	    | grep -E "^(stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" \
	    | sed "s/^/$$f: /"; \
	done
	@if ls $(FUZZ_DIR)/crashes | grep -q .; then \
	  echo "fuzz: crashes in $(FUZZ_DIR)/crashes"; exit 1; fi

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
