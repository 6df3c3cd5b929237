//===- Passes.h - Circuit fusion passes -------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_TRANSFORMS_PASSES_H
#define HESPER_DIALECT_CIRCUIT_TRANSFORMS_PASSES_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace hesper {
namespace circuit {

#define GEN_PASS_DECL
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"

/// The rewrite patterns of each fusion pass, for use in other drivers.
void populateFusePointwisePatterns(mlir::RewritePatternSet &patterns);
void populateFuseMatmulEpiloguePatterns(mlir::RewritePatternSet &patterns);
void populateFuseReduceEpiloguePatterns(mlir::RewritePatternSet &patterns);
void populateFuseReduceIntoQuantizePatterns(mlir::RewritePatternSet &patterns);
void populateFuseScatterPatterns(mlir::RewritePatternSet &patterns);
void populateMergeSameDispatchPatterns(mlir::RewritePatternSet &patterns);
void populateFuseGatedMatmulPatterns(mlir::RewritePatternSet &patterns);
void populateCSEQuantizePatterns(mlir::RewritePatternSet &patterns);

/// Adds the `hesper-fuse` pipeline to `pm` (nested on circuit.graph ops):
/// canonicalize, then every fusion pass in order, twice (a later fusion can
/// enable an earlier one), then canonicalize and CSE.
void buildHesperFusePipeline(mlir::OpPassManager &pm);

/// Registers the passes above and the `hesper-fuse` pipeline.
void registerCircuitPasses();

/// Number of dispatch-level primitives (kernels) in `graph`.
int64_t countDispatches(GraphOp graph);

} // namespace circuit
} // namespace hesper

#endif // HESPER_DIALECT_CIRCUIT_TRANSFORMS_PASSES_H
