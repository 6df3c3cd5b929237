//===- Pipelines.h - The named compilation pipelines ------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The pipelines hesper-opt registers and hesper-run runs, built by the same
// functions:
//   hesper-to-gpu     fuse, Circuit -> ShaderM -> gpu, Exp -> std
//   hesper-to-ptx     ... -> nvvm -> gpu.binary with PTX (or a cubin)
//   hesper-to-spirv   ... -> spirv -> gpu.binary with SPIR-V for Vulkan
// See docs/Pipelines.md.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_PIPELINES_PIPELINES_H
#define HESPER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace hesper {

struct GPUPipelineOptions : mlir::PassPipelineOptions<GPUPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Run hesper-fuse on Circuit graphs first"),
                    llvm::cl::init(true)};
};

/// hesper-to-gpu: hesper-fuse (when `fuse`), convert-circuit-to-shaderm
/// (with `subgroupSize`, one lane per workgroup when `singleLane`),
/// shaderm-dedup-kernels, convert-shaderm-to-gpu (workgroup memory as
/// allocations when `sharedMemoryAsAlloc`), convert-exp-to-std,
/// canonicalize, cse, loop-invariant-code-motion. `beforeExpToStd` adds a
/// target's own lowering of Exp ops ahead of the portable one.
/// `matrixUnits`, `wideLoads`, `doubleBuffer` and `gemmSlice` are
/// convert-circuit-to-shaderm's options.
void buildHesperToGPUPipeline(
    mlir::OpPassManager &pm, bool fuse, bool sharedMemoryAsAlloc,
    unsigned subgroupSize = 0, bool singleLane = false,
    llvm::function_ref<void(mlir::OpPassManager &)> beforeExpToStd = nullptr,
    bool matrixUnits = false, bool wideLoads = true, bool doubleBuffer = true,
    int64_t gemmSlice = 16);

/// Registers hesper-to-gpu, hesper-to-ptx and hesper-to-spirv.
void registerHesperPipelines();

} // namespace hesper

#endif // HESPER_PIPELINES_PIPELINES_H
