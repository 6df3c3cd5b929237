//===- DeviceSelect.cpp - Which device a tool runs on ---------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Execution/DeviceSelect.h"

#include "llvm/Support/raw_ostream.h"

#include <filesystem>

using namespace hesper;
using llvm::StringRef;

/// Whether the machine has a node a GPU's driver opens: a DRM render node
/// (Mesa's and AMD's Vulkan drivers), NVIDIA's, or WSL's /dev/dxg. Without
/// one, Vulkan can list only CPU devices (lavapipe), which `auto` takes
/// only when the CPU target does not open; and loading the system's
/// Vulkan drivers to find that out (lavapipe brings its own LLVM) took
/// ~90 ms and ~50 MB of a 0.2 s start on a 2-core machine.
static bool mayHaveGpu() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator("/dev/dri", ec))
    if (e.path().filename().string().rfind("renderD", 0) == 0)
      return true;
  for (const char *node : {"/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg"})
    if (fs::exists(node, ec))
      return true;
  return false;
}

std::unique_ptr<rt::Device>
hesper::exec::openRequestedDevice(const DeviceModeOptions &opts) {
  rt::DeviceOptions deviceOptions;
  deviceOptions.index = opts.deviceIndex;
  deviceOptions.validation = opts.validation;
  deviceOptions.threads = opts.threads;
  if (opts.backend) {
    auto device = rt::openDevice(*opts.backend, deviceOptions);
    if (device)
      return std::move(*device);
    llvm::errs() << "error: " << device.status().message() << "\n";
    return nullptr;
  }
  // auto: a real GPU (CUDA, then a Vulkan device that is not a CPU), then
  // native code on the CPU, then a Vulkan CPU device (lavapipe), which
  // emulates a GPU on the same cores more slowly than the CPU target.
  const bool gpuNodes = mayHaveGpu();
  for (rt::Backend b : {rt::Backend::Cuda, rt::Backend::Vulkan}) {
    if (b == rt::Backend::Vulkan && !gpuNodes)
      continue;
    auto device = rt::openDevice(b, deviceOptions);
    if (device && (*device)->info().type != rt::DeviceType::Cpu)
      return std::move(*device);
  }
  if (auto cpu = rt::openDevice(rt::Backend::Cpu, deviceOptions))
    return std::move(*cpu);
  if (auto vulkan = rt::openDevice(rt::Backend::Vulkan, deviceOptions))
    return std::move(*vulkan);
  return nullptr;
}

void hesper::exec::ChromeTrace::add(StringRef name, StringRef category,
                                    double startUs, double durUs, int tid) {
  events.push_back(llvm::json::Object{{"name", name},
                                      {"cat", category},
                                      {"ph", "X"},
                                      {"ts", startUs},
                                      {"dur", durUs},
                                      {"pid", 1},
                                      {"tid", tid}});
}

bool hesper::exec::ChromeTrace::write(const std::string &path) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec)
    return false;
  llvm::json::Object root{{"traceEvents", std::move(events)},
                          {"displayTimeUnit", "ns"}};
  file << llvm::json::Value(std::move(root)) << "\n";
  return true;
}
