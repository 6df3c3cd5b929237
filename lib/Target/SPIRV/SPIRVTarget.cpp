//===- SPIRVTarget.cpp - The SPIR-V target for Vulkan devices -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// spirv[:SUBGROUP]: hesper-to-spirv with the device's subgroup size and its
// 8- and 16-bit capabilities; the gpu.binary holds the SPIR-V words.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Pipelines/Pipelines.h"
#include "Hesper/Target/SPIRV/SPIRVTarget.h"
#include "Hesper/Target/Target.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace hesper;

/// From gpu.func kernels (with Hesper's ABI) to a gpu.binary of SPIR-V:
/// the steps after hesper-to-gpu, shared with gpu dialect programs.
static std::string spirvKernelSteps(const SPIRVPipelineOptions &options) {
  // Everything the device offers is declared; spirv-update-vce then keeps
  // only the capabilities and extensions the kernels use.
  std::string caps = "Shader,Int64,GroupNonUniform,GroupNonUniformArithmetic,"
                     "GroupNonUniformShuffle,GroupNonUniformShuffleRelative,"
                     "GroupNonUniformBallot,"
                     "GroupNonUniformVote";
  std::string exts = "SPV_KHR_storage_buffer_storage_class";
  if (options.float16) {
    caps += ",Float16,Int16,StorageBuffer16BitAccess";
    exts += ",SPV_KHR_16bit_storage";
  }
  if (options.int8) {
    caps += ",Int8,StorageBuffer8BitAccess";
    exts += ",SPV_KHR_8bit_storage";
  }
  std::string text = "hesper-specialize-subgroup-size{size=" +
                     std::to_string(options.subgroupSize) + "},canonicalize,";
  text += "spirv-attach-target{ver=v1.3 client_api=Vulkan caps=" + caps +
          " exts=" + exts + "},hesper-prepare-spirv-kernels{subgroup-size=" +
          std::to_string(options.subgroupSize) + "},";
  text += "gpu.module(convert-math-to-spirv),convert-gpu-to-spirv,"
          "spirv.module(spirv-lower-abi-attrs,"
          "spirv-update-vce),hesper-serialize-spirv";
  return text;
}

void hesper::buildHesperToSPIRVPipeline(OpPassManager &pm,
                                        const SPIRVPipelineOptions &options) {
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/true,
                           options.subgroupSize);
  addPipeline(pm, spirvKernelSteps(options));
}

namespace {
class SPIRVTarget : public Target {
public:
  SPIRVTarget(unsigned subgroupSize, bool float16, bool int8)
      : subgroupSize(subgroupSize), float16(float16), int8(int8) {}

  std::string str() const override {
    return "spirv:" + std::to_string(subgroupSize);
  }
  rt::Backend backend() const override { return rt::Backend::Vulkan; }
  void buildPipeline(OpPassManager &pm,
                     const TargetPipelineOptions &options) const override {
    SPIRVPipelineOptions spirv;
    spirv.fuse = options.fuse;
    spirv.subgroupSize = subgroupSize;
    spirv.float16 = float16;
    spirv.int8 = int8;
    buildHesperToSPIRVPipeline(pm, spirv);
  }
  bool buildGpuKernelPipeline(OpPassManager &pm,
                              std::string &) const override {
    SPIRVPipelineOptions spirv;
    spirv.subgroupSize = subgroupSize;
    spirv.float16 = float16;
    spirv.int8 = int8;
    // Vulkan kernels take no memory attributions and print nothing.
    addPipeline(pm, "hesper-normalize-gpu-kernels{attributions-as-alloc=true "
                    "allow-printf=false}," +
                        spirvKernelSteps(spirv));
    return true;
  }
  StringRef binaryFormat() const override { return "spirv"; }
  std::string binaryFileName(const TargetBinary &) const override {
    return "hesper_kernels.spv";
  }

private:
  unsigned subgroupSize;
  bool float16, int8;
};
} // namespace

TargetKind hesper::spirvTargetKind() {
  TargetKind kind;
  kind.name = "spirv";
  kind.backend = rt::Backend::Vulkan;
  kind.parse = [](StringRef options,
                  std::string &error) -> std::unique_ptr<Target> {
    unsigned size = 32;
    if (!options.empty() &&
        (!llvm::to_integer(options, size) || size == 0 || size > 128 ||
         (size & (size - 1)) != 0)) {
      error = "bad spirv target option '" + options.str() +
              "' (expected the subgroup size, a power of two up to 128)";
      return nullptr;
    }
    return std::make_unique<SPIRVTarget>(size, true, true);
  };
  kind.forDevice = [](const rt::DeviceInfo &device) -> std::unique_ptr<Target> {
    return std::make_unique<SPIRVTarget>(
        device.subgroupSize,
        device.shaderFloat16 && device.storage16Bit && device.shaderInt16,
        device.shaderInt8 && device.storage8Bit);
  };
  return kind;
}
