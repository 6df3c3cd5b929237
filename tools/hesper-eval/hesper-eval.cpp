//===- hesper-eval.cpp - Run the evaluation suite --------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-eval --backend=vulkan [--quick] [-o report.json] [--baseline old.json]
//
// Runs the standard workloads (lib/Tuning/Eval) on a device, prints a table
// (latency, GB/s, GFLOP/s, share of the copy bandwidth, error against the
// interpreter), writes the JSON report, and with a baseline prints the
// differences and exits 1 on a regression beyond the measured noise (or on
// a result the interpreter disagrees with).
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"
#include "Hesper/Execution/GraphRun.h"
#include "ToolFlags.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/Tuning/Eval.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

#include <unistd.h>

using namespace llvm;
using namespace hesper;

static cl::OptionCategory category("Evaluation");
static cl::opt<tools::BackendFlag>
    backend("backend", cl::desc("The device to evaluate"), cl::init(tools::BackendFlag::Auto),
            tools::backendFlagValues(), cl::cat(category));
static cl::opt<int> deviceIndex("device", cl::init(-1),
                                cl::desc("Device index"), cl::cat(category));
static cl::opt<bool> quick("quick", cl::desc("The quick subset"),
                           cl::cat(category));
static cl::opt<std::string> filter("filter",
                                   cl::desc("Only workloads whose name "
                                            "contains this"),
                                   cl::cat(category));
static cl::opt<unsigned> runs("runs", cl::init(10),
                              cl::desc("Timed runs per workload"),
                              cl::cat(category));
static cl::list<std::string>
    models("model",
           cl::desc("Also run the decode step of this GGUF model "
                    "(decode_model_<file stem>; repeatable)"),
           cl::cat(category));
static cl::opt<bool> list("list", cl::desc("List the workloads and stop"),
                          cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Write the report"),
                                       cl::value_desc("report.json"),
                                       cl::cat(category));
static cl::opt<std::string> baselinePath(
    "baseline", cl::desc("Compare with this report (exit 1 on a regression)"),
    cl::cat(category));
static cl::opt<std::string> comparePath(
    "compare",
    cl::desc("Compare this report with --baseline instead of running"),
    cl::cat(category));
static cl::opt<double> threshold("threshold", cl::init(0.10),
                                 cl::desc("The smallest slowdown that counts "
                                          "(also at least 3x the noise)"),
                                 cl::cat(category));

static int fail(const Twine &message) {
  errs() << "error: " << message << "\n";
  return 1;
}

static FailureOr<tune::EvalReport> readReport(const std::string &path) {
  auto file = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    errs() << "error: " << path << ": " << file.getError().message() << "\n";
    return mlir::failure();
  }
  std::string error;
  auto report = tune::parseReport((*file)->getBuffer(), error);
  if (mlir::failed(report))
    errs() << "error: " << path << ": " << error << "\n";
  return report;
}

