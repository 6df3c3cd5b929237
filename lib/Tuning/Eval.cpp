//===- Eval.cpp - The evaluation suite ------------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Tuning/Eval.h"

#include "DeviceRuns.h"

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Execution/Execution.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Models/LlamaGraph.h"
#include "Hesper/Models/LlamaLayer.h"
#include "Hesper/Models/Model.h"

#include "llvm/Support/Path.h"
#include "Hesper/Target/Plan.h"

#include "hesper/runtime/Program.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::tune;
using hesper::circuit::GraphBuilder;
using hesper::exp::ExpBuilder;
namespace cir = hesper::circuit;

namespace {


struct LayerSize {
  const char *name;
  int64_t dim, ffn, heads, kvHeads;
};
// Qwen2.5 0.5B, Llama 3.2 1B and 3B, Llama 3.1 8B.
constexpr LayerSize kSizes[] = {{"0.5b", 896, 4864, 14, 2},
                                {"1b", 2048, 8192, 32, 8},
                                {"3b", 3072, 8192, 24, 8},
                                {"8b", 4096, 14336, 32, 8}};
constexpr int64_t kDecodePositions = 256;
constexpr int64_t kGemmRows = 16;
/// Rows of a prompt chunk's GEMM (llama.cpp's default n_ubatch).
constexpr int64_t kChunkRows = 512;

Type weightType(MLIRContext *context, StringRef name) {
  if (name == "f16")
    return Float16Type::get(context);
  if (name == "q8_0")
    return cir::Q8_0Type::get(context);
  if (name == "q4_k")
    return cir::Q4_KType::get(context);
  if (name == "q4_0")
    return cir::Q4_0Type::get(context);
  if (name == "q6_k")
    return cir::Q6_KType::get(context);
  return Float32Type::get(context);
}

/// x [rows, dim] ([dim] for one row) times a [ffn, dim] weight of `type`;
/// with `quantized`, x is quantized to q8_1 first (circuit.quantize) and
/// the bytes are multiplied in integers.
std::function<void(GraphBuilder &)> matmulBuild(int64_t rows, int64_t dim,
                                                int64_t ffn, std::string type,
                                                bool quantized = false) {
  return [=](GraphBuilder &g) {
    Value x = rows == 1 ? g.external("x", {dim}, g.f32())
                        : g.external("x", {rows, dim}, g.f32());
    if (quantized)
      x = g.quantize(x, cir::Q8_1Type::get(g.getContext()));
    Value w = g.external("w", {ffn, dim}, weightType(g.getContext(), type));
    g.output(g.matmul(x, w));
  };
}

/// Attention of 32 heads (8 KV heads, head size 128) for `rows` query rows
/// at the last `rows` positions of a cache of `ctx` (causal: row i sees
/// positions 0..ctx-rows+i; one row is a decode step over every position).
Workload attentionWorkload(std::string name, int64_t rows, int64_t ctx) {
  const int64_t heads = 32, kv = 8, hd = 128;
  Workload a;
  a.name = std::move(name);
  double positions = 0; // summed over the rows
  for (int64_t i = 0; i < rows; ++i)
    positions += double(ctx - rows + i + 1);
  a.flops = 4.0 * heads * hd * positions;
  a.build = [rows, ctx](GraphBuilder &g) {
    Value q = rows == 1 ? g.external("q", {heads * hd}, g.f32())
                        : g.external("q", {rows, heads * hd}, g.f32());
    Value k = g.external("k_cache", {ctx * kv * hd}, g.f32());
    Value v = g.external("v_cache", {ctx * kv * hd}, g.f32());
    // The first row's position; row i is at pos + i.
    Value pos = g.map(ValueRange{}, {1}, g.i32(),
                      [&](ExpBuilder &e, Value, ValueRange) {
                        return e.i32(ctx - rows);
                      });
    g.output(g.decodeAttention(q, k, v, pos, heads, kv, hd,
                               1.0 / std::sqrt(double(hd))));
  };
  return a;
}

/// Two flops per weight element and activation row of every matrix product
/// of `graph` (the decode step of a model: about twice its parameters).
double matmulFlops(cir::GraphOp graph) {
  double flops = 0;
  graph.walk([&](Operation *op) {
    if (auto experts = dyn_cast<cir::ExpertMatmulOp>(op)) {
      // Each row of ids multiplies one expert's [N, K] of every weight.
      double rows = double(experts.getIds().getType().getNumElements());
      for (Value w : experts.getWeights()) {
        auto type = cast<RankedTensorType>(w.getType());
        flops += 2.0 * rows * double(type.getDimSize(1) * type.getDimSize(2));
      }
      return;
    }
    if (!isa<cir::MatmulOp, cir::MultiMatmulOp, cir::GatedMatmulOp>(op))
      return;
    auto x = cast<RankedTensorType>(op->getOperand(0).getType());
    double rows = double(x.getNumElements()) / x.getShape().back();
    for (Value w : op->getOperands().drop_front()) {
      auto type = dyn_cast<RankedTensorType>(w.getType());
      if (type && type.getRank() == 2 && type.getShape().back() ==
                                              x.getShape().back())
        flops += 2.0 * rows * double(type.getNumElements());
    }
  });
  return flops;
}

/// The decode step of each model of `paths`.
FailureOr<std::vector<Workload>>
modelWorkloads(const std::vector<std::string> &paths, std::string &error) {
  std::vector<Workload> out;
  for (const std::string &path : paths) {
    auto loaded = models::Model::load(path);
    if (!loaded) {
      error = loaded.status().message();
      return failure();
    }
    std::shared_ptr<models::Model> model = std::move(*loaded);
    Workload w;
    w.name = "decode_model_" + llvm::sys::path::stem(path).str();
    w.quick = true;
    w.build = [model](GraphBuilder &g) {
      models::buildDecodeGraph(g, *model, kModelContext);
    };
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<Workload> allWorkloads() {
  std::vector<Workload> out;
  for (const LayerSize &s : kSizes) {
    for (const char *type : {"f32", "f16", "q8_0", "q4_k"}) {
      if (StringRef(type) == "q4_k" && s.dim % 256 != 0)
        continue;
      bool quick = StringRef(s.name) == "0.5b" &&
                   (StringRef(type) == "f32" || StringRef(type) == "q8_0");
      for (int64_t rows : {int64_t(1), kGemmRows}) {
        Workload w;
        w.name = (rows == 1 ? "matvec_" : "gemm_") + std::string(s.name) +
                 "_" + type;
        w.quick = quick && (rows == 1 || StringRef(type) == "f32");
        w.flops = 2.0 * rows * s.ffn * s.dim;
        int64_t dim = s.dim, ffn = s.ffn;
        std::string t = type;
        w.build = matmulBuild(rows, dim, ffn, t);
        // The same matvec with x quantized to q8_1 first and the bytes
        // multiplied in integers (hesper-run --quantize-activations; dp4a
        // on NVIDIA, vpdpbusd on CPUs with VNNI).
        if (rows == 1 && t != "f32" && t != "f16") {
          Workload q = w;
          q.name = w.name + "_q8_1";
          q.quick = false;
          q.build = matmulBuild(rows, dim, ffn, t, /*quantized=*/true);
          out.push_back(std::move(w));
          out.push_back(std::move(q));
          continue;
        }
        out.push_back(std::move(w));
      }
    }
    // A prompt chunk's GEMM: 512 rows of x against the FFN matrix, in each
    // weight format of the files people run.
    for (const char *type : {"f32", "f16", "q8_0", "q4_0", "q4_k", "q6_k"}) {
      if (StringRef(type).ends_with("_k") && s.dim % 256 != 0)
        continue;
      Workload w;
      w.name = "gemm512_" + std::string(s.name) + "_" + type;
      w.flops = 2.0 * kChunkRows * s.ffn * s.dim;
      w.build = matmulBuild(kChunkRows, s.dim, s.ffn, type);
      // q8_0 and q4_0 again with x quantized to q8_1 first (the quantize
      // kernel's time included): the CPU target's integer register tile,
      // its default for these formats.
      if (StringRef(type) == "q8_0" || StringRef(type) == "q4_0") {
        Workload q = w;
        q.name = w.name + "_q8_1";
        q.build = matmulBuild(kChunkRows, s.dim, s.ffn, type,
                              /*quantized=*/true);
        out.push_back(std::move(w));
        out.push_back(std::move(q));
        continue;
      }
      out.push_back(std::move(w));
    }
    // One decode step of a whole llama layer (norms, Q/K/V, RoPE, the KV
    // cache write, attention over 256 positions, the output projection,
    // SwiGLU), with q8_0 weights (q4_k where the width allows).
    for (const char *type : {"q8_0", "q4_k"}) {
      if (StringRef(type) == "q4_k" && s.dim % 256 != 0)
        continue;
      Workload layer;
      layer.name = "decode_layer_" + std::string(s.name) + "_" + type;
      layer.quick = StringRef(s.name) == "0.5b";
      int64_t kv = s.dim / s.heads * s.kvHeads;
      layer.flops = 2.0 * (2 * s.dim * s.dim + 2 * kv * s.dim +
                           3 * s.ffn * s.dim);
      LayerSize size = s;
      std::string t = type;
      layer.build = [size, t](GraphBuilder &g) {
        models::LlamaLayerConfig c;
        c.dim = size.dim;
        c.heads = size.heads;
        c.kvHeads = size.kvHeads;
        c.ffnDim = size.ffn;
        c.maxSeq = kDecodePositions;
        c.weightType = weightType(g.getContext(), t);
        // The sizes are the suite's own: a failure (emitted on the graph)
        // would be a bug in the table above.
        (void)models::buildLlamaDecodeLayer(g, c);
      };
      out.push_back(std::move(layer));
    }
    Workload norm;
    norm.name = "rmsnorm_" + std::to_string(s.dim);
    norm.quick = StringRef(s.name) == "0.5b";
    norm.flops = 4.0 * s.dim;
    int64_t dim = s.dim;
    norm.build = [dim](GraphBuilder &g) {
      Value x = g.external("x", {dim}, g.f32());
      Value w = g.external("w", {dim}, g.f32());
      g.output(g.rmsNorm(x, w, 1e-6));
    };
    out.push_back(std::move(norm));
  }
  Workload softmax;
  softmax.name = "softmax_32000";
  softmax.quick = true;
  softmax.flops = 4.0 * 32000;
  softmax.build = [](GraphBuilder &g) {
    g.output(g.softmax(g.external("x", {32000}, g.f32())));
  };
  out.push_back(std::move(softmax));
  // Decode attention at the last position (every cached row is read).
  for (int64_t ctx : {128, 512, 2048}) {
    Workload a = attentionWorkload("attention_ctx" + std::to_string(ctx), 1,
                                   ctx);
    a.quick = ctx == 128;
    out.push_back(std::move(a));
  }
  // A prompt chunk's attention: 512 query rows at the cache's last 512
  // positions.
  for (int64_t ctx : {kChunkRows, 4 * kChunkRows})
    out.push_back(attentionWorkload(
        "attention_chunk512_ctx" + std::to_string(ctx), kChunkRows, ctx));
  return out;
}


struct Timing {
  double minUs = 0, medianUs = 0, noise = 0;
};

/// Runs `runner` `runs` times after one warm-up run; device time per run
/// (the sum of its launches).
FailureOr<Timing> time(rt::ProgramRunner &runner, unsigned runs,
                       Operation *where) {
  if (failed(devrun::stepNs(runner, where)))
    return failure();
  std::vector<double> us;
  for (unsigned r = 0; r < runs; ++r) {
    auto ns = devrun::stepNs(runner, where);
    if (failed(ns))
      return failure();
    us.push_back(*ns / 1000);
  }
  Timing t;
  t.minUs = *std::min_element(us.begin(), us.end());
  t.medianUs = devrun::median(us);
  t.noise = devrun::spread(us);
  return t;
}

} // namespace

FailureOr<std::vector<Workload>>
hesper::tune::selectWorkloads(const EvalOptions &options, std::string &error) {
  auto models = modelWorkloads(options.models, error);
  if (failed(models))
    return failure();
  std::vector<Workload> selected;
  for (Workload &w : llvm::concat<Workload>(allWorkloads(), *models))
    if ((!options.quick || w.quick) &&
        StringRef(w.name).contains(options.filter))
      selected.push_back(std::move(w));
  return selected;
}

OwningOpRef<ModuleOp> hesper::tune::buildWorkload(MLIRContext *context,
                                                  StringRef name,
                                                  const EvalOptions &options,
                                                  std::string &error) {
  EvalOptions all = options;
  all.quick = false;
  all.filter.clear();
  auto selected = selectWorkloads(all, error);
  if (failed(selected))
    return nullptr;
  for (const Workload &w : *selected)
    if (w.name == name) {
      GraphBuilder g(context, "workload");
      w.build(g);
      return g.finish();
    }
  error = "no workload named '" + name.str() + "' (hesper-eval --list)";
  return nullptr;
}

std::optional<DataSheetPeak>
hesper::tune::dataSheetPeak(llvm::StringRef deviceName) {
  // NVIDIA's data sheets, FP16 Tensor Core without sparsity. The more
  // specific names first: an H100 PCIe or NVL is not an SXM part.
  static const struct {
    const char *name; ///< in the CUDA device name
    DataSheetPeak peak;
  } parts[] = {
      {"H100 PCIe", {756000, "H100 PCIe"}},
      {"H100 NVL", {835500, "H100 NVL"}},
      {"H100", {989400, "H100 SXM"}},
      {"H200 NVL", {835500, "H200 NVL"}},
      {"H200", {989400, "H200 SXM"}},
      {"A100", {312000, "A100"}},
      {"L40S", {362050, "L40S"}},
      {"L4", {121000, "L4"}},
  };
  for (const auto &p : parts)
    if (deviceName.contains(p.name))
      return p.peak;
  return std::nullopt;
}

FailureOr<EvalReport> hesper::tune::runEval(
    MLIRContext *context, rt::Device &device, const EvalOptions &options,
    ArrayRef<Workload> selected,
    const std::function<void(size_t, size_t, const std::string &)>
        &progress) {
  const rt::DeviceInfo &info = device.info();
  EvalReport report;
  report.device = info.name;
  report.deviceId = info.cacheId;
  report.compiler = compilerVersion();
  unsigned runs = std::max(options.runs, 3u);
  if (info.backend == rt::Backend::Cpu) {
    report.peakGflops = measureCpuFmaPeakGflops(info.threads);
    report.peakKind = "f32 FMA peak, measured";
  } else if (info.backend == rt::Backend::Cuda) {
    if (std::optional<DataSheetPeak> peak = dataSheetPeak(info.name)) {
      report.peakGflops = peak->gflops;
      report.peakKind = std::string("f16 tensor-core peak of the ") +
                        peak->part + " (data sheet, dense)";
    }
  }

  // The device's copy bandwidth: the faster of a copy kernel (y = x) and
  // the driver's own copy, over more bytes than the device's last-level
  // cache holds.
  const size_t copyBytes = rt::copyBandwidthBytes(info);
  {
    auto driver = rt::measureCopyGbps(device, copyBytes, runs);
    if (!driver) {
      llvm::errs() << "error: measuring the driver's copy: "
                   << driver.status().message() << "\n";
      return failure();
    }
    report.driverCopyGbps = *driver;
  }
  {
    // The kernel's lanes fit one grid dimension (65535 workgroups of 256
    // lanes: 4095 rows of 4096 f32, 64 MiB less 16 KiB).
    const int64_t rows =
        std::min<int64_t>(static_cast<int64_t>(copyBytes / (4096 * 4)), 4095);
    const double kernelBytes = static_cast<double>(rows) * 4096 * 4;
    GraphBuilder g(context, "copy");
    Value x = g.external("x", {rows, 4096}, g.f32());
    Value y = g.map(x, [](ExpBuilder &, Value v) { return v; });
    // On a GPU each lane copies 16 bytes (one 128-bit load and store):
    // more bytes in flight per lane than a 4-byte copy.
    if (info.type != rt::DeviceType::Cpu) {
      Builder attrs(context);
      y.getDefiningOp()->setAttr(
          cir::kKnobsAttrName,
          attrs.getDictionaryAttr(attrs.getNamedAttr(
              "vector_width", attrs.getI64IntegerAttr(4))));
    }
    g.output(y);
    auto module = g.finish();
    auto program = compileForDevice(*module, "copy", info, {});
    if (failed(program))
      return failure();
    auto runner = devrun::loadRunner(*module, device, *program, true, {});
    if (failed(runner))
      return failure();
    auto t = time(**runner, runs, *module);
    if (failed(t))
      return failure();
    report.copyKernelGbps = 2.0 * kernelBytes / (t->medianUs * 1e3);
    report.copyGbps = std::max(report.copyKernelGbps, report.driverCopyGbps);
  }

  for (auto [index, w] : llvm::enumerate(selected)) {
    if (progress)
      progress(index, selected.size(), w.name);
    GraphBuilder g(context, "workload");
    w.build(g);
    auto module = g.finish();
    if (!module)
      return failure();
    cir::GraphOp graph = g.getGraph();
    auto program = compileForDevice(*module, "workload", info, {});
    if (failed(program))
      return failure();
    std::vector<interp::HostTensor> inputs = devrun::randomInputs(graph, 1);
    auto runner = devrun::loadRunner(*module, device, *program, true, inputs);
    if (failed(runner))
      return failure();
    // Bytes moved: every argument read, every result written.
    double bytes = 0;
    for (Type t : llvm::concat<const Type>(graph.getArgumentTypes(),
                                           graph.getResultTypes()))
      bytes += static_cast<double>(
          cir::getStorageBytes(cast<RankedTensorType>(t)));
    auto timing = time(**runner, runs, *module);
    if (failed(timing))
      return failure();

    // Against the interpreter, within --check's tolerances.
    WorkloadResult r;
    r.name = w.name;
    auto want = devrun::interpret(graph, inputs);
    if (failed(want))
      return failure();
    auto verified = devrun::compareWithInterpreter(**runner, graph, *want);
    if (failed(verified))
      return failure();
    r.maxError = verified->maxError;
    r.correct = verified->ok;
    r.minUs = timing->minUs;
    r.medianUs = timing->medianUs;
    r.noise = timing->noise;
    r.gbps = bytes / (r.medianUs * 1e3);
    r.gflops = (w.flops ? w.flops : matmulFlops(graph)) / (r.medianUs * 1e3);
    r.copyFraction = report.copyGbps > 0 ? r.gbps / report.copyGbps : 0;
    report.workloads.push_back(r);
  }
  return report;
}
