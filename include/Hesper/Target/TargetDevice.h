//===- TargetDevice.h - What the compiler knows of a device -----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The compiler's own description of the device it generates code for: the
// API that will run the kernels, the chip, the subgroup size, the limits a
// kernel must respect and the features it may use. The targets, the knob
// checks and tuning plans read it; none of them links the runtime. The one
// conversion from the runtime's rt::DeviceInfo is
// hesper::describeDevice (include/Hesper/Execution/Execution.h), in the
// layer that links both.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_TARGETDEVICE_H
#define HESPER_TARGET_TARGETDEVICE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hesper {

/// The API whose driver runs a target's kernels (the runtime's backends,
/// named alike).
enum class TargetBackend { Vulkan, Cuda, Cpu };

/// "vulkan", "cuda" or "cpu".
llvm::StringRef targetBackendName(TargetBackend backend);

struct TargetDevice {
  TargetBackend backend = TargetBackend::Vulkan;
  /// The device's name as its driver reports it; tuning plans are written
  /// for one name.
  std::string name;
  /// The chip code is generated for: "sm_90" (CUDA), the ISA level
  /// "x86-64-v3" (CPU); empty where kernels are not chip-specific (SPIR-V)
  /// or the driver does not say (the target picks its default).
  std::string chip;
  uint32_t subgroupSize = 1;
  /// Subgroup reductions and shuffles are available in compute kernels.
  bool subgroupArithmetic = false;
  uint32_t maxWorkgroupSize[3] = {1, 1, 1};
  uint32_t maxWorkgroupInvocations = 1;
  uint32_t maxSharedMemoryBytes = 0;
  /// f16 arithmetic with 16-bit storage and int16 (SPIR-V capabilities).
  bool float16 = false;
  /// int8 arithmetic with 8-bit storage.
  bool int8 = false;
  /// SPIR-V's integer dot product of packed bytes (OpSDot; Vulkan's
  /// shaderIntegerDotProduct).
  bool integerDot = false;
  /// Threads that run one dispatch (the CPU device); 0 for GPUs.
  unsigned threads = 0;
  /// The host CPU's features that a CPU kernel binary may require and the
  /// runtime checks before loading it ("avx2", "fma", ...); empty for GPUs.
  std::vector<std::string> cpuFeatures;
  /// The driver's identity for cache keys (vendor, device, driver version).
  std::string cacheId;
};

} // namespace hesper

#endif // HESPER_TARGET_TARGETDEVICE_H
