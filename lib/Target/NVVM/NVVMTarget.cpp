//===- NVVMTarget.cpp - The NVVM target for CUDA devices ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// nvvm[:sm_NN]: hesper-to-ptx for the device's compute capability (sm_90
// when the device does not state one); the gpu.binary holds PTX text, which
// the CUDA driver JIT-compiles.
//
//===----------------------------------------------------------------------===//

#include "NVVMPasses.h"
#include "Hesper/Pipelines/Pipelines.h"
#include "Hesper/Target/NVVM/NVVMTarget.h"
#include "Hesper/Target/Passes.h"
#include "Hesper/Target/Target.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;
using namespace hesper;

/// Lanes per warp on every NVIDIA GPU the PTX targets.
static constexpr unsigned kWarpSize = 32;
/// The chip when neither the target string nor the device names one.
static constexpr const char *kDefaultChip = "sm_90";

/// Whether chip `sm_NN` has tensor cores for wmma (sm_70 and up); sets
/// `whyNot` when it has not.
static bool hasTensorCores(StringRef chip, std::string &whyNot) {
  unsigned sm = 0;
  StringRef number = chip;
  if (number.consume_front("sm_") && llvm::to_integer(number, sm) && sm >= 70)
    return true;
  whyNot = "nvvm target option 'mma' needs tensor cores (sm_70 and up), "
           "got " + chip.str();
  return false;
}

std::string hesper::findLibdevice() {
  SmallVector<std::string> roots;
  if (const char *home = std::getenv("CUDA_HOME"))
    roots.push_back(home);
  roots.push_back("/usr/local/cuda");
  for (const std::string &root : roots) {
    SmallString<128> path(root);
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    if (llvm::sys::fs::exists(path))
      return std::string(path);
  }
  return "";
}

/// From gpu.func kernels (with Hesper's ABI) to a gpu.binary of PTX: the
/// steps after hesper-to-gpu, shared with gpu dialect programs. Memrefs
/// are passed as bare pointers, the CUDA driver's binding ABI.
static void addPTXKernelSteps(OpPassManager &pm,
                              const PTXPipelineOptions &options) {
  std::string libdevice = options.libdevice;
  if (libdevice.empty())
    libdevice = findLibdevice();
  SpecializeSubgroupSizePassOptions warp;
  warp.subgroupSize = kWarpSize;
  pm.addPass(createSpecializeSubgroupSizePass(warp));
  ExpandSubgroupReducePassOptions shuffles;
  shuffles.subgroupSize = kWarpSize;
  pm.addPass(createExpandSubgroupReducePass(shuffles));
  pm.addPass(createCanonicalizerPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  if (!libdevice.empty())
    target.linkLibs.push_back(libdevice);
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(toNVVM));
  pm.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void hesper::buildHesperToPTXPipeline(OpPassManager &pm,
                                      const PTXPipelineOptions &options) {
  // Byte dot products as dp4a from sm_61 on (older chips, or a chip name
  // that is not sm_NN, keep the portable expansion).
  StringRef chip = options.chip;
  unsigned sm = 0;
  bool dp4a = chip.consume_front("sm_") && !chip.getAsInteger(10, sm) &&
              sm >= 61;
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/false,
                           /*subgroupSize=*/kWarpSize, /*singleLane=*/false,
                           [&](OpPassManager &kernels) {
                             if (dp4a)
                               kernels.addPass(nvvm::createDot4ToDp4aPass());
                           },
                           options.matrixUnits, /*wideLoads=*/true,
                           /*doubleBuffer=*/true,
                           // Slices of 32 values of K: with the swizzled
                           // tiles, H200 prefill of 512 tokens (1B-class
                           // q8_0) 13,700 -> 15,100 tok/s.
                           /*gemmSlice=*/32);
  addPTXKernelSteps(pm, options);
}

namespace {
class NVVMTarget : public Target {
public:
  NVVMTarget(std::string chip, bool matrixUnits = false)
      : chip(std::move(chip)), matrixUnits(matrixUnits) {}

  std::string str() const override {
    return "nvvm:" + chip + (matrixUnits ? ":mma" : "");
  }
  TargetBackend backend() const override { return TargetBackend::Cuda; }
  std::unique_ptr<Target> withMatrixUnits(std::string &whyNot) const override {
    if (!hasTensorCores(chip, whyNot))
      return nullptr;
    return std::make_unique<NVVMTarget>(chip, /*matrixUnits=*/true);
  }
  void buildPipeline(OpPassManager &pm,
                     const TargetPipelineOptions &options) const override {
    PTXPipelineOptions ptx;
    ptx.fuse = options.fuse;
    ptx.chip = chip;
    ptx.matrixUnits = matrixUnits;
    buildHesperToPTXPipeline(pm, ptx);
  }
  bool buildGpuKernelPipeline(OpPassManager &pm,
                              std::string &) const override {
    PTXPipelineOptions ptx;
    ptx.chip = chip;
    NormalizeGpuKernelsPassOptions normalize;
    normalize.sizesForDynamicShapes = true;
    pm.addPass(createNormalizeGpuKernelsPass(normalize));
    addPTXKernelSteps(pm, ptx);
    return true;
  }
  /// PTX text as ptxas reads it; the CUDA driver adds the NUL its loader
  /// needs.
  StringRef binaryFormat() const override { return "ptx"; }
  std::string binaryFileName(const TargetBinary &) const override {
    return "hesper_kernels.ptx";
  }

private:
  std::string chip;
  bool matrixUnits;
};
} // namespace

TargetKind hesper::nvvmTargetKind() {
  TargetKind kind;
  kind.name = "nvvm";
  kind.backend = TargetBackend::Cuda;
  kind.parse = [](StringRef options,
                  std::string &error) -> std::unique_ptr<Target> {
    if (options.empty())
      return std::make_unique<NVVMTarget>(kDefaultChip);
    // sm_NN, then optionally `mma`: tensor cores for prompt chunks.
    auto [chipName, rest] = options.split(':');
    bool mma = rest == "mma";
    unsigned sm = 0;
    if (!chipName.consume_front("sm_") || !llvm::to_integer(chipName, sm) ||
        sm < 50 || sm > 999 || (!rest.empty() && !mma)) {
      error = "bad nvvm target option (expected sm_NN, such as sm_90, then "
              "optionally ':mma')";
      return nullptr;
    }
    auto target = std::make_unique<NVVMTarget>("sm_" + std::to_string(sm));
    if (mma)
      return target->withMatrixUnits(error);
    return target;
  };
  kind.forDevice = [](const TargetDevice &device) -> std::unique_ptr<Target> {
    return std::make_unique<NVVMTarget>(device.chip.empty() ? kDefaultChip
                                                            : device.chip);
  };
  return kind;
}
