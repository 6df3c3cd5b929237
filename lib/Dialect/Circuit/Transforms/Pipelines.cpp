//===- Pipelines.cpp - The hesper-fuse pipeline and pass registration ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;

namespace {
#define GEN_PASS_REGISTRATION
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace

void hesper::circuit::buildHesperFusePipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  OpPassManager &graph = pm.nest<GraphOp>();
  // Each pass applies its patterns to a fixed point; a later fusion can
  // enable an earlier one (a scatter merged with its neighbour, a quantize
  // exposed by a reduce_epilogue), so the sequence runs twice.
  for (int round = 0; round < 2; ++round) {
    graph.addPass(createCircuitFusePointwisePass());
    // Merging first keeps gate/up (and Q/K/V) one dispatch; an epilogue
    // that reads a sibling's result would otherwise block the merge.
    graph.addPass(createCircuitMergeSameDispatchPass());
    graph.addPass(createCircuitFuseMatmulEpiloguePass());
    graph.addPass(createCircuitFuseReduceEpiloguePass());
    graph.addPass(createCircuitFuseReduceIntoQuantizePass());
    graph.addPass(createCircuitCSEQuantizePass());
    graph.addPass(createCircuitFuseScatterPass());
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void hesper::circuit::registerCircuitPasses() {
  registerCircuitTransformsPasses(); // Generated: one per pass.
  PassPipelineRegistration<>(
      "hesper-fuse",
      "Fuse a Circuit graph into as few kernels as is safe (every "
      "circuit-fuse-* pass, in order, to a fixed point)",
      buildHesperFusePipeline);
}
