//===- GraphRun.cpp - Run a Circuit graph on a device ---------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Compiles a Circuit graph with the pipeline of the device's backend, binds
// host tensors to the program's arguments, runs the recorded step, and
// reports results, kernel times, a comparison with the reference
// interpreter and (optionally) a Chrome trace of compile stages and kernels.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Execution/GraphRun.h"

#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Execution/Execution.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <unistd.h>

using namespace mlir;
using namespace hesper;
using namespace hesper::exec;
using interp::HostTensor;

static double nowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch())
      .count();
}

int64_t hesper::exec::indexBound(circuit::GraphOp graph, unsigned i) {
  auto bound = graph.getArgAttrOfType<IntegerAttr>(i, circuit::kArgBoundAttr);
  return bound ? bound.getInt() : 0;
}

std::string hesper::exec::checkIndexBounds(circuit::GraphOp graph,
                                           ArrayRef<HostTensor> args) {
  for (unsigned i = 0; i < graph.getNumArguments() && i < args.size(); ++i) {
    int64_t bound = indexBound(graph, i);
    if (!bound)
      continue;
    for (int64_t k = 0, e = args[i].getNumElements(); k < e; ++k) {
      int64_t v = args[i].getInt(k);
      if (v < 0 || v >= bound) {
        return "argument '" + circuit::argumentName(graph, i) + "' element " +
               std::to_string(k) + " is " + std::to_string(v) +
               ", outside 0.." + std::to_string(bound - 1) +
               " (its circuit.bound is " + std::to_string(bound) + ")";
      }
    }
  }
  return "";
}

uint64_t hesper::exec::hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0)
    return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(size);
}

/// Bytes of a tensor of `type`, or nullopt when they do not fit in 64 bits.
static std::optional<uint64_t> tensorBytes(RankedTensorType type) {
  uint64_t elements = 1;
  for (int64_t d : type.getShape()) {
    if (d < 0 || (d != 0 && elements > std::numeric_limits<uint64_t>::max() /
                                           static_cast<uint64_t>(d)))
      return std::nullopt;
    elements *= static_cast<uint64_t>(d);
  }
  Type element = type.getElementType();
  if (int64_t block = circuit::getQuantBlockSize(element)) {
    uint64_t blocks = (elements + block - 1) / block;
    uint64_t bytes = circuit::getQuantBlockBytes(element);
    if (blocks > std::numeric_limits<uint64_t>::max() / bytes)
      return std::nullopt;
    return blocks * bytes;
  }
  uint64_t width = (element.getIntOrFloatBitWidth() + 7) / 8;
  if (elements > std::numeric_limits<uint64_t>::max() / width)
    return std::nullopt;
  return elements * width;
}

