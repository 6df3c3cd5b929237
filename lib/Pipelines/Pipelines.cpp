//===- Pipelines.cpp - The named compilation pipelines --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Each pipeline is written as the textual pipeline a user would pass to
// hesper-opt, so that docs/Pipelines.md, the tests and the tools agree on
// one spelling. The passes must be registered (hesper::registerAllPasses).
//
//===----------------------------------------------------------------------===//

#include "Hesper/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

void hesper::addPipeline(OpPassManager &pm, const std::string &text) {
  if (failed(parsePassPipeline(text, pm, llvm::errs())))
    llvm::report_fatal_error(llvm::Twine("hesper: bad built-in pipeline: ") +
                             text);
}

void hesper::buildHesperToGPUPipeline(OpPassManager &pm, bool fuse,
                                      bool sharedMemoryAsAlloc,
                                      unsigned subgroupSize,
                                      bool singleLane) {
  std::string text;
  if (fuse)
    text += "hesper-fuse,";
  // One kernel per dispatch op, then one copy of identical kernels (the
  // layers of a model launch the same ones).
  text += "convert-circuit-to-shaderm{subgroup-size=" +
          std::to_string(subgroupSize) +
          (singleLane ? " single-lane=true" : "") +
          "},shaderm-dedup-kernels,";
  text += "convert-shaderm-to-gpu{shared-memory-as-alloc=";
  text += sharedMemoryAsAlloc ? "true" : "false";
  text += "},convert-exp-to-std,canonicalize,cse,loop-invariant-code-motion";
  addPipeline(pm, text);
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
