//===- Target.cpp - Target strings, devices and the target list -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Target.h"
#include "Hesper/Target/CPU/CPUTarget.h"
#include "Hesper/Target/NVVM/NVVMTarget.h"
#include "Hesper/Target/Passes.h"
#include "Hesper/Target/SPIRV/SPIRVTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace hesper;

Target::~Target() = default;

bool Target::buildGpuKernelPipeline(OpPassManager &, std::string &whyNot) const {
  whyNot = "the " + str() + " target does not compile gpu dialect kernels";
  return false;
}

std::unique_ptr<Target> Target::withMatrixUnits(std::string &whyNot) const {
  whyNot = "the " + str() + " target has no matrix units";
  return nullptr;
}

FailureOr<TargetBinary> Target::extractBinary(ModuleOp lowered) const {
  auto binaries = lowered.getOps<gpu::BinaryOp>();
  if (binaries.empty())
    return TargetBinary{}; // a program with no kernels
  gpu::BinaryOp bin = *binaries.begin();
  auto object = cast<gpu::ObjectAttr>(bin.getObjects()[0]);
  StringRef bytes = object.getObject().getValue();
  TargetBinary binary;
  binary.bytes.assign(bytes.begin(), bytes.end());
  // The format the serializer recorded with the object, else the target's.
  DictionaryAttr properties = object.getProperties();
  if (auto format = properties ? properties.getAs<StringAttr>("format")
                               : StringAttr())
    binary.format = format.str();
  else
    binary.format = binaryFormat().str();
  if (binary.format.empty() && !binary.bytes.empty())
    return bin.emitOpError("has no `format` property, and the target names "
                           "no format of its own");
  return binary;
}

ArrayRef<TargetKind> hesper::targetKinds() {
  static const std::vector<TargetKind> kinds = {
      spirvTargetKind(), nvvmTargetKind(), cpuTargetKind()};
  return kinds;
}

std::unique_ptr<Target> hesper::parseTarget(StringRef spec,
                                            std::string &error) {
  auto [name, options] = spec.split(':');
  if (spec.contains(':') && options.empty()) {
    error = "nothing after ':' (give "
            "cuda:sm_90, vulkan:8 or cpu:x86-64-v3, or the name alone for "
            "the default)";
    return nullptr;
  }
  // A kind is also known by its runtime backend's name: vulkan:8 is
  // spirv:8, cuda:sm_90 is nvvm:sm_90.
  for (const TargetKind &kind : targetKinds())
    if (kind.name == name || targetBackendName(kind.backend) == name)
      return kind.parse(options, error);
  error = "unknown target '" + spec.str() + "' (expected ";
  for (const TargetKind &kind : targetKinds())
    error += (&kind == &targetKinds().front() ? "" : ", ") + kind.name +
             "[:...]";
  error += ", or a backend name: vulkan, cuda, cpu)";
  return nullptr;
}

StringRef hesper::targetBackendName(TargetBackend backend) {
  switch (backend) {
  case TargetBackend::Vulkan:
    return "vulkan";
  case TargetBackend::Cuda:
    return "cuda";
  case TargetBackend::Cpu:
    return "cpu";
  }
  return "unknown";
}

std::unique_ptr<Target> hesper::targetForDevice(const TargetDevice &device) {
  for (const TargetKind &kind : targetKinds())
    if (kind.backend == device.backend)
      return kind.forDevice(device);
  return nullptr;
}

void hesper::registerTargetPassesAndPipelines() {
  registerHesperTargetPasses();
  PassPipelineRegistration<PTXPipelineOptions>(
      "hesper-to-ptx",
      "hesper-to-gpu, then NVVM and a gpu.binary holding PTX (format=isa) "
      "or a cubin (format=bin)",
      buildHesperToPTXPipeline);
  PassPipelineRegistration<SPIRVPipelineOptions>(
      "hesper-to-spirv",
      "hesper-to-gpu, then SPIR-V for Vulkan serialized into a gpu.binary",
      buildHesperToSPIRVPipeline);
  PassPipelineRegistration<CPUPipelineOptions>(
      "hesper-to-cpu",
      "hesper-to-gpu with one lane per workgroup, then native code for the "
      "host CPU (or an x86-64 level) in a gpu.binary holding a shared object",
      buildHesperToCPUPipeline);
}
