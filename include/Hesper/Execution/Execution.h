//===- Execution.h - Compile Circuit programs for a runtime device -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The bridge between the compiler and the runtime: run the pipeline of a
// device's backend on a module, then turn the lowered module (schedule,
// gpu.binary, kernel ABI) into an rt::Program the runtime executes without
// MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_EXECUTION_EXECUTION_H
#define HESPER_EXECUTION_EXECUTION_H

#include "Hesper/Target/Target.h"
#include "hesper/runtime/Program.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>

namespace hesper {

/// The compiler's description of a runtime device (the one place the
/// runtime's DeviceInfo becomes a TargetDevice).
TargetDevice describeDevice(const rt::DeviceInfo &device);
/// The runtime's backend for a target's, and back.
rt::Backend runtimeBackend(TargetBackend backend);
TargetBackend targetBackend(rt::Backend backend);

/// One timed compilation step (a pass), for --profile traces.
struct CompileEvent {
  std::string name;
  double startUs = 0, durationUs = 0;
};

struct CompileOptions {
  bool fuse = true;
  /// When set, every pass's output IR is written to this directory as
  /// NN-passname.mlir, and the kernels' binary under the target's name for
  /// it (hesper_kernels.spv, .ptx, .so; the CPU target adds .o and .s).
  std::string dumpDir;
  /// When set, a tuning plan (JSON, include/Hesper/Target/Plan.h) whose
  /// knobs are checked against the device and set on the fused graph's
  /// kernels (compileForDevice only: the checks need the device's limits).
  std::string planPath;
  /// The tuning cache's folder (hesper-tune writes it): without a plan,
  /// the knobs it holds for this device and compiler version are used.
  /// Empty: $HESPER_CACHE_DIR when set, else no cache.
  std::string tuneCacheDir;
  /// False: no cache is read, so the graph's knobs are compiled as they
  /// are set (the tuner's and plan verification's compiles: a cache must
  /// not replace the settings being measured or verified).
  bool useTuneCache = true;
  /// Filled with the passes run and their times.
  std::vector<CompileEvent> *events = nullptr;
  /// Prompt-chunk matmuls on the device's matrix units (the target's
  /// `:mma` option: CUDA's tensor cores, or the CPU target's stand-in for
  /// them); an error on a target without them.
  bool matrixUnits = false;
  /// Take the matrix units where they are the faster kernels (CUDA with
  /// tensor cores), and quietly not elsewhere.
  bool matrixUnitsWhereFast = false;
};

/// Lowers a copy of `module` for the target of `device` (targetForDevice:
/// SPIR-V with the device's subgroup size and features, NVVM for its
/// compute capability, native code for the host CPU) and extracts the
/// program of graph `graphName`.
mlir::FailureOr<rt::Program> compileForDevice(mlir::ModuleOp module,
                                              llvm::StringRef graphName,
                                              const rt::DeviceInfo &device,
                                              const CompileOptions &options);

/// As above for several graphs of one module, lowered together: kernels
/// that are identical across the graphs are compiled once.
mlir::FailureOr<std::vector<rt::Program>>
compileForDevice(mlir::ModuleOp module, llvm::ArrayRef<std::string> graphNames,
                 const rt::DeviceInfo &device, const CompileOptions &options);

/// As above for an explicit target (hesper-run --target, bundles for
/// another machine).
mlir::FailureOr<std::vector<rt::Program>>
compileForTarget(mlir::ModuleOp module, llvm::ArrayRef<std::string> graphNames,
                 const Target &target, const CompileOptions &options);

/// Creates `dir` and its parents for --dump-dir; "" when it is a directory
/// then, else why not (one line: it cannot be created, or it exists and is
/// not a directory, as /dev/null).
std::string prepareDumpDir(llvm::StringRef dir);
/// prepareDumpDir, its error on `module`.
mlir::LogicalResult createDumpDir(mlir::ModuleOp module, llvm::StringRef dir);

/// Writes a dump file `dir`/`name` with `write`; a dump that cannot be
/// opened is skipped (dumps are for reading, not part of the result).
void writeDumpFile(llvm::StringRef dir, llvm::StringRef name,
                   llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Extracts schedule `name` of an already lowered module whose kernels are
/// `binary`.
mlir::FailureOr<rt::Program> extractProgram(mlir::ModuleOp lowered,
                                            llvm::StringRef name,
                                            rt::Backend backend,
                                            const TargetBinary &binary);

} // namespace hesper

#endif // HESPER_EXECUTION_EXECUTION_H
