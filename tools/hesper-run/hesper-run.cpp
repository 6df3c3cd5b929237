//===- hesper-run.cpp - Build and run Hesper programs --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-run is the user-facing runner.
//
//   hesper-run graph.mlir --input x=iota --input w=const:0.5 --print-results
//     evaluates a circuit.graph in the reference interpreter;
//   hesper-run graph.mlir --validate-fusion
//     runs the hesper-fuse pipeline on a copy and checks, on seeded random
//     inputs, that the fused graph computes what the source computes;
//   hesper-run --example=rmsnorm
//     builds an example graph with the C++ builder API, verifies and
//     simplifies it, and checks its interpreted result against the formula.
//
//   hesper-run graph.mlir --input x=x.npy --output 0=y.npy --backend=vulkan
//     compiles the graph for a device (hesper-to-spirv or hesper-to-ptx),
//     runs it through the runtime and writes the results; --check compares
//     them with the reference interpreter.
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"
#include "DeviceFlags.h"
#include "Hesper/Execution/GraphRun.h"
#include "ToolFlags.h"
#include "ExampleMode.h"
#include "ModelMode.h"
#include "ProgramMode.h"

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Execution/Execution.h"
#include "Hesper/Execution/GpuProgram.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Interpreter/Validate.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/Models/ExampleGraphs.h"
#include "Hesper/Models/LlamaGraph.h"
#include "Hesper/Support/InputChecks.h"
#include "Hesper/Target/Plan.h"
#include "Hesper/Tuning/Tuner.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;

using Example = hesper::models::ExampleGraph;

// The tool's own flags, by what they are for; --help shows these and hides
// LLVM's (--help-hidden shows everything).
static llvm::cl::OptionCategory graphCategory("Running Circuit graphs");
static llvm::cl::OptionCategory exampleCategory("Example graphs (--example)");

static llvm::cl::opt<Example> example(
    "example", llvm::cl::desc("Graph to build"),
    llvm::cl::values(
        clEnumValN(Example::RmsNorm, "rmsnorm",
                   "y = x * rsqrt(mean(x^2) + eps) * w"),
        clEnumValN(Example::Softmax, "softmax", "numerically stable softmax"),
        clEnumValN(Example::LayerNorm, "layernorm", "two-pass layer norm"),
        clEnumValN(Example::Rope, "rope", "NeoX rotary embedding of K"),
        clEnumValN(Example::LlamaLayer, "llama-layer",
                   "one decode step of a Llama-style layer (--dim, "
                   "4 heads, 2 KV heads)")),
    llvm::cl::init(Example::RmsNorm), llvm::cl::cat(exampleCategory));
static llvm::cl::opt<int64_t> dim("dim", llvm::cl::desc("Row length"),
                                  llvm::cl::init(256), llvm::cl::cat(exampleCategory));
static llvm::cl::opt<int64_t> rows("rows", llvm::cl::desc("Number of rows"),
                                   llvm::cl::init(1), llvm::cl::cat(exampleCategory));
static llvm::cl::opt<bool> quiet("quiet",
                                 llvm::cl::desc("Print only the summary"),
                                 llvm::cl::init(false), llvm::cl::cat(exampleCategory));

// Graph mode.
static llvm::cl::opt<std::string>
    inputFilename(llvm::cl::Positional,
                  llvm::cl::desc("[graph.mlir] (omit to build --example)"),
                  llvm::cl::init(""), llvm::cl::cat(graphCategory));
static llvm::cl::opt<std::string> planPath(
    "plan",
    llvm::cl::desc("Compile with the kernel knobs of this tuning plan "
                   "(JSON; checked against the device first)"),
    llvm::cl::cat(graphCategory));
static llvm::cl::opt<std::string> loweringMutant(
    "lowering-mutant",
    llvm::cl::desc("Test only: compile with a deliberately wrong lowering "
                   "(convert-circuit-to-shaderm's mutants)"),
    llvm::cl::Hidden);
static llvm::cl::opt<std::string> emitPlanPath(
    "emit-plan",
    llvm::cl::desc("Write a plan template for the device (every fused "
                   "kernel's signature, with its knobs) and stop"),
    llvm::cl::cat(graphCategory));
