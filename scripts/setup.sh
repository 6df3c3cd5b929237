#!/usr/bin/env bash
# Installs what building and testing Hesper needs on Debian 12, with apt-get.
# Idempotent: when every package is already installed it only checks and
# returns (well under a second). Run as root, or with sudo available.
set -euo pipefail

PACKAGES=(
  # Toolchain and build.
  cmake g++ ninja-build ccache python3
  # `make check-sanitized` and `make fuzz`: clang with its sanitizer and
  # libFuzzer runtimes.
  clang-22 libclang-rt-22-dev
  # The CPU target links its kernels into a shared object with the system C
  # compiler driver (`cc -shared`): gcc and the C library's files.
  gcc libc6-dev
  # The NumPy reference of the model tests (utils/gguf).
  python3-numpy
  # LLVM/MLIR 22 (bookworm-security ships 22.1.8).
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  zlib1g-dev libzstd-dev
  # `make dist` links the tools statically with lld (seconds, where GNU ld
  # takes minutes per tool).
  lld
  # Tests.
  libgtest-dev
  # Vulkan: loader headers, Mesa (lavapipe runs Vulkan on the CPU), the
  # validation layers the tests enable, and the SPIR-V validator.
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  spirv-tools
  # hesper-server: HTTP and JSON; its chat page's test runs Debian's
  # chromium headless.
  libcpp-httplib-dev nlohmann-json3-dev chromium
  # The Python module (pybind11 over the libraries) and its pytest suite.
  pybind11-dev python3-dev python3-pytest
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$pkg")
  fi
done

# hesper-server's tests run Node.js and npm (test/Server/package.json); a
# machine that already has them (NodeSource's nodejs bundles npm) keeps them.
if ! command -v npm >/dev/null 2>&1; then
  for pkg in nodejs npm; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
      missing+=("$pkg")
    fi
  done
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
