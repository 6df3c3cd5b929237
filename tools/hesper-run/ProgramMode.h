//===- ProgramMode.h - hesper-run on a gpu dialect program ------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_HESPER_RUN_PROGRAMMODE_H
#define HESPER_TOOLS_HESPER_RUN_PROGRAMMODE_H

#include "Hesper/Execution/GraphRun.h"

#include "mlir/IR/BuiltinOps.h"

namespace hesper::run {

/// Runs a gpu dialect program (func.func @main launching gpu kernels) as
/// mlir-runner would, with its kernels on `device` (opened for `opts`; with
/// the automatic backend, a device whose target cannot compile gpu dialect
/// kernels would be exchanged for a Vulkan one). Errors are diagnostics or one
/// `error:` line.
mlir::LogicalResult runProgramMode(mlir::ModuleOp module,
                                   std::unique_ptr<rt::Device> &device,
                                   const exec::DeviceModeOptions &opts,
                                   llvm::raw_ostream &os);

/// Compiles a gpu dialect program for `targetSpec` (as --target names it)
/// without running it; with a dump directory, the kernels' binaries and the
/// lowered host module are written there.
mlir::LogicalResult compileProgramOnly(mlir::ModuleOp module,
                                       llvm::StringRef targetSpec,
                                       const std::string &dumpDir,
                                       llvm::raw_ostream &os);

} // namespace hesper::run

#endif // HESPER_TOOLS_HESPER_RUN_PROGRAMMODE_H
