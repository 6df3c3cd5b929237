#!/bin/bash
# Runs the Vulkan lit tests that have no CUDA twin (the acceptance graphs,
# autodiff, k-quant matvecs, the model logit tests, training) on a CUDA
# device: each is copied with --backend=vulkan made --backend=cuda (and
# without the Vulkan validation layer) into test/CUDA-from-Vulkan/, which
# is not part of the repository, and lit runs the copies there.
#
#   bash bench/gpu/vulkan-tests-on-cuda.sh [lit arguments]
#
# Needs a configured build (build/test/lit.site.cfg.py) and lit, as the
# GPU kit of ../shared/gpu sets them up; the copies live as long as the
# checkout. On an H200 (2026-11-29) they found prompt chunks of 5 rows
# faulting with CUDA_ERROR_MISALIGNED_ADDRESS, which the CUDA tests had
# not covered.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=test/CUDA-from-Vulkan
rm -rf "$out" && mkdir -p "$out"
retarget() {
  sed -e 's/--backend=vulkan/--backend=cuda/g; s/--backend vulkan/--backend cuda/g' \
      -e 's/ --validation//g; s/(vulkan)/(cuda)/g' \
      -e 's/REQUIRES: vulkan/REQUIRES: cuda/' \
      -e "s#%S/\.\./#%S/../$2/../#g" "$1" > "$out/$(basename "$1")"
}
# The tests name their inputs relative to their own folder (%S/../Interp):
# the copies, one level down elsewhere, keep those names by going through
# the original folder.
for f in test/Integration/Vulkan/{acceptance,autodiff,kquant-matvec}.test; do
  retarget "$f" Integration/Vulkan
done
for f in test/Models/{bitnet,gemma,logits}-vulkan.test; do
  retarget "$f" Models
done
retarget test/Train/train-vulkan.test Train
LIT=${LIT:-/usr/lib/llvm-22/bin/lit}
python3 "$LIT" -sv "$@" "build/$out"
