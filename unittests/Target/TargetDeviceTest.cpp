//===- TargetDeviceTest.cpp - The compiler's description of a device ------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The targets see a TargetDevice, never the runtime's DeviceInfo: these
// tests check the one conversion between them (describeDevice), the
// targets a description selects, and that the CPU target's list of
// checkable features names what the runtime checks.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Execution/Execution.h"
#include "Hesper/Target/CPU/CPUTarget.h"
#include "Hesper/Target/Target.h"
#include "hesper/runtime/Runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <gtest/gtest.h>

using namespace hesper;

namespace {

std::vector<std::string> split(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef> parts;
  list.split(parts, ',', -1, /*KeepEmpty=*/false);
  std::vector<std::string> out;
  for (llvm::StringRef p : parts)
    out.push_back(p.str());
  return out;
}

TEST(TargetDevice, DescribesAGpu) {
  rt::DeviceInfo info;
  info.backend = rt::Backend::Cuda;
  info.name = "a GPU";
  info.subgroupSize = 32;
  info.subgroupArithmetic = true;
  info.maxWorkgroupSize[0] = 1024;
  info.maxWorkgroupInvocations = 1024;
  info.maxSharedMemoryBytes = 49152;
  info.computeCapability = 86;
  info.shaderFloat16 = info.storage16Bit = true;
  info.shaderInt16 = false; // f16 needs all three
  info.shaderInt8 = info.storage8Bit = true;
  info.cacheId = "cuda:sm_86:driver";
  TargetDevice d = describeDevice(info);
  EXPECT_EQ(d.backend, TargetBackend::Cuda);
  EXPECT_EQ(d.name, "a GPU");
  EXPECT_EQ(d.chip, "sm_86");
  EXPECT_EQ(d.subgroupSize, 32u);
  EXPECT_TRUE(d.subgroupArithmetic);
  EXPECT_EQ(d.maxWorkgroupSize[0], 1024u);
  EXPECT_EQ(d.maxWorkgroupInvocations, 1024u);
  EXPECT_EQ(d.maxSharedMemoryBytes, 49152u);
  EXPECT_FALSE(d.float16);
  EXPECT_TRUE(d.int8);
  EXPECT_TRUE(d.cpuFeatures.empty());
  EXPECT_EQ(d.cacheId, "cuda:sm_86:driver");
  std::unique_ptr<Target> target = targetForDevice(d);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->str(), "nvvm:sm_86");
  EXPECT_EQ(runtimeBackend(target->backend()), rt::Backend::Cuda);
}

TEST(TargetDevice, SelectsTargets) {
  TargetDevice vulkan;
  vulkan.backend = TargetBackend::Vulkan;
  vulkan.subgroupSize = 8;
  std::unique_ptr<Target> spirv = targetForDevice(vulkan);
  ASSERT_TRUE(spirv);
  EXPECT_EQ(spirv->str(), "spirv:8");
  EXPECT_EQ(runtimeBackend(spirv->backend()), rt::Backend::Vulkan);

  TargetDevice cpu;
  cpu.backend = TargetBackend::Cpu;
  std::unique_ptr<Target> native = targetForDevice(cpu);
  ASSERT_TRUE(native);
  EXPECT_EQ(native->str(), "cpu:native");

  for (rt::Backend b :
       {rt::Backend::Vulkan, rt::Backend::Cuda, rt::Backend::Cpu}) {
    EXPECT_EQ(runtimeBackend(targetBackend(b)), b);
    EXPECT_EQ(targetBackendName(targetBackend(b)), rt::backendName(b));
  }
}

TEST(TargetDevice, DescribesTheHostCpu) {
  auto devices = rt::listDevices(rt::Backend::Cpu);
  if (!devices || devices->empty())
    GTEST_SKIP() << "no CPU device";
  TargetDevice d = describeDevice(devices->front());
  EXPECT_EQ(d.backend, TargetBackend::Cpu);
  EXPECT_EQ(d.chip, rt::hostCpuIsa());
  EXPECT_GT(d.threads, 0u);
  EXPECT_EQ(d.cpuFeatures, split(rt::hostCpuFeatures()));
}

TEST(TargetDevice, CheckableFeaturesNameWhatTheRuntimeChecks) {
  // Every feature the runtime finds on this host is one the compiler can
  // require; the x86-64 levels' features are among them.
  llvm::ArrayRef<llvm::StringLiteral> names = cpu::checkableFeatures();
  EXPECT_GE(names.size(), 30u);
  for (const std::string &f : split(rt::hostCpuFeatures()))
    EXPECT_TRUE(llvm::is_contained(names, f)) << f;
  for (llvm::StringRef f : {"sse4.2", "avx2", "fma", "avx512f", "amx-tile"})
    EXPECT_TRUE(llvm::is_contained(names, f)) << f.str();
  EXPECT_FALSE(llvm::is_contained(names, "not-a-feature"));
}

TEST(TargetDevice, CpuThreadEntryNamesAgree) {
  // The CPU target names per-thread entry points as the driver calls them.
  EXPECT_EQ(cpu::kThreadEntryPrefix.str(),
            std::string(rt::kCpuThreadEntryPrefix));
}

} // namespace
