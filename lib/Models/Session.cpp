//===- Session.cpp - A model running on a device --------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Session.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Execution/Execution.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/InitAllPasses.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Models/LlamaGraph.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

using namespace mlir;
using namespace hesper;
using namespace hesper::models;
using rt::Status;

static double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

/// Where the bytes of a graph argument come from.
enum class ArgKind { Weight, Embedding, Position, RopeFreqs, Cache };

struct ArgBinding {
  ArgKind kind;
  std::string name;
};

static rt::Result<ArgBinding> classify(const std::string &name) {
  if (name == "x")
    return ArgBinding{ArgKind::Embedding, name};
  if (name == "pos")
    return ArgBinding{ArgKind::Position, name};
  if (name == "rope_freqs")
    return ArgBinding{ArgKind::RopeFreqs, name};
  if (name.rfind("cache_", 0) == 0)
    return ArgBinding{ArgKind::Cache, name};
  return ArgBinding{ArgKind::Weight, name};
}

struct Session::Impl {
  const Model *model = nullptr;
  rt::Device *device = nullptr;
  SessionOptions options;
  int64_t ctx = 0;
  int64_t pos = 0;
  SessionStats stats;

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  circuit::GraphOp graph;

  // Device path.
  std::unique_ptr<rt::ProgramRunner> runner;
  std::vector<std::string> kernelNames;
  // Interpreter path: the graph's arguments, in order.
  std::vector<interp::HostTensor> args;

  std::vector<double> kernelTotalsNs;
  int64_t timedTokens = 0;

  std::vector<ArgBinding> bindings;
  int xIndex = -1, posIndex = -1;
  std::vector<float> embedding;
  std::vector<uint8_t> scratch;

  Impl() : context(registry()) {}

  static DialectRegistry registry() {
    DialectRegistry r;
    hesper::registerAllDialects(r);
    return r;
  }

  /// Bytes of argument `i` on the host, other than the per-token ones.
  Status hostBytes(const ArgBinding &b, size_t bytes,
                   std::vector<uint8_t> &out) {
    out.assign(bytes, 0);
    switch (b.kind) {
    case ArgKind::Weight: {
      const rt::GgufTensor &t = model->weight(b.name);
      if (t.bytes > bytes)
        return Status::error("weight '" + b.name + "' has " +
                             std::to_string(t.bytes) +
                             " bytes, the program's buffer " +
                             std::to_string(bytes));
      std::memcpy(out.data(), t.data, t.bytes);
      return Status();
    }
    case ArgKind::RopeFreqs: {
      std::vector<float> f = model->ropeFrequencies();
      std::memcpy(out.data(), f.data(),
                  std::min(bytes, f.size() * sizeof(float)));
      return Status();
    }
    default:
      return Status(); // zeros: caches, and x/pos until the first token
    }
  }

