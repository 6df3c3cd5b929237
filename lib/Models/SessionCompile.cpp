//===- SessionCompile.cpp - Compiling a session's steps -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The compiling half of a session (SessionImpl.h): the model's graphs are
// built and, for a device, compiled into programs that are stored in the
// program cache and handed to the running half (Session.cpp) exactly as a
// cache hit hands them over; for no device, the fused graphs run in the
// reference interpreter, the two steps' argument lists lending the shared
// tensors to each other around each run.
//
//===----------------------------------------------------------------------===//

#include "SessionImpl.h"

#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Execution/Execution.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Models/LlamaGraph.h"
#include "Hesper/Models/ProgramCache.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include <malloc.h>

using namespace mlir;
using namespace hesper;
using namespace hesper::models;
using session::ArgBinding;
using session::isStepInput;
using session::nowMs;
using rt::Status;

/// The threads every session's compiles share (the CPU target compiles its
/// kernels in parallel on them).
static llvm::ThreadPoolInterface &compilerThreads() {
  static llvm::DefaultThreadPool pool;
  return pool;
}

static DialectRegistry registry() {
  DialectRegistry r;
  hesper::registerAllDialects(r);
  return r;
}

static ArgBinding bindingOf(circuit::GraphOp graph, unsigned i) {
  ArgBinding b;
  if (auto name = graph.getArgAttrOfType<StringAttr>(i, circuit::kArgNameAttr))
    b.name = name.getValue().str();
  if (auto role = graph.getArgAttrOfType<StringAttr>(i, circuit::kArgRoleAttr))
    b.role = circuit::symbolizeArgRole(role.getValue())
                 .value_or(circuit::ArgRole::Input);
  if (auto tensor =
          graph.getArgAttrOfType<StringAttr>(i, circuit::kArgTensorAttr))
    b.tensor = tensor.getValue().str();
  if (auto rows = graph.getArgAttrOfType<DenseI64ArrayAttr>(
          i, circuit::kArgRowsAttr)) {
    b.firstRow = rows[0];
    b.rowCount = rows[1];
  }
  return b;
}

namespace {
/// The compiler's view of a session's steps: the module of their graphs,
/// in the order of Session::Impl::steps().
struct Graphs {
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  std::vector<circuit::GraphOp> graphs;

  /// Frees the module, then its context.
  void release() {
    graphs.clear();
    module = nullptr;
    context.reset();
  }

  /// Looks the steps' graphs up (again after a pass rewrote them) and sets
  /// the steps' bindings from their arguments' roles.
  void describe(const std::vector<session::Step *> &steps) {
    graphs.clear();
    for (session::Step *step : steps) {
      circuit::GraphOp graph =
          module->lookupSymbol<circuit::GraphOp>(step->name);
      graphs.push_back(graph);
      step->argBindings.clear();
      for (BlockArgument arg : graph.getBody().front().getArguments())
        step->argBindings.push_back(bindingOf(graph, arg.getArgNumber()));
      session::indexBindings(*step);
    }
  }
};

/// Runs the steps' graphs in the reference interpreter. Step 0 (decode)
/// owns the shared tensors (weights, caches); another step borrows them
/// for its run by swapping them into its argument list and back.
class GraphInterpreter final : public session::StepInterpreter {
public:
  GraphInterpreter(Graphs graphs, std::vector<std::vector<ArgBinding>> bindings)
      : g(std::move(graphs)), bindings(std::move(bindings)),
        args(g.graphs.size()) {}

  std::vector<std::vector<interp::HostTensor>> &arguments() { return args; }

  Status setInput(size_t step, int index, const void *data,
                  size_t bytes) override {
    std::memcpy(args[step][index].bytes().data(), data, bytes);
    return Status();
  }

  Status run(size_t step, std::vector<float> *logits) override {
    std::string diagnostics;
    ScopedDiagnosticHandler handler(g.context.get(), [&](Diagnostic &d) {
      diagnostics = d.str();
      return success();
    });
    std::vector<std::pair<size_t, size_t>> lent;
    if (step != 0) {
      for (size_t i = 0; i < bindings[step].size(); ++i) {
        if (isStepInput(bindings[step][i]))
          continue;
        auto it = llvm::find_if(bindings[0], [&](const ArgBinding &b) {
          return b.name == bindings[step][i].name;
        });
        size_t j = it - bindings[0].begin();
        std::swap(args[step][i], args[0][j]);
        lent.push_back({i, j});
      }
    }
    auto results = interp::runGraph(g.graphs[step], args[step]);
    for (auto [i, j] : lent)
      std::swap(args[step][i], args[0][j]);
    if (failed(results))
      return Status::error("interpreter: " + diagnostics);
    if (logits)
      *logits = (*results)[0].toFloats();
    return Status();
  }

private:
  Graphs g;
  std::vector<std::vector<ArgBinding>> bindings;
  std::vector<std::vector<interp::HostTensor>> args;
};
} // namespace

