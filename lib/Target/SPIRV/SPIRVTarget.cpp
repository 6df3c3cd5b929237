//===- SPIRVTarget.cpp - The SPIR-V target for Vulkan devices -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// spirv[:SUBGROUP][:idot]: hesper-to-spirv with the device's subgroup size, its
// 8- and 16-bit capabilities and (idot) its integer dot product; the
// gpu.binary holds the SPIR-V words.
//
//===----------------------------------------------------------------------===//

#include "SPIRVPasses.h"

#include "Hesper/Pipelines/Pipelines.h"
#include "Hesper/Target/SPIRV/SPIRVTarget.h"
#include "Hesper/Target/Passes.h"
#include "Hesper/Target/Target.h"

#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRVPass.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRVPass.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace hesper;

/// From gpu.func kernels (with Hesper's ABI) to a gpu.binary of SPIR-V:
/// the steps after hesper-to-gpu, shared with gpu dialect programs.
static void addSPIRVKernelSteps(OpPassManager &pm,
                                const SPIRVPipelineOptions &options) {
  SpecializeSubgroupSizePassOptions subgroup;
  subgroup.subgroupSize = options.subgroupSize;
  pm.addPass(createSpecializeSubgroupSizePass(subgroup));
  pm.addPass(createCanonicalizerPass());
  // Everything the device offers is declared; spirv-update-vce then keeps
  // only the capabilities and extensions the kernels use.
  GpuSPIRVAttachTargetOptions target;
  // SPIR-V 1.3 (Vulkan 1.1); 1.6 (Vulkan 1.3) for the integer dot
  // product, whose capabilities MLIR allows from 1.6 on.
  target.spirvVersion = options.integerDot ? "v1.6" : "v1.3";
  target.clientApi = "Vulkan";
  target.deviceId = spirv::TargetEnvAttr::kUnknownDeviceID;
  target.spirvCapabilities = {"Shader",
                              "Int64",
                              "GroupNonUniform",
                              "GroupNonUniformArithmetic",
                              "GroupNonUniformShuffle",
                              "GroupNonUniformShuffleRelative",
                              "GroupNonUniformBallot",
                              "GroupNonUniformVote"};
  target.spirvExtensions = {"SPV_KHR_storage_buffer_storage_class"};
  if (options.float16) {
    target.spirvCapabilities.append(
        {"Float16", "Int16", "StorageBuffer16BitAccess"});
    target.spirvExtensions.push_back("SPV_KHR_16bit_storage");
  }
  if (options.int8) {
    target.spirvCapabilities.append({"Int8", "StorageBuffer8BitAccess"});
    target.spirvExtensions.push_back("SPV_KHR_8bit_storage");
  }
  if (options.integerDot) {
    target.spirvCapabilities.append(
        {"DotProduct", "DotProductInput4x8BitPacked"});
    target.spirvExtensions.push_back("SPV_KHR_integer_dot_product");
  }
  pm.addPass(createGpuSPIRVAttachTarget(target));
  PrepareSPIRVKernelsPassOptions prepare;
  prepare.subgroupSize = options.subgroupSize;
  pm.addPass(createPrepareSPIRVKernelsPass(prepare));
  pm.nest<gpu::GPUModuleOp>().addPass(createConvertMathToSPIRVPass());
  pm.addPass(createConvertGPUToSPIRVPass());
  OpPassManager &modules = pm.nest<spirv::ModuleOp>();
  modules.addPass(spirv::createSPIRVLowerABIAttributesPass());
  modules.addPass(spirv_target::createShareWorkgroupMemoryPass());
  modules.addPass(spirv::createSPIRVUpdateVCEPass());
  modules.addPass(spirv_target::createKeepTargetVersionPass());
  pm.addPass(createSerializeSPIRVPass());
}

