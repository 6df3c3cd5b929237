//===- NVVMTarget.h - The NVVM target's pipeline ----------- -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_NVVM_NVVMTARGET_H
#define HESPER_TARGET_NVVM_NVVMTARGET_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace hesper {

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
  Option<bool> matrixUnits{
      *this, "matrix-units",
      llvm::cl::desc("Prompt-chunk matmuls on the tensor cores (wmma, "
                     "f16 tiles accumulated in f32; sm_70 and up)"),
      llvm::cl::init(false)};
  Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("CUDA libdevice bitcode (default: found under "
                     "$CUDA_HOME or /usr/local/cuda when present)"),
      llvm::cl::init("")};
};

/// hesper-to-ptx: hesper-to-gpu for 32-lane warps, then NVVM and a
/// gpu.binary holding PTX (format=isa) or a cubin (format=bin).
void buildHesperToPTXPipeline(mlir::OpPassManager &pm,
                              const PTXPipelineOptions &options);

/// CUDA's libdevice bitcode under $CUDA_HOME or /usr/local/cuda; "" when
/// absent.
std::string findLibdevice();

} // namespace hesper

#endif // HESPER_TARGET_NVVM_NVVMTARGET_H
