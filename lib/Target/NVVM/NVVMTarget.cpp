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

#include "Hesper/Pipelines/Pipelines.h"
#include "Hesper/Target/NVVM/NVVMTarget.h"
#include "Hesper/Target/Target.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;
using namespace hesper;

/// Lanes per warp on every NVIDIA GPU the PTX targets.
static constexpr unsigned kWarpSize = 32;

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
static std::string ptxKernelSteps(const PTXPipelineOptions &options) {
  std::string libdevice = options.libdevice;
  if (libdevice.empty())
    libdevice = findLibdevice();
  std::string text = "hesper-specialize-subgroup-size{size=" +
                     std::to_string(kWarpSize) +
                     "},hesper-expand-subgroup-reduce{size=" +
                     std::to_string(kWarpSize) + "},canonicalize,";
  text += "nvvm-attach-target{chip=" + options.chip +
          " features=" + options.features;
  if (!libdevice.empty())
    text += " l=" + libdevice;
  text += "},gpu.module(convert-scf-to-cf,"
          "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true}),"
          "reconcile-unrealized-casts,gpu-module-to-binary{format=" +
          options.format + "}";
  return text;
}

void hesper::buildHesperToPTXPipeline(OpPassManager &pm,
                                      const PTXPipelineOptions &options) {
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/false,
                           /*subgroupSize=*/kWarpSize);
  addPipeline(pm, ptxKernelSteps(options));
}

namespace {
class NVVMTarget : public Target {
public:
  explicit NVVMTarget(std::string chip) : chip(std::move(chip)) {}

  std::string str() const override { return "nvvm:" + chip; }
  rt::Backend backend() const override { return rt::Backend::Cuda; }
  void buildPipeline(OpPassManager &pm,
                     const TargetPipelineOptions &options) const override {
    PTXPipelineOptions ptx;
    ptx.fuse = options.fuse;
    ptx.chip = chip;
    buildHesperToPTXPipeline(pm, ptx);
  }
  bool buildGpuKernelPipeline(OpPassManager &pm,
                              std::string &) const override {
    PTXPipelineOptions ptx;
    ptx.chip = chip;
    addPipeline(pm, "hesper-normalize-gpu-kernels," + ptxKernelSteps(ptx));
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
};
} // namespace

TargetKind hesper::nvvmTargetKind() {
  TargetKind kind;
  kind.name = "nvvm";
  kind.backend = rt::Backend::Cuda;
  kind.parse = [](StringRef options,
                  std::string &error) -> std::unique_ptr<Target> {
    if (options.empty())
      return std::make_unique<NVVMTarget>("sm_90");
    unsigned sm = 0;
    if (!options.consume_front("sm_") || !llvm::to_integer(options, sm) ||
        sm < 50 || sm > 999) {
      error = "bad nvvm target option (expected sm_NN, such as sm_90)";
      return nullptr;
    }
    return std::make_unique<NVVMTarget>("sm_" + std::to_string(sm));
  };
  kind.forDevice = [](const rt::DeviceInfo &device) -> std::unique_ptr<Target> {
    unsigned cc = device.computeCapability ? device.computeCapability : 90;
    return std::make_unique<NVVMTarget>("sm_" + std::to_string(cc));
  };
  return kind;
}