static llvm::cl::opt<std::string> graphName(
    "graph",
    llvm::cl::desc("The circuit.graph to run or compile (default: the first "
                   "of the file)"),
    llvm::cl::cat(graphCategory));
static llvm::cl::list<std::string> inputSpecs(
    "input",
    llvm::cl::desc("NAME=SPEC binds a graph argument: iota, const:V, "
                   "linear:A,B (A*i+B), values:V0,V1,..., random[:SEED] "
                   "(token ids and targets within their circuit.bound)"), llvm::cl::cat(graphCategory));
static llvm::cl::opt<bool>
    printResults("print-results",
                 llvm::cl::desc("Print the results (and arguments written in "
                                "place) of the graph"),
                 llvm::cl::init(false), llvm::cl::cat(graphCategory));
static llvm::cl::opt<bool> validateFusion(
    "validate-fusion",
    llvm::cl::desc("Fuse a copy with hesper-fuse and check it against the "
                   "source on seeded random inputs"),
    llvm::cl::init(false), llvm::cl::cat(graphCategory));
static llvm::cl::opt<unsigned>
    subgroupSize("subgroup-size",
                 llvm::cl::desc("Subgroup width for the interpreter"),
                 llvm::cl::init(32), llvm::cl::cat(graphCategory));
static llvm::cl::opt<bool> checkBounds(
    "check-bounds",
    llvm::cl::desc("With --backend=interp: stop at the first gather or "
                   "scatter address out of its tensor's range, naming the "
                   "op, the lane and the address (backends drop such "
                   "accesses)"),
    llvm::cl::init(false), llvm::cl::cat(graphCategory));
static llvm::cl::opt<unsigned>
    trials("trials", llvm::cl::desc("Input sets for --validate-fusion"),
           llvm::cl::init(3), llvm::cl::cat(graphCategory));

static llvm::cl::opt<bool> listDevicesFlag(
    "list-devices", llvm::cl::desc("List the devices of every backend"),
    llvm::cl::init(false), llvm::cl::cat(hesper::run::deviceCategory()));
static llvm::cl::list<std::string> outputSpecs(
    "output", llvm::cl::desc("NAME=file.npy writes a result (NAME: its "
                             "index, or circuit.name) or an argument "
                             "written in place (its name)"), llvm::cl::cat(graphCategory));
static llvm::cl::opt<unsigned>
    repeat("repeat", llvm::cl::desc("Run the recorded step N times"),
           llvm::cl::init(1), llvm::cl::cat(graphCategory));
static llvm::cl::opt<unsigned> determinismRuns(
    "determinism-runs",
    llvm::cl::desc("Rerun N more times from the same inputs and require "
                   "bit-identical results"),
    llvm::cl::init(0), llvm::cl::cat(graphCategory));
static llvm::cl::opt<bool>
    checkFlag("check",
              llvm::cl::desc("Compare the device's results with the "
                             "reference interpreter"),
              llvm::cl::init(false), llvm::cl::cat(graphCategory));
static llvm::cl::opt<bool> noFuse("no-fuse",
                                  llvm::cl::desc("Skip hesper-fuse"),
                                  llvm::cl::init(false), llvm::cl::cat(graphCategory));
static llvm::cl::opt<std::string> profilePath(
    "profile",
    llvm::cl::desc("Write a Chrome/Perfetto trace of compile stages and "
                   "kernel times (a model: of its compile stages, or of "
                   "its load from the program cache)"),
    llvm::cl::init(""), llvm::cl::cat(graphCategory));
static llvm::cl::opt<std::string> dumpDir(
    "dump-dir",
    llvm::cl::desc("Write the IR after every pass and the kernel binaries "
                   "here (also HESPER_DUMP_DIR)"),
    llvm::cl::init(""), llvm::cl::cat(graphCategory));
static llvm::cl::opt<std::string> saveBundle(
    "save-bundle",
    llvm::cl::desc("Save the compiled program (kernels, ABI, schedule) as a "
                   "bundle file"),
    llvm::cl::init(""), llvm::cl::cat(hesper::run::deviceCategory()));

