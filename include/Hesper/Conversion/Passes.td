//===- Passes.td - Hesper conversion passes ----------------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_CONVERSION_PASSES_TD
#define HESPER_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertExpToStdPass : Pass<"convert-exp-to-std"> {
  let summary = "Lower exp ops to arith, math and gpu";
  let description = [{
    Replaces every `exp` op by upstream ops of the same types: arithmetic,
    comparisons, selection, conversions and bit operations by `arith`; math
    functions by `math` (sigmoid, SiLU and the tanh form of GELU expanded);
    packing and the 8-bit dot product by shifts, masks and integer
    arithmetic; division by a constant by a shift (powers of two) or a
    64-bit multiply-high by a magic number, exact for every 32-bit input;
    lane operations by `gpu.lane_id`, `gpu.subgroup_size`,
    `gpu.subgroup_reduce`, `gpu.shuffle xor` and `gpu.subgroup_broadcast`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::gpu::GPUDialect"];
}

#endif // HESPER_CONVERSION_PASSES_TD
