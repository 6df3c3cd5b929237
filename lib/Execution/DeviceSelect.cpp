//===- DeviceSelect.cpp - Which device a tool runs on ---------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Execution/DeviceSelect.h"

#include "llvm/Support/raw_ostream.h"

using namespace hesper;
using llvm::StringRef;

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
  std::unique_ptr<rt::Device> cpuVulkan;
  for (rt::Backend b : {rt::Backend::Cuda, rt::Backend::Vulkan}) {
    auto device = rt::openDevice(b, deviceOptions);
    if (!device)
      continue;
    if ((*device)->info().type != rt::DeviceType::Cpu)
      return std::move(*device);
    cpuVulkan = std::move(*device);
  }
  if (auto cpu = rt::openDevice(rt::Backend::Cpu, deviceOptions))
    return std::move(*cpu);
  return cpuVulkan;
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