static llvm::cl::opt<std::string> compileTarget(
    "target",
    llvm::cl::desc("Compile only, for a device that need not be here: "
                   "cuda:sm_XX (nvvm:sm_XX), vulkan:SUBGROUP_SIZE "
                   "(spirv:N) or cpu[:ISA] with ISA native, x86-64 or "
                   "x86-64-v2..v4 "
                   "(with --save-bundle)"),
    llvm::cl::init(""), llvm::cl::cat(hesper::run::deviceCategory()));

static llvm::cl::opt<bool> splitInputFile(
    "split-input-file",
    llvm::cl::desc("Handle each '// -----' chunk of the input separately"),
    llvm::cl::init(false), llvm::cl::cat(graphCategory));

//===----------------------------------------------------------------------===//
// Graph mode
//===----------------------------------------------------------------------===//

/// Fills `tensor` from a SPEC; returns an error message or "".
static std::string fillFromSpec(hesper::interp::HostTensor &tensor,
                                StringRef spec) {
  int64_t n = tensor.getNumElements();
  bool isInt = tensor.getElementType().isInteger(32);
  if (isQuantized(tensor.getElementType()))
    return "quantized arguments take only random[:SEED]";
  auto set = [&](int64_t i, double v) {
    if (isInt)
      tensor.setInt(i, static_cast<int32_t>(v));
    else
      tensor.setFloat(i, static_cast<float>(v));
  };
  auto [kind, rest] = spec.split(':');
  // A number exactly as written (no spaces), and finite.
  auto number = [](StringRef text, double &d) -> std::string {
    if (text.getAsDouble(d))
      return "'" + text.str() + "' is not a number";
    if (!std::isfinite(d))
      return "'" + text.str() + "' is out of range";
    return "";
  };
  if (kind == "iota") {
    if (spec != "iota")
      return "iota takes no value, got '" + spec.str() + "'";
    for (int64_t i = 0; i < n; ++i)
      set(i, static_cast<double>(i));
    return "";
  }
  if (kind == "const" || kind == "linear") {
    SmallVector<StringRef> parts;
    rest.split(parts, ',');
    SmallVector<double> v;
    for (StringRef p : parts) {
      double d;
      if (std::string problem = number(p, d); !problem.empty())
        return problem;
      v.push_back(d);
    }
    if (kind == "const" && v.size() == 1) {
      for (int64_t i = 0; i < n; ++i)
        set(i, v[0]);
      return "";
    }
    if (kind == "linear" && v.size() == 2) {
      for (int64_t i = 0; i < n; ++i)
        set(i, v[0] * static_cast<double>(i) + v[1]);
      return "";
    }
    return kind == "const" ? "const takes one value" : "linear takes A,B";
  }
  if (kind == "values") {
    SmallVector<StringRef> parts;
    rest.split(parts, ',');
    if (static_cast<int64_t>(parts.size()) != n)
      return "values: expected " + std::to_string(n) + " values, got " +
             std::to_string(parts.size());
    for (auto [i, p] : llvm::enumerate(parts)) {
      double d;
      if (std::string problem = number(p, d); !problem.empty())
        return problem;
      set(i, d);
    }
    return "";
  }
  return "unknown kind '" + kind.str() +
         "' (expected iota, const:V, linear:A,B, values:..., random[:SEED])";
}

static void printTensor(llvm::raw_ostream &os, StringRef label,
                        const hesper::interp::HostTensor &t) {
  os << label << " (" << t.getType() << "):";
  std::vector<float> values = t.toFloats();
  for (float v : values)
    os << " " << llvm::format("%g", v);
  os << "\n";
}

/// The name a graph result is written by: its circuit.name, else its index.
static std::string resultName(GraphOp graph, unsigned i) {
  if (auto name = graph.getResultAttrOfType<StringAttr>(i, "circuit.name"))
    return name.getValue().str();
  return std::to_string(i);
}

/// The device graphs run on (null: the interpreter).
static std::unique_ptr<hesper::rt::Device> device;
/// --output bindings, NAME -> path.
static SmallVector<std::pair<std::string, std::string>> outputs;

