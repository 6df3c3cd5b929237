#!/bin/bash
# Packs `make dist`'s release for a GPU machine that has no LLVM, MLIR or
# package registry: .gpu-bench/hesper.tar.xz holds what the comparison runs
# (hesper-run, its compiler, hesper-eval, the model writer), under the 64 MiB
# a device run carries. Then, there, from the project's root:
#
#   bash bench/gpu/run.sh [--llama-bench PATH] [bench/llama_compare.py flags]
#
# (with the device tool: carry [".gpu-bench"], command
# `bash bench/gpu/run.sh ...`; docs in bench/README.md). With
# UPSTREAM_GPU_TESTS=DIR, the .mlir files under DIR (upstream MLIR's GPU
# integration tests, copied from llvm-project: never part of this
# repository) go to .gpu-bench/upstream, and run.sh runs them on CUDA
# first (utils/upstream_gpu_tests.py with its own CHECK matcher).
set -euo pipefail
cd "$(dirname "$0")/../.."
make dist
release=$(ls -t dist/hesper-*-linux-x86_64.tar.gz | head -1)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tar -C "$stage" -xzf "$release"
name=$(basename "$release" .tar.gz)
keep=("$name/bin/hesper-run" "$name/bin/hesper-eval" "$name/libexec"
      "$name/share" "$name/README")
mkdir -p .gpu-bench
tar -C "$stage" -cf - "${keep[@]}" | xz -9 -T2 > .gpu-bench/hesper.tar.xz
rm -rf .gpu-bench/upstream
if [[ -n ${UPSTREAM_GPU_TESTS:-} ]]; then
  (cd "$UPSTREAM_GPU_TESTS" && find . -name '*.mlir' -print0 |
     tar --null -T - -cf -) | (mkdir -p .gpu-bench/upstream &&
                              tar -C .gpu-bench/upstream -xf -)
  echo "pack.sh: $(find .gpu-bench/upstream -name '*.mlir' | wc -l) upstream GPU tests in .gpu-bench/upstream"
fi
size=$(stat -c %s .gpu-bench/hesper.tar.xz)
echo "pack.sh: .gpu-bench/hesper.tar.xz, $((size >> 20)) MiB, from $release"
if (( size > 60 << 20 )); then
  echo "pack.sh: more than a device run carries (64 MiB with the tree)" >&2
  exit 1
fi
