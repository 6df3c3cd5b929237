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
  ListOption<std::string> hostFeatures{
      *this, "host-features",
      llvm::cl::desc("With isa=native: the host features the runtime checks "
                     "(by default, LLVM's view of the host)")};
  Option<bool> matrixUnits{
      *this, "matrix-units",
      llvm::cl::desc("Compile the kernels a GPU with matrix units gets "
                     "(workgroups of many lanes, run as fibers; the "
                     "matrix tiles emulated): a stand-in to test them"),
      llvm::cl::init(false)};
  Option<std::string> dumpDir{
      *this, "dump-dir",
      llvm::cl::desc("Write the kernels' object code and assembly here"),
      llvm::cl::init("")};
};

namespace cpu {
/// The CPU features a kernel binary's format may require, named as the
/// runtime's CPU driver checks them (GCC's __builtin_cpu_supports names,
/// which LLVM's feature names match); the driver refuses a binary that
/// requires one the host lacks. unittests/Target checks this list against
/// the runtime's on the build host.
llvm::ArrayRef<llvm::StringLiteral> checkableFeatures();

/// The prefix of the per-thread entry point of a kernel whose workgroups
/// have several threads (hesper-gpu-to-cpu{threads=true}): part of the CPU
/// binary's ABI, which the runtime's CPU driver calls by the same name
/// (rt::kCpuThreadEntryPrefix; unittests/Target checks they agree).
inline constexpr llvm::StringLiteral kThreadEntryPrefix = "__hesper_threads_";
} // namespace cpu

/// hesper-to-cpu: Circuit graphs to schedules and a gpu.binary holding a
/// shared object of native code (one entry point per kernel).
void buildHesperToCPUPipeline(mlir::OpPassManager &pm,
                              const CPUPipelineOptions &options);

} // namespace hesper

#endif // HESPER_TARGET_CPU_CPUTARGET_H
