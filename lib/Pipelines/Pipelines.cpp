//===- Pipelines.cpp - The named compilation pipelines --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The shared first half of every target's pipeline, built from typed pass
// constructors: a program that links this library runs it without
// registering any pass, and a misspelt pass or option does not compile.
// hesper-opt registers the same function under the name hesper-to-gpu;
// docs/Pipelines.md spells each pipeline as the equivalent text.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Pipelines/Pipelines.h"

#include "Hesper/Conversion/Passes.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/ShaderM/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void hesper::buildHesperToGPUPipeline(
    OpPassManager &pm, bool fuse, bool sharedMemoryAsAlloc,
    unsigned subgroupSize, bool singleLane,
    llvm::function_ref<void(OpPassManager &)> beforeExpToStd,
    bool matrixUnits, bool wideLoads, bool doubleBuffer, int64_t gemmSlice) {
  if (fuse)
    circuit::buildHesperFusePipeline(pm);
  // One kernel per dispatch op, then one copy of identical kernels (the
  // layers of a model launch the same ones).
  ConvertCircuitToShaderMPassOptions toShaderM;
  toShaderM.subgroupSize = subgroupSize;
  toShaderM.singleLane = singleLane;
  toShaderM.matrixUnits = matrixUnits;
  toShaderM.wideLoads = wideLoads;
  toShaderM.doubleBuffer = doubleBuffer;
  toShaderM.gemmSlice = gemmSlice;
  pm.addPass(createConvertCircuitToShaderMPass(toShaderM));
  pm.addPass(shaderm::createShaderMDedupKernelsPass());
  ConvertShaderMToGPUPassOptions toGPU;
  toGPU.sharedMemoryAsAlloc = sharedMemoryAsAlloc;
  pm.addPass(createConvertShaderMToGPUPass(toGPU));
  if (beforeExpToStd)
    beforeExpToStd(pm);
  pm.addPass(createConvertExpToStdPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
}

void hesper::registerHesperPipelines() {
  PassPipelineRegistration<GPUPipelineOptions>(
      "hesper-to-gpu",
      "Fuse Circuit graphs, lower them to ShaderM kernels and a schedule, "
      "then kernels to gpu.func and Exp to arith/math/gpu",
      [](OpPassManager &pm, const GPUPipelineOptions &options) {
        buildHesperToGPUPipeline(pm, options.fuse, false, 0);
      });
}