/// The first of `flags` (its name, whether it was given) that was given, or
/// null: what a mode refuses to ignore.
static const char *
firstGiven(std::initializer_list<std::pair<const char *, bool>> flags) {
  for (auto [flag, given] : flags)
    if (given)
      return flag;
  return nullptr;
}

static hesper::exec::DeviceModeOptions deviceOptions() {
  hesper::exec::DeviceModeOptions opts = hesper::run::deviceFlags();
  opts.repeat = repeat;
  opts.determinismRuns = determinismRuns;
  opts.check = checkFlag;
  opts.fuse = !noFuse;
  opts.planPath = planPath;
  opts.printResults = printResults;
  opts.profilePath = profilePath;
  opts.dumpDir = dumpDir;
  if (opts.dumpDir.empty())
    if (const char *env = std::getenv("HESPER_DUMP_DIR"))
      opts.dumpDir = env;
  opts.saveBundlePath = saveBundle;
  return opts;
}

/// The graph --graph names, or the first one; null (after an error naming
/// `what`) when there is none.
static GraphOp selectGraph(ModuleOp module, StringRef what) {
  for (GraphOp graph : module.getOps<GraphOp>())
    if (graphName.empty() || graph.getSymName() == graphName)
      return graph;
  if (graphName.empty())
    module.emitError("expects a circuit.graph to ") << what;
  else
    module.emitError("--graph: no circuit.graph named @") << graphName;
  return nullptr;
}

/// --target: compiles the selected graph for a described device and saves
/// the bundle, without a device or inputs.
static LogicalResult compileOnlyMode(ModuleOp module, llvm::raw_ostream &os) {
  GraphOp graph = selectGraph(module, "compile");
  if (!graph)
    return failure();
  std::string error;
  std::unique_ptr<hesper::Target> target =
      hesper::parseTarget(compileTarget, error);
  if (!target)
    return module.emitError("--target '") << compileTarget << "': " << error;
  hesper::exec::DeviceModeOptions opts = deviceOptions();
  hesper::CompileOptions compileOptions;
  compileOptions.fuse = opts.fuse;
  compileOptions.dumpDir = opts.dumpDir;
  std::vector<std::string> names{graph.getSymName().str()};
  auto programs = hesper::compileForTarget(
      module, ArrayRef<std::string>(names), *target, compileOptions);
  if (failed(programs))
    return failure();
  hesper::rt::Program *program = &programs->front();
  // The target as resolved (cuda alone is cuda:sm_90, say), by its
  // backend's name.
  std::string resolved = target->str();
  size_t colon = resolved.find(':');
  os << "compiled @" << graph.getSymName() << " for "
     << hesper::targetBackendName(target->backend())
     << (colon == std::string::npos ? "" : resolved.substr(colon)) << ": "
     << program->kernels.size() << " kernels, " << program->launches.size()
     << " launches\n";
  if (!opts.saveBundlePath.empty())
    if (hesper::rt::Status s =
            hesper::rt::saveBundle(*program, opts.saveBundlePath);
        !s)
      return module.emitError(s.message());
  return success();
}

/// --emit-plan: the plan template of the selected graph, fused, for the
/// device.
static LogicalResult emitPlanMode(ModuleOp module, llvm::raw_ostream &os) {
  GraphOp graph = selectGraph(module, "plan");
  if (!graph)
    return failure();
  if (!device)
    return module.emitError("--emit-plan needs a device (--backend)");
  OwningOpRef<ModuleOp> fused = ModuleOp::create(module.getLoc());
  fused->push_back(graph->clone());
  PassManager pm(module.getContext());
  if (!noFuse)
    hesper::circuit::buildHesperFusePipeline(pm);
  if (failed(pm.run(*fused)))
    return failure();
  std::string error;
  auto out = mlir::openOutputFile(emitPlanPath, &error);
  if (!out)
    return module.emitError("--emit-plan: ") << error;
  hesper::tune::Plan plan = hesper::tune::planOf(
      *fused, hesper::describeDevice(device->info()));
  out->os() << hesper::tune::printPlan(plan);
  out->keep();
  os << "plan of @" << graph.getSymName() << " for " << plan.device << ": "
     << plan.entries.size() << " kernels, written to " << emitPlanPath
     << "\n";
  return success();
}

