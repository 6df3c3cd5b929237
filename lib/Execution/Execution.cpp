//===- Execution.cpp - Compile Circuit programs for a runtime device ------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Execution/Execution.h"

#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"
#include "Hesper/Target/Target.h"
#include "Hesper/Target/Plan.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
using namespace hesper;
namespace sm = hesper::shaderm;

namespace {
/// Times every pass, and optionally writes the IR after each one.
class StageRecorder : public PassInstrumentation {
public:
  StageRecorder(const CompileOptions &options) : options(options) {}

  void runBeforePass(Pass *pass, Operation *op) override {
    starts.push_back(now());
  }
  void runAfterPass(Pass *pass, Operation *op) override { finish(pass, op); }
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    finish(pass, op);
  }

private:
  static double now() {
    using namespace std::chrono;
    return duration<double, std::micro>(
               steady_clock::now().time_since_epoch())
        .count();
  }
  /// A pass's command-line name; for the adaptors that run nested pass
  /// managers (which have none), their nested pipeline in file-name-safe
  /// characters: "gpu.module.convert-scf-to-cf.convert-gpu-to-nvvm".
  static std::string stageName(Pass *pass) {
    if (!pass->getArgument().empty())
      return pass->getArgument().str();
    std::string text, name;
    llvm::raw_string_ostream os(text);
    pass->printAsTextualPipeline(os);
    bool inOptions = false;
    for (char c : text) {
      if (c == '{' || c == '}') {
        inOptions = c == '{';
        continue;
      }
      if (inOptions || c == ' ')
        continue;
      bool plain = llvm::isAlnum(c) || c == '-' || c == '_' || c == '.';
      if (plain)
        name += c;
      else if (!name.empty() && name.back() != '.')
        name += '.';
    }
    while (!name.empty() && name.back() == '.')
      name.pop_back();
    return name.substr(0, 100);
  }

  void finish(Pass *pass, Operation *op) {
    double start = starts.pop_back_val();
    std::string stage = stageName(pass);
    if (options.events)
      options.events->push_back({stage, start, now() - start});
    if (options.dumpDir.empty() || !isa<ModuleOp>(op))
      return;
    writeDumpFile(options.dumpDir,
                  llvm::formatv("{0:d2}-{1}.mlir", count++, stage).str(),
                  [&](llvm::raw_ostream &os) { op->print(os); });
  }

  const CompileOptions &options;
  SmallVector<double> starts;
  unsigned count = 0;
};
} // namespace

TargetBackend hesper::targetBackend(rt::Backend backend) {
  switch (backend) {
  case rt::Backend::Vulkan:
    return TargetBackend::Vulkan;
  case rt::Backend::Cuda:
    return TargetBackend::Cuda;
  case rt::Backend::Cpu:
    break;
  }
  return TargetBackend::Cpu;
}

rt::Backend hesper::runtimeBackend(TargetBackend backend) {
  switch (backend) {
  case TargetBackend::Vulkan:
    return rt::Backend::Vulkan;
  case TargetBackend::Cuda:
    return rt::Backend::Cuda;
  case TargetBackend::Cpu:
    break;
  }
  return rt::Backend::Cpu;
}

TargetDevice hesper::describeDevice(const rt::DeviceInfo &info) {
  TargetDevice device;
  device.backend = targetBackend(info.backend);
  device.name = info.name;
  if (info.backend == rt::Backend::Cuda && info.computeCapability)
    device.chip = "sm_" + std::to_string(info.computeCapability);
  else if (info.backend == rt::Backend::Cpu)
    device.chip = rt::hostCpuIsa();
  device.subgroupSize = info.subgroupSize;
  device.subgroupArithmetic = info.subgroupArithmetic;
  for (int i = 0; i < 3; ++i)
    device.maxWorkgroupSize[i] = info.maxWorkgroupSize[i];
  device.maxWorkgroupInvocations = info.maxWorkgroupInvocations;
  device.maxSharedMemoryBytes = info.maxSharedMemoryBytes;
  device.float16 = info.shaderFloat16 && info.storage16Bit && info.shaderInt16;
  device.int8 = info.shaderInt8 && info.storage8Bit;
  device.integerDot = info.integerDotProduct;
  device.threads = info.threads;
  if (info.backend == rt::Backend::Cpu) {
    std::string features = rt::hostCpuFeatures();
    llvm::SmallVector<StringRef> names;
    StringRef(features).split(names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef name : names)
      device.cpuFeatures.push_back(name.str());
  }
  device.cacheId = info.cacheId;
  return device;
}

FailureOr<rt::Program> hesper::compileForDevice(ModuleOp module,
                                                StringRef graphName,
                                                const rt::DeviceInfo &device,
                                                const CompileOptions &options) {
  std::vector<std::string> names{graphName.str()};
  auto programs = compileForDevice(module, ArrayRef<std::string>(names),
                                   device, options);
  if (failed(programs))
    return failure();
  return std::move(programs->front());
}

