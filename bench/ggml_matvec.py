#!/usr/bin/env python3
# ===- ggml_matvec.py - Quantized matvec on the CPU against ggml's ------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# The decode matvec of every weight format the kernels read, on the CPU
# target, side by side with ggml's CPU backend (the one llama.cpp's CPU
# build runs) in one run on this machine:
#
#   Hesper: y = W x with W [4096, 14336] in the format and x [14336] f32,
#           a Circuit graph through hesper-run --backend=cpu (all threads),
#           the median kernel time over --repeat runs (first dropped, as
#           cpu_target.py measures);
#   ggml:   the same shape from ggml's own perf test, `test-backend-ops
#           perf -o MUL_MAT -b CPU` with type_a = the format, type_b = f32,
#           m = 4096, n = 1, k = 14336 (a case of its perf list), us/run.
#
# Both read the weights once per call (W: 4096 x 14336 values), so the
# ratio is the kernels' alone: decode on a real model adds attention, the
# norms and the launches around them. ggml quantizes x to its vec_dot type
# (q8_0 / q8_K) inside the call; Hesper's CPU kernels read x in f32.
#
# ggml is not part of Hesper: build it by hand outside this repository
# (ggml's own repository or llama.cpp's ggml/ folder, CMake, Release) and
# pass the test binary:
#
#   bench/ggml_matvec.py --ggml-test-backend-ops PATH/test-backend-ops
#                        [--hesper-run build/bin/hesper-run] [--repeat 20]
#                        [--types q4_0,q4_1,...]
#
# Never fails on time; exits non-zero when a tool fails or prints nothing
# to read.
#
# ===----------------------------------------------------------------------=== #

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cpu_target import kernel_us  # noqa: E402

ROWS, COLS = 4096, 14336
# bytes per block, values per block (GGUF's block formats)
FORMATS = {
    "f16": (2, 1), "q8_0": (34, 32), "q4_0": (18, 32), "q4_1": (20, 32),
    "q5_0": (22, 32), "q5_1": (24, 32), "iq4_nl": (18, 32),
    "iq4_xs": (136, 256), "q2_k": (84, 256), "q3_k": (110, 256),
    "q4_k": (144, 256), "q5_k": (176, 256), "q6_k": (210, 256),
}


def graph(path, fmt):
    element = fmt if fmt == "f16" else f"!circuit.{fmt}"
    with open(path, "w") as f:
        f.write(
            f'circuit.graph @matvec(%x: tensor<{COLS}xf32> '
            f'{{circuit.name = "x"}},\n'
            f'    %w: tensor<{ROWS}x{COLS}x{element}> {{circuit.name = "w"}})'
            f' -> tensor<{ROWS}xf32> {{\n'
            f'  %y = circuit.matmul %x, %w : tensor<{COLS}xf32>, '
            f'tensor<{ROWS}x{COLS}x{element}> -> tensor<{ROWS}xf32>\n'
            f'  circuit.output %y : tensor<{ROWS}xf32>\n}}\n')


def ggml_us(opts, fmt):
    # ggml names the k-quants with a capital K (q4_K).
    name = fmt[:-2] + "_K" if fmt.endswith("_k") else fmt
    params = f"type_a={name},type_b=f32,m={ROWS},n=1,k={COLS},"
    proc = subprocess.run(
        [opts.ggml_test_backend_ops, "perf", "-o", "MUL_MAT", "-b", "CPU",
         "-p", re.escape(params)],
        capture_output=True, text=True, timeout=opts.timeout)
    found = re.search(r"([0-9.]+) us/run", proc.stdout)
    if proc.returncode != 0 or not found:
        sys.exit(f"error: test-backend-ops printed no MUL_MAT time for "
                 f"{fmt} ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return float(found.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    build = os.path.join(os.path.dirname(HERE), "build", "bin")
    ap.add_argument("--hesper-run", default=os.path.join(build, "hesper-run"))
    ap.add_argument("--ggml-test-backend-ops", required=True,
                    help="test-backend-ops of a ggml build made by hand")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--types", default=",".join(FORMATS))
    ap.add_argument("--timeout", type=int, default=900)
    opts = ap.parse_args()
    types = [t for t in opts.types.split(",") if t]
    for t in types:
        if t not in FORMATS:
            sys.exit(f"error: unknown type '{t}' (known: {', '.join(FORMATS)})")

    print(f"matvec {ROWS} x {COLS}, x f32, CPU: Hesper's CPU target "
          f"(all threads) and ggml's CPU backend")
    print(f"{'type':<8} {'MB':>7} {'hesper us':>10} {'GB/s':>6} "
          f"{'ggml us':>9} {'GB/s':>6} {'hesper/ggml':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in types:
            block_bytes, block_values = FORMATS[fmt]
            mb = ROWS * COLS // block_values * block_bytes / 1e6
            path = os.path.join(tmp, f"matvec-{fmt}.mlir")
            graph(path, fmt)
            ours, _, _ = kernel_us(opts, path, "cpu")
            theirs = ggml_us(opts, fmt)
            print(f"{fmt:<8} {mb:>7.1f} {ours:>10.1f} {mb * 1e3 / ours:>6.1f} "
                  f"{theirs:>9.1f} {mb * 1e3 / theirs:>6.1f} "
                  f"{theirs / ours:>11.2f}x")


if __name__ == "__main__":
    main()