/// Runs the selected graph of `module` on the --input bindings.
static LogicalResult runGraphMode(ModuleOp module, llvm::raw_ostream &os) {
  using hesper::interp::HostTensor;
  GraphOp graph = selectGraph(module, "run");
  if (!graph)
    return failure();
  // Sizes first: inputs are made in host memory, then copied to the device.
  if (failed(hesper::exec::checkTensorSizes(
          graph, hesper::exec::hostMemoryBytes(), "this machine's memory")))
    return failure();
  llvm::StringMap<StringRef> specs;
  for (StringRef binding : inputSpecs) {
    auto [name, spec] = binding.split('=');
    if (spec.empty())
      return module.emitError("expects --input NAME=SPEC, got '")
             << binding << "'";
    if (!specs.try_emplace(name, spec).second)
      return module.emitError("--input ") << name << " is given twice";
  }
  // With --split-input-file one set of --input flags serves every chunk,
  // and a chunk may use only some of them.
  for (const auto &entry : splitInputFile ? llvm::StringMap<StringRef>()
                                          : specs) {
    bool known = false;
    for (unsigned i = 0; i < graph.getNumArguments(); ++i)
      known |= entry.getKey() == hesper::circuit::argumentName(graph, i);
    if (!known)
      return graph.emitError("--input ")
             << entry.getKey() << ": the graph has no argument of that name";
  }
  std::vector<HostTensor> args;
  for (BlockArgument arg : graph.getBody().front().getArguments()) {
    std::string name = hesper::circuit::argumentName(graph, arg.getArgNumber());
    auto type = cast<RankedTensorType>(arg.getType());
    auto it = specs.find(name);
    if (it == specs.end())
      return graph.emitError("graph argument '")
             << name << "' has no --input";
    StringRef spec = it->second;
    if (spec.ends_with(".npy")) {
      auto array = hesper::rt::readNpy(spec.str());
      if (!array)
        return graph.emitError("--input ")
               << name << ": " << array.status().message();
      HostTensor t;
      std::string problem = hesper::exec::tensorFromNpy(*array, type, t);
      if (!problem.empty())
        return graph.emitError("--input ") << name << "=" << spec << ": "
                                           << problem;
      args.push_back(std::move(t));
      continue;
    }
    if (spec.starts_with("random")) {
      uint64_t seed = 1;
      if (spec.consume_front("random:") && spec.getAsInteger(10, seed))
        return graph.emitError("bad seed in --input ") << name;
      HostTensor t = hesper::interp::randomTensor(type, seed);
      // Indices stay within their declared bound.
      if (int64_t bound = hesper::exec::indexBound(graph, arg.getArgNumber()))
        for (int64_t i = 0, e = t.getNumElements(); i < e; ++i)
          t.setInt(i, t.getInt(i) % bound);
      args.push_back(std::move(t));
      continue;
    }
    HostTensor t(type);
    std::string problem = fillFromSpec(t, spec);
    if (!problem.empty())
      return graph.emitError("bad --input ") << name << ": " << problem;
    args.push_back(std::move(t));
  }
  std::string outOfBounds = hesper::exec::checkIndexBounds(graph, args);
  if (!outOfBounds.empty())
    return graph.emitError("--input: ") << outOfBounds;
  // Where --output names point: results by index or name, arguments by
  // name.
  for (auto [name, path] : outputs) {
    bool known = false;
    for (unsigned i = 0; i < graph.getNumResults(); ++i)
      known |= name == std::to_string(i) || name == resultName(graph, i);
    for (unsigned i = 0; i < graph.getNumArguments(); ++i)
      known |= name == hesper::circuit::argumentName(graph, i);
    if (!known)
      return graph.emitError("--output ")
             << name << ": the graph has no result or argument of that name";
  }

  FailureOr<std::vector<HostTensor>> results;
  if (device) {
    // The device run moves bytes; the tensors here only carry them.
    std::vector<hesper::exec::HostData> deviceArgs, deviceResults;
    for (HostTensor &arg : args)
      deviceArgs.push_back({arg.getType(), std::move(arg.bytes())});
    if (!loweringMutant.empty())
      module->setAttr("hesper.mutant",
                      StringAttr::get(module.getContext(), loweringMutant));
    // A plan is checked numerically on this device before it is used.
    if (!planPath.empty()) {
      auto file = llvm::MemoryBuffer::getFile(planPath, /*IsText=*/true);
      if (!file)
        return module.emitError("--plan ")
               << planPath << ": " << file.getError().message();
      std::string error;
      auto plan = hesper::tune::parsePlan((*file)->getBuffer(),
                                          module.getContext(), error);
      if (failed(plan))
        return module.emitError("--plan ") << planPath << ": " << error;
      if (failed(hesper::tune::verifyPlan(module, graph.getSymName(), *plan,
                                          *device)))
        return failure();
      os << "plan verified against the interpreter\n";
    }
    if (failed(hesper::exec::runGraphOnDevice(module, graph, *device,
                                             deviceArgs, deviceResults,
                                             deviceOptions(), os)))
      return failure();
    for (auto [arg, data] : llvm::zip(args, deviceArgs))
      arg.bytes() = std::move(data.bytes);
    std::vector<HostTensor> tensors;
    for (hesper::exec::HostData &data : deviceResults) {
      HostTensor t(data.type);
      t.bytes() = std::move(data.bytes);
      tensors.push_back(std::move(t));
    }
    results = std::move(tensors);
  } else {
    hesper::interp::Options options;
    options.subgroupSize = subgroupSize;
    options.checkBounds = checkBounds;
    results = hesper::interp::runGraph(graph, args, options);
    if (failed(results))
      return failure();
  }
  for (auto [name, path] : outputs) {
    const HostTensor *t = nullptr;
    for (unsigned i = 0; i < graph.getNumResults(); ++i)
      if (name == std::to_string(i) || name == resultName(graph, i))
        t = &(*results)[i];
    for (unsigned i = 0; i < graph.getNumArguments() && !t; ++i)
      if (name == hesper::circuit::argumentName(graph, i))
        t = &args[i];
    if (hesper::rt::Status s =
            hesper::rt::writeNpy(path, hesper::exec::npyFromTensor(*t));
        !s)
      return graph.emitError("--output ") << name << ": " << s.message();
  }
  if (printResults) {
    for (auto [i, r] : llvm::enumerate(*results))
      printTensor(os, "result #" + std::to_string(i), r);
    // Arguments some op writes in place.
    llvm::SmallDenseSet<Value> written;
    graph.walk([&](Operation *op) {
      if (isInPlaceWriter(op))
        for (Value result : op->getResults())
          written.insert(getWrittenBufferRoot(result));
    });
    for (auto [i, arg] : llvm::enumerate(args))
      if (written.contains(graph.getBody().front().getArgument(i)))
        printTensor(os, "argument " + hesper::circuit::argumentName(graph, i), arg);
  }
  return success();
}

