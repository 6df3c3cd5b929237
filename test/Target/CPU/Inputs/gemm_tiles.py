#!/usr/bin/env python3
# ===- gemm_tiles.py - Matmul graphs at ragged tile sizes -------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Prints one circuit.graph per weight format and row count of x, split by
# '// -----': W [37, K] (37 weight rows: no multiple of the CPU target's
# 4- or 2-row tiles) against x [M, K] with M = 1, 7, 31, 33 and 512 (none
# a multiple of the 6-row tile). K is 2048: every format's tile path (q6_k
# reads super-block pairs) with rows long enough for the 6 x 2 tiles of
# q8_0, q4_0 and iq4_nl. Graph @<format>_m<M>. Then gated matmuls (two
# weight matrices, SiLU(gate) * up) of rows of 512 values, 33 rows of x,
# whose q8_0 and iq4_nl weights take the 6 x 2 tile at any row length:
# graph @gated_<format>, weights g and u.
#
# ===----------------------------------------------------------------------=== #

FORMATS = ["f32", "f16", "q8_0", "q4_0", "iq4_nl", "q4_k", "q5_k", "q6_k"]
ROWS = [1, 7, 31, 33, 512]
N, K = 37, 2048

graphs = []
for fmt in FORMATS:
    element = fmt if fmt in ("f32", "f16") else "!circuit." + fmt
    for m in ROWS:
        x = f"tensor<{K}xf32>" if m == 1 else f"tensor<{m}x{K}xf32>"
        y = f"tensor<{N}xf32>" if m == 1 else f"tensor<{m}x{N}xf32>"
        w = f"tensor<{N}x{K}x{element}>"
        graphs.append(
            f'circuit.graph @{fmt}_m{m}(%x: {x} {{circuit.name = "x"}},\n'
            f'    %w: {w} {{circuit.name = "w"}}) -> {y} {{\n'
            f"  %y = circuit.matmul %x, %w : {x}, {w} -> {y}\n"
            f"  circuit.output %y : {y}\n"
            "}\n")
GATED_K, GATED_M = 512, 33
for fmt in ["q8_0", "q4_0", "iq4_nl"]:
    x = f"tensor<{GATED_M}x{GATED_K}xf32>"
    y = f"tensor<{GATED_M}x{N}xf32>"
    w = f"tensor<{N}x{GATED_K}x!circuit.{fmt}>"
    graphs.append(
        f'circuit.graph @gated_{fmt}(%x: {x} {{circuit.name = "x"}},\n'
        f'    %g: {w} {{circuit.name = "g"}},\n'
        f'    %u: {w} {{circuit.name = "u"}}) -> {y} {{\n'
        f"  %y = circuit.gated_matmul %x, %g, %u : {x}, {w}, {w} -> {y} "
        "combine {\n"
        "  ^bb0(%lane: i32, %a: f32, %b: f32):\n"
        "    %s = exp.silu %a : f32\n"
        "    %p = exp.mul %s, %b : f32\n"
        "    circuit.yield %p : f32\n"
        "  }\n"
        f"  circuit.output %y : {y}\n"
        "}\n")
print("// -----\n".join(graphs), end="")
