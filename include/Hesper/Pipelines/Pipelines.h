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

struct PTXPipelineOptions : mlir::PassPipelineOptions<PTXPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Run hesper-fuse on Circuit graphs first"),
                    llvm::cl::init(true)};
  Option<std::string> chip{*this, "chip", llvm::cl::desc("Target SM"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX version feature"),
                               llvm::cl::init("+ptx80")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("isa (PTX text) or bin (cubin, runs ptxas)"),
      llvm::cl::init("isa")};
  Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("CUDA libdevice bitcode (default: found under "
                     "$CUDA_HOME or /usr/local/cuda when present)"),
      llvm::cl::init("")};
};

struct SPIRVPipelineOptions
    : mlir::PassPipelineOptions<SPIRVPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Run hesper-fuse on Circuit graphs first"),
                    llvm::cl::init(true)};
  Option<unsigned> subgroupSize{
      *this, "subgroup-size",
      llvm::cl::desc("Lanes per subgroup of the target device"),
      llvm::cl::init(32)};
  Option<bool> float16{*this, "float16",
                       llvm::cl::desc("The device has Float16 and 16-bit "
                                      "storage buffers"),
                       llvm::cl::init(true)};
  Option<bool> int8{*this, "int8",
                    llvm::cl::desc("The device has Int8 and 8-bit storage "
                                   "buffers"),
                    llvm::cl::init(true)};
};

void buildHesperToGPUPipeline(mlir::OpPassManager &pm, bool fuse,
                              bool sharedMemoryAsAlloc,
                              unsigned subgroupSize = 0,
                              bool singleLane = false);
void buildHesperToPTXPipeline(mlir::OpPassManager &pm,
                              const PTXPipelineOptions &options);
void buildHesperToSPIRVPipeline(mlir::OpPassManager &pm,
                                const SPIRVPipelineOptions &options);

/// The libdevice bitcode of a CUDA installation, or "" when none is found.
std::string findLibdevice();

/// Registers hesper-to-gpu, hesper-to-ptx and hesper-to-spirv.
void registerHesperPipelines();

} // namespace hesper

#endif // HESPER_PIPELINES_PIPELINES_H