/// Fuses a copy of `module` and validates every graph against its source.
static LogicalResult validateFusionMode(ModuleOp module,
                                        llvm::raw_ostream &os) {
  OwningOpRef<ModuleOp> fused = module.clone();
  PassManager pm(module.getContext());
  hesper::circuit::buildHesperFusePipeline(pm);
  if (failed(pm.run(*fused)))
    return failure();
  SymbolTable fusedSymbols(*fused);
  bool allMatch = true;
  for (GraphOp graph : module.getOps<GraphOp>()) {
    auto other = fusedSymbols.lookup<GraphOp>(graph.getSymName());
    if (!other)
      return graph.emitError("translation validation: the graph disappeared");
    hesper::interp::ValidationOptions options;
    options.trials = trials;
    options.interpreter.subgroupSize = subgroupSize;
    auto report = hesper::interp::validateTransform(graph, other, options);
    if (failed(report))
      return failure();
    os << "graph @" << graph.getSymName() << ": "
       << hesper::circuit::countDispatches(graph) << " -> "
       << hesper::circuit::countDispatches(other) << " dispatches, "
       << report->compared << " values compared, max error "
       << llvm::format("%.3g", report->maxError) << ": "
       << (report->matches ? "ok" : "MISMATCH") << "\n";
    if (!report->matches) {
      os << "  first mismatch: " << report->firstMismatch << "\n";
      allMatch = false;
    }
  }
  return success(allMatch);
}

