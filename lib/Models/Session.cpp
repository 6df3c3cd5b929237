//===- Session.cpp - A model running on a device --------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A session holds up to two compiled steps of one model: the decode step
// (one token) and the prompt chunk (batchSize tokens). Both are graphs of one
// module, lowered together, and they share every buffer but the per-step
// inputs: the weights are uploaded once, and the KV cache the chunk writes
// is the one the decode step reads. On the interpreter the two steps' argument
// lists hand the shared tensors to each other around each run.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Session.h"

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

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include <malloc.h>

using namespace mlir;
using namespace hesper;
using namespace hesper::models;
using rt::Status;

/// The threads every session's compiles share (the CPU target compiles its
/// kernels in parallel on them).
static llvm::ThreadPoolInterface &compilerThreads() {
  static llvm::DefaultThreadPool pool;
  return pool;
}

static double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

/// What a graph argument binds, from its declared role (ArgRoles.h): the
/// builder (LlamaGraph.cpp) sets them; nothing here reads argument names.
struct ArgBinding {
  circuit::ArgRole role = circuit::ArgRole::Input;
  std::string name;   ///< circuit.name: how the decode and chunk steps match
  std::string tensor; ///< a weight's tensor in the model file
  int64_t firstRow = -1, rowCount = 0; ///< a weight's row range, if any
};