/// A q8_0 cache stores each position's row (kvHeads * headDim values of a
/// layer) as whole 32-value blocks, an even number of them (the kernels
/// write whole 32-bit words); "" or why this model's layers cannot.
static std::string checkCacheTypes(const Model &model, CacheTypes types) {
  if (types.k != CacheType::Q8_0 && types.v != CacheType::Q8_0)
    return "";
  const LlamaHParams &hp = model.hparams();
  for (int64_t l = 0; l < hp.layers; ++l) {
    const LayerShape &shape = hp.layer(l);
    if (shape.headDim % 32 != 0)
      return "a q8_0 KV cache needs a head dimension that is a multiple of "
             "32 (the q8_0 block), but layer " +
             std::to_string(l) + " has " + std::to_string(shape.headDim);
    if (shape.kvDim() % 64 != 0)
      return "a q8_0 KV cache needs an even number of 32-value blocks per "
             "position, but layer " +
             std::to_string(l) + " stores " + std::to_string(shape.kvDim()) +
             " values (" + std::to_string(shape.kvHeads) +
             " KV heads of " + std::to_string(shape.headDim) + ")";
  }
  return "";
}

Status Session::Impl::compile() {
  double start = nowMs();
  if (std::string e = checkCacheTypes(*model, options.cacheTypes); !e.empty())
    return Status::error(e);
  std::string dir = cacheDir(), entryPath;
  if (!dir.empty()) {
    entryPath = cacheEntryPath(dir);
    stats.programCachePath = entryPath;
    if (loadFromCache(dir, entryPath, start))
      return Status();
  }
  Graphs g;
  // The process's compiler threads, not a pool per context: the same
  // threads (and their allocator arenas) serve every compile, so a
  // server or a test that compiles again and again holds no more memory.
  g.context = std::make_unique<MLIRContext>(registry(),
                                            MLIRContext::Threading::DISABLED);
  g.context->setThreadPool(compilerThreads());
  // Diagnostics become the Status message.
  std::string diagnostics;
  std::optional<ScopedDiagnosticHandler> handler;
  handler.emplace(g.context.get(), [&](Diagnostic &d) {
    if (!diagnostics.empty())
      diagnostics += "; ";
    diagnostics += d.str();
    return success();
  });
  if (options.sequences > 0) {
    const int64_t n = options.sequences;
    std::vector<int64_t> rowCounts = batchStepRows(n);
    g.module = buildBatchModule(g.context.get(), *model, ctx, n, rowCounts,
                                options.graphOptions());
    decode.name = batchGraphName(rowCounts[0]);
    decode.rows = rowCounts[0];
    for (size_t i = 1; i < rowCounts.size(); ++i) {
      batches.emplace_back();
      batches.back().name = batchGraphName(rowCounts[i]);
      batches.back().rows = rowCounts[i];
    }
  } else {
    decode.name = "decode";
    chunk.name = "prefill";
    chunk.rows = std::min(options.batchSize, ctx);
    hasChunk = chunk.rows > 1;
    // The tail chunks' steps, as buildModelModule names their graphs.
    tails.clear();
    if (hasChunk)
      for (int64_t rows : tailChunkRows(chunk.rows)) {
        tails.emplace_back();
        tails.back().name = tailChunkGraphName(rows);
        tails.back().rows = rows;
      }
    g.module = buildModelModule(g.context.get(), *model, ctx,
                                hasChunk ? chunk.rows : 1, options.allLogits,
                                options.graphOptions());
  }
  if (!g.module)
    return Status::error("the model's graphs do not verify: " + diagnostics);
  g.describe(steps());
  stats.dispatchOpsUnfused = circuit::countDispatches(g.graphs[0]);
  stats.quantizedInputs = 0;
  g.graphs[0]->walk([&](circuit::QuantizeOp q) {
    auto type = cast<RankedTensorType>(q.getType());
    stats.quantizedInputs += isa<circuit::Q8_1Type>(type.getElementType());
  });

  if (!device) {
    // The interpreter runs the fused graphs (fusion is translation-
    // validated against the source in the test suite).
    if (options.fuse) {
      PassManager pm(g.context.get());
      circuit::buildHesperFusePipeline(pm);
      if (failed(pm.run(*g.module)))
        return Status::error("hesper-fuse failed: " + diagnostics);
      g.describe(steps());
    }
    stats.kernelsPerToken = circuit::countDispatches(g.graphs[0]);
    if (hasChunk)
      stats.kernelsPerChunk = circuit::countDispatches(g.graphs[1]);
    stats.compileMs = nowMs() - start;
    double uploadStart = nowMs();
    std::vector<std::vector<ArgBinding>> bindings;
    for (Step *step : steps())
      bindings.push_back(step->argBindings);
    std::vector<circuit::GraphOp> graphs = g.graphs;
    handler.reset(); // the context moves to the interpreter
    auto interp = std::make_unique<GraphInterpreter>(std::move(g),
                                                     std::move(bindings));
    auto &args = interp->arguments();
    for (auto [k, step] : llvm::enumerate(steps())) {
      for (auto [i, type] :
           llvm::enumerate(graphs[k].getFunctionType().getInputs())) {
        // A borrower's own inputs; the rest it borrows from the decode
        // step.
        if (k != 0 && !isStepInput(step->argBindings[i])) {
          args[k].emplace_back(); // lent by the decode step per run
          continue;
        }
        interp::HostTensor t(cast<RankedTensorType>(type));
        if (k == 0) {
          InitialBytes initial;
          if (Status s = initialBytes(step->argBindings[i],
                                      t.bytes().size(), initial);
              !s)
            return s;
          if (initial.size)
            std::memcpy(t.bytes().data(), initial.src, initial.size);
        }
        stats.deviceBytes += t.bytes().size();
        args[k].push_back(std::move(t));
      }
    }
    interpreter = std::move(interp);
    stats.uploadMs = nowMs() - uploadStart;
    return Status();
  }

  stats.compileStages.push_back(
      {"graphs", start * 1000.0, (nowMs() - start) * 1000.0});
  std::vector<CompileEvent> events;
  CompileOptions compileOptions;
  compileOptions.fuse = options.fuse;
  compileOptions.matrixUnits = options.matrixUnits.value_or(false);
  compileOptions.matrixUnitsWhereFast = !options.matrixUnits.has_value();
  compileOptions.dumpDir = options.dumpDir;
  compileOptions.events = &events;
  std::vector<std::string> names;
  for (Step *step : steps())
    names.push_back(step->name);
  auto programs = compileForDevice(*g.module, ArrayRef<std::string>(names),
                                   device->info(), compileOptions);
  if (failed(programs))
    return Status::error("compiling the model failed: " + diagnostics);
  stats.compileMs = nowMs() - start;
  for (const CompileEvent &e : events)
    stats.compileStages.push_back({e.name, e.startUs, e.durationUs});
  if (!entryPath.empty()) {
    stats.programCache = "miss";
    recordProgramCacheUse(dir, /*hit=*/false);
    if (Status s = writeProgramCacheEntry(entryPath, cacheMetadata(),
                                          *programs);
        !s)
      stats.programCacheWarning = s.message();
    else
      evictProgramCacheEntries(dir, programCacheLimitBytes(), entryPath);
  }
  // The compiler is done: its module and context go before the weights are
  // bound, and the allocator gives back what it can, so that the session
  // holds the runtime's state and not the compiler's.
  handler.reset();
  g.release();
  malloc_trim(0);
  return setUpRunners(*programs);
}