/// Parses one buffer and runs the graph mode asked for.
static LogicalResult processBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                   llvm::raw_ostream &os,
                                   MLIRContext &context) {
  if (!hesper::checkParserCrashes(buffer->getMemBufferRef(), llvm::errs()))
    return failure();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();
  if (hesper::exec::isGpuProgram(*module)) {
    if (!compileTarget.empty())
      return hesper::run::compileProgramOnly(*module, compileTarget, dumpDir,
                                             os);
    if (hesper::run::interpreterChosen() || validateFusion) {
      llvm::errs() << "error: --backend=interp and --validate-fusion apply "
                      "to Circuit graphs; this file is a gpu dialect "
                      "program\n";
      return failure();
    }
    return hesper::run::runProgramMode(*module, device, deviceOptions(), os);
  }
  if (module->getOps<hesper::circuit::GraphOp>().empty()) {
    llvm::errs() << "error: the file holds no circuit.graph, func.func or "
                    "gpu.module: hesper-run runs Circuit graphs and gpu "
                    "dialect programs\n";
    return failure();
  }
  if (validateFusion)
    return validateFusionMode(*module, os);
  if (!compileTarget.empty())
    return compileOnlyMode(*module, os);
  if (!emitPlanPath.empty())
    return emitPlanMode(*module, os);
  return runGraphMode(*module, os);
}

static int runOnFile() {
  DialectRegistry registry;
  hesper::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  std::string message;
  auto file = mlir::openInputFile(inputFilename, &message);
  if (!file) {
    llvm::errs() << "error: " << message << "\n";
    return 1;
  }
  auto chunk = [&](std::unique_ptr<llvm::MemoryBuffer> buffer,
                   llvm::raw_ostream &os) {
    return processBuffer(std::move(buffer), os, context);
  };
  if (failed(mlir::splitAndProcessBuffer(
          std::move(file), chunk, llvm::outs(),
          splitInputFile ? mlir::kDefaultSplitMarker : "",
          mlir::kDefaultSplitMarker)))
    return 1;
  return 0;
}

/// --emit-mlir: the model's Circuit graphs, as Session::create builds them.
static int emitModelGraphs(const hesper::models::Model &model, int64_t ctx,
                           int64_t chunk,
                           const hesper::models::GraphOptions &options,
                           const std::string &path) {
  mlir::DialectRegistry registry;
  hesper::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  auto module = hesper::models::buildModelModule(&context, model, ctx, chunk,
                                                 /*allLogits=*/true, options);
  if (!module) {
    llvm::errs() << "error: the model's graphs do not verify\n";
    return 1;
  }
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec) {
    llvm::errs() << "error: cannot write " << path << ": " << ec.message()
                 << "\n";
    return 1;
  }
  module->print(file);
  return 0;
}