static ArgBinding bindingOf(circuit::GraphOp graph, unsigned i) {
  ArgBinding b;
  if (auto name = graph.getArgAttrOfType<StringAttr>(i, "circuit.name"))
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

/// The step's own inputs, which a chunk does not borrow from the decode
/// step.
static bool isStepInput(const ArgBinding &b) {
  using circuit::ArgRole;
  return b.role == ArgRole::Tokens || b.role == ArgRole::Position ||
         b.role == ArgRole::LastRow;
}

namespace {
/// One compiled step: a graph of `rows` tokens.
struct Step {
  std::string name;
  int64_t rows = 1;
  circuit::GraphOp graph;
  std::vector<ArgBinding> argBindings;
  int tokensIndex = -1, posIndex = -1;
  int lastIndex = -1; ///< a chunk that computes its last token's logits only
  // Device path.
  std::unique_ptr<rt::ProgramRunner> runner;
  std::vector<std::string> kernelNames;
  // Interpreter path: the graph's arguments, in order.
  std::vector<interp::HostTensor> args;
};
} // namespace

struct Session::Impl {
  const Model *model = nullptr;
  rt::Device *device = nullptr;
  SessionOptions options;
  int64_t ctx = 0;
  int64_t pos = 0;
  SessionStats stats;

  /// The compiler's context: made when the steps are compiled (not when
  /// they come from the program cache), released once a device session has
  /// its programs (releaseCompiler); the interpreter keeps it.
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  /// Weights the device reads in place from the model file's mapping
  /// (declared before the steps, whose runners bind them: destroyed after).
  std::vector<std::unique_ptr<rt::Buffer>> inPlaceWeights;
  /// The step that owns the shared buffers: the decode step, or a
  /// multi-sequence session's smallest batch step.
  Step decode;
  Step chunk;
  bool hasChunk = false;
  /// A multi-sequence session's larger batch steps, ascending.
  std::deque<Step> batches;
  /// A batch step's global positions, and the rows whose logits it asks.
  std::vector<int32_t> positions, wanted;

  /// The steps that borrow the owner's buffers.
  std::vector<Step *> borrowers() {
    std::vector<Step *> out;
    if (hasChunk)
      out.push_back(&chunk);
    for (Step &b : batches)
      out.push_back(&b);
    return out;
  }

  std::vector<double> kernelTotalsNs, chunkKernelTotalsNs;
  int64_t timedTokens = 0, timedChunks = 0;
  std::vector<int32_t> tokenIds;
  std::vector<uint8_t> scratch;

  static DialectRegistry registry() {
    DialectRegistry r;
    hesper::registerAllDialects(r);
    return r;
  }

  /// An argument's initial bytes: `size` bytes at `src` (a weight's in the
  /// file's mapping, the RoPE frequencies in `freqs`); none (size 0) for
  /// everything else, which starts as zeros.
  struct InitialBytes {
    std::vector<float> freqs;
    const void *src = nullptr;
    uint64_t size = 0;
  };
  Status initialBytes(const ArgBinding &arg, size_t bytes,
                      InitialBytes &out) {
    out = InitialBytes();
    switch (arg.role) {
    case circuit::ArgRole::Weight: {
      const uint8_t *data = nullptr;
      if (Status s = model->tensorBytes(arg.tensor, arg.firstRow,
                                        arg.rowCount, data, out.size);
          !s)
        return s;
      if (out.size > bytes)
        return Status::error("weight '" + arg.name + "' has " +
                             std::to_string(out.size) +
                             " bytes, the program's buffer " +
                             std::to_string(bytes));
      out.src = data;
      return Status();
    }
    case circuit::ArgRole::RopeFreqs:
    case circuit::ArgRole::RopeFreqsSwa:
      out.freqs = model->ropeFrequencies(arg.role ==
                                         circuit::ArgRole::RopeFreqsSwa);
      out.src = out.freqs.data();
      out.size = std::min<uint64_t>(bytes, out.freqs.size() * sizeof(float));
      return Status();
    default:
      return Status();
    }
  }

  /// An interpreter argument's initial bytes.
  Status hostBytes(const ArgBinding &arg, size_t bytes,
                   std::vector<uint8_t> &out) {
    out.assign(bytes, 0);
    InitialBytes initial;
    if (Status s = initialBytes(arg, bytes, initial); !s)
      return s;
    if (initial.size)
      std::memcpy(out.data(), initial.src, initial.size);
    return Status();
  }

  /// Sets a device buffer of `bytes` to its initial bytes, copied straight
  /// from where they are (the file's mapping for a weight). A CPU buffer
  /// starts zeroed (the CPU driver maps fresh pages) and is written only
  /// where it must be, so a KV cache's pages become resident as positions
  /// are written, not at the start; other devices' buffers are cleared.
  Status initialize(const InitialBytes &initial, size_t bytes,
                    rt::Buffer &dst) {
    if (initial.size < bytes && device->info().backend != rt::Backend::Cpu)
      if (Status s = device->fill(dst, 0); !s)
        return s;
    return initial.size ? device->upload(dst, initial.src, initial.size, 0)
                        : Status();
  }

  void describe(Step &step) {
    step.graph = module->lookupSymbol<circuit::GraphOp>(step.name);
    step.argBindings.clear();
    for (BlockArgument arg : step.graph.getBody().front().getArguments())
      step.argBindings.push_back(bindingOf(step.graph, arg.getArgNumber()));
    indexBindings(step);
  }

  /// Finds the step's own inputs among its bindings.
  static void indexBindings(Step &step) {
    step.tokensIndex = step.posIndex = step.lastIndex = -1;
    for (auto [i, b] : llvm::enumerate(step.argBindings)) {
      if (b.role == circuit::ArgRole::Tokens)
        step.tokensIndex = i;
      if (b.role == circuit::ArgRole::Position)
        step.posIndex = i;
      if (b.role == circuit::ArgRole::LastRow)
        step.lastIndex = i;
    }
  }

  /// Every step, the decode step (the owner) first.
  std::vector<Step *> steps() {
    std::vector<Step *> out{&decode};
    for (Step *b : borrowers())
      out.push_back(b);
    return out;
  }

  /// The metadata of the steps' program cache entry (beside their
  /// programs): how each binds its arguments and the statistics a load
  /// cannot recompute.
  std::string cacheMetadata() {
    llvm::json::Array stepsJson;
    for (Step *step : steps()) {
      llvm::json::Array bindings;
      for (const ArgBinding &b : step->argBindings)
        bindings.push_back(llvm::json::Object{
            {"role", circuit::stringifyArgRole(b.role)},
            {"name", b.name},
            {"tensor", b.tensor},
            {"firstRow", b.firstRow},
            {"rowCount", b.rowCount}});
      stepsJson.push_back(llvm::json::Object{{"name", step->name},
                                             {"rows", step->rows},
                                             {"bindings", std::move(bindings)}});
    }
    llvm::json::Object meta{
        {"steps", std::move(stepsJson)},
        {"dispatchOpsUnfused", stats.dispatchOpsUnfused}};
    return llvm::formatv("{0}", llvm::json::Value(std::move(meta)));
  }

  /// Restores the steps from a program cache entry; an error for an entry
  /// that does not describe this session's steps.
  Status restore(const rt::ProgramSet &set) {
    auto bad = [](const std::string &why) {
      return Status::error("the entry does not fit: " + why);
    };
    auto parsed = llvm::json::parse(set.metadata);
    if (!parsed) {
      std::string why = llvm::toString(parsed.takeError());
      return bad(why);
    }
    const llvm::json::Object *meta = parsed->getAsObject();
    const llvm::json::Array *stepsJson = meta ? meta->getArray("steps")
                                              : nullptr;
    if (!stepsJson || stepsJson->empty() ||
        stepsJson->size() != set.programs.size())
      return bad("steps and programs differ");
    std::vector<Step> restored;
    for (auto [k, v] : llvm::enumerate(*stepsJson)) {
      const llvm::json::Object *o = v.getAsObject();
      Step step;
      auto name = o ? o->getString("name") : std::nullopt;
      auto rows = o ? o->getInteger("rows") : std::nullopt;
      const llvm::json::Array *bindings = o ? o->getArray("bindings")
                                            : nullptr;
      if (!name || !rows || !bindings ||
          bindings->size() != set.programs[k].numArguments)
        return bad("step #" + std::to_string(k));
      step.name = name->str();
      step.rows = *rows;
      for (const llvm::json::Value &bv : *bindings) {
        const llvm::json::Object *bo = bv.getAsObject();
        auto role = bo ? bo->getString("role") : std::nullopt;
        auto argName = bo ? bo->getString("name") : std::nullopt;
        auto tensor = bo ? bo->getString("tensor") : std::nullopt;
        auto first = bo ? bo->getInteger("firstRow") : std::nullopt;
        auto count = bo ? bo->getInteger("rowCount") : std::nullopt;
        auto r = role ? circuit::symbolizeArgRole(*role) : std::nullopt;
        if (!r || !argName || !tensor || !first || !count)
          return bad("a binding of step " + step.name);
        step.argBindings.push_back(
            {*r, argName->str(), tensor->str(), *first, *count});
      }
      indexBindings(step);
      restored.push_back(std::move(step));
    }
    decode = std::move(restored[0]);
    batches.clear();
    hasChunk = false;
    for (size_t k = 1; k < restored.size(); ++k) {
      if (options.sequences > 0) {
        batches.push_back(std::move(restored[k]));
      } else {
        chunk = std::move(restored[k]);
        hasChunk = true;
      }
    }
    stats.dispatchOpsUnfused =
        meta->getInteger("dispatchOpsUnfused").value_or(0);
    return Status();
  }

  /// The program cache folder of this session ("" when it uses none).
  std::string cacheDir() const {
    if (!device || !options.programCache || !options.dumpDir.empty())
      return "";
    return options.programCacheDir.empty() ? defaultProgramCacheDir()
                                           : options.programCacheDir;
  }

  /// A device session's steps from the program cache; false (after noting
  /// why in the stats) when there is no usable entry.
  bool loadFromCache(const std::string &dir, const std::string &path,
                     double start) {
    if (!llvm::sys::fs::exists(path))
      return false;
    auto set = readProgramCacheEntry(path);
    Status status = set ? restore(*set) : set.status();
    // What a hit saves is the compile: its time is the key and the load.
    stats.compileMs = nowMs() - start;
    if (status)
      status = setUpRunners(set->programs);
    if (!status) {
      // Whatever a half-done restore left is rebuilt by the compile.
      decode = Step();
      chunk = Step();
      batches.clear();
      hasChunk = false;
      stats.deviceBytes = stats.weightBufferBytes = stats.cacheBytes = 0;
      stats.inPlaceWeightBytes = 0;
      inPlaceWeights.clear();
      stats.programCacheWarning =
          status.message() + "; compiling again";
      return false;
    }
    stats.programCache = "hit";
    touchProgramCacheEntry(path);
    stats.compileStages.push_back(
        {"program cache", start * 1000.0, stats.compileMs * 1000.0});
    recordProgramCacheUse(dir, /*hit=*/true);
    return true;
  }

  /// Frees the compiler once a device session has its programs: the
  /// module, the context and what the allocator can give back.
  void releaseCompiler() {
    if (!device)
      return;
    for (Step *step : steps())
      step->graph = nullptr;
    module = nullptr;
    context.reset();
    malloc_trim(0);
  }

  Status compile() {
    double start = nowMs();
    std::string dir = cacheDir(), entryPath;
    if (!dir.empty()) {
      entryPath = programCacheEntryPath(
          dir, programCacheKey(*model, options, ctx, device->info(),
                               tuningFingerprint(), compilerIdentity()));
      stats.programCachePath = entryPath;
      if (loadFromCache(dir, entryPath, start))
        return Status();
    }
    // The process's compiler threads, not a pool per context: the same
    // threads (and their allocator arenas) serve every compile, so a
    // server or a test that compiles again and again holds no more memory.
    context = std::make_unique<MLIRContext>(registry(),
                                            MLIRContext::Threading::DISABLED);
    context->setThreadPool(compilerThreads());
    // Diagnostics become the Status message.
    std::string diagnostics;
    ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
      if (!diagnostics.empty())
        diagnostics += "; ";
      diagnostics += d.str();
      return success();
    });
    if (options.sequences > 0) {
      const int64_t n = options.sequences;
      std::vector<int64_t> rowCounts = batchStepRows(n);
      module = buildBatchModule(context.get(), *model, ctx, n, rowCounts);
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
      module = buildModelModule(context.get(), *model, ctx,
                                hasChunk ? chunk.rows : 1, options.allLogits);
    }
    if (!module)
      return Status::error("the model's graphs do not verify: " + diagnostics);
    describe(decode);
    for (Step *step : borrowers())
      describe(*step);
    stats.dispatchOpsUnfused = circuit::countDispatches(decode.graph);

    if (!device) {
      // The interpreter runs the fused graphs (fusion is translation-
      // validated against the source in the test suite).
      if (options.fuse) {
        PassManager pm(context.get());
        circuit::buildHesperFusePipeline(pm);
        if (failed(pm.run(*module)))
          return Status::error("hesper-fuse failed: " + diagnostics);
        describe(decode);
        for (Step *step : borrowers())
          describe(*step);
      }
      stats.kernelsPerToken = circuit::countDispatches(decode.graph);
      if (hasChunk)
        stats.kernelsPerChunk = circuit::countDispatches(chunk.graph);
      stats.compileMs = nowMs() - start;
      double uploadStart = nowMs();
      for (auto [i, type] :
           llvm::enumerate(decode.graph.getFunctionType().getInputs())) {
        interp::HostTensor t(cast<RankedTensorType>(type));
        if (Status s = hostBytes(decode.argBindings[i], t.bytes().size(),
                                 t.bytes());
            !s)
          return s;
        stats.deviceBytes += t.bytes().size();
        decode.args.push_back(std::move(t));
      }
      // A borrower's own inputs; the rest it borrows from the decode step.
      for (Step *step : borrowers())
        for (auto [i, type] :
             llvm::enumerate(step->graph.getFunctionType().getInputs())) {
          if (!isStepInput(step->argBindings[i])) {
            step->args.emplace_back(); // lent by the decode step per run
            continue;
          }
          step->args.emplace_back(cast<RankedTensorType>(type));
          stats.deviceBytes += step->args.back().bytes().size();
        }
      stats.uploadMs = nowMs() - uploadStart;
      return Status();
    }

    stats.compileStages.push_back(
        {"graphs", start * 1000.0, (nowMs() - start) * 1000.0});
    std::vector<CompileEvent> events;
    CompileOptions compileOptions;
    compileOptions.fuse = options.fuse;
    compileOptions.dumpDir = options.dumpDir;
    compileOptions.events = &events;
    std::vector<std::string> names{decode.name};
    for (Step *step : borrowers())
      names.push_back(step->name);
    auto programs = compileForDevice(*module, ArrayRef<std::string>(names),
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
    return setUpRunners(*programs);
  }

  /// Creates the steps' runners over `programs` (the decode step's first,
  /// then the borrowers' in order) and uploads the weights.
  Status setUpRunners(const std::vector<rt::Program> &programs) {
    const rt::Program &decodeProgram = programs[0];
    stats.kernelsPerToken = decodeProgram.launches.size();
    std::set<std::string> distinct;
    for (const rt::Program &p : programs)
      for (const rt::KernelDesc &k : p.kernels)
        distinct.insert(k.name);
    stats.distinctKernels = distinct.size();
    for (const rt::ProgramLaunch &l : decodeProgram.launches)
      decode.kernelNames.push_back(decodeProgram.kernels[l.kernel].name);

    double uploadStart = nowMs();
    // A weight whose bytes in the file fill its buffer exactly is read
    // where it is on a device that can (the CPU): no copy, and no second
    // resident copy of the weights.
    std::vector<InitialBytes> initial(decodeProgram.numArguments);
    std::vector<rt::Buffer *> inPlace(decodeProgram.numArguments, nullptr);
    for (uint32_t i = 0; i < decodeProgram.numArguments; ++i) {
      uint64_t bytes = decodeProgram.buffers[i].bytes;
      if (Status s = initialBytes(decode.argBindings[i], bytes, initial[i]);
          !s)
        return s;
      if (decode.argBindings[i].role != circuit::ArgRole::Weight ||
          initial[i].size != bytes)
        continue;
      auto imported = device->importHostMemory(initial[i].src, bytes);
      if (!imported)
        continue; // copied below
      inPlace[i] = imported->get();
      stats.inPlaceWeightBytes += bytes;
      inPlaceWeights.push_back(std::move(*imported));
    }
    auto created = rt::ProgramRunner::create(*device, decodeProgram,
                                             options.timing, inPlace);
    if (!created)
      return created.status();
    decode.runner = std::move(*created);
    for (const rt::ProgramBuffer &b : decodeProgram.buffers)
      stats.deviceBytes += b.bytes;
    for (uint32_t i = 0; i < decodeProgram.numArguments; ++i) {
      circuit::ArgRole role = decode.argBindings[i].role;
      if (role == circuit::ArgRole::Weight)
        stats.weightBufferBytes += decodeProgram.buffers[i].bytes;
      if (role == circuit::ArgRole::Cache)
        stats.cacheBytes += decodeProgram.buffers[i].bytes;
    }
    // The program's arguments are the graph's, in order.
    for (uint32_t i = 0; i < decodeProgram.numArguments; ++i)
      if (Status s = inPlace[i] ? Status()
                                : initialize(initial[i],
                                             decodeProgram.buffers[i].bytes,
                                             *decode.runner->argumentBuffer(i));
          !s)
        return s;
    std::map<std::string, uint32_t> decodeArgs;
    for (uint32_t i = 0; i < decodeProgram.numArguments; ++i)
      decodeArgs[decodeProgram.buffers[i].name] = i;
    for (auto [k, step] : llvm::enumerate(borrowers())) {
      // Every argument but the step's own inputs is the decode step's.
      const rt::Program &program = programs[k + 1];
      std::vector<rt::Buffer *> shared(program.numArguments, nullptr);
      for (uint32_t i = 0; i < program.numArguments; ++i) {
        const std::string &name = program.buffers[i].name;
        if (isStepInput(step->argBindings[i]))
          continue;
        auto it = decodeArgs.find(name);
        if (it == decodeArgs.end())
          return Status::error("the " + step->name + " step's argument '" +
                               name + "' is not one of the " + decode.name +
                               " step's");
        shared[i] = decode.runner->argumentBuffer(it->second);
      }
      auto runner = rt::ProgramRunner::create(*device, program,
                                              options.timing, shared);
      if (!runner)
        return runner.status();
      step->runner = std::move(*runner);
      stats.kernelsPerChunk = program.launches.size();
      for (const rt::ProgramLaunch &l : program.launches)
        step->kernelNames.push_back(program.kernels[l.kernel].name);
      for (uint32_t i = program.numArguments; i < program.buffers.size(); ++i)
        stats.deviceBytes += program.buffers[i].bytes;
    }
    stats.uploadMs = nowMs() - uploadStart;
    return Status();
  }

  Status setInput(Step &step, int index, const void *data, size_t bytes) {
    if (!device) {
      std::memcpy(step.args[index].bytes().data(), data, bytes);
      return Status();
    }
    return step.runner->setArgument(index, data, bytes);
  }

  /// Runs `step` in the interpreter, lending it the decode step's shared
  /// tensors (the weights, the caches) for the run.
  Status interpret(Step &step, std::vector<float> *logits) {
    std::string diagnostics;
    ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
      diagnostics = d.str();
      return success();
    });
    std::vector<std::pair<size_t, size_t>> lent;
    if (&step != &decode) {
      for (size_t i = 0; i < step.argBindings.size(); ++i) {
        if (isStepInput(step.argBindings[i]))
          continue;
        auto it = llvm::find_if(decode.argBindings, [&](const ArgBinding &b) {
          return b.name == step.argBindings[i].name;
        });
        size_t j = it - decode.argBindings.begin();
        std::swap(step.args[i], decode.args[j]);
        lent.push_back({i, j});
      }
    }
    auto results = interp::runGraph(step.graph, step.args);
    for (auto [i, j] : lent)
      std::swap(step.args[i], decode.args[j]);
    if (failed(results))
      return Status::error("interpreter: " + diagnostics);
    if (logits)
      *logits = (*results)[0].toFloats();
    return Status();
  }

  /// Runs `step` for `n` tokens from the current position; `all` gets the
  /// logits of every row (rows * vocab values).
  Status run(Step &step, const int32_t *ids, size_t n,
             std::vector<float> *all) {
    // The token ids (padding rows read token 0; their results are
    // dropped and their cache rows rewritten before anything reads them).
    const int64_t vocab = model->hparams().vocab;
    tokenIds.assign(step.rows, 0);
    for (size_t r = 0; r < n; ++r) {
      if (ids[r] < 0 || ids[r] >= vocab)
        return Status::error("token id " + std::to_string(ids[r]) +
                             " is outside the vocabulary of " +
                             std::to_string(vocab));
      tokenIds[r] = ids[r];
    }
    int32_t p = static_cast<int32_t>(pos);
    if (Status s = setInput(step, step.tokensIndex, tokenIds.data(),
                            tokenIds.size() * sizeof(int32_t));
        !s)
      return s;
    if (Status s = setInput(step, step.posIndex, &p, sizeof(p)); !s)
      return s;
    if (step.lastIndex >= 0) {
      int32_t last = static_cast<int32_t>(n) - 1;
      if (Status s = setInput(step, step.lastIndex, &last, sizeof(last)); !s)
        return s;
    }
    if (!device)
      return interpret(step, all);
    if (Status s = step.runner->run(); !s)
      return s;
    if (options.timing) {
      std::vector<double> times = step.runner->lastKernelTimesNs();
      bool isDecode = &step == &decode;
      std::vector<double> &totals =
          isDecode ? kernelTotalsNs : chunkKernelTotalsNs;
      if (!times.empty()) {
        totals.resize(times.size(), 0.0);
        for (size_t k = 0; k < times.size(); ++k)
          totals[k] += times[k];
        ++(isDecode ? timedTokens : timedChunks);
      }
    }
    if (all) {
      if (Status s = step.runner->readResult(0, scratch); !s)
        return s;
      all->resize((step.lastIndex >= 0 ? 1 : step.rows) *
                  model->hparams().vocab);
      std::memcpy(all->data(), scratch.data(), all->size() * sizeof(float));
    }
    return Status();
  }

  /// The row counts of a multi-sequence session's batch steps: one per
  /// sequence (decode steps) and that plus a prompt chunk (mixed steps),
  /// each at least kBatchTileRows with several sequences: the CPU target's
  /// matmuls take x in tiles of that many rows (kXRows in the lowering)
  /// and vectorize their sums per tile shape, so in those steps a row is
  /// computed by the same code, bit for bit, wherever it lands. A one-row
  /// step runs a lone token at matvec speed; its sums may round
  /// differently from the tiled steps' (not with batchInvariant).
  std::vector<int64_t> batchStepRows(int64_t n) const {
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
  static constexpr int64_t kBatchTileRows = 8;

  /// A batch step of a multi-sequence session (Session::runBatch).
  Status runBatch(const std::vector<BatchRow> &rows,
                  std::vector<std::vector<float>> *logits) {
    const int64_t n = options.sequences;
    if (n <= 0)
      return Status::error("runBatch needs a session of several sequences "
                           "(SessionOptions::sequences)");
    Step *step = &decode;
    for (Step *b : borrowers())
      if (step->rows < static_cast<int64_t>(rows.size()))
        step = b;
    if (rows.empty() || step->rows < static_cast<int64_t>(rows.size()))
      return Status::error("a batch step takes 1 to " +
                           std::to_string(step->rows) + " rows, got " +
                           std::to_string(rows.size()));
    const int64_t r = step->rows;
    const int64_t vocab = model->hparams().vocab;
    tokenIds.assign(r, 0);
    positions.assign(r, 0);
    wanted.clear();
    for (int64_t i = 0; i < r; ++i) {
      if (i >= static_cast<int64_t>(rows.size())) {
        // Padding: the scratch sequence after the last, at distinct
        // positions; results dropped.
        positions[i] = static_cast<int32_t>(n * ctx + i % ctx);
        continue;
      }
      const BatchRow &row = rows[i];
      if (row.id < 0 || row.id >= vocab)
        return Status::error("token id " + std::to_string(row.id) +
                             " is outside the vocabulary of " +
                             std::to_string(vocab));
      if (row.sequence < 0 || row.sequence >= n)
        return Status::error("sequence " + std::to_string(row.sequence) +
                             " is not one of the session's " +
                             std::to_string(n));
      if (row.position < 0 || row.position >= ctx)
        return Status::error("position " + std::to_string(row.position) +
                             " is outside the context of " +
                             std::to_string(ctx));
      tokenIds[i] = row.id;
      positions[i] = static_cast<int32_t>(row.sequence * ctx + row.position);
      if (row.logits)
        wanted.push_back(static_cast<int32_t>(i));
    }
    if (Status s = setInput(*step, step->tokensIndex, tokenIds.data(),
                            tokenIds.size() * sizeof(int32_t));
        !s)
      return s;
    if (Status s = setInput(*step, step->posIndex, positions.data(),
                            positions.size() * sizeof(int32_t));
        !s)
      return s;
    std::vector<float> out;
    if (!device) {
      if (Status s = interpret(*step, &out); !s)
        return s;
    } else {
      if (Status s = step->runner->run(); !s)
        return s;
      if (!wanted.empty()) {
        if (Status s = step->runner->readResult(0, scratch); !s)
          return s;
        out.resize(scratch.size() / sizeof(float));
        std::memcpy(out.data(), scratch.data(), out.size() * sizeof(float));
      }
    }
    if (!logits)
      return Status();
    for (int32_t at : wanted)
      logits->emplace_back(out.begin() + size_t(at) * vocab,
                           out.begin() + size_t(at + 1) * vocab);
    return Status();
  }

  Status checkRoom(size_t n) {
    if (pos + static_cast<int64_t>(n) > ctx)
      return Status::error("the context is full (" + std::to_string(ctx) +
                           " tokens); use a larger -c/--ctx-size");
    return Status();
  }

  Status feed(int32_t id, std::vector<float> *logits) {
    if (Status s = checkRoom(1); !s)
      return s;
    if (Status s = run(decode, &id, 1, logits); !s)
      return s;
    ++pos;
    return Status();
  }

  Status feedMany(const std::vector<int32_t> &ids,
                  std::vector<std::vector<float>> *logits, bool allRows) {
    if (Status s = checkRoom(ids.size()); !s)
      return s;
    const int64_t vocab = model->hparams().vocab;
    std::vector<float> rowsOut;
    size_t done = 0;
    // Every token's logits from a chunk that computes only its last
    // token's: run token by token instead.
    bool chunks = hasChunk && !(allRows && logits && chunk.lastIndex >= 0);
    while (done < ids.size()) {
      size_t n = std::min<size_t>(chunks ? chunk.rows : 1,
                                  ids.size() - done);
      bool last = done + n == ids.size();
      bool want = logits && (allRows || last);
      if (n == 1) {
        if (Status s = feed(ids[done], want ? &rowsOut : nullptr); !s)
          return s;
      } else {
        if (Status s = run(chunk, ids.data() + done, n,
                           want ? &rowsOut : nullptr);
            !s)
          return s;
        pos += n;
      }
      if (want && n > 1 && chunk.lastIndex >= 0) {
        logits->push_back(rowsOut); // the chunk's last token only
      } else if (want) {
        for (size_t r = allRows ? 0 : n - 1; r < n; ++r)
          logits->emplace_back(rowsOut.begin() + r * vocab,
                               rowsOut.begin() + (r + 1) * vocab);
      }
      done += n;
    }
    return Status();
  }
};