  Status compile() {
    // Diagnostics become the Status message.
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      if (!diagnostics.empty())
        diagnostics += "; ";
      diagnostics += d.str();
      return success();
    });
    double start = nowMs();
    {
      circuit::GraphBuilder g(&context, "decode");
      buildDecodeGraph(g, *model, ctx);
      module = g.finish();
    }
    if (!module)
      return Status::error("the decode graph does not verify: " + diagnostics);
    graph = *module->getOps<circuit::GraphOp>().begin();
    stats.dispatchOpsUnfused = circuit::countDispatches(graph);

    for (BlockArgument arg : graph.getBody().front().getArguments()) {
      auto name = graph.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     "circuit.name");
      auto binding = classify(name.getValue().str());
      if (binding->kind == ArgKind::Embedding)
        xIndex = arg.getArgNumber();
      if (binding->kind == ArgKind::Position)
        posIndex = arg.getArgNumber();
      bindings.push_back(*binding);
    }

    if (!device) {
      // The interpreter runs the fused graph (fusion is translation-
      // validated against the source in the test suite).
      if (options.fuse) {
        PassManager pm(&context);
        circuit::buildHesperFusePipeline(pm);
        if (failed(pm.run(*module)))
          return Status::error("hesper-fuse failed: " + diagnostics);
        graph = *module->getOps<circuit::GraphOp>().begin();
      }
      stats.kernelsPerToken = circuit::countDispatches(graph);
      stats.compileMs = nowMs() - start;
      double uploadStart = nowMs();
      for (auto [i, type] :
           llvm::enumerate(graph.getFunctionType().getInputs())) {
        interp::HostTensor t(cast<RankedTensorType>(type));
        if (Status s = hostBytes(bindings[i], t.bytes().size(), t.bytes());
            !s)
          return s;
        stats.deviceBytes += t.bytes().size();
        args.push_back(std::move(t));
      }
      stats.uploadMs = nowMs() - uploadStart;
      return Status();
    }

    static std::once_flag passes;
    std::call_once(passes, [] { hesper::registerAllPasses(); });
    CompileOptions compileOptions;
    compileOptions.fuse = options.fuse;
    compileOptions.dumpDir = options.dumpDir;
    FailureOr<rt::Program> program =
        compileForDevice(*module, "decode", device->info(), compileOptions);
    if (failed(program))
      return Status::error("compiling the decode step failed: " +
                           diagnostics);
    stats.compileMs = nowMs() - start;
    stats.kernelsPerToken = program->launches.size();
    stats.distinctKernels = program->kernels.size();
    for (const rt::ProgramLaunch &l : program->launches)
      kernelNames.push_back(program->kernels[l.kernel].name);
    for (const rt::ProgramBuffer &b : program->buffers)
      stats.deviceBytes += b.bytes;

    double uploadStart = nowMs();
    auto created =
        rt::ProgramRunner::create(*device, *program, options.timing);
    if (!created)
      return created.status();
    runner = std::move(*created);
    for (uint32_t i = 0; i < program->numArguments; ++i) {
      const rt::ProgramBuffer &buffer = program->buffers[i];
      auto binding = classify(buffer.name);
      if (Status s = hostBytes(*binding, buffer.bytes, scratch); !s)
        return s;
      if (Status s = runner->setArgument(i, scratch.data(), scratch.size());
          !s)
        return s;
    }
    scratch.clear();
    scratch.shrink_to_fit();
    stats.uploadMs = nowMs() - uploadStart;
    return Status();
  }

  Status setSmall(int index, const void *data, size_t bytes) {
    if (!device) {
      std::memcpy(args[index].bytes().data(), data, bytes);
      return Status();
    }
    return runner->setArgument(index, data, bytes);
  }

  Status feed(int32_t id, std::vector<float> *logits) {
    if (pos >= ctx)
      return Status::error("the context is full (" + std::to_string(ctx) +
                           " tokens); use a larger -c/--ctx-size");
    embedding.resize(model->hparams().dim);
    if (Status s = model->embed(id, embedding.data()); !s)
      return s;
    int32_t p = static_cast<int32_t>(pos);
    if (Status s = setSmall(xIndex, embedding.data(),
                            embedding.size() * sizeof(float));
        !s)
      return s;
    if (Status s = setSmall(posIndex, &p, sizeof(p)); !s)
      return s;

    if (!device) {
      std::string diagnostics;
      ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
        diagnostics = d.str();
        return success();
      });
      auto results = interp::runGraph(graph, args);
      if (failed(results))
        return Status::error("interpreter: " + diagnostics);
      ++pos;
      if (logits)
        *logits = (*results)[0].toFloats();
      return Status();
    }
    if (Status s = runner->run(); !s)
      return s;
    ++pos;
    if (options.timing) {
      std::vector<double> times = runner->lastKernelTimesNs();
      if (!times.empty()) {
        kernelTotalsNs.resize(times.size(), 0.0);
        for (size_t k = 0; k < times.size(); ++k)
          kernelTotalsNs[k] += times[k];
        ++timedTokens;
      }
    }
    if (logits) {
      if (Status s = runner->readResult(0, scratch); !s)
        return s;
      logits->resize(model->hparams().vocab);
      std::memcpy(logits->data(), scratch.data(),
                  logits->size() * sizeof(float));
    }
    return Status();
  }
};

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
  s.ctx = options.contextSize > 0
              ? options.contextSize
              : std::min<int64_t>(model.hparams().contextLength, 4096);
  if (s.ctx > (int64_t(1) << 24))
    return Status::error("context size " + std::to_string(s.ctx) +
                         " is too large");
  if (Status st = s.compile(); !st)
    return st;
  return session;
}

Status Session::feed(int32_t id, std::vector<float> *logits) {
  return impl->feed(id, logits);
}
void Session::reset() { impl->pos = 0; }
int64_t Session::position() const { return impl->pos; }
int64_t Session::contextSize() const { return impl->ctx; }
const SessionStats &Session::stats() const { return impl->stats; }
std::vector<double> Session::lastKernelTimesNs() const {
  return impl->runner ? impl->runner->lastKernelTimesNs()
                      : std::vector<double>();
}
std::vector<double> Session::kernelTimeTotalsNs() const {
  return impl->kernelTotalsNs;
}
int64_t Session::timedTokens() const { return impl->timedTokens; }
std::vector<std::string> Session::kernelNames() const {
  return impl->kernelNames;
}
