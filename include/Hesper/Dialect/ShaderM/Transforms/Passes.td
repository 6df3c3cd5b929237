//===- Passes.td - ShaderM passes --------------------------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_SHADERM_TRANSFORMS_PASSES_TD
#define HESPER_DIALECT_SHADERM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ShaderMDedupKernelsPass
    : Pass<"shaderm-dedup-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one copy of kernels that differ only in their names";
  let description = [{
    A model's decode step launches the same kernels once per layer: the
    lowering emits one `shaderm.kernel` per launch, so a 32-layer model
    would carry 32 identical copies of each, and every copy costs a
    compilation in the driver (lavapipe and CUDA JIT alike). This pass
    compares kernels by their body, signature and attributes (everything
    but the symbol name), keeps the first of each set of identical kernels,
    points every `shaderm.launch` of the others at it, and erases them.

    Kernels that differ in anything else (a constant, a buffer length, the
    workgroup size) are kept apart.
  }];
  let statistics = [
    Statistic<"numErased", "erased", "Kernels erased as duplicates">,
  ];
}

#endif // HESPER_DIALECT_SHADERM_TRANSFORMS_PASSES_TD
