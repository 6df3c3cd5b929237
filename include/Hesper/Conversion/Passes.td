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

def ConvertShaderMToGPUPass
    : Pass<"convert-shaderm-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower shaderm kernels to gpu.func kernels";
  let description = [{
    Moves every `shaderm.kernel` of the module into a `gpu.module
    @hesper_kernels` as a `gpu.func ... kernel`: buffer bindings become
    memrefs (in binding order), shared allocations become workgroup
    attributions, builtin ids become `gpu` ids, loads, stores and atomics
    become `memref` (and `vector`) ops, barriers `gpu.barrier`. The kernel
    ABI is recorded on the function as `hesper.abi`: workgroup size,
    shared-memory bytes, and per binding its kind, type and access; the
    workgroup size is also `known_block_size`. Exp ops are left for
    `convert-exp-to-std`.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // HESPER_CONVERSION_PASSES_TD
