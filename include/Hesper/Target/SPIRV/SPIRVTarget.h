//===- SPIRVTarget.h - The SPIR-V target's pipeline -------- -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_SPIRV_SPIRVTARGET_H
#define HESPER_TARGET_SPIRV_SPIRVTARGET_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace hesper {

struct SPIRVPipelineOptions
    : mlir::PassPipelineOptions<SPIRVPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Run hesper-fuse on Circuit graphs first"),
                    llvm::cl::init(true)};
  Option<unsigned> subgroupSize{
      *this, "subgroup-size",
      llvm::cl::desc("Lanes per subgroup of the target device"),
      llvm::cl::init(32)};
  Option<bool> float16{*this, "float16",
                       llvm::cl::desc("The device has Float16 and 16-bit "
                                      "storage buffers"),
                       llvm::cl::init(true)};
  Option<bool> int8{*this, "int8",
                    llvm::cl::desc("The device has Int8 and 8-bit storage "
                                   "buffers"),
                    llvm::cl::init(true)};
  Option<bool> integerDot{
      *this, "integer-dot-product",
      llvm::cl::desc("The device has the integer dot product on packed "
                     "bytes (shaderIntegerDotProduct): exp.dot4_i8 becomes "
                     "OpSDot"),
      llvm::cl::init(false)};
};

/// hesper-to-spirv: hesper-to-gpu for the device's subgroup size, then
/// SPIR-V for Vulkan serialized into a gpu.binary.
void buildHesperToSPIRVPipeline(mlir::OpPassManager &pm,
                                const SPIRVPipelineOptions &options);

} // namespace hesper

#endif // HESPER_TARGET_SPIRV_SPIRVTARGET_H
