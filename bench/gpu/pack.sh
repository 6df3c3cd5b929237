#!/bin/bash
# Packs `make dist`'s release for a GPU machine that has no LLVM, MLIR or
# package registry: .gpu-bench/hesper.tar.xz holds what the comparison runs
# (hesper-run, its compiler, hesper-eval, the model writer), under the 64 MiB
# a device run carries. Then, there, from the project's root:
#
#   bash bench/gpu/run.sh [--llama-bench PATH] [bench/llama_compare.py flags]
#
# (with the device tool: carry [".gpu-bench"], command
# `bash bench/gpu/run.sh ...`; docs in bench/README.md).
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
size=$(stat -c %s .gpu-bench/hesper.tar.xz)
echo "pack.sh: .gpu-bench/hesper.tar.xz, $((size >> 20)) MiB, from $release"
if (( size > 60 << 20 )); then
  echo "pack.sh: more than a device run carries (64 MiB with the tree)" >&2
  exit 1
fi
