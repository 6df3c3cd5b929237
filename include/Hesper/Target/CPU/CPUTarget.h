//===- CPUTarget.h - The native CPU target's pipeline ----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_CPU_CPUTARGET_H
#define HESPER_TARGET_CPU_CPUTARGET_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace hesper {

struct CPUPipelineOptions : mlir::PassPipelineOptions<CPUPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Run hesper-fuse on Circuit graphs first"),
                    llvm::cl::init(true)};
  Option<std::string> isa{
      *this, "isa",
      llvm::cl::desc("native (the host, the default) or an x86-64 level: "
                     "x86-64, x86-64-v2, x86-64-v3, x86-64-v4"),
      llvm::cl::init("native")};
  Option<std::string> dumpDir{
      *this, "dump-dir",
      llvm::cl::desc("Write the kernels' object code and assembly here"),
      llvm::cl::init("")};
};

/// hesper-to-cpu: Circuit graphs to schedules and a gpu.binary holding a
/// shared object of native code (one entry point per kernel).
void buildHesperToCPUPipeline(mlir::OpPassManager &pm,
                              const CPUPipelineOptions &options);

} // namespace hesper

#endif // HESPER_TARGET_CPU_CPUTARGET_H
