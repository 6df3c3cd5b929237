//===- GpuProgram.h - Run gpu dialect programs on any backend ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What mlir-runner does for a GPU program, on every Hesper backend: a
// module with a host entry function (func.func @main) whose code launches
// gpu dialect kernels (gpu.launch, outlined here, or gpu.launch_func) is
//   1. compiled: kernels outlined, each gpu.module lowered by the device's
//      Target (buildGpuKernelPipeline) and replaced by a gpu.binary whose
//      object is a GpuModuleImage (hesper/runtime/Mgpu.h); the host code
//      lowered to the llvm dialect by upstream's passes (gpu-to-llvm and
//      friends);
//   2. run: JIT-compiled by MLIR's ExecutionEngine, its mgpu* calls bound to
//      Hesper's runtime on the device, the runner utilities
//      (printMemrefF32, ...) loaded from MLIR's shared libraries as
//      mlir-runner loads them.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_EXECUTION_GPUPROGRAM_H
#define HESPER_EXECUTION_GPUPROGRAM_H

#include "Hesper/Target/Target.h"
#include "hesper/runtime/Runtime.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace hesper::exec {

/// True when `module` is a gpu dialect program, not Circuit graphs: it has
/// no circuit.graph, and a func.func or a gpu.module.
bool isGpuProgram(mlir::ModuleOp module);
/// True when it has host code to run (a func.func): a file of gpu.modules
/// alone only compiles, as upstream's tests that pipe mlir-opt's output
/// through FileCheck do.
bool hasHostCode(mlir::ModuleOp module);

struct GpuProgramOptions {
  /// The host function to call (mlir-runner's -e).
  std::string entryPoint = "main";
  /// Its result type, printed after it returns: void, i32, i64 or f32
  /// (mlir-runner's --entry-point-result).
  std::string entryResult = "void";
  /// LLVM optimization level of the host code, 0-3.
  unsigned optLevel = 2;
  /// Shared libraries whose symbols the host code may call (mlir-runner's
  /// --shared-libs). MLIR's runner utilities are added when they are not
  /// named and exist where MLIR is installed. Upstream's GPU runtimes
  /// (libmlir_{cuda,rocm,vulkan}_runtime.so) are not loaded, even where
  /// they exist: Hesper's runtime stands in for them, and naming the
  /// Vulkan one also turns on launchTimes, as that runtime prints them.
  std::vector<std::string> sharedLibs;
  /// Print each launch's times with the lines upstream's Vulkan runtime
  /// prints (rt::setMgpuLaunchTimes).
  bool launchTimes = false;
  /// Print with Hesper's own printMemref* and vector.print functions
  /// instead of loading MLIR's runner utilities. Where those are not
  /// installed (a release), Hesper's are used anyway.
  bool builtinRunnerUtils = false;
  /// When set, the kernels' binary is written here under the target's file
  /// name, and the host module as host.mlir.
  std::string dumpDir;
};

/// Compiles the kernels of `module` for `target` and lowers its host code
/// to the llvm dialect, in place. Errors are diagnostics on the module's
/// ops.
mlir::LogicalResult compileGpuProgram(mlir::ModuleOp module,
                                      const Target &target,
                                      const GpuProgramOptions &options);

/// JIT-compiles a module compileGpuProgram lowered for `target` and calls
/// its entry point, with every kernel running on `device`; prints the
/// entry's result (unless void) on `os`. Kernels whose block size is known
/// only at launch are compiled for `target` then, once per size, in the
/// module's context. Errors are printed as one line on stderr.
mlir::LogicalResult runGpuProgram(mlir::ModuleOp module, const Target &target,
                                  rt::Device &device,
                                  const GpuProgramOptions &options,
                                  llvm::raw_ostream &os);

} // namespace hesper::exec

#endif // HESPER_EXECUTION_GPUPROGRAM_H
