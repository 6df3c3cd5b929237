//===- Tuner.cpp - Searching kernel knobs on a device ---------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Tuning/Tuner.h"

#include "DeviceRuns.h"

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Execution/Execution.h"
#include "Hesper/Interpreter/Interpreter.h"

#include "hesper/runtime/Program.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace mlir;
using namespace hesper;
using namespace hesper::tune;
namespace cir = hesper::circuit;

std::vector<DictionaryAttr>
hesper::tune::candidateKnobs(Operation *op, const TargetDevice &device) {
  Builder b(op->getContext());
  std::vector<DictionaryAttr> all{b.getDictionaryAttr({})};
  auto add = [&](SmallVector<NamedAttribute> knobs) {
    DictionaryAttr d = b.getDictionaryAttr(knobs);
    if (checkKnobs(op, d, device).empty() && !llvm::is_contained(all, d))
      all.push_back(d);
  };
  bool matmul = isa<cir::MatmulOp, cir::MultiMatmulOp, cir::GatedMatmulOp,
                    cir::ExpertMatmulOp>(op);
  bool combines = matmul || isa<cir::ReduceOp, cir::ReduceEpilogueOp,
                                cir::ReduceScatterEpilogueOp, cir::QuantizeOp>(
                                op);
  if (device.backend != TargetBackend::Cpu) {
    for (int64_t lanes : {32, 64, 128, 256, 512}) {
      add({b.getNamedAttr("lanes", b.getI64IntegerAttr(lanes))});
      if (combines)
        for (bool sub : {false, true})
          add({b.getNamedAttr("lanes", b.getI64IntegerAttr(lanes)),
               b.getNamedAttr("subgroup_reduce", b.getBoolAttr(sub))});
    }
  }
  auto one = [&](StringRef knob, int64_t value) {
    add({b.getNamedAttr(knob, b.getI64IntegerAttr(value))});
  };
  // Unrolled loops over a row (on every target).
  if (combines)
    for (int64_t unroll : {2, 4, 8})
      one("unroll", unroll);
  if (matmul) {
    // Rows of x per workgroup matter only with several rows.
    auto x = cast<RankedTensorType>(op->getOperand(0).getType());
    if (x.getRank() == 2 && x.getDimSize(0) > 1)
      for (int64_t rows : {1, 2, 4, 16})
        one("rows", rows);
    // Weight rows per lane or subgroup: the tile's other side.
    for (int64_t cols : {2, 4, 8})
      one("cols", cols);
    // Narrower loads of plain weights (GPU targets; illegal ones drop out).
    if (device.backend != TargetBackend::Cpu)
      for (int64_t width : {1, 2})
        one("vector_width", width);
    // Words of a q8_0/q4_0 block per GPU lane (others drop out).
    if (device.backend != TargetBackend::Cpu)
      for (int64_t words : {1, 4, 8})
        one("block_words", words);
    // A GPU GEMM's tile of 128 rows of x, where a chunk has more than 64
    // (fewer would leave lanes idle).
    if (device.backend != TargetBackend::Cpu && x.getRank() == 2 &&
        x.getDimSize(0) > 64 && !isa<cir::ExpertMatmulOp>(op))
      one("gemm_rows", 128);
  }
  // A GPU map's lanes taking 2 or 4 elements each (illegal ones drop out).
  if (isa<cir::MapOp>(op) && device.backend != TargetBackend::Cpu)
    for (int64_t width : {2, 4})
      one("vector_width", width);
  if (device.backend == TargetBackend::Cpu) {
    // The vectorizers' width, and fewer threads for small kernels (whose
    // wake-ups may cost more than their work).
    for (int64_t width : {4, 8, 16})
      one("vector_width", width);
    for (int64_t threads = 1; threads < int64_t(device.threads); threads *= 2)
      one("threads", threads);
  }
  return all;
}

