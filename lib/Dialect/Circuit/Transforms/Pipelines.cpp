//===- Pipelines.cpp - The hesper-fuse pipeline and pass registration ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITFUSEPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;

namespace {
#define GEN_PASS_REGISTRATION
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace

namespace {

struct CircuitFusePass : circuit::impl::CircuitFusePassBase<CircuitFusePass> {
  using CircuitFusePassBase::CircuitFusePassBase;

  LogicalResult initialize(MLIRContext *context) override {
    // One frozen pattern set per pass, applied in this order.
    using Populate = void (*)(RewritePatternSet &);
    for (Populate populate :
         {populateFusePointwisePatterns, populateFuseGatedMatmulPatterns,
          populateMergeSameDispatchPatterns,
          populateFuseMatmulEpiloguePatterns,
          populateFuseReduceEpiloguePatterns,
          populateFuseReduceIntoQuantizePatterns, populateCSEQuantizePatterns,
          populateFuseScatterPatterns}) {
      RewritePatternSet patterns(context);
      populate(patterns);
      stages.emplace_back(std::move(patterns));
    }
    return success();
  }

  void runOnOperation() override {
    GraphOp graph = getOperation();
    int64_t start = countDispatches(graph);
    for (unsigned round = 0; round < maxRounds; ++round) {
      ++numRounds;
      // Progress is any change of the IR, seen through its fingerprint.
      OperationFingerPrint before(graph);
      for (const FrozenRewritePatternSet &stage : stages)
        if (failed(applyPatternsGreedily(graph, stage)))
          return signalPassFailure();
      if (OperationFingerPrint(graph) == before)
        break;
    }
    numFused += start - countDispatches(graph);
  }

  SmallVector<FrozenRewritePatternSet> stages;
};

} // namespace

void hesper::circuit::buildHesperFusePipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.nest<GraphOp>().addPass(createCircuitFusePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void hesper::circuit::registerCircuitPasses() {
  registerCircuitTransformsPasses(); // Generated: one per pass.
  PassPipelineRegistration<>(
      "hesper-fuse",
      "Fuse a Circuit graph into as few kernels as is safe: canonicalize, "
      "circuit-fuse (every fusion pattern set, in order, to a fixed point), "
      "canonicalize, cse",
      buildHesperFusePipeline);
}