FailureOr<std::vector<rt::Program>>
hesper::compileForDevice(ModuleOp module, ArrayRef<std::string> graphNames,
                         const rt::DeviceInfo &runtimeDevice,
                         const CompileOptions &options) {
  TargetDevice device = describeDevice(runtimeDevice);
  std::unique_ptr<Target> target = targetForDevice(device);
  if (!target)
    return module.emitError("no compilation target for ")
           << targetBackendName(device.backend) << " devices";
  if (options.matrixUnits) {
    std::string whyNot;
    target = target->withMatrixUnits(whyNot);
    if (!target)
      return module.emitError("matrix units: ") << whyNot;
  } else if (options.matrixUnitsWhereFast &&
             target->backend() == TargetBackend::Cuda) {
    // (The CPU target's matrix units are a slow stand-in for tests.)
    std::string whyNot;
    if (std::unique_ptr<Target> withUnits = target->withMatrixUnits(whyNot))
      target = std::move(withUnits);
  }
  FailureOr<tune::Plan> plan = tune::Plan();
  bool fromCache = false;
  if (!options.planPath.empty()) {
    auto file =
        llvm::MemoryBuffer::getFile(options.planPath, /*IsText=*/true);
    if (!file)
      return module.emitError("--plan ")
             << options.planPath << ": " << file.getError().message();
    std::string error;
    plan = tune::parsePlan((*file)->getBuffer(), module.getContext(), error);
    if (failed(plan))
      return module.emitError("--plan ") << options.planPath << ": " << error;
  } else {
    std::string dir =
        options.useTuneCache ? tune::cacheDirOr(options.tuneCacheDir) : "";
    std::string error;
    auto entries = dir.empty() ? FailureOr<std::vector<tune::CacheEntry>>(
                                     std::vector<tune::CacheEntry>())
                               : tune::loadCache(dir, module.getContext(),
                                                 error);
    if (failed(entries))
      return module.emitError("tuning cache: ") << error;
    plan = tune::planFromCache(*entries, device);
    fromCache = true;
  }
  if (plan->entries.empty())
    return compileForTarget(module, graphNames, *target, options);

  // With a plan: fuse first, so that the plan's signatures name the fused
  // kernels, set the knobs, then lower without fusing again.
  OwningOpRef<ModuleOp> planned = module.clone();
  if (options.fuse) {
    PassManager pm(module.getContext());
    circuit::buildHesperFusePipeline(pm);
    if (failed(pm.run(*planned)))
      return failure();
  }
  if (failed(tune::applyPlan(*planned, *plan, device,
                             /*skipIllegal=*/fromCache)))
    return failure();
  CompileOptions unfused = options;
  unfused.fuse = false;
  return compileForTarget(*planned, graphNames, *target, unfused);
}

FailureOr<std::vector<rt::Program>>
hesper::compileForTarget(ModuleOp module, ArrayRef<std::string> graphNames,
                         const Target &target, const CompileOptions &options) {
  OwningOpRef<ModuleOp> lowered = module.clone();
  PassManager pm(module.getContext());
  if (!options.dumpDir.empty() &&
      failed(createDumpDir(module, options.dumpDir)))
    return failure();
  pm.addInstrumentation(std::make_unique<StageRecorder>(options));
  TargetPipelineOptions pipeline;
  pipeline.fuse = options.fuse;
  pipeline.dumpDir = options.dumpDir;
  target.buildPipeline(pm, pipeline);
  if (failed(pm.run(*lowered)))
    return failure();
  FailureOr<TargetBinary> binary = target.extractBinary(*lowered);
  if (failed(binary))
    return failure();
  std::vector<rt::Program> programs;
  for (const std::string &name : graphNames) {
    auto program = extractProgram(*lowered, name, runtimeBackend(target.backend()),
                                  *binary);
    if (failed(program))
      return failure();
    programs.push_back(std::move(*program));
  }
  if (!options.dumpDir.empty() && !binary->bytes.empty())
    writeDumpFile(options.dumpDir, target.binaryFileName(*binary),
                  [&](llvm::raw_ostream &os) {
                    os.write(reinterpret_cast<const char *>(
                                 binary->bytes.data()),
                             binary->bytes.size());
                  });
  return programs;
}

std::string hesper::prepareDumpDir(StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return ("cannot create --dump-dir " + dir + ": " + ec.message()).str();
  // create_directories accepts an existing file (/dev/null, say); the dumps
  // would then go nowhere without a word.
  if (!llvm::sys::fs::is_directory(dir))
    return ("--dump-dir " + dir + " exists and is not a directory").str();
  return "";
}

LogicalResult hesper::createDumpDir(ModuleOp module, StringRef dir) {
  if (std::string problem = prepareDumpDir(dir); !problem.empty())
    return module.emitError(problem);
  return success();
}

void hesper::writeDumpFile(StringRef dir, StringRef name,
                           llvm::function_ref<void(llvm::raw_ostream &)> write) {
  SmallString<128> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (!ec)
    write(file);
}

