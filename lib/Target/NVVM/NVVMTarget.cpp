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
#include "Hesper/Target/Target.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace hesper;

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
  FailureOr<TargetBinary> extractBinary(ModuleOp lowered) const override {
    auto binary = Target::extractBinary(lowered);
    if (succeeded(binary) && !binary->bytes.empty()) {
      binary->format = "ptx";
      binary->bytes.push_back(0); // the driver reads PTX as a C string
    }
    return binary;
  }
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