namespace {

/// One kernel alone: a graph `@kernel` whose arguments are the op's
/// operands and whose results are its results.
OwningOpRef<ModuleOp> isolate(Operation *op) {
  MLIRContext *context = op->getContext();
  OpBuilder b(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(op->getLoc());
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Value> operands;
  for (Value v : op->getOperands())
    if (!llvm::is_contained(operands, v))
      operands.push_back(v);
  SmallVector<Type> argTypes;
  for (Value v : operands)
    argTypes.push_back(v.getType());
  auto graph = cir::GraphOp::create(
      b, op->getLoc(), "kernel",
      b.getFunctionType(argTypes, op->getResultTypes()));
  Block &body = graph.getBody().front(); // with one argument per input
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(operands, body.getArguments()))
    mapping.map(v, arg);
  b.setInsertionPointToEnd(&body);
  Operation *copy = b.clone(*op, mapping);
  cir::OutputOp::create(b, op->getLoc(), copy->getResults());
  return module;
}

Operation *theKernel(ModuleOp module) {
  auto graph = *module.getOps<cir::GraphOp>().begin();
  return &graph.getBody().front().front();
}

/// A candidate compiled and loaded, and its timings so far.
struct Candidate {
  DictionaryAttr knobs;
  std::unique_ptr<rt::ProgramRunner> runner;
  std::vector<double> times;
  bool rejected = false;
};

/// The graph step of `fused` with the knobs of `plan`, compiled and loaded.
FailureOr<std::unique_ptr<rt::ProgramRunner>>
loadWithPlan(ModuleOp fused, rt::Device &device, const Plan &plan,
             ArrayRef<interp::HostTensor> inputs) {
  OwningOpRef<ModuleOp> variant = fused.clone();
  if (failed(applyPlan(*variant, plan, describeDevice(device.info()))))
    return failure();
  auto graph = *variant->getOps<cir::GraphOp>().begin();
  auto program = compileForDevice(*variant, graph.getSymName(), device.info(),
                                  devrun::asSet());
  if (failed(program))
    return failure();
  return devrun::loadRunner(*variant, device, *program, true, inputs);
}

/// Confirms the kernels' winners inside the whole graph, greatest claimed
/// saving first: each is added to the knobs confirmed so far and kept only
/// if the graph step, run alternately with and without it, saves at least
/// a quarter of what the kernel alone saved (times its uses) at the median
/// of the rounds' differences. Alternating runs cancel the drift between
/// separate measurements that makes an isolated kernel's win unreliable.
/// The final knobs are checked against the interpreter on the whole graph.
LogicalResult confirmInGraph(ModuleOp fused, rt::Device &device,
                             const TuneOptions &options, TuneReport &report) {
  auto graph = *fused.getOps<cir::GraphOp>().begin();
  llvm::StringMap<unsigned> uses;
  graph.walk([&](Operation *op) {
    if (cir::isDispatchOp(op))
      ++uses[kernelSignature(op)];
  });
  std::vector<size_t> winners;
  for (auto [i, k] : llvm::enumerate(report.kernels))
    if (!k.best.empty())
      winners.push_back(i);
  if (winners.empty())
    return success();
  auto saving = [&](size_t i) {
    const KernelTuning &k = report.kernels[i];
    return (k.defaultNs - k.bestNs) * uses.lookup(k.signature);
  };
  llvm::stable_sort(winners,
                    [&](size_t a, size_t b) { return saving(a) > saving(b); });

  std::vector<interp::HostTensor> inputs =
      devrun::randomInputs(graph, options.seed);
  Plan confirmed{device.info().name, {}};
  auto baseline = loadWithPlan(fused, device, confirmed, inputs);
  if (failed(baseline))
    return failure();
  // The graph with every knob confirmed so far; the baseline until one is.
  std::unique_ptr<rt::ProgramRunner> latest;
  auto current = [&]() -> rt::ProgramRunner & {
    return latest ? *latest : **baseline;
  };
  const unsigned rounds = std::max(options.graphRounds, 3u);
  for (size_t i : winners) {
    KernelTuning &k = report.kernels[i];
    Plan trial = confirmed;
    trial.entries.push_back({k.signature, k.best});
    auto next = loadWithPlan(fused, device, trial, inputs);
    if (failed(next))
      return failure();
    // Warm both, then alternate.
    if (failed(devrun::stepNs(current(), fused)) ||
        failed(devrun::stepNs(**next, fused)))
      return failure();
    std::vector<double> without, with;
    for (unsigned r = 0; r < rounds; ++r) {
      auto a = devrun::stepNs(current(), fused);
      auto b = devrun::stepNs(**next, fused);
      if (failed(a) || failed(b))
        return failure();
      without.push_back(*a);
      with.push_back(*b);
    }
    if (std::optional<double> gained = graphSaving(without, with, saving(i))) {
      confirmed = std::move(trial);
      latest = std::move(*next);
      k.graphSavingNs = *gained;
    } else {
      k.lostInGraph = k.best;
      k.best = DictionaryAttr::get(fused.getContext());
      k.bestNs = k.defaultNs;
    }
  }
  if (!latest)
    return success();
  // The whole graph with every confirmed knob, against the interpreter:
  // one run from the inputs again (a graph may update its arguments in
  // place).
  auto want = devrun::interpret(graph, inputs);
  if (failed(want) || failed(devrun::upload(*latest, inputs, fused)) ||
      failed(devrun::stepNs(*latest, fused)))
    return failure();
  auto verified = devrun::compareWithInterpreter(*latest, graph, *want);
  if (failed(verified))
    return failure();
  if (!verified->ok)
    return fused.emitError("tuning: the graph with the chosen knobs "
                           "disagrees with the interpreter: ")
           << verified->problem;
  // The step with the defaults and with the confirmed knobs, alternately.
  std::vector<double> defaults, tuned;
  for (unsigned r = 0; r < rounds; ++r) {
    auto a = devrun::stepNs(**baseline, fused);
    auto b = devrun::stepNs(*latest, fused);
    if (failed(a) || failed(b))
      return failure();
    defaults.push_back(*a);
    tuned.push_back(*b);
  }
  report.graphDefaultNs = devrun::median(defaults);
  report.graphTunedNs = devrun::median(tuned);
  return success();
}

} // namespace