FailureOr<rt::Program> hesper::extractProgram(ModuleOp lowered,
                                              StringRef name,
                                              rt::Backend backend,
                                              const TargetBinary &binary) {
  auto schedule = lowered.lookupSymbol<sm::ScheduleOp>(name);
  if (!schedule)
    return lowered.emitError("no shaderm.schedule @") << name;
  auto abis = lowered->getAttrOfType<DictionaryAttr>("hesper.kernels");

  rt::Program program;
  program.name = name.str();
  program.backend = backend;

  llvm::StringMap<uint32_t> kernelIndex;
  DenseMap<Value, uint32_t> bufferIndex;
  auto addBuffer = [&](Value v, std::string bufferName) {
    auto type = cast<sm::BufferType>(v.getType());
    rt::ProgramBuffer b;
    b.name = std::move(bufferName);
    b.bytes = type.getLength() * sm::getElementByteSize(type.getElementType());
    bufferIndex[v] = program.buffers.size();
    program.buffers.push_back(b);
  };
  Block &entry = schedule.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    addBuffer(arg, circuit::argumentName(schedule, arg.getArgNumber()));
  }
  program.numArguments = entry.getNumArguments();

  for (Operation &op : entry) {
    if (auto alloc = dyn_cast<sm::AllocOp>(op)) {
      addBuffer(alloc, "");
      continue;
    }
    if (auto output = dyn_cast<sm::OutputOp>(op)) {
      for (Value v : output.getResults())
        program.results.push_back(bufferIndex.lookup(v));
      continue;
    }
    auto launch = cast<sm::LaunchOp>(op);
    StringRef kernel = launch.getKernel();
    auto [it, inserted] = kernelIndex.try_emplace(kernel, 0);
    if (inserted) {
      auto abi = abis ? abis.getAs<DictionaryAttr>(kernel) : DictionaryAttr();
      if (!abi)
        return launch.emitOpError("launches '")
               << kernel << "', which has no kernel ABI (is the module "
               << "lowered?)";
      if (binary.bytes.empty())
        return launch.emitOpError("has no kernel binary to launch");
      rt::KernelDesc desc;
      desc.name = kernel.str();
      desc.binary = binary.bytes;
      desc.format = binary.format;
      auto bindings = abi.getAs<ArrayAttr>("bindings");
      desc.numBindings = bindings.size();
      // Each buffer binding's size, from its type (the code indexes that
      // many elements); 0 for other bindings.
      for (Attribute binding : bindings) {
        auto type = cast<DictionaryAttr>(binding).getAs<TypeAttr>("type");
        auto buffer = type ? dyn_cast<sm::BufferType>(type.getValue())
                           : sm::BufferType();
        if (buffer && !buffer.getElementType().isIntOrFloat())
          buffer = {};
        unsigned bits = buffer ? buffer.getElementType().getIntOrFloatBitWidth()
                               : 0;
        desc.bindingBytes.push_back(
            buffer ? uint64_t(buffer.getLength()) * bits / 8 : 0);
        auto access = cast<DictionaryAttr>(binding).getAs<StringAttr>("access");
        desc.bindingReadOnly.push_back(access &&
                                       access.getValue() == "read_only");
      }
      auto wg = abi.getAs<DenseI32ArrayAttr>("workgroup_size").asArrayRef();
      for (int d = 0; d < 3; ++d)
        desc.workgroupSize[d] = wg[d];
      if (auto threads = abi.getAs<IntegerAttr>("host_threads"))
        desc.hostThreads = static_cast<uint32_t>(threads.getInt());
      // The CPU driver hands a kernel of several lanes (its fibers) a
      // block of workgroup memory of this size; GPU kernels declare
      // theirs statically.
      if (backend == rt::Backend::Cpu &&
          (wg[0] != 1 || wg[1] != 1 || wg[2] != 1))
        if (auto bytes = abi.getAs<IntegerAttr>("shared_bytes"))
          desc.sharedMemoryBytes = static_cast<uint32_t>(bytes.getInt());
      it->second = program.kernels.size();
      program.kernels.push_back(std::move(desc));
    }
    rt::ProgramLaunch l;
    l.kernel = it->second;
    for (Value b : launch.getBindings())
      l.buffers.push_back(bufferIndex.lookup(b));
    if (std::optional<ArrayRef<int64_t>> t = launch.getTraffic()) {
      l.traffic.readBytes = (*t)[0];
      l.traffic.writtenBytes = (*t)[1];
      l.traffic.positionBytes = (*t)[2];
      l.traffic.window = (*t)[3];
      l.traffic.positions = (*t)[4];
    }
    ArrayRef<int64_t> grid = launch.getGrid();
    rt::KernelDesc &desc = program.kernels[it->second];
    for (int d = 0; d < 3; ++d) {
      l.grid[d] = static_cast<uint32_t>(grid[d]);
      // The largest grid the program launches the kernel with is the one
      // its code is valid for (the ABI the runtime checks launches by).
      desc.maxGrid[d] = std::max(desc.maxGrid[d], l.grid[d]);
    }
    program.launches.push_back(std::move(l));
  }
  if (rt::Status s = program.verify(); !s)
    return schedule.emitOpError(s.message());
  return program;
}
