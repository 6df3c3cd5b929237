//===- hesper-tune.cpp - Tune the kernel knobs of a graph on a device -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-tune graph.mlir --backend=vulkan [--graph NAME] [-o plan.json]
//
// Searches the knobs of every kernel of the fused graph on the device
// (lib/Tuning/Tuner: successive halving, device timestamps, every candidate
// checked against the interpreter), prints the speed-up per kernel, and
// writes the winners to the tuning cache (--cache-dir or $HESPER_CACHE_DIR),
// which later compiles for the same device and compiler use, and/or to a
// plan file.
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"
#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Execution/GraphRun.h"
#include "ToolFlags.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/Tuning/Eval.h"
#include "Hesper/Tuning/Tuner.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace llvm;
using namespace hesper;

static cl::OptionCategory category("Tuning");
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<graph.mlir>"),
                                      cl::cat(category));
static cl::opt<bool> mutants(
    "mutants",
    cl::desc("Run the verifier's mutation tests on the device instead: "
             "every deliberately wrong kernel must be caught"),
    cl::cat(category));
static cl::opt<std::string> workload(
    "workload",
    cl::desc("Tune one of hesper-eval's workloads (hesper-eval --list) "
             "instead of a file"),
    cl::cat(category));
static cl::list<std::string>
    models("model",
           cl::desc("A GGUF model whose decode step --workload may name "
                    "(decode_model_<file stem>)"),
           cl::cat(category));
static cl::opt<std::string> graphName("graph",
                                      cl::desc("The graph to tune (default: "
                                               "the first)"),
                                      cl::cat(category));
static cl::opt<tools::BackendFlag>
    backend("backend", cl::desc("The device to tune for"), cl::init(tools::BackendFlag::Auto),
            tools::backendFlagValues(), cl::cat(category));
static cl::opt<int> deviceIndex("device", cl::init(-1),
                                cl::desc("Device index"), cl::cat(category));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Write the winners to the tuning cache in this folder "
             "(default: $HESPER_CACHE_DIR)"),
    cl::cat(category));
static cl::opt<std::string> planPath("o", cl::desc("Write a plan (JSON)"),
                                     cl::value_desc("plan.json"),
                                     cl::cat(category));
static cl::opt<unsigned> firstRuns("runs", cl::init(3),
                                   cl::desc("Timed runs per candidate in "
                                            "the first round (doubling)"),
                                   cl::cat(category));
