//===- ToolFlags.cpp - Command-line pieces the tools share ----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "ToolFlags.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace hesper;
using namespace hesper::tools;
using llvm::StringRef;

void hesper::tools::listAllDevices(llvm::raw_ostream &os) {
  for (rt::Backend b :
       {rt::Backend::Vulkan, rt::Backend::Cuda, rt::Backend::Cpu}) {
    auto devices = rt::listDevices(b);
    if (!devices) {
      os << rt::backendName(b) << ": " << devices.status().message() << "\n";
      continue;
    }
    for (auto [i, d] : llvm::enumerate(*devices)) {
      os << rt::backendName(b) << " " << i << ": " << d.name << " ("
         << rt::deviceTypeName(d.type);
      if (d.threads)
        os << ")\n"; // the name says the threads and the ISA
      else
        os << ", subgroup " << d.subgroupSize << ", shared memory "
           << d.maxSharedMemoryBytes << " bytes)\n";
    }
  }
}

std::unique_ptr<rt::Device>
hesper::tools::openFlaggedDevice(BackendFlag flag, int deviceIndex,
                                unsigned threads, bool validation) {
  exec::DeviceModeOptions opts;
  opts.backend = backendOf(flag);
  opts.deviceIndex = deviceIndex;
  opts.threads = threads;
  opts.validation = validation;
  return exec::openRequestedDevice(opts);
}

llvm::cl::ValuesClass hesper::tools::backendFlagValues() {
  return llvm::cl::values(
      clEnumValN(BackendFlag::Auto, "auto",
                 "a GPU, else native code on the CPU, else lavapipe"),
      clEnumValN(BackendFlag::Vulkan, "vulkan", "a Vulkan device"),
      clEnumValN(BackendFlag::Cuda, "cuda", "a CUDA device"),
      clEnumValN(BackendFlag::Cpu, "cpu", "native code on the CPU"));
}

std::optional<rt::Backend> hesper::tools::backendOf(BackendFlag flag) {
  switch (flag) {
  case BackendFlag::Auto:
    return std::nullopt;
  case BackendFlag::Vulkan:
    return rt::Backend::Vulkan;
  case BackendFlag::Cuda:
    return rt::Backend::Cuda;
  case BackendFlag::Cpu:
    return rt::Backend::Cpu;
  }
  return std::nullopt;
}

void hesper::tools::hideOptionsOutside(llvm::ArrayRef<llvm::StringRef> shown) {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    bool ours = llvm::any_of(option->Categories,
                             [&](llvm::cl::OptionCategory *category) {
                               StringRef name = category->getName();
                               return name == "Generic Options" ||
                                      llvm::is_contained(shown, name);
                             });
    if (!ours && option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

void hesper::tools::renameThreadsFlag(int argc, char **argv,
                              std::vector<std::string> &storage) {
  storage.reserve(argc);
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--")
      break;
    for (llvm::StringRef flag : {"--threads", "-threads", "-t"}) {
      if (arg == flag || arg.starts_with((flag + "=").str())) {
        storage.push_back("--cpu-threads" + arg.drop_front(flag.size()).str());
        argv[i] = storage.back().data();
        break;
      }
    }
  }
}
