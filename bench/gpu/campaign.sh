#!/bin/bash
# One GPU session's measurements in one run, within a time budget: what a
# session lent an NVIDIA machine for a few minutes should run first. From
# the project's root on that machine, with the tools set up by the kit of
# ../shared/gpu (build/bin, lit, FileCheck):
#
#   bash .gpu/run.sh bash bench/gpu/campaign.sh      # BUDGET=540 seconds
#
# (As of 2026-11-29 that kit's pack.sh collects the shared libraries from
# hesper-run, which no longer links libLLVM, and leaves out
# build/libexec/hesper/hesper-run-compiler, which hesper-run runs to
# compile: pack with a copy that runs ldd on build/bin/hesper-opt and
# also strips the compiler into root/build/libexec/hesper/.)
#
# In order, each step bounded so that the budget holds (logs under $OUT,
# or /tmp/hesper-campaign):
#   1. correctness: the CUDA lit tests and the Vulkan ones run on CUDA
#      (vulkan-tests-on-cuda.sh);
#   2. bench/llama_compare.py on the 1B-class llama in q8_0, q4_k and f16:
#      decode at depth 0 and 512, prefill of 512 tokens, --kernel-times;
#   3. prefill variants side by side, alternating: the default (tensor
#      cores) and the f32 tiles (--matrix-units=false); then hesper-tune on the q8_0 file's prefill graph
#      (gemm_rows = 128 among its candidates) and the tuned prefill beside
#      the default (the tuning cache in $OUT/tuned);
#   4. decode with --quantize-activations (dp4a) beside the default;
#   5. hesper-eval's matvecs of the 8B shapes (bandwidth-sized) and the
#      512-row GEMMs of the 1B shapes, and PyTorch's copy bandwidth;
#   6. profile-gemm.sh (ncu and SASS of the prefill GEMMs);
#   7. llama.cpp's llama-bench on the same files, if a build is found
#      under /tmp (built by hand on that machine: nothing here builds it).
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/hesper-campaign}; mkdir -p "$O"
T0=$(date +%s); t() { echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( ${BUDGET:-540} - ($(date +%s) - T0) )); }
bounded() { local s=$1; shift; (( s > 5 )) && timeout "$s" "$@"; }
HR=$PWD/build/bin/hesper-run
PY=$(command -v python3)
M=${MODELS_DIR:-/tmp/hesper-models}; mkdir -p "$M"
# The 1B-class llama's make_model.py arguments, as llama_compare.py has them.
ONEB=($("$PY" -c "import sys; sys.path.insert(0, 'bench'); \
import llama_compare; print(' '.join(llama_compare.MODELS['1b']))"))
t "start: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
P=()
for ty in q8_0 q4_k f16; do
  [[ -f $M/1b-$ty.gguf ]] || { "$PY" utils/gguf/make_model.py "$M/1b-$ty.gguf" "${ONEB[@]}" --type $ty --quiet & P+=($!); }
done

t "1. lit: CUDA tests, Vulkan tests on CUDA"
bounded 150 "$PY" /usr/lib/llvm-22/bin/lit -sv -j8 build/test/Integration/CUDA \
  > "$O/lit-cuda.txt" 2>&1; tail -4 "$O/lit-cuda.txt"
bounded 150 bash bench/gpu/vulkan-tests-on-cuda.sh -j8 > "$O/lit-retargeted.txt" 2>&1
grep -E "^(FAIL|TIMEOUT):|max relative error|Passed|Failed" "$O/lit-retargeted.txt" | head
(( ${#P[@]} )) && wait "${P[@]}"

t "2. llama_compare (1b)"
bounded $(( $(left) * 2 / 5 )) "$PY" bench/llama_compare.py --bin build/bin \
  --backend cuda --models 1b --types q8_0,q4_k,f16 --runs 2 --no-eval \
  --out "$O/compare" --models-dir "$M" 2>&1 | tail -10

t "3. prefill 512: default (tensor cores) and --matrix-units=false; then tuned (hesper-tune on the q8_0 prefill graph, gemm_rows among its candidates)"
prefill() { # MODEL [flags]: pp512 as llama-bench measures it (hesper-run --bench)
  bounded 30 "$HR" "$1" --backend=cuda -b 512 --bench --bench-prompt 512 --bench-gen 0 --bench-reps 3 "${@:2}" 2>&1 | grep -E 'pp512|error'
}
for r in 1 2; do for ty in q8_0 q4_k f16; do for v in "" --matrix-units=false; do
  (( $(left) > 200 )) || break 3
  echo "1b-$ty ${v:-default}: $(prefill "$M/1b-$ty.gguf" $v)"
done; done; done | tee "$O/prefill.txt"
"$HR" "$M/1b-q8_0.gguf" --emit-mlir "$O/1b-q8_0.mlir" -b 512 >/dev/null 2>&1
bounded $(( $(left) / 3 )) build/bin/hesper-tune "$O/1b-q8_0.mlir" --graph prefill \
  --backend=cuda --cache-dir "$O/tuned" --runs 3 > "$O/tune-prefill.txt" 2>&1
tail -25 "$O/tune-prefill.txt"
for r in 1 2; do
  echo "1b-q8_0 default: $(prefill "$M/1b-q8_0.gguf")"
  echo "1b-q8_0 tuned: $(HESPER_CACHE_DIR="$O/tuned" prefill "$M/1b-q8_0.gguf")"
done | tee -a "$O/prefill.txt"

t "4. decode with q8_1 activations"
for ty in q8_0 q4_k; do for qa in false true; do
  (( $(left) > 50 )) || break 2
  echo "1b-$ty --quantize-activations=$qa: $(bounded 30 "$HR" "$M/1b-$ty.gguf" --backend=cuda --tokens 1 -n 128 --temp 0 --ignore-eos --quantize-activations=$qa 2>&1 | grep -E '^decode:|error')"
done; done | tee "$O/decode-q8.txt"

t "5. hesper-eval: 8B matvecs, 1B 512-row GEMMs; device copy"
bounded $(( $(left) / 4 )) build/bin/hesper-eval --backend=cuda --filter matvec_8b -o "$O/eval-matvec.json" 2>&1 | tail -10
bounded $(( $(left) / 4 )) build/bin/hesper-eval --backend=cuda --filter gemm512_1b -o "$O/eval-gemm.json" 2>&1 | tail -10
bounded 30 "$PY" -c "
import torch,time
x=torch.empty(1<<29,device='cuda'); y=torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize(); s=time.time()
for _ in range(20): y.copy_(x)
torch.cuda.synchronize(); d=(time.time()-s)/20
print('PyTorch copy %.0f GB/s (read+write)' % (2*x.numel()*4/d/1e9))" 2>&1

t "6. profile-gemm"
OUT="$O/profile" bounded $(( $(left) - 60 )) bash bench/gpu/profile-gemm.sh "$M/1b-q8_0.gguf" 2>&1 | tail -8

t "7. llama-bench"
LB=${LLAMA_BENCH:-$(find /tmp -maxdepth 6 -name llama-bench -type f -perm -u+x 2>/dev/null | head -1)}
if [[ -n $LB ]]; then
  for ty in q8_0 q4_k f16; do
    bounded $(( $(left) - 5 )) "$LB" -m "$M/1b-$ty.gguf" -ngl 99 -fa 0 -p 512 -n 128 \
      -pg 512,128 -r 2 -o md 2>&1 | grep -E "^\| [a-z]" | tee -a "$O/llama-bench.txt"
  done
else
  echo "no llama-bench under /tmp (build one by hand on this machine)"
fi
t "done ($O)"
