#!/bin/bash
# On the GPU machine, from the project's root: unpacks the release that
# bench/gpu/pack.sh packed (.gpu-bench/hesper.tar.xz) and runs
# bench/llama_compare.py with it on CUDA -- decode at depth 0 and after a
# 512-token prompt, prefill, --kernel-times and hesper-eval --quick for the
# demo model and a 1B-class llama in q8_0, q4_k and f16, beside llama.cpp's
# llama-bench when one is given or found under /tmp (built by hand on that
# machine from a snapshot; nothing here builds it). Extra arguments go to
# llama_compare.py. Then the f32 tiles (--matrix-units=false) and q8_1
# activations (--quantize-activations) side by side with the defaults
# ($OUT/matrix-units-*.txt, $OUT/q8-activations-decode.txt). The logs go
# to $OUT/compare when $OUT is set (the device
# tool's output folder), else /tmp/hesper-compare; the model files to
# /tmp/hesper-models.
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=.gpu-bench/hesper.tar.xz
[[ -f $kit ]] || { echo "run.sh: no $kit: run bench/gpu/pack.sh first" >&2; exit 1; }
dest=${HESPER_DIST_DIR:-/tmp/hesper-dist}
rm -rf "$dest" && mkdir -p "$dest"
xz -dc "$kit" | tar -C "$dest" -xf -
bin=$(echo "$dest"/hesper-*/bin)

# A Python with NumPy for the model writer.
python=""
for p in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c "import numpy" 2>/dev/null; then
    python=$(command -v "$p"); break
  fi
done
[[ -n $python ]] || { echo "run.sh: no Python with NumPy" >&2; exit 1; }

args=()
if [[ " $* " != *" --llama-bench "* ]]; then
  found=$(find /tmp -maxdepth 6 -name llama-bench -type f -perm -u+x 2>/dev/null | head -1)
  [[ -n $found ]] && args+=(--llama-bench "$found")
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L
"$bin/hesper-run" --version | head -2 || true
# Upstream MLIR's GPU tests on CUDA, where pack.sh was given them. The
# files MLIR 22's parser rejects are named (this machine has no mlir-opt
# to tell): the list utils/upstream_gpu_tests.py prints where it has one.
if [[ -d .gpu-bench/upstream ]]; then
  other=${UPSTREAM_OTHER_MLIR:-all-reduce-max.mlir,all-reduce-min.mlir,assert.mlir,host-register-ranked-memref.mlir,subui_extended.mlir,vector-shuffle.mlir}
  python3 utils/upstream_gpu_tests.py .gpu-bench/upstream --backends cuda \
    --hesper-run "$bin/hesper-run" --filecheck builtin --mlir-opt /nonexistent \
    --other-mlir "$other" | tee "${OUT:-/tmp}/upstream-cuda.txt" || true
fi
# Tensor cores (models' default on CUDA since 2026-11-29): the tiled
# GEMM's wmma kernels on inputs exact in f16 must equal the
# interpreter exactly (test/Target/CPU/matrix-units.test runs the same
# cases with the tiles emulated on the CPU).
logs=${OUT:-/tmp}
"$python" test/Target/CPU/Inputs/matrix_tiles.py "$bin/hesper-run" \
  /tmp/hesper-mma --backend=cuda --matrix-units 2>&1 \
  | tee "$logs/matrix-units-exact.txt" || true
out=${OUT:+$OUT/compare}
status=0
"$python" bench/llama_compare.py --bin "$bin" --backend cuda \
  --python "$python" --out "${out:-/tmp/hesper-compare}" \
  --models-dir /tmp/hesper-models "${args[@]}" "$@" || status=$?
# Prefill of a 512-token prompt in one chunk, with tensor cores (the
# default) and the f32 tiles, on the files llama_compare.py wrote (side by
# side; hesper-run --bench: warmed up, then 3 timed runs, as llama-bench).
for f in /tmp/hesper-models/1b-q8_0.gguf /tmp/hesper-models/1b-f16.gguf; do
  [[ -f $f ]] || continue
  for mu in "" --matrix-units=false; do
    echo "$f ${mu:-(tensor cores)}"
    "$bin/hesper-run" "$f" --backend=cuda -b 512 --no-cache $mu --bench \
      --bench-prompt 512 --bench-gen 0 --bench-reps 3 2>&1 \
      | grep -E "pp512|error" || true
  done
done | tee "$logs/matrix-units-prefill.txt"
# Decode with the activations quantized to q8_1 (integer dot products:
# dp4a), off by default on CUDA until measured here, beside the default
# f32 activations, on the same files (one run each, alternating); BitNet
# files of the 1B shape in i2_s and tq2_0 too (their integer kernels take
# a block's words over 8 or 16 lanes).
for t in i2_s tq2_0; do
  f=/tmp/hesper-models/1b-bitnet-$t.gguf
  [[ -f $f ]] || "$python" utils/gguf/make_model.py "$f" --arch bitnet \
    --type $t --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 \
    --vocab 32000 --quiet || true
done
for f in /tmp/hesper-models/1b-q8_0.gguf /tmp/hesper-models/1b-q4_k.gguf \
    /tmp/hesper-models/1b-bitnet-i2_s.gguf \
    /tmp/hesper-models/1b-bitnet-tq2_0.gguf; do
  [[ -f $f ]] || continue
  for qa in false true false true; do
    echo "$f --quantize-activations=$qa"
    "$bin/hesper-run" "$f" --backend=cuda --quantize-activations=$qa \
      --bench --bench-prompt 0 --bench-gen 128 --bench-reps 2 2>&1 \
      | grep -E "tg128|error" || true
  done
done | tee "$logs/q8-activations-decode.txt"
exit $status