std::optional<double>
hesper::tune::graphSaving(const std::vector<double> &without,
                          const std::vector<double> &with,
                          double isolatedSavingNs) {
  if (without.empty() || without.size() != with.size())
    return std::nullopt;
  std::vector<double> differences;
  for (auto [a, b] : llvm::zip(without, with))
    differences.push_back(a - b);
  double gained = devrun::median(differences);
  if (gained > 0 && gained >= 0.25 * isolatedSavingNs &&
      devrun::quartile(with, 3) <= devrun::quartile(without, 3))
    return gained;
  return std::nullopt;
}

FailureOr<TuneReport>
hesper::tune::tuneGraph(ModuleOp module, StringRef graphName,
                        rt::Device &device, const TuneOptions &options,
                        const std::function<void(size_t, size_t,
                                                 const std::string &)>
                            &progress) {
  auto start = std::chrono::steady_clock::now();
  const rt::DeviceInfo &info = device.info();
  OwningOpRef<ModuleOp> fused = ModuleOp::create(module.getLoc());
  auto source = module.lookupSymbol<cir::GraphOp>(graphName);
  if (!source)
    return module.emitError("no circuit.graph named @") << graphName;
  fused->push_back(source->clone());
  PassManager pm(module.getContext());
  cir::buildHesperFusePipeline(pm);
  if (failed(pm.run(*fused)))
    return failure();

  SmallVector<Operation *> kernels;
  llvm::StringSet<> seen;
  fused->walk([&](Operation *op) {
    if (cir::isDispatchOp(op) && seen.insert(kernelSignature(op)).second)
      kernels.push_back(op);
  });

  TuneReport report;
  for (auto [index, op] : llvm::enumerate(kernels)) {
    KernelTuning result;
    result.signature = kernelSignature(op);
    OwningOpRef<ModuleOp> alone = isolate(op);
    auto graph = *alone->getOps<cir::GraphOp>().begin();
    if (!options.kernelDumpDir.empty()) {
      std::string error;
      SmallString<128> path(options.kernelDumpDir);
      llvm::sys::path::append(path, "kernel" + std::to_string(index) + ".mlir");
      if (std::error_code ec =
              llvm::sys::fs::create_directories(options.kernelDumpDir))
        return emitError(module.getLoc(), "cannot create '")
               << options.kernelDumpDir << "': " << ec.message();
      auto file = openOutputFile(path, &error);
      if (!file)
        return emitError(module.getLoc(), error);
      alone->print(file->os());
      file->keep();
    }
    // Inputs, and what the interpreter makes of them.
    std::vector<interp::HostTensor> inputs =
        devrun::randomInputs(graph, options.seed);
    auto want = devrun::interpret(graph, inputs);
    if (failed(want))
      return failure();

    std::vector<Candidate> candidates;
    std::vector<std::vector<uint8_t>> binaries;
    for (DictionaryAttr knobs : candidateKnobs(op, describeDevice(info))) {
      Candidate c;
      c.knobs = knobs;
      OwningOpRef<ModuleOp> variant = alone->clone();
      if (!knobs.empty())
        theKernel(*variant)->setAttr(cir::kKnobsAttrName, knobs);
      auto program =
          compileForDevice(*variant, "kernel", info, devrun::asSet());
      if (failed(program))
        return failure();
      // Knobs that make the same code as an earlier candidate (the
      // defaults spelled out, say) are not measured again.
      std::vector<uint8_t> binary = devrun::programBinary(*program);
      if (llvm::is_contained(binaries, binary))
        continue;
      binaries.push_back(std::move(binary));
      auto runner =
          devrun::loadRunner(*variant, device, *program, true, inputs);
      if (failed(runner))
        return failure();
      c.runner = std::move(*runner);
      // Verify before timing: a wrong kernel is never kept.
      if (rt::Status s = c.runner->run(); !s)
        return variant->emitError(s.message());
      auto verified = devrun::compareWithInterpreter(*c.runner, graph, *want);
      if (failed(verified))
        return failure();
      c.rejected = !verified->ok;
      result.rejected += c.rejected;
      candidates.push_back(std::move(c));
    }
    result.candidates = candidates.size();

    // Successive halving over the candidates that agree with the
    // interpreter; the defaults (candidate 0) run in every round.
    auto measure = [&](Candidate &c, unsigned runs) -> LogicalResult {
      for (unsigned r = 0; r < runs; ++r) {
        auto ns = devrun::stepNs(*c.runner, module);
        if (failed(ns))
          return failure();
        c.times.push_back(*ns);
      }
      if (progress) {
        std::string line = result.signature.substr(
            0, result.signature.find(' '));
        llvm::raw_string_ostream os(line);
        os << " ";
        c.knobs.print(os);
        progress(index, kernels.size(), line);
      }
      return success();
    };
    std::vector<size_t> alive;
    for (size_t i = 1; i < candidates.size(); ++i)
      if (!candidates[i].rejected)
        alive.push_back(i);
    unsigned runs = options.firstRuns;
    do {
      if (failed(measure(candidates[0], runs)))
        return failure();
      for (size_t i : alive)
        if (failed(measure(candidates[i], runs)))
          return failure();
      std::stable_sort(alive.begin(), alive.end(), [&](size_t a, size_t b) {
        return devrun::median(candidates[a].times) <
               devrun::median(candidates[b].times);
      });
      alive.resize((alive.size() + 1) / 2);
      runs *= 2;
    } while (alive.size() > 1);

    result.defaultNs = devrun::median(candidates[0].times);
    result.bestNs = result.defaultNs;
    result.minNs = *std::min_element(candidates[0].times.begin(),
                                     candidates[0].times.end());
    if (!alive.empty()) {
      const Candidate &best = candidates[alive.front()];
      double bestNs = devrun::median(best.times);
      // The winner must beat the defaults by more than their own spread
      // (the distance between their quartiles) and by minSpeedup.
      double needed = std::max(options.minSpeedup,
                               1.0 + 2 * devrun::spread(candidates[0].times));
      if (bestNs > 0 && result.defaultNs / bestNs >= needed &&
          !candidates[0].rejected) {
        result.best = best.knobs;
        result.bestNs = bestNs;
        result.minNs = *std::min_element(best.times.begin(), best.times.end());
      }
    }
    if (!result.best)
      result.best = DictionaryAttr::get(module.getContext());
    report.kernels.push_back(std::move(result));
  }
  if (options.confirmInGraph && kernels.size() > 1 &&
      failed(confirmInGraph(*fused, device, options, report)))
    return failure();
  report.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return report;
}