LogicalResult hesper::exec::checkTensorSizes(circuit::GraphOp graph,
                                             uint64_t limit,
                                             llvm::StringRef where) {
  auto check = [&](Value v, Location loc) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return success();
    std::optional<uint64_t> bytes = tensorBytes(type);
    if (!bytes)
      return emitError(loc) << type << " has more bytes than 64 bits count";
    if (*bytes > limit)
      return emitError(loc)
             << type << " needs " << *bytes << " bytes, more than the " << limit
             << " bytes of " << where;
    return success();
  };
  for (BlockArgument arg : graph.getBody().front().getArguments())
    if (failed(check(arg, graph.getLoc())))
      return failure();
  WalkResult walk = graph.walk([&](Operation *op) {
    if (op->getParentOp() != graph)
      return WalkResult::advance();
    for (Value v : op->getResults())
      if (failed(check(v, op->getLoc())))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// .npy <-> tensors
//===----------------------------------------------------------------------===//

/// The .npy dtype that holds a tensor's elements.
static std::optional<rt::DType> dtypeFor(Type element) {
  if (element.isF32())
    return rt::DType::F32;
  if (element.isF16())
    return rt::DType::F16;
  if (element.isInteger(32))
    return rt::DType::I32;
  if (circuit::isQuantized(element))
    return rt::DType::U8;
  return std::nullopt;
}

std::string hesper::exec::shapeString(ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string hesper::exec::tensorFromNpy(const rt::NpyArray &array,
                                        RankedTensorType type,
                                        HostTensor &out) {
  std::optional<rt::DType> want = dtypeFor(type.getElementType());
  if (!want)
    return "element type is not supported in .npy files";
  if (array.dtype != *want)
    return std::string("dtype ") + rt::dtypeName(array.dtype) +
           " does not match the argument's " + rt::dtypeName(*want);
  out = HostTensor(type);
  if (*want == rt::DType::U8) {
    // Quantized tensors travel as their raw GGUF blocks.
    if (array.data.size() != out.bytes().size())
      return "expects " + std::to_string(out.bytes().size()) +
             " bytes of quantized blocks, got " +
             std::to_string(array.data.size());
  } else if (ArrayRef<int64_t>(array.shape) != type.getShape()) {
    return "shape " + shapeString(array.shape) +
           " does not match the argument's " + shapeString(type.getShape());
  }
  std::memcpy(out.bytes().data(), array.data.data(), out.bytes().size());
  return "";
}

rt::NpyArray hesper::exec::npyFromTensor(const HostTensor &tensor) {
  rt::NpyArray array;
  array.dtype = dtypeFor(tensor.getElementType()).value_or(rt::DType::U8);
  if (array.dtype == rt::DType::U8)
    array.shape = {static_cast<int64_t>(tensor.bytes().size())};
  else
    array.shape.assign(tensor.getType().getShape().begin(),
                       tensor.getType().getShape().end());
  array.data = tensor.bytes();
  return array;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

namespace {
/// The size of a tensor of `type` on the host.
size_t hostBytes(RankedTensorType type) {
  return static_cast<size_t>(circuit::getStorageBytes(type));
}

/// The interpreter's tensor of the same bytes (for --check only).
HostTensor toInterpreter(const HostData &data) {
  HostTensor t(data.type);
  std::memcpy(t.bytes().data(), data.bytes.data(),
              std::min(t.bytes().size(), data.bytes.size()));
  return t;
}
} // namespace

rt::Status hesper::exec::uploadArguments(rt::ProgramRunner &runner,
                                         const std::vector<HostData> &args) {
  for (auto [i, arg] : llvm::enumerate(args))
    if (rt::Status s =
            runner.setArgumentPadded(i, arg.bytes.data(), arg.bytes.size());
        !s)
      return s;
  return rt::Status();
}

LogicalResult hesper::exec::runGraphOnDevice(
    ModuleOp module, circuit::GraphOp graph, rt::Device &device,
    std::vector<HostData> &args, std::vector<HostData> &results,
    const DeviceModeOptions &opts, llvm::raw_ostream &os) {
  const rt::DeviceInfo &info = device.info();
  ChromeTrace trace;
  std::vector<CompileEvent> events;
  CompileOptions compileOptions;
  compileOptions.fuse = opts.fuse;
  compileOptions.dumpDir = opts.dumpDir;
  compileOptions.planPath = opts.planPath;
  compileOptions.matrixUnits = opts.matrixUnits.value_or(false);
  compileOptions.events = &events;
  double compileStart = nowUs();
  FailureOr<rt::Program> program =
      compileForDevice(module, graph.getSymName(), info, compileOptions);
  double compileUs = nowUs() - compileStart;
  if (failed(program))
    return failure();
  for (const CompileEvent &e : events)
    trace.add(e.name, "compile", e.startUs, e.durationUs, 1);
  if (!opts.saveBundlePath.empty()) {
    if (rt::Status s = rt::saveBundle(*program, opts.saveBundlePath); !s) {
      llvm::errs() << "error: " << s.message() << "\n";
      return failure();
    }
  }

  auto fail = [&](const rt::Status &s) {
    llvm::errs() << "error: " << s.message() << "\n";
    return failure();
  };
  bool timing = info.timestampPeriodNs > 0;
  auto runner = rt::ProgramRunner::create(device, *program, timing);
  if (!runner)
    return fail(runner.status());
  rt::ProgramRunner &r = **runner;
  // The interpreter's view of the arguments, before the device writes them.
  std::vector<HostData> inputs = args;
  if (rt::Status s = uploadArguments(r, args); !s)
    return fail(s);

  std::vector<double> stepUs;
  std::vector<double> kernelNs(program->launches.size(), 0.0);
  for (unsigned rep = 0; rep < std::max(1u, opts.repeat); ++rep) {
    double start = nowUs();
    if (rt::Status s = r.run(); !s)
      return fail(s);
    double end = nowUs();
    stepUs.push_back(end - start);
    trace.add("step", "run", start, end - start, 2);
    std::vector<double> times = r.lastKernelTimesNs();
    double t = start;
    // The first run includes the driver's first-use work (lavapipe compiles
    // shaders lazily): it counts only when it is the only run.
    bool counted = rep > 0 || opts.repeat <= 1;
    for (size_t k = 0; k < times.size() && k < kernelNs.size(); ++k) {
      if (counted)
        kernelNs[k] += times[k];
      // Kernel durations are GPU-measured; they are laid out one after the
      // other from the submission time.
      const rt::KernelDesc &desc =
          program->kernels[program->launches[k].kernel];
      trace.add(desc.name, "kernel", t, times[k] / 1000.0, 3);
      t += times[k] / 1000.0;
    }
  }

  results.clear();
  for (auto [i, type] : llvm::enumerate(graph.getResultTypes())) {
    std::vector<uint8_t> bytes;
    if (rt::Status s = r.readResult(i, bytes); !s)
      return fail(s);
    auto tensorType = cast<RankedTensorType>(type);
    bytes.resize(hostBytes(tensorType)); // drop the word padding
    results.push_back({tensorType, std::move(bytes)});
  }
  for (HostData &arg : args) {
    std::vector<uint8_t> bytes;
    if (rt::Status s = r.readArgument(&arg - args.data(), bytes); !s)
      return fail(s);
    bytes.resize(arg.bytes.size());
    arg.bytes = std::move(bytes);
  }

  // Same inputs, N more runs: every result must be bit-identical.
  for (unsigned run = 0; run < opts.determinismRuns; ++run) {
    if (rt::Status s = uploadArguments(r, inputs); !s)
      return fail(s);
    if (rt::Status s = r.run(); !s)
      return fail(s);
    for (size_t i = 0; i < results.size(); ++i) {
      std::vector<uint8_t> bytes;
      if (rt::Status s = r.readResult(i, bytes); !s)
        return fail(s);
      if (std::memcmp(bytes.data(), results[i].bytes.data(),
                      results[i].bytes.size()) != 0) {
        llvm::errs() << "error: result #" << i << " of run " << run + 2
                     << " differs from the first run\n";
        return failure();
      }
    }
  }

  if (!opts.quiet) {
    os << "device: " << info.name << " (" << rt::backendName(info.backend)
       << ", subgroup " << info.subgroupSize << ")\n";
    double best = *std::min_element(stepUs.begin(), stepUs.end());
    os << "graph @" << graph.getSymName() << ": "
       << circuit::countDispatches(graph) << " dispatch ops -> "
       << program->launches.size() << " kernel launches\n";
    os << "compiled " << program->kernels.size() << " kernels ("
       << program->launches.size() << " launches) in "
       << llvm::format("%.1f", compileUs / 1000.0) << " ms; step: best "
       << llvm::format("%.1f", best) << " us of " << stepUs.size() << " runs\n";
    if (timing) {
      size_t counted = stepUs.size() > 1 ? stepUs.size() - 1 : 1;
      double total = 0;
      for (size_t k = 0; k < kernelNs.size(); ++k) {
        double us = kernelNs[k] / counted / 1000.0;
        total += us;
        os << "  kernel " << program->kernels[program->launches[k].kernel].name
           << ": " << llvm::format("%.1f", us) << " us\n";
      }
      os << "  kernels total: " << llvm::format("%.1f", total) << " us per "
         << "step (device timer"
         << (counted < stepUs.size() ? ", first "
                                       "run excluded"
                                     : "")
         << ")\n";
    }
    if (opts.determinismRuns)
      os << "deterministic: " << opts.determinismRuns + 1
         << " runs bit-identical\n";
  }

  if (opts.check) {
    interp::Options interpOptions;
    interpOptions.subgroupSize = info.subgroupSize;
    std::vector<HostTensor> interpArgs;
    for (const HostData &input : inputs)
      interpArgs.push_back(toInterpreter(input));
    auto expected = interp::runGraph(graph, interpArgs, interpOptions);
    if (failed(expected))
      return failure();
    // Each value within the tolerance of the ops it is computed from
    // (interp::computeCheckTolerances); the first element outside it is
    // named with both values and the tolerance.
    auto tolerances = interp::computeCheckTolerances(graph);
    Block &graphBody = graph.getBody().front();
    double maxError = 0;
    bool ok = true;
    auto compare = [&](const HostTensor &got, const HostTensor &want,
                       Value value, std::string what) {
      interp::Tolerance tol = tolerances.lookup(value);
      interp::Comparison c = interp::compareWithinTolerance(got, want, tol);
      maxError = std::max(maxError, c.maxError);
      if (c.mismatch < 0 || !ok)
        return;
      ok = false;
      os << "mismatch: " << what << "[" << c.mismatch << "] = " << c.got
         << ", interpreter " << c.want << " (tolerance abs "
         << llvm::format("%.0e", tol.abs) << ", rel "
         << llvm::format("%.0e", tol.rel) << ")\n";
    };
    Operation *terminator = graphBody.getTerminator();
    for (size_t i = 0; i < results.size(); ++i)
      compare(toInterpreter(results[i]), (*expected)[i],
              terminator->getOperand(i), "result #" + std::to_string(i));
    for (size_t i = 0; i < args.size(); ++i)
      compare(toInterpreter(args[i]), interpArgs[i], graphBody.getArgument(i),
              "argument #" + std::to_string(i));
    os << "check against the interpreter: max error "
       << llvm::format("%.3g", maxError) << ": " << (ok ? "ok" : "MISMATCH")
       << "\n";
    if (!ok)
      return failure();
  }

  if (!opts.profilePath.empty() && !trace.write(opts.profilePath)) {
    llvm::errs() << "error: cannot write " << opts.profilePath << "\n";
    return failure();
  }
  return success();
}
