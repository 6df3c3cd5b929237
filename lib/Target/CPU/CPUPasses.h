//===- CPUPasses.h - The CPU target's passes -------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Target/CPU. The CPU pipeline after the shared lowering to
// gpu.func kernels of one lane:
//
//   hesper-gpu-to-cpu         gpu.module -> builtin.module of func.func
//                             workgroup bodies (KernelsToCPU.cpp)
//   builtin.module(...)       upstream lowering of that module to llvm
//   hesper-serialize-cpu      LLVM IR, one entry point per kernel, O3 for
//                             the host's TargetMachine, an object file,
//                             linked into a shared object in a gpu.binary
//                             (SerializeCPU.cpp)
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_TARGET_CPU_CPUPASSES_H
#define HESPER_LIB_TARGET_CPU_CPUPASSES_H

#include "mlir/Pass/Pass.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace hesper::cpu {

/// Marks the builtin.module holding the kernels of the CPU target.
inline constexpr llvm::StringLiteral kCPUKernelsAttr = "hesper.cpu_kernels";

/// The function that runs one workgroup of kernel `kernel`.
std::string kernelBodyName(llvm::StringRef kernel);
/// The function that runs one thread of a kernel with several threads per
/// workgroup (hesper-gpu-to-cpu{threads=true}).
std::string threadBodyName(llvm::StringRef kernel);

/// What the compiled code may use: the LLVM CPU name and features, and the
/// features the runtime must find on the host (GCC's names).
struct ISA {
  std::string name; ///< as the user wrote it: native, x86-64-v3, ...
  std::string cpu;  ///< LLVM's CPU name
  std::string features; ///< LLVM's feature string (+avx2,...)
  std::vector<std::string> required;
};

/// Resolves `native` (the host) or a named x86-64 level; on failure sets
/// `error`. For `native`, `hostFeatures` are the host's features that the
/// runtime checks (the device's description); when empty, those of
/// checkableFeatures() that LLVM detects on the host.
bool resolveISA(llvm::StringRef name, llvm::ArrayRef<std::string> hostFeatures,
                ISA &isa, std::string &error);

/// Whether `isa` has vpdpbusd on 256-bit vectors (AVX512-VNNI with
/// AVX512-VL, or AVX-VNNI).
bool hasByteDotInstruction(const ISA &isa);
/// Whether `isa` has vpdpbusd on 512-bit vectors (AVX512-VNNI).
bool hasWideByteDotInstruction(const ISA &isa);
/// exp.vector_dot4_i8 of 8 lanes as vpdpbusd (VectorDot.cpp), and of 16
/// lanes with `wide` (hasWideByteDotInstruction); only for an ISA with
/// hasByteDotInstruction, before convert-exp-to-std.
std::unique_ptr<mlir::Pass> createVectorDotToVNNIPass(bool wide);

} // namespace hesper::cpu

#endif // HESPER_LIB_TARGET_CPU_CPUPASSES_H
