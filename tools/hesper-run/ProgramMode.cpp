//===- ProgramMode.cpp - hesper-run on a gpu dialect program ---------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// mlir-runner's flags (-e/--entry-point, --entry-point-result,
// --shared-libs, -O0..-O3) over exec::compileGpuProgram and
// exec::runGpuProgram.
//
//===----------------------------------------------------------------------===//

#include "ProgramMode.h"

#include "Hesper/Execution/Execution.h"
#include "Hesper/Execution/GpuProgram.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;
using namespace hesper;

static llvm::cl::OptionCategory
    programCategory("Running gpu dialect programs (as mlir-runner)");

static llvm::cl::opt<std::string>
    entryPoint("entry-point",
               llvm::cl::desc("The host function to run (default main)"),
               llvm::cl::init("main"), llvm::cl::cat(programCategory));
static llvm::cl::alias entryPointAlias("e", llvm::cl::aliasopt(entryPoint),
                                       llvm::cl::desc("Alias of --entry-point"),
                                       llvm::cl::cat(programCategory));
static llvm::cl::opt<std::string> entryPointResult(
    "entry-point-result",
    llvm::cl::desc("The entry point's result type, printed after it "
                   "returns: void, i32, i64 or f32"),
    llvm::cl::init("void"), llvm::cl::cat(programCategory));
static llvm::cl::list<std::string>
    sharedLibs("shared-libs",
               llvm::cl::desc("Libraries the host code calls into "
                              "(comma-separated); MLIR's runner utilities "
                              "are loaded when not named"),
               llvm::cl::CommaSeparated, llvm::cl::cat(programCategory));
static llvm::cl::opt<bool> builtinRunnerUtils(
    "builtin-runner-utils",
    llvm::cl::desc("Print memrefs and vectors with Hesper's own printMemref* "
                   "and vector.print functions, not MLIR's runner utilities "
                   "(what a release without MLIR does)"),
    llvm::cl::init(false), llvm::cl::cat(programCategory));
static llvm::cl::opt<bool> launchTimes(
    "launch-times",
    llvm::cl::desc("After each kernel launch, print its times as upstream's "
                   "Vulkan runtime does (also on when --shared-libs names "
                   "libmlir_vulkan_runtime.so)"),
    llvm::cl::init(false), llvm::cl::cat(programCategory));
static llvm::cl::opt<bool> optO0("O0", llvm::cl::desc("Host code at -O0"),
                                 llvm::cl::cat(programCategory));
static llvm::cl::opt<bool> optO1("O1", llvm::cl::desc("Host code at -O1"),
                                 llvm::cl::cat(programCategory));
static llvm::cl::opt<bool> optO2("O2",
                                 llvm::cl::desc("Host code at -O2 (default)"),
                                 llvm::cl::cat(programCategory));
static llvm::cl::opt<bool> optO3("O3", llvm::cl::desc("Host code at -O3"),
                                 llvm::cl::cat(programCategory));

/// True when the device's target compiles gpu dialect kernels.
static bool compilesGpuKernels(const rt::DeviceInfo &info) {
  std::unique_ptr<Target> target = targetForDevice(describeDevice(info));
  OpPassManager scratch("builtin.module");
  std::string whyNot;
  return target && target->buildGpuKernelPipeline(scratch, whyNot);
}

/// The options the flags give.
static FailureOr<exec::GpuProgramOptions> programOptions() {
  exec::GpuProgramOptions options;
  options.entryPoint = entryPoint;
  options.entryResult = entryPointResult;
  options.sharedLibs.assign(sharedLibs.begin(), sharedLibs.end());
  options.builtinRunnerUtils = builtinRunnerUtils;
  options.launchTimes = launchTimes;
  int levels = int(optO0) + int(optO1) + int(optO2) + int(optO3);
  if (levels > 1) {
    llvm::errs() << "error: give at most one of -O0, -O1, -O2, -O3\n";
    return failure();
  }
  options.optLevel = optO0 ? 0 : optO1 ? 1 : optO3 ? 3 : 2;
  return options;
}

LogicalResult run::compileProgramOnly(ModuleOp module, StringRef targetSpec,
                                      const std::string &dumpDir,
                                      llvm::raw_ostream &os) {
  std::string error;
  std::unique_ptr<Target> target = parseTarget(targetSpec, error);
  if (!target) {
    llvm::errs() << "error: " << error << "\n";
    return failure();
  }
  FailureOr<exec::GpuProgramOptions> options = programOptions();
  if (failed(options))
    return failure();
  options->dumpDir = dumpDir;
  size_t modules = llvm::range_size(module.getOps<gpu::GPUModuleOp>());
  if (failed(exec::compileGpuProgram(module, *target, *options)))
    return failure();
  size_t binaries = llvm::range_size(module.getOps<gpu::BinaryOp>());
  os << "compiled " << binaries << " kernel module(s) ("
     << (binaries - modules) << " outlined from gpu.launch) for "
     << target->str() << "\n";
  return success();
}

LogicalResult run::runProgramMode(ModuleOp module,
                                  std::unique_ptr<rt::Device> &device,
                                  const exec::DeviceModeOptions &opts,
                                  llvm::raw_ostream &os) {
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "error: " << message << "\n";
    return failure();
  };
  if (!opts.backend && (!device || !compilesGpuKernels(device->info()))) {
    // Auto, on a device whose target does not compile gpu dialect kernels:
    // take a Vulkan device instead.
    rt::DeviceOptions vulkan;
    vulkan.index = opts.deviceIndex;
    vulkan.validation = opts.validation;
    auto opened = rt::openDevice(rt::Backend::Vulkan, vulkan);
    if (!opened)
      return fail("no device here compiles gpu dialect kernels: " +
                  opened.status().message());
    device = std::move(*opened);
  }
  if (!device)
    return fail("gpu dialect programs need a device; --backend=interp runs "
                "Circuit graphs only");

  FailureOr<exec::GpuProgramOptions> parsed = programOptions();
  if (failed(parsed))
    return failure();
  exec::GpuProgramOptions options = *parsed;
  options.dumpDir = opts.dumpDir;

  std::unique_ptr<Target> target =
      targetForDevice(describeDevice(device->info()));
  if (!target)
    return fail("no compilation target for device '" + device->info().name +
                "'");
  size_t modules = llvm::range_size(module.getOps<gpu::GPUModuleOp>());
  // (Asked before the compile, which lowers the host code's func.func.)
  bool hostCode = exec::hasHostCode(module);
  if (failed(exec::compileGpuProgram(module, *target, options)))
    return failure();
  if (!hostCode) {
    // mlir-opt would stop here too: the kernels compiled (their binaries in
    // --dump-dir), and there is nothing to call.
    os << "compiled " << modules << " kernel module(s) for "
       << target->str() << "; nothing to run: the file has no host code "
       << "(no func.func)\n";
    return success();
  }
  return exec::runGpuProgram(module, *target, *device, options, os);
}