/// The row counts of a multi-sequence session's batch steps: one per
/// sequence (decode steps) and that plus a prompt chunk (mixed steps),
/// each at least kBatchTileRows with several sequences: the CPU target's
/// matmuls take x in tiles of that many rows (kXRows in the lowering)
/// and vectorize their sums per tile shape, so in those steps a row is
/// computed by the same code, bit for bit, wherever it lands. A one-row
/// step runs a lone token at matvec speed; its sums may round
/// differently from the tiled steps' (not with batchInvariant).
std::vector<int64_t> Session::Impl::batchStepRows(int64_t n) const {
  const int64_t chunkRows = n + std::min(options.batchSize, ctx);
  std::vector<int64_t> rows{n, chunkRows};
  if (n > 1) {
    for (int64_t &r : rows)
      r = std::max(r, kBatchTileRows);
    if (!options.batchInvariant)
      rows.insert(rows.begin(), 1);
  }
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

rt::Result<std::unique_ptr<Session>>
Session::create(const Model &model, rt::Device *device,
                const SessionOptions &options) {
  std::unique_ptr<Session> session(new Session());
  Impl &s = *session->impl;
  if (Status st = s.prepare(model, device, options); !st)
    return st;
  if (Status st = s.compile(); !st)
    return st;
  return session;
}
