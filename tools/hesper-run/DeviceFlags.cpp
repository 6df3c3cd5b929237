//===- DeviceFlags.cpp - hesper-run's device flags ------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "DeviceFlags.h"

#include <cstdlib>

using namespace hesper;

llvm::cl::OptionCategory &hesper::run::deviceCategory() {
  static llvm::cl::OptionCategory category("Devices, targets and bundles");
  return category;
}

namespace {
enum class BackendChoice { Auto, Vulkan, Cuda, Cpu, Interp };
} // namespace

static llvm::cl::opt<BackendChoice> backendChoice(
    "backend", llvm::cl::desc("Where graphs run"),
    llvm::cl::values(
        clEnumValN(BackendChoice::Auto, "auto",
                   "a GPU (CUDA, else Vulkan), else native code on the CPU, "
                   "else a Vulkan CPU device (lavapipe), else the "
                   "interpreter"),
        clEnumValN(BackendChoice::Vulkan, "vulkan", "a Vulkan device"),
        clEnumValN(BackendChoice::Cuda, "cuda", "a CUDA device"),
        clEnumValN(BackendChoice::Cpu, "cpu",
                   "native code for this machine's CPU, on all its cores "
                   "(--threads)"),
        clEnumValN(BackendChoice::Interp, "interp",
                   "the reference interpreter")),
    llvm::cl::init(BackendChoice::Auto),
    llvm::cl::cat(hesper::run::deviceCategory()));
// Spelled --threads on the command line (and -t): libLLVM registers an
// option of that name for itself, so main() renames the flag before parsing.
static llvm::cl::opt<unsigned>
    threads("cpu-threads",
            llvm::cl::desc("Threads of the CPU backend, also --threads N or "
                           "-t N (0: the cores available)"),
            llvm::cl::init(0), llvm::cl::cat(hesper::run::deviceCategory()));
static llvm::cl::opt<int> deviceIndex(
    "device", llvm::cl::desc("Device index of the backend (--list-devices)"),
    llvm::cl::init(-1), llvm::cl::cat(hesper::run::deviceCategory()));
static llvm::cl::opt<bool> validationLayer(
    "validation",
    llvm::cl::desc("Enable the Vulkan validation layer; any message it "
                   "reports is an error (also HESPER_VK_VALIDATION=1)"),
    llvm::cl::init(false), llvm::cl::cat(hesper::run::deviceCategory()));

static llvm::cl::opt<bool> matrixUnits(
    "matrix-units",
    llvm::cl::desc("Prompt-chunk matmuls on the matrix units: CUDA's tensor "
                   "cores (wmma, f16 tiles, f32 sums; sm_70 and up), or on "
                   "the CPU the same kernels with the tiles emulated (a "
                   "stand-in to test them). GGUF models take them by "
                   "default on CUDA devices that have them "
                   "(--matrix-units=false: f32 tiles); programs only when "
                   "asked"),
    llvm::cl::init(false), llvm::cl::cat(hesper::run::deviceCategory()));

bool hesper::run::interpreterChosen() {
  return backendChoice == BackendChoice::Interp;
}

bool hesper::run::backendNamed() {
  return backendChoice != BackendChoice::Auto;
}

bool hesper::run::deviceIndexGiven() {
  return deviceIndex.getNumOccurrences() > 0;
}

exec::DeviceModeOptions hesper::run::deviceFlags() {
  exec::DeviceModeOptions opts;
  if (backendChoice == BackendChoice::Vulkan)
    opts.backend = rt::Backend::Vulkan;
  if (backendChoice == BackendChoice::Cuda)
    opts.backend = rt::Backend::Cuda;
  if (backendChoice == BackendChoice::Cpu)
    opts.backend = rt::Backend::Cpu;
  opts.threads = threads;
  opts.deviceIndex = deviceIndex;
  opts.validation = validationLayer;
  if (matrixUnits.getNumOccurrences())
    opts.matrixUnits = matrixUnits;
  if (const char *env = std::getenv("HESPER_VK_VALIDATION"))
    opts.validation |= llvm::StringRef(env) == "1";
  return opts;
}