FailureOr<Verification> hesper::tune::verifyOnDevice(ModuleOp module,
                                                     StringRef graphName,
                                                     rt::Device &device,
                                                     uint64_t seed) {
  auto graph = module.lookupSymbol<cir::GraphOp>(graphName);
  if (!graph)
    return module.emitError("no circuit.graph named @") << graphName;
  std::vector<interp::HostTensor> inputs = devrun::randomInputs(graph, seed);
  auto want = devrun::interpret(graph, inputs);
  if (failed(want))
    return failure();
  auto program =
      compileForDevice(module, graphName, device.info(), devrun::asSet());
  if (failed(program))
    return failure();
  auto runner = devrun::loadRunner(module, device, *program, false, inputs);
  if (failed(runner))
    return failure();
  if (rt::Status s = (*runner)->run(); !s)
    return module.emitError(s.message());
  return devrun::compareWithInterpreter(**runner, graph, *want);
}

LogicalResult hesper::tune::verifyPlan(ModuleOp module, StringRef graphName,
                                       const Plan &plan, rt::Device &device) {
  auto source = module.lookupSymbol<cir::GraphOp>(graphName);
  if (!source)
    return module.emitError("no circuit.graph named @") << graphName;
  OwningOpRef<ModuleOp> fused = ModuleOp::create(module.getLoc());
  fused->push_back(source->clone());
  // A module-wide attribute (hesper.mutant, in tests) carries over.
  for (NamedAttribute attr : module->getDiscardableAttrs())
    (*fused)->setAttr(attr.getName(), attr.getValue());
  PassManager pm(module.getContext());
  cir::buildHesperFusePipeline(pm);
  if (failed(pm.run(*fused)) || failed(applyPlan(*fused, plan,
                                                describeDevice(device.info()))))
    return failure();
  SmallVector<Operation *> planned;
  fused->walk([&](Operation *op) {
    auto knobs = op->getAttrOfType<DictionaryAttr>(cir::kKnobsAttrName);
    if (cir::isDispatchOp(op) && knobs && !knobs.empty())
      planned.push_back(op);
  });
  for (Operation *op : planned) {
    OwningOpRef<ModuleOp> alone = isolate(op);
    for (NamedAttribute attr : (*fused)->getDiscardableAttrs())
      (*alone)->setAttr(attr.getName(), attr.getValue());
    auto v = verifyOnDevice(*alone, "kernel", device);
    if (failed(v))
      return failure();
    if (!v->ok) {
      std::string knobs;
      llvm::raw_string_ostream os(knobs);
      op->getAttr(cir::kKnobsAttrName).print(os);
      return op->emitError("plan: kernel '")
             << kernelSignature(op) << "' with " << knobs
             << " disagrees with the interpreter: " << v->problem;
    }
  }
  return success();
}

