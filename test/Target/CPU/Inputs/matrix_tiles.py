#!/usr/bin/env python3
# ===- matrix_tiles.py - Tensor-core GEMMs on exact inputs ------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# usage: matrix_tiles.py HESPER_RUN DIR [hesper-run flags...]
#
# Writes matmul graphs (plain, gated, and two matmuls of one x, which
# fusion makes a multi_matmul) at ragged sizes, with inputs whose every
# value is exact in f16: x on a 1/16 grid in [-1, 1]; f16 weights on the
# same grid; quantized weights as raw GGUF blocks with power-of-two
# scales and codes small enough that each decoded value has at most 11
# significant bits. The matrix units' f16 tiles then hold the values
# unrounded, every product is exact in f32, and every sum stays within
# 24 bits, so any order of additions gives the same f32 result: the tiled
# kernels must match the interpreter exactly (max error 0). Runs each
# graph through HESPER_RUN with --check and the given flags, printing its
# output after a line "case NAME".
#
# ===----------------------------------------------------------------------=== #

import os
import subprocess
import sys

import numpy as np

rng = np.random.default_rng(2026)


def f16_bytes(value, count):
    return np.full(count, value, np.float16).view(np.uint8).reshape(count, 2)


def blocks(fmt, rows, k):
    """Raw blocks of a [rows, k] weight of format `fmt`."""
    if fmt == "q8_0":  # d, 32 x int8; value q * d
        n = rows * k // 32
        out = np.empty((n, 34), np.uint8)
        out[:, 0:2] = f16_bytes(2.0**-4, n)
        out[:, 2:] = rng.integers(-127, 128, (n, 32)).astype(np.int8).view(
            np.uint8)
        return out
    if fmt == "q4_0":  # d, 16 bytes of two codes; value (q - 8) d
        n = rows * k // 32
        out = np.empty((n, 18), np.uint8)
        out[:, 0:2] = f16_bytes(2.0**-3, n)
        out[:, 2:] = rng.integers(0, 256, (n, 16), dtype=np.uint8)
        return out
    if fmt == "q4_k":  # d, dmin, 12 bytes of 6-bit scales/mins, 128 bytes
        n = rows * k // 256
        out = np.empty((n, 144), np.uint8)
        out[:, 0:2] = f16_bytes(2.0**-6, n)
        out[:, 2:4] = f16_bytes(2.0**-6, n)
        out[:, 4:] = rng.integers(0, 256, (n, 140), dtype=np.uint8)
        return out
    if fmt == "q6_k":  # ql[128], qh[64], 16 int8 scales, d
        n = rows * k // 256
        out = np.empty((n, 210), np.uint8)
        out[:, 0:192] = rng.integers(0, 256, (n, 192), dtype=np.uint8)
        out[:, 192:208] = rng.integers(-63, 64, (n, 16)).astype(
            np.int8).view(np.uint8)
        out[:, 208:210] = f16_bytes(2.0**-6, n)
        return out
    raise ValueError(fmt)


def grid(shape, dtype):
    return (rng.integers(-16, 17, shape) / 16.0).astype(dtype)


def weight(path, fmt, rows, k):
    if fmt in ("f32", "f16"):
        np.save(path, grid((rows, k), np.float32 if fmt == "f32"
                           else np.float16))
    else:
        np.save(path, blocks(fmt, rows, k).reshape(-1))


def element(fmt):
    return fmt if fmt in ("f32", "f16") else "!circuit." + fmt


CASES = [  # name, format, M, N, K, kind
    ("f32_m16", "f32", 16, 37, 80, "plain"),
    ("f16_m33", "f16", 33, 96, 80, "plain"),
    ("f16_m512", "f16", 512, 37, 48, "plain"),
    ("q8_0_m31", "q8_0", 31, 37, 2048, "plain"),
    ("q4_0_m33", "q4_0", 33, 70, 256, "plain"),
    ("q4_k_m33", "q4_k", 33, 37, 512, "plain"),
    ("q6_k_m65", "q6_k", 65, 37, 256, "plain"),
    ("gated_q8_0_m33", "q8_0", 33, 37, 128, "gated"),
    ("two_f16_m17", "f16", 17, 37, 64, "two"),
]


def graph(name, fmt, m, n, k, kind):
    x = f"tensor<{m}x{k}xf32>"
    y = f"tensor<{m}x{n}xf32>"
    w = f"tensor<{n}x{k}x{element(fmt)}>"
    if kind == "plain":
        return (f'circuit.graph @{name}(%x: {x} {{circuit.name = "x"}},\n'
                f'    %w: {w} {{circuit.name = "w"}}) -> {y} {{\n'
                f"  %y = circuit.matmul %x, %w : {x}, {w} -> {y}\n"
                f"  circuit.output %y : {y}\n}}\n")
    if kind == "gated":
        return (f'circuit.graph @{name}(%x: {x} {{circuit.name = "x"}},\n'
                f'    %g: {w} {{circuit.name = "g"}},\n'
                f'    %u: {w} {{circuit.name = "u"}}) -> {y} {{\n'
                f"  %y = circuit.gated_matmul %x, %g, %u : {x}, {w}, {w} -> "
                f"{y} combine {{\n"
                "  ^bb0(%lane: i32, %a: f32, %b: f32):\n"
                "    %p = exp.mul %a, %b : f32\n"
                "    circuit.yield %p : f32\n  }\n"
                f"  circuit.output %y : {y}\n}}\n")
    # Two weights of one x (a multi_matmul once fused); the second has
    # 2n - 5 rows.
    n2 = 2 * n - 5
    y2 = f"tensor<{m}x{n2}xf32>"
    w2 = f"tensor<{n2}x{k}x{element(fmt)}>"
    return (f'circuit.graph @{name}(%x: {x} {{circuit.name = "x"}},\n'
            f'    %w: {w} {{circuit.name = "w"}},\n'
            f'    %u: {w2} {{circuit.name = "u"}}) -> ({y}, {y2}) {{\n'
            f"  %y = circuit.matmul %x, %w : {x}, {w} -> {y}\n"
            f"  %z = circuit.matmul %x, %u : {x}, {w2} -> {y2}\n"
            f"  circuit.output %y, %z : {y}, {y2}\n}}\n")


def main():
    hesper_run, out = sys.argv[1], sys.argv[2]
    flags = sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    failed = False
    for name, fmt, m, n, k, kind in CASES:
        path = os.path.join(out, name)
        with open(path + ".mlir", "w") as f:
            f.write(graph(name, fmt, m, n, k, kind))
        np.save(path + "-x.npy", grid((m, k), np.float32))
        inputs = ["--input", f"x={path}-x.npy"]
        second = {"plain": [], "gated": ["g", "u"], "two": ["w", "u"]}[kind]
        for arg in second or ["w"]:
            rows = 2 * n - 5 if (kind == "two" and arg == "u") else n
            weight(f"{path}-{arg}.npy", fmt, rows, k)
            inputs += ["--input", f"{arg}={path}-{arg}.npy"]
        run = subprocess.run([hesper_run, path + ".mlir", "--check"] +
                             inputs + flags, capture_output=True, text=True)
        print(f"case {name}")
        print(run.stdout + run.stderr, end="")
        failed |= run.returncode != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
