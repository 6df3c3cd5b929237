//===- SPIRVPasses.h - The SPIR-V target's own passes -----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Target/SPIRV.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_TARGET_SPIRV_SPIRVPASSES_H
#define HESPER_LIB_TARGET_SPIRV_SPIRVPASSES_H

#include "mlir/Pass/Pass.h"

namespace hesper::spirv_target {

/// exp.dot4_i8 as SPIR-V's OpSDot on packed bytes plus an add, for devices
/// with the integer dot product (Dot4ToSDot.cpp).
std::unique_ptr<mlir::Pass> createDot4ToSDotPass();

/// gpu.printf as records in a buffer the runtime prints after the launch:
/// one more kernel argument, and `hesper.printf` on the module saying how
/// to read them (PrintfToBuffer.cpp).
std::unique_ptr<mlir::Pass> createPrintfToBufferPass();

/// The kernels of a SPIR-V module share its Workgroup variables (per type,
/// as many as the kernel that uses the most), which Vulkan's validation
/// layer counts module-wide (ShareWorkgroupMemory.cpp).
std::unique_ptr<mlir::Pass> createShareWorkgroupMemoryPass();

/// After spirv-update-vce: a module whose target is SPIR-V 1.4 or later
/// keeps that version (its entry points list their interfaces by it).
std::unique_ptr<mlir::Pass> createKeepTargetVersionPass();

} // namespace hesper::spirv_target

#endif // HESPER_LIB_TARGET_SPIRV_SPIRVPASSES_H
