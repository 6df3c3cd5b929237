//===- Target.h - The compilation targets behind one interface -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A Target is what the execution library and the tools know about a
// backend: how to parse its target string, how to derive it from a runtime
// device (TargetDevice.h), which pipeline lowers Circuit graphs for it, where the serialized
// kernels are in the lowered module, and what its dump files are called.
// Each target lives in its own folder of lib/Target (SPIRV, NVVM, CPU);
// nothing outside them branches on the backend.
//
//   target string     backend   example
//   spirv[:SUBGROUP]  vulkan    spirv:8        (lanes per subgroup)
//   nvvm[:sm_NN]      cuda      nvvm:sm_90
//   cpu[:ISA]         cpu       cpu:native, cpu:x86-64-v3
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_TARGET_H
#define HESPER_TARGET_TARGET_H

#include "Hesper/Target/TargetDevice.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <memory>
#include <string>
#include <vector>

namespace hesper {

/// What a target's pipeline needs besides the target itself.
struct TargetPipelineOptions {
  bool fuse = true;
  /// When set, a target writes its intermediate files here (the CPU
  /// target: the object code and its assembly).
  std::string dumpDir;
};

/// The serialized kernels of a lowered module: one binary holding every
/// kernel, and its format as the runtime names it (KernelDesc::format).
struct TargetBinary {
  std::vector<uint8_t> bytes;
  std::string format;
};

class Target {
public:
  virtual ~Target();

  /// The target string that parses back to this target ("nvvm:sm_90").
  virtual std::string str() const = 0;
  /// The API whose driver runs this target's kernels.
  virtual TargetBackend backend() const = 0;
  /// Appends the passes that take a module of Circuit graphs to schedules
  /// and serialized kernels.
  virtual void buildPipeline(mlir::OpPassManager &pm,
                             const TargetPipelineOptions &options) const = 0;
  /// Appends the passes that take a module whose gpu.modules hold kernels
  /// written in the gpu dialect (a gpu dialect program's, after outlining)
  /// to gpu.binary ops in this target's format; each kernel takes one
  /// buffer per argument (hesper-normalize-gpu-kernels). Returns false,
  /// with the reason in `whyNot`, for a target that cannot run such
  /// kernels.
  virtual bool buildGpuKernelPipeline(mlir::OpPassManager &pm,
                                      std::string &whyNot) const;
  /// This target with prompt-chunk matmuls on the matrix units (the
  /// `:mma` option), or null with the reason in `whyNot` where the target
  /// has none.
  virtual std::unique_ptr<Target> withMatrixUnits(std::string &whyNot) const;
  /// The serialized kernels of a module the pipeline lowered: the first
  /// object of its gpu.binary, in the format its `format` property names,
  /// else binaryFormat().
  virtual mlir::FailureOr<TargetBinary>
  extractBinary(mlir::ModuleOp lowered) const;
  /// The format of this target's binaries when the object does not record
  /// one ("spirv", "ptx"); empty when it must ("elf:<features>").
  virtual llvm::StringRef binaryFormat() const { return ""; }
  /// The file name the kernels are dumped to ("hesper_kernels.spv").
  virtual std::string binaryFileName(const TargetBinary &binary) const = 0;
};

/// One kind of target: its name, and how it is made from a string or a
/// device.
struct TargetKind {
  /// The part of the target string before ':' ("spirv").
  std::string name;
  TargetBackend backend;
  /// Parses the part after ':' (empty when there is none); on failure
  /// returns null and sets `error`.
  std::unique_ptr<Target> (*parse)(llvm::StringRef options,
                                   std::string &error);
  /// The target that suits `device` (of this kind's backend).
  std::unique_ptr<Target> (*forDevice)(const TargetDevice &device);
};

/// Every target kind, in the order parseTarget tries them.
llvm::ArrayRef<TargetKind> targetKinds();

/// Parses a target string; on failure returns null and sets `error` to
/// one line naming the problem.
std::unique_ptr<Target> parseTarget(llvm::StringRef spec, std::string &error);

/// The target for a device (its backend, subgroup size, features, chip or
/// the host CPU's features).
std::unique_ptr<Target> targetForDevice(const TargetDevice &device);

// The kinds, one per folder of lib/Target.
TargetKind spirvTargetKind();
TargetKind nvvmTargetKind();
TargetKind cpuTargetKind();

} // namespace hesper

#endif // HESPER_TARGET_TARGET_H