size_t hesper::models::reusablePrefix(const std::vector<int32_t> &cached,
                                      const std::vector<int32_t> &prompt) {
  size_t n = 0;
  while (n < cached.size() && n < prompt.size() && cached[n] == prompt[n])
    ++n;
  return prompt.empty() ? 0 : std::min(n, prompt.size() - 1);
}

Session::Session() : impl(std::make_unique<Impl>()) {}
Session::~Session() = default;

rt::Result<std::unique_ptr<Session>>
Session::create(const Model &model, rt::Device *device,
                const SessionOptions &options) {
  std::unique_ptr<Session> session(new Session());
  Impl &s = *session->impl;
  s.model = &model;
  s.device = device;
  s.options = options;
  s.ctx = options.contextSize > 0 ? options.contextSize
                                  : model.hparams().defaultContextSize();
  if (s.ctx > (int64_t(1) << 24))
    return Status::error("context size " + std::to_string(s.ctx) +
                         " is too large");
  if (options.batchSize < 1)
    return Status::error("the batch size must be at least 1, got " +
                         std::to_string(options.batchSize));
  if (options.sequences < 0 || options.sequences > 4096)
    return Status::error("the number of sequences must be between 0 and "
                         "4096, got " + std::to_string(options.sequences));
  if (options.sequences > 0) {
    // The caches' element indices (global position * KV width) are i32.
    int64_t widest = 0;
    for (int64_t l = 0; l < model.hparams().layers; ++l)
      widest = std::max(widest, model.hparams().layer(l).kvDim());
    if (s.ctx * (options.sequences + 1) * widest >= (int64_t(1) << 31))
      return Status::error(
          "the KV caches of " + std::to_string(options.sequences) +
          " sequences of " + std::to_string(s.ctx) +
          " positions are too large for one buffer; use fewer slots or a "
          "smaller context");
  }
  if (Status st = s.compile(); !st)
    return st;
  s.releaseCompiler();
  return session;
}

