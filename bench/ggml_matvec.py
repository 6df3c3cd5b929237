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
#                        [--types q4_0,q4_1,...] [--shape 4096x14336]
#                        [--x f32|q8_1|both]
#
# Without --ggml-test-backend-ops it prints Hesper's columns alone. --x
# q8_1 quantizes x in the graph first (circuit.quantize) and multiplies
# bytes in integers (q8_0, q4_0, q4_k and q5_k weights; the time includes the
# quantize kernel); `both` prints a row per x type. circuit.quantize
# stages a row in 32 KiB, so q8_1 needs K below about 7900 (--shape
# 14336x4096 is the transposed FFN shape).
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
# Weight formats with integer kernels for q8_1 activations.
Q8_1_FORMATS = ("q8_0", "q4_0", "q4_k", "q5_k")
# bytes per block, values per block (GGUF's block formats)
FORMATS = {
    "f16": (2, 1), "q8_0": (34, 32), "q4_0": (18, 32), "q4_1": (20, 32),
    "q5_0": (22, 32), "q5_1": (24, 32), "iq4_nl": (18, 32),
    "iq4_xs": (136, 256), "q2_k": (84, 256), "q3_k": (110, 256),
    "q4_k": (144, 256), "q5_k": (176, 256), "q6_k": (210, 256),
}


def graph(path, fmt, x_type):
    element = fmt if fmt == "f16" else f"!circuit.{fmt}"
    x, xt = "%x", f"tensor<{COLS}xf32>"
    quantize = ""
    if x_type == "q8_1":
        x, xt = "%q", f"tensor<{COLS}x!circuit.q8_1>"
        quantize = (f'  %q = circuit.quantize %x : tensor<{COLS}xf32> -> '
                    f'{xt}\n')
    with open(path, "w") as f:
        f.write(
            f'circuit.graph @matvec(%x: tensor<{COLS}xf32> '
            f'{{circuit.name = "x"}},\n'
            f'    %w: tensor<{ROWS}x{COLS}x{element}> {{circuit.name = "w"}})'
            f' -> tensor<{ROWS}xf32> {{\n{quantize}'
            f'  %y = circuit.matmul {x}, %w : {xt}, '
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
    global ROWS, COLS
    ap = argparse.ArgumentParser(description=__doc__)
    build = os.path.join(os.path.dirname(HERE), "build", "bin")
    ap.add_argument("--hesper-run", default=os.path.join(build, "hesper-run"))
    ap.add_argument("--ggml-test-backend-ops",
                    help="test-backend-ops of a ggml build made by hand "
                         "(without it, Hesper's columns alone)")
    ap.add_argument("--shape", default="4096x14336",
                    help="ROWSxCOLS of W (default %(default)s)")
    ap.add_argument("--x", choices=("f32", "q8_1", "both"), default="f32",
                    help="x as f32, or quantized to q8_1 in the graph")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--types", default=",".join(FORMATS))
    ap.add_argument("--timeout", type=int, default=900)
    opts = ap.parse_args()
    types = [t for t in opts.types.split(",") if t]
    for t in types:
        if t not in FORMATS:
            sys.exit(f"error: unknown type '{t}' (known: {', '.join(FORMATS)})")
    shape = re.fullmatch(r"([0-9]+)x([0-9]+)", opts.shape)
    if not shape or int(shape.group(2)) % 256:
        sys.exit(f"error: --shape '{opts.shape}': expected ROWSxCOLS with "
                 f"COLS a multiple of 256")
    ROWS, COLS = int(shape.group(1)), int(shape.group(2))
    x_types = ["f32", "q8_1"] if opts.x == "both" else [opts.x]
    ggml = opts.ggml_test_backend_ops
    for tool in (opts.hesper_run, ggml):
        if tool and not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} is not an executable file")

    print(f"matvec {ROWS} x {COLS}, CPU: Hesper's CPU target (all threads)"
          + (" and ggml's CPU backend (x f32)" if ggml else ""))
    print(f"{'type':<8} {'x':<5} {'MB':>7} {'hesper us':>10} {'GB/s':>6}"
          + (f" {'ggml us':>9} {'GB/s':>6} {'hesper/ggml':>12}" if ggml
             else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in types:
            block_bytes, block_values = FORMATS[fmt]
            mb = ROWS * COLS // block_values * block_bytes / 1e6
            theirs = ggml_us(opts, fmt) if ggml else None
            for x_type in x_types:
                if x_type == "q8_1" and fmt not in Q8_1_FORMATS:
                    continue
                path = os.path.join(tmp, f"matvec-{fmt}-{x_type}.mlir")
                graph(path, fmt, x_type)
                ours, _, _ = kernel_us(opts, path, "cpu")
                row = (f"{fmt:<8} {x_type:<5} {mb:>7.1f} {ours:>10.1f} "
                       f"{mb * 1e3 / ours:>6.1f}")
                if theirs:
                    row += (f" {theirs:>9.1f} {mb * 1e3 / theirs:>6.1f} "
                            f"{theirs / ours:>11.2f}x")
                print(row, flush=True)


if __name__ == "__main__":
    main()