int main(int argc, char **argv) {
  hesper::tools::armCrashWatchdog();
  llvm::InitLLVM init(argc, argv);
  hesper::tools::hideOptionsOutside(
      {"Running Circuit graphs", "Devices, targets and bundles",
       "Example graphs (--example)", "Model mode (GGUF files)",
       "Running gpu dialect programs (as mlir-runner)"});
  std::vector<std::string> renamed;
  hesper::tools::renameThreadsFlag(argc, argv, renamed);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "hesper-run: generate text with a GGUF model (hesper-run model.gguf -p "
      "TEXT), run a Circuit graph on a device or in the reference "
      "interpreter, validate its fusion, or build and check an example "
      "graph\n");
  if (listDevicesFlag) {
    hesper::tools::listAllDevices(llvm::outs());
    return 0;
  }
  if (hesper::run::cacheInfoAsked())
    return hesper::run::printCacheInfo(llvm::outs());
  // Flags that would otherwise be ignored or silently reinterpreted.
  auto usage = [](const llvm::Twine &message) {
    llvm::errs() << "error: " << message << "\n";
    return 1;
  };
  if (repeat == 0)
    return usage("--repeat takes a count of at least 1");
  if (hesper::run::deviceIndexGiven() &&
      hesper::run::deviceFlags().deviceIndex < 0)
    return usage("--device takes an index from --list-devices (0 or more)");
  if (compileTarget.getNumOccurrences() && compileTarget.empty())
    return usage("--target takes a target such as cpu, vulkan:8 or "
                 "cuda:sm_90");
  if (checkBounds && !hesper::run::interpreterChosen())
    return usage("--check-bounds runs in the interpreter: add "
                 "--backend=interp");
  if (hesper::run::interpreterChosen())
    if (const char *flag =
            firstGiven({{"--profile", !profilePath.empty()},
                        {"--save-bundle", !saveBundle.empty()},
                        {"--dump-dir", !dumpDir.empty()},
                        {"--device", hesper::run::deviceIndexGiven()},
                        {"--plan", !planPath.empty()}}))
      return usage(llvm::Twine(flag) +
                   " needs a device backend; --backend=interp runs the "
                   "reference interpreter, which compiles nothing");
  if (!emitPlanPath.empty() && !compileTarget.empty())
    return usage("--emit-plan writes a plan for a device (--backend); "
                 "--target compiles without one");
  if (example.getNumOccurrences() && !inputFilename.empty())
    return usage("--example builds its own graph; give either --example or "
                 "a file to run, not both");
  // Checked here too, not only where the first dump is written: a model
  // is then refused before it is loaded.
  if (!dumpDir.empty())
    if (std::string problem = hesper::prepareDumpDir(dumpDir);
        !problem.empty())
      return usage(problem);
  if (std::string model = hesper::run::modelPath(inputFilename);
      !model.empty()) {
    // Flags of MLIR programs and Circuit graphs that a model's session
    // would ignore: refused rather than dropped.
    if (const char *flag = firstGiven(
            {{"--plan", !planPath.empty()},
             {"--emit-plan", !emitPlanPath.empty()},
             {"--input", !inputSpecs.empty()},
             {"--output", !outputSpecs.empty()},
             {"--check", checkFlag},
             {"--print-results", printResults},
             {"--determinism-runs", determinismRuns.getNumOccurrences() > 0},
             {"--repeat", repeat.getNumOccurrences() > 0},
             {"--save-bundle", !saveBundle.empty()},
             {"--validate-fusion", validateFusion},
             {"--graph", !graphName.empty()}}))
      return usage(llvm::Twine(flag) +
                   " applies to MLIR programs and Circuit graphs, not to a "
                   "GGUF model");
    hesper::run::ModelModeHooks hooks;
    hooks.openSession = hesper::models::Session::create;
    hooks.emitGraphs = emitModelGraphs;
    int status = hesper::run::runModelMode(
        model, deviceOptions(), hesper::run::interpreterChosen(), hooks);
    if (uint64_t messages = hesper::rt::validationMessageCount()) {
      llvm::errs() << "error: the Vulkan validation layer reported "
                   << messages << " message(s)\n";
      return 1;
    }
    return status;
  }
  if (!inputFilename.empty()) {
    for (StringRef binding : outputSpecs) {
      auto [name, path] = binding.split('=');
      if (path.empty()) {
        llvm::errs() << "error: expects --output NAME=file.npy, got '"
                     << binding << "'\n";
        return 1;
      }
      outputs.push_back({name.str(), path.str()});
    }
    bool onDevice = !hesper::run::interpreterChosen() &&
                    !validateFusion && compileTarget.empty();
    if (onDevice) {
      // Auto falls back to the interpreter when no device opens; a named
      // backend that does not open is an error.
      device = hesper::exec::openRequestedDevice(deviceOptions());
      if (!device && hesper::run::backendNamed())
        return 1;
    }
    int status = runOnFile();
    device.reset();
    if (uint64_t messages = hesper::rt::validationMessageCount()) {
      llvm::errs() << "error: the Vulkan validation layer reported "
                   << messages << " message(s)\n";
      return 1;
    }
    return status;
  }
  if (dim <= 0 || rows <= 0) {
    llvm::errs() << "error: --dim and --rows must be positive\n";
    return 1;
  }
  hesper::models::ExampleShape shape;
  shape.dim = dim;
  shape.rows = rows;
  return hesper::run::runExampleMode(example, shape, quiet);
}