Status Session::feed(int32_t id, std::vector<float> *logits) {
  if (impl->options.sequences > 0)
    return Status::error("a session of several sequences runs batches "
                         "(runBatch)");
  return impl->feed(id, logits);
}
Status Session::runBatch(const std::vector<BatchRow> &rows,
                         std::vector<std::vector<float>> *logits) {
  return impl->runBatch(rows, logits);
}
int64_t Session::maxBatchRows() const {
  if (impl->options.sequences <= 0)
    return 0;
  return impl->batches.empty() ? impl->decode.rows : impl->batches.back().rows;
}
std::vector<int64_t> Session::batchRowCounts() const {
  std::vector<int64_t> out;
  if (impl->options.sequences <= 0)
    return out;
  out.push_back(impl->decode.rows);
  for (const Step &b : impl->batches)
    out.push_back(b.rows);
  return out;
}
Status Session::feedMany(const std::vector<int32_t> &ids,
                         std::vector<std::vector<float>> *logits,
                         bool allRows) {
  if (impl->options.sequences > 0)
    return Status::error("a session of several sequences runs batches "
                         "(runBatch)");
  return impl->feedMany(ids, logits, allRows);
}
int64_t Session::batchSize() const {
  return impl->hasChunk ? impl->chunk.rows : 1;
}
void Session::reset() { impl->pos = 0; }
void Session::rewind(int64_t position) {
  impl->pos = std::clamp<int64_t>(position, 0, impl->pos);
}
int64_t Session::position() const { return impl->pos; }
int64_t Session::contextSize() const { return impl->ctx; }
const SessionStats &Session::stats() const { return impl->stats; }
std::vector<double> Session::lastKernelTimesNs() const {
  return impl->decode.runner ? impl->decode.runner->lastKernelTimesNs()
                             : std::vector<double>();
}
std::vector<double> Session::kernelTimeTotalsNs(bool chunks) const {
  return chunks ? impl->chunkKernelTotalsNs : impl->kernelTotalsNs;
}
int64_t Session::timedTokens(bool chunks) const {
  return chunks ? impl->timedChunks : impl->timedTokens;
}
std::vector<std::string> Session::kernelNames(bool chunks) const {
  return chunks ? impl->chunk.kernelNames : impl->decode.kernelNames;
}