int main(int argc, char **argv) {
  tools::armCrashWatchdog();
  InitLLVM init(argc, argv);
  tools::hideOptionsOutside({category.getName()});
  cl::ParseCommandLineOptions(argc, argv,
                              "hesper-eval: run the standard workloads on a "
                              "device and compare with a baseline\n");
  // A NaN threshold would make every comparison false (every regression
  // "ok"); an infinite one, or a negative one, no threshold at all.
  if (!std::isfinite(threshold) || threshold < 0 || threshold > 100)
    return fail("--threshold must be a slowdown between 0 and 100 (0.10: "
                "10%), got " +
                formatv("{0}", format("%g", threshold.getValue())).str());
  if (runs < 1 || runs > 100000)
    return fail("--runs must be between 1 and 100000, got " +
                Twine(runs.getValue()));
  tune::EvalOptions options;
  options.quick = quick;
  options.filter = filter;
  options.runs = runs;
  options.models.assign(models.begin(), models.end());
  std::string error;
  auto workloads = tune::selectWorkloads(options, error);
  if (mlir::failed(workloads))
    return fail(error);
  if (list) {
    for (const tune::Workload &w : *workloads)
      outs() << w.name << "\n";
    return 0;
  }
  if (!comparePath.empty() && baselinePath.empty())
    return fail("--compare needs --baseline");

  tune::EvalReport report;
  if (!comparePath.empty()) {
    auto read = readReport(comparePath);
    if (mlir::failed(read))
      return 1;
    report = *read;
  } else {
    if (workloads->empty())
      return fail("no workload matches --filter '" + filter + "'");
    std::unique_ptr<rt::Device> device =
        tools::openFlaggedDevice(backend, deviceIndex);
    if (!device)
      return fail("no device to evaluate");
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    const bool tty = isatty(STDERR_FILENO);
    auto result = tune::runEval(
        &context, *device, options, *workloads,
        [&](size_t i, size_t n, const std::string &name) {
          if (tty)
            errs() << "\r\033[K[" << i + 1 << "/" << n << "] " << name;
        });
    if (tty)
      errs() << "\r\033[K";
    if (mlir::failed(result))
      return 1;
    report = *result;
    outs() << "device: " << report.device << "; copy bandwidth "
           << format("%.1f", report.copyGbps) << " GB/s (copy kernel "
           << format("%.1f", report.copyKernelGbps) << ", driver copy "
           << format("%.1f", report.driverCopyGbps) << ")";
    // The "of peak" column where the device's peak is known (the CPU
    // target's measured FMA rate, a GPU's data sheet).
    const bool peak = report.peakGflops > 0;
    if (peak)
      outs() << "; "
             << (report.peakKind.empty() ? "f32 FMA peak" : report.peakKind)
             << " " << format("%.1f", report.peakGflops) << " GFLOP/s";
    outs() << "\n| workload | min us | median us | noise | GB/s | GFLOP/s | "
           << (peak ? "of peak | " : "") << "of copy | max error |\n"
           << "|---|---|---|---|---|---|---|---|" << (peak ? "---|" : "")
           << "\n";
    for (const tune::WorkloadResult &w : report.workloads) {
      outs() << "| " << w.name << " | " << format("%.1f", w.minUs) << " | "
             << format("%.1f", w.medianUs) << " | "
             << format("%.1f%%", 100 * w.noise) << " | "
             << format("%.2f", w.gbps) << " | " << format("%.2f", w.gflops)
             << " | ";
      if (peak)
        outs() << format("%.2f", w.gflops / report.peakGflops) << " | ";
      outs() << format("%.2f", w.copyFraction) << " | "
             << format("%.2g", w.maxError) << (w.correct ? "" : " WRONG")
             << " |\n";
    }
  }
  if (!outputPath.empty()) {
    std::string error;
    auto out = mlir::openOutputFile(outputPath, &error);
    if (!out)
      return fail(error);
    out->os() << tune::printReport(report);
    out->keep();
    outs() << "report: " << outputPath << "\n";
  }
  bool bad = any_of(report.workloads,
                    [](const tune::WorkloadResult &w) { return !w.correct; });
  if (bad)
    errs() << "error: a workload disagrees with the interpreter\n";
  if (!baselinePath.empty()) {
    auto baseline = readReport(baselinePath);
    if (mlir::failed(baseline))
      return 1;
    if (baseline->deviceId != report.deviceId)
      outs() << "note: the baseline ran on " << baseline->device << "\n";
    outs() << "| workload | baseline us | now us | ratio | allowed | |\n"
              "|---|---|---|---|---|---|\n";
    int regressions = 0;
    for (const tune::DiffRow &row :
         tune::diffReports(*baseline, report, threshold)) {
      if (row.missing) {
        outs() << "| " << row.name << " | "
               << format("%.1f", row.baselineUs) << " | - | - | - | "
               << "not run |\n";
        continue;
      }
      regressions += row.regression;
      outs() << "| " << row.name << " | " << format("%.1f", row.baselineUs)
             << " | " << format("%.1f", row.currentUs) << " | "
             << format("%.2f", row.ratio) << " | "
             << format("%.2f", row.allowed) << " | "
             << (row.regression ? "REGRESSION" : "ok") << " |\n";
    }
    outs() << regressions << " regression(s)\n";
    if (regressions)
      return 1;
  }
  return bad ? 1 : 0;
}