void hesper::buildHesperToSPIRVPipeline(OpPassManager &pm,
                                        const SPIRVPipelineOptions &options) {
  bool integerDot = options.integerDot;
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/true,
                           options.subgroupSize, /*singleLane=*/false,
                           [&](OpPassManager &kernels) {
                             if (integerDot)
                               kernels.addPass(
                                   spirv_target::createDot4ToSDotPass());
                           },
                           /*matrixUnits=*/false, /*wideLoads=*/false,
                           /*doubleBuffer=*/false);
  addSPIRVKernelSteps(pm, options);
}

namespace {
class SPIRVTarget : public Target {
public:
  SPIRVTarget(unsigned subgroupSize, bool float16, bool int8,
              bool integerDot)
      : subgroupSize(subgroupSize), float16(float16), int8(int8),
        integerDot(integerDot) {}

  std::string str() const override {
    return "spirv:" + std::to_string(subgroupSize) +
           (integerDot ? ":idot" : "");
  }
  TargetBackend backend() const override { return TargetBackend::Vulkan; }
  std::unique_ptr<Target> withMatrixUnits(std::string &whyNot) const override {
    whyNot = "the Vulkan target has none yet (CUDA and the CPU target do)";
    return nullptr;
  }
  void buildPipeline(OpPassManager &pm,
                     const TargetPipelineOptions &options) const override {
    SPIRVPipelineOptions spirv;
    spirv.fuse = options.fuse;
    spirv.subgroupSize = subgroupSize;
    spirv.float16 = float16;
    spirv.int8 = int8;
    spirv.integerDot = integerDot;
    buildHesperToSPIRVPipeline(pm, spirv);
  }
  bool buildGpuKernelPipeline(OpPassManager &pm,
                              std::string &) const override {
    SPIRVPipelineOptions spirv;
    spirv.subgroupSize = subgroupSize;
    spirv.float16 = float16;
    spirv.int8 = int8;
    EmulateWideShufflesPassOptions shuffles;
    shuffles.subgroupSize = subgroupSize;
    pm.addPass(createEmulateWideShufflesPass(shuffles));
    // Vulkan kernels take no memory attributions; they print into a
    // buffer the runtime reads after the launch.
    pm.addPass(spirv_target::createPrintfToBufferPass());
    NormalizeGpuKernelsPassOptions normalize;
    normalize.attributionsAsAlloc = true;
    normalize.flattenDynamicShapes = true;
    normalize.allowPrintf = false;
    normalize.allowLLVMFuncs = false;
    pm.addPass(createNormalizeGpuKernelsPass(normalize));
    addSPIRVKernelSteps(pm, spirv);
    return true;
  }
  StringRef binaryFormat() const override { return "spirv"; }
  std::string binaryFileName(const TargetBinary &) const override {
    return "hesper_kernels.spv";
  }

private:
  unsigned subgroupSize;
  bool float16, int8, integerDot;
};
} // namespace

TargetKind hesper::spirvTargetKind() {
  TargetKind kind;
  kind.name = "spirv";
  kind.backend = TargetBackend::Vulkan;
  kind.parse = [](StringRef options,
                  std::string &error) -> std::unique_ptr<Target> {
    unsigned size = 32;
    bool integerDot = options.consume_back(":idot") || options == "idot";
    if (options == "idot")
      options = "";
    if (!options.empty() &&
        (!llvm::to_integer(options, size) || size == 0 || size > 128 ||
         (size & (size - 1)) != 0)) {
      error = "bad spirv target option '" + options.str() +
              "' (expected the subgroup size, a power of two up to 128, "
              "then ':idot' for the integer dot product)";
      return nullptr;
    }
    return std::make_unique<SPIRVTarget>(size, true, true, integerDot);
  };
  kind.forDevice = [](const TargetDevice &device) -> std::unique_ptr<Target> {
    return std::make_unique<SPIRVTarget>(device.subgroupSize, device.float16,
                                         device.int8, device.integerDot);
  };
  return kind;
}