FailureOr<std::vector<MutantResult>>
hesper::tune::runMutationTests(MLIRContext *context, rt::Device &device) {
  using cir::GraphBuilder;
  using exp::ExpBuilder;
  // Small workloads, each exercising the code one mutant breaks.
  struct Workload {
    const char *name;
    std::function<void(GraphBuilder &)> build;
  };
  std::vector<Workload> workloads = {
      {"map_1000",
       [](GraphBuilder &g) {
         g.output(g.map(g.external("x", {1000}, g.f32()),
                        [](ExpBuilder &e, Value v) { return e.tanh(v); }));
       }},
      {"reduce_4x1000",
       [](GraphBuilder &g) {
         g.output(g.reduce(cir::ReduceKind::sum,
                           g.external("x", {4, 1000}, g.f32())));
       }},
      {"matvec_q8_0",
       [](GraphBuilder &g) {
         Value x = g.external("x", {256}, g.f32());
         Value w = g.external("w", {64, 256},
                              cir::Q8_0Type::get(g.getContext()));
         g.output(g.matmul(x, w));
       }},
      {"embedding_q8_0",
       [](GraphBuilder &g) {
         Value table = g.external("table", {16, 64},
                                  cir::Q8_0Type::get(g.getContext()));
         g.output(g.gather(table, {}, {4, 64},
                           [](ExpBuilder &e, Value lane, ValueRange) {
                             // Rows 3, 4, 5, 6 of the table.
                             return e.add(lane, e.i32(3 * 64));
                           }));
       }},
  };
  // The kernels' binaries of a workload compiled with `mutant`.
  auto binaryOf = [&](ModuleOp module) -> FailureOr<std::vector<uint8_t>> {
    auto program =
        compileForDevice(module, "workload", device.info(), devrun::asSet());
    if (failed(program))
      return failure();
    return devrun::programBinary(*program);
  };
  struct Outcome {
    std::string caughtBy;
    Verification verification;
    bool changed = false;
  };
  std::vector<std::vector<uint8_t>> clean(workloads.size());
  auto verifyAll = [&](StringRef mutant) -> FailureOr<Outcome> {
    Outcome outcome;
    for (auto [i, w] : llvm::enumerate(workloads)) {
      GraphBuilder g(context, "workload");
      w.build(g);
      auto module = g.finish();
      if (!module)
        return failure();
      if (!mutant.empty())
        (*module)->setAttr("hesper.mutant", StringAttr::get(context, mutant));
      auto binary = binaryOf(*module);
      if (failed(binary))
        return failure();
      if (mutant.empty())
        clean[i] = *binary;
      else if (*binary != clean[i])
        outcome.changed = true;
      auto v = verifyOnDevice(*module, "workload", device);
      if (failed(v))
        return failure();
      if (!v->ok && outcome.caughtBy.empty()) {
        outcome.caughtBy = w.name;
        outcome.verification = *v;
      }
    }
    return outcome;
  };
  // The unmutated compiler must pass: otherwise a caught mutant proves
  // nothing.
  auto unmutated = verifyAll("");
  if (failed(unmutated))
    return failure();
  if (!unmutated->caughtBy.empty())
    return emitError(UnknownLoc::get(context),
                     "mutation tests: the unmutated compiler fails ")
           << unmutated->caughtBy << ": "
           << unmutated->verification.problem;
  std::vector<MutantResult> results;
  for (const char *mutant : {"drop-scale", "short-reduction", "unmasked-tail",
                             "guard-off-by-one", "block-size"}) {
    auto found = verifyAll(mutant);
    if (failed(found))
      return failure();
    MutantResult r;
    r.mutant = mutant;
    r.applies = found->changed;
    r.caught = !found->caughtBy.empty();
    r.caughtBy = found->caughtBy;
    r.problem = found->verification.problem;
    results.push_back(r);
  }
  return results;
}

std::vector<CacheEntry>
hesper::tune::cacheEntries(const TuneReport &report,
                           const rt::DeviceInfo &device) {
  std::vector<CacheEntry> out;
  for (const KernelTuning &k : report.kernels)
    out.push_back({device.cacheId, compilerVersion(), k.signature, k.best});
  return out;
}