static cl::opt<std::string> kernelDump(
    "dump-kernels",
    cl::desc("Write each kernel alone (a one-op graph @kernel) to "
             "DIR/kernel<i>.mlir, to reproduce it with hesper-run"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<bool> noGraphCheck(
    "no-graph-check",
    cl::desc("Keep every kernel's winner without confirming it inside the "
             "whole graph"),
    cl::cat(category));
static cl::opt<double> minSpeedup("min-speedup", cl::init(1.05),
                                  cl::desc("Keep the defaults unless a "
                                           "candidate is this much faster"),
                                  cl::cat(category));

static int fail(const Twine &message) {
  errs() << "error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  tools::armCrashWatchdog();
  InitLLVM init(argc, argv);
  tools::hideOptionsOutside({category.getName()});
  cl::ParseCommandLineOptions(argc, argv,
                              "hesper-tune: search the kernel knobs of a "
                              "Circuit graph on a device\n");
  if (inputPath.empty() && !mutants && workload.empty())
    return fail("give a graph to tune (hesper-tune graph.mlir, or "
                "--workload NAME)");
  if (firstRuns < 1)
    return fail("--runs takes a count of at least 1");
  std::string dir = tune::cacheDirOr(cacheDir);
  if (dir.empty() && planPath.empty() && !mutants)
    return fail("nowhere to write the results: give --cache-dir, set "
                "HESPER_CACHE_DIR, or give -o plan.json");

  std::unique_ptr<rt::Device> device =
      tools::openFlaggedDevice(backend, deviceIndex);
  if (!device)
    return fail("no device to tune for");

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  if (mutants) {
    auto results = tune::runMutationTests(&context, *device);
    if (failed(results))
      return 1;
    outs() << "mutation tests on " << device->info().name << ":\n"
           << "| mutant | caught | by | first wrong element |\n"
              "|---|---|---|---|\n";
    int survivors = 0;
    for (const tune::MutantResult &r : *results) {
      survivors += r.applies && !r.caught;
      outs() << "| " << r.mutant << " | "
             << (!r.applies ? "n/a (no kernel changes on this target)"
                 : r.caught ? "yes"
                            : "NO")
             << " | " << (r.caught ? r.caughtBy : "-") << " | "
             << (r.caught ? r.problem : "-") << " |\n";
    }
    outs() << survivors << " mutant(s) survived\n";
    return survivors ? 1 : 0;
  }
  llvm::SourceMgr sources;
  mlir::SourceMgrDiagnosticHandler handler(sources, &context);
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (!workload.empty()) {
    tune::EvalOptions options;
    options.models.assign(models.begin(), models.end());
    module = tune::buildWorkload(&context, workload, options, error);
    if (!module)
      return fail(error);
  } else {
    auto file = mlir::openInputFile(inputPath, &error);
    if (!file)
      return fail(error);
    sources.AddNewSourceBuffer(std::move(file), SMLoc());
    module = mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
    if (!module)
      return 1;
  }
  std::string name = graphName;
  if (name.empty()) {
    auto graphs = module->getOps<circuit::GraphOp>();
    if (graphs.empty())
      return fail(inputPath + ": no circuit.graph to tune");
    name = (*graphs.begin()).getSymName().str();
  }

  const bool tty = isatty(STDERR_FILENO);
  tune::TuneOptions options;
  options.firstRuns = firstRuns;
  options.minSpeedup = minSpeedup;
  options.confirmInGraph = !noGraphCheck;
  options.kernelDumpDir = kernelDump;
  // On a terminal, a line that follows every candidate; elsewhere (a log),
  // one line as each kernel starts, so that a run cut short by a timeout
  // still says how far it got.
  size_t announced = SIZE_MAX;
  auto report = tune::tuneGraph(
      *module, name, *device, options,
      [&](size_t kernel, size_t kernels, const std::string &line) {
        if (tty) {
          errs() << "\r\033[K[kernel " << kernel + 1 << "/" << kernels
                 << "] " << line;
        } else if (kernel != announced) {
          announced = kernel;
          errs() << "[kernel " << kernel + 1 << "/" << kernels << "] "
                 << line.substr(0, line.find(' ')) << "\n";
        }
      });
  if (tty)
    errs() << "\r\033[K";
  if (failed(report))
    return 1;

  const rt::DeviceInfo &info = device->info();
  outs() << "tuned @" << name << " for " << info.name << " in "
         << format("%.1f", report->seconds) << " s: "
         << report->kernels.size() << " kernels\n";
  outs() << "| kernel | candidates (wrong) | default us | tuned us | "
            "speed-up | knobs |\n|---|---|---|---|---|---|\n";
  double before = 0, after = 0;
  for (const tune::KernelTuning &k : report->kernels) {
    before += k.defaultNs;
    after += k.bestNs;
    std::string knobs;
    llvm::raw_string_ostream os(knobs);
    if (!k.best.empty()) {
      k.best.print(os);
    } else if (k.lostInGraph) {
      os << "defaults (";
      k.lostInGraph.print(os);
      os << " won alone, not in the graph)";
    } else {
      os << "defaults";
    }
    outs() << "| " << k.signature << " | " << k.candidates << " ("
           << k.rejected << ") | " << format("%.1f", k.defaultNs / 1000)
           << " | " << format("%.1f", k.bestNs / 1000) << " | "
           << format("%.2fx", k.bestNs > 0 ? k.defaultNs / k.bestNs : 1.0)
           << " | " << knobs << " |\n";
  }
  outs() << "all kernels: " << format("%.1f", before / 1000) << " us -> "
         << format("%.1f", after / 1000) << " us ("
         << format("%.2fx", after > 0 ? before / after : 1.0) << ")\n";
  if (report->graphTunedNs > 0)
    outs() << "whole graph, alternating runs: "
           << format("%.1f", report->graphDefaultNs / 1000) << " us -> "
           << format("%.1f", report->graphTunedNs / 1000) << " us ("
           << format("%.2fx", report->graphDefaultNs / report->graphTunedNs)
           << ")\n";

  if (!dir.empty()) {
    std::string problem = tune::storeCache(
        dir, &context, tune::cacheEntries(*report, info));
    if (!problem.empty())
      return fail(problem);
    outs() << "cache: " << tune::cachePath(dir) << "\n";
  }
  if (!planPath.empty()) {
    tune::Plan plan;
    plan.device = info.name;
    for (const tune::KernelTuning &k : report->kernels)
      plan.entries.push_back({k.signature, k.best});
    auto out = mlir::openOutputFile(planPath, &error);
    if (!out)
      return fail(error);
    out->os() << tune::printPlan(plan);
    out->keep();
    outs() << "plan: " << planPath << "\n";
  }
  return 0;
}
