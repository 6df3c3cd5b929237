#!/bin/bash
# Where a prompt chunk's GEMM spends its time, on a CUDA machine with
# Nsight Compute (ncu), ptxas and nvdisasm (the GPU machine's CUDA 13 has
# them) and the tools set up as the kit of ../shared/gpu sets them up:
#
#   bash bench/gpu/profile-gemm.sh [MODEL.gguf] [extra hesper-run flags]
#
# With no model it writes the 1B-class llama of bench/llama_compare.py in
# q8_0. For the gated FFN matmul and the plain matmul of a 512-row chunk
# it saves, under $OUT (or /tmp/hesper-profile):
#   ncu-*.txt   ncu's speed of light, occupancy, warp states (what the
#               warps wait on: barrier, long scoreboard = global loads,
#               short scoreboard = workgroup memory, math pipes) and
#               memory sections, one launch each;
#   *.sass      the kernels' machine code (hesper-opt -> PTX -> ptxas ->
#               nvdisasm), to see where the global loads and their first
#               uses sit relative to the products.
# docs/Targets.md ("Measured on an NVIDIA H200") says what to look for.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/hesper-profile}
mkdir -p "$out"
bin=${HESPER_BIN:-build/bin}
model=${1:-}
shift || true
python=python3
if [[ -z $model ]]; then
  model=/tmp/hesper-models/1b-q8_0.gguf
  # The 1B-class llama, as bench/llama_compare.py writes it.
  oneb=$("$python" -c "import sys; sys.path.insert(0, 'bench'); \
import llama_compare; print(' '.join(llama_compare.MODELS['1b']))")
  [[ -f $model ]] || "$python" utils/gguf/make_model.py "$model" $oneb \
    --type q8_0 --quiet
fi
prompt=$(seq 0 511 | awk '{printf "%s%d", (NR > 1 ? "," : ""), 1 + ($1 * 37) % 1000}')
for kind in gated_matmul matmul; do
  ncu --kernel-name "regex:prefill_k[0-9]+_${kind}\$" --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section LaunchStats \
    "$bin/hesper-run" "$model" --backend=cuda --tokens "$prompt" -n 1 \
    -b 512 "$@" > "$out/ncu-$kind.txt" 2>&1 || true
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" \
    "$out/ncu-$kind.txt" | head -20 || true
done
# The machine code of the prefill kernels (tensor-core tiles, as a model
# takes by default, unless the flags say --matrix-units=false).
"$bin/hesper-run" "$model" --emit-mlir "$out/model.mlir" -b 512 "$@"
mma=" matrix-units"
[[ " $* " == *" --matrix-units=false "* ]] && mma=""
"$bin/hesper-opt" "$out/model.mlir" --hesper-to-ptx="fuse chip=sm_90$mma" \
  -o "$out/model.ptx.mlir"
python3 utils/extract-binary.py --format=ptx "$out/model.ptx.mlir" \
  -o "$out/model.ptx"
ptxas --gpu-name sm_90 -v "$out/model.ptx" -o "$out/model.cubin" \
  2> "$out/ptxas.txt"
nvdisasm -c "$out/model.cubin" > "$out/model.sass"
for kind in gated_matmul matmul; do
  awk -v k="_${kind}" '/^\s*\.text\./ {p = ($0 ~ "prefill_k[0-9]+" k "$")} p' \
    "$out/model.sass" > "$out/prefill-$kind.sass"
  echo "$kind: $(grep -c 'FFMA' "$out/prefill-$kind.sass") FFMA, $(grep -c 'HMMA' "$out/prefill-$kind.sass") HMMA, $(grep -c 'LDG' "$out/prefill-$kind.sass") LDG, $(grep -c 'LDS' "$out/prefill-$kind.sass") LDS, $(grep -c 'BAR' "$out/prefill-$kind.sass") BAR"
done
echo "profile-gemm: $out"
