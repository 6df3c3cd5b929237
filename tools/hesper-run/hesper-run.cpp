//===- hesper-run.cpp - Build and run Hesper programs --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-run is the user-facing runner. In this version it builds one of the
// example graphs with the C++ builder API, verifies it, simplifies it with the
// canonicalizer and CSE, reports its dispatch-level primitives (kernels before
// fusion), then evaluates it with the reference interpreter on seeded inputs
// and checks the result against a direct double-precision evaluation of the
// same formula. Execution on the Vulkan and CUDA backends arrives with the
// runtime.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Interpreter/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;

namespace {
enum class Example { RmsNorm, Softmax, LayerNorm, Rope };
} // namespace

static llvm::cl::opt<Example> example(
    "example", llvm::cl::desc("Graph to build"),
    llvm::cl::values(
        clEnumValN(Example::RmsNorm, "rmsnorm",
                   "y = x * rsqrt(mean(x^2) + eps) * w"),
        clEnumValN(Example::Softmax, "softmax", "numerically stable softmax"),
        clEnumValN(Example::LayerNorm, "layernorm", "two-pass layer norm"),
        clEnumValN(Example::Rope, "rope", "NeoX rotary embedding of K")),
    llvm::cl::init(Example::RmsNorm));
static llvm::cl::opt<int64_t> dim("dim", llvm::cl::desc("Row length"),
                                  llvm::cl::init(256));
static llvm::cl::opt<int64_t> rows("rows", llvm::cl::desc("Number of rows"),
                                   llvm::cl::init(1));
static llvm::cl::opt<bool> quiet("quiet",
                                 llvm::cl::desc("Print only the summary"),
                                 llvm::cl::init(false));

/// Builds the chosen example; returns null after printing diagnostics.
static OwningOpRef<ModuleOp> buildExample(MLIRContext &context) {
  SmallVector<int64_t> shape;
  if (rows > 1)
    shape.push_back(rows);
  shape.push_back(dim);
  GraphBuilder g(&context, "main");
  Value x = g.external("x", shape, g.f32());
  switch (example) {
  case Example::RmsNorm: {
    Value w = g.external("w", {dim}, g.f32());
    g.output(g.rmsNorm(x, w, 1e-6));
    break;
  }
  case Example::Softmax:
    g.output(g.softmax(x));
    break;
  case Example::LayerNorm: {
    Value w = g.external("w", {dim}, g.f32());
    Value b = g.external("b", {dim}, g.f32());
    g.output(g.layerNorm(x, w, b, 1e-5));
    break;
  }
  case Example::Rope: {
    Value pos = g.external("pos", {1}, g.i32());
    g.output(g.rope(x, pos, dim, 1e6, RopeStyle::NeoX));
    break;
  }
  }
  return g.finish();
}

static void printCounts(ModuleOp module, StringRef stage) {
  llvm::StringMap<int> counts;
  int dispatches = 0;
  module.walk([&](Operation *op) {
    if (isDispatchOp(op)) {
      ++dispatches;
      ++counts[op->getName().getStringRef()];
    }
  });
  llvm::outs() << stage << ": " << dispatches << " dispatch op(s)";
  SmallVector<StringRef> names;
  for (auto &entry : counts)
    names.push_back(entry.getKey());
  llvm::sort(names);
  for (StringRef name : names)
    llvm::outs() << (name == names.front() ? " (" : ", ") << counts[name]
                 << " " << name;
  llvm::outs() << (names.empty() ? "\n" : ")\n");
}

/// Seeded example inputs: x[i] = 2 sin(0.37 i + 0.1), w[i] = 1 + i/D,
/// b[i] = 0.01 i, pos = 7.
static float inputX(int64_t i) { return 2.0f * std::sin(0.37f * i + 0.1f); }
static float inputW(int64_t i) { return 1.0f + float(i % dim) / dim; }
static float inputB(int64_t i) { return 0.01f * float(i % dim); }
static constexpr int32_t kPos = 7;

/// The example's formula in double precision, row by row.
static std::vector<double> referenceOutput() {
  int64_t d = dim, n = rows * dim;
  std::vector<double> out(n);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * d;
    double sum = 0, sumSq = 0, max = -INFINITY;
    for (int64_t i = 0; i < d; ++i) {
      double v = inputX(base + i);
      sum += v;
      sumSq += v * v;
      max = std::max(max, v);
    }
    double mean = sum / d, var = 0, expSum = 0;
    for (int64_t i = 0; i < d; ++i) {
      double c = inputX(base + i) - mean;
      var += c * c;
      expSum += std::exp(inputX(base + i) - max);
    }
    var /= d;
    for (int64_t i = 0; i < d; ++i) {
      double x = inputX(base + i);
      switch (example) {
      case Example::RmsNorm:
        out[base + i] = x / std::sqrt(sumSq / d + 1e-6) * inputW(i);
        break;
      case Example::Softmax:
        out[base + i] = std::exp(x - max) / expSum;
        break;
      case Example::LayerNorm:
        out[base + i] =
            (x - mean) / std::sqrt(var + 1e-5) * inputW(i) + inputB(i);
        break;
      case Example::Rope: {
        int64_t half = d / 2, j = i % half;
        double theta = kPos * std::pow(1e6, -2.0 * j / d);
        double other = inputX(base + (i < half ? i + half : i - half));
        out[base + i] = i < half ? x * std::cos(theta) - other * std::sin(theta)
                                 : x * std::cos(theta) + other * std::sin(theta);
        break;
      }
      }
    }
  }
  return out;
}

/// Runs the graph in the reference interpreter and compares it with the
/// double-precision formula; returns false on a mismatch.
static bool interpretAndCheck(ModuleOp module) {
  using hesper::interp::HostTensor;
  auto graph = *module.getOps<GraphOp>().begin();
  MLIRContext *context = module.getContext();
  std::vector<HostTensor> args;
  for (BlockArgument arg : graph.getBody().front().getArguments()) {
    HostTensor t(cast<RankedTensorType>(arg.getType()));
    StringRef name =
        graph.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "circuit.name")
            .getValue();
    for (int64_t i = 0, e = t.getNumElements(); i < e; ++i) {
      if (name == "pos")
        t.setInt(i, kPos);
      else
        t.setFloat(i, name == "x" ? inputX(i)
                                  : name == "w" ? inputW(i) : inputB(i));
    }
    args.push_back(std::move(t));
  }
  (void)context;
  auto results = hesper::interp::runGraph(graph, args);
  if (failed(results))
    return false;
  std::vector<float> got = (*results)[0].toFloats();
  std::vector<double> want = referenceOutput();
  double maxError = 0, checksum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    maxError = std::max(maxError, std::fabs(got[i] - want[i]));
    checksum += got[i];
  }
  llvm::outs() << "interpreted: " << got.size() << " outputs, y[0..3] =";
  for (size_t i = 0; i < std::min<size_t>(4, got.size()); ++i)
    llvm::outs() << " " << llvm::format("%.6f", got[i]);
  llvm::outs() << ", sum = " << llvm::format("%.6f", checksum) << "\n";
  const double tolerance = 1e-4;
  llvm::outs() << "reference check: max |interpreter - formula| = "
               << llvm::format("%.3g", maxError) << " (tolerance "
               << llvm::format("%.0e", tolerance) << ") "
               << (maxError <= tolerance ? "PASS" : "FAIL") << "\n";
  return maxError <= tolerance;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "hesper-run: build an example Circuit graph with the builder API, "
      "verify and simplify it\n");
  if (dim <= 0 || rows <= 0) {
    llvm::errs() << "error: --dim and --rows must be positive\n";
    return 1;
  }
  if (example == Example::Rope && dim % 2 != 0) {
    llvm::errs() << "error: rope needs an even --dim (the head size), got "
                 << dim << "\n";
    return 1;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module = buildExample(context);
  if (!module) {
    llvm::errs() << "error: the example graph failed to verify\n";
    return 1;
  }
  if (!quiet) {
    llvm::outs() << "// Built with the GraphBuilder API:\n";
    module->print(llvm::outs());
    llvm::outs() << "\n";
  }
  printCounts(*module, "built");

  PassManager pm(&context);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*module))) {
    llvm::errs() << "error: canonicalization failed\n";
    return 1;
  }
  if (!quiet) {
    llvm::outs() << "// After canonicalize, cse:\n";
    module->print(llvm::outs());
    llvm::outs() << "\n";
  }
  printCounts(*module, "canonicalized");
  llvm::outs() << "verified: ok\n";
  if (!interpretAndCheck(*module)) {
    llvm::errs() << "error: the interpreted result does not match the "
                    "formula\n";
    return 1;
  }
  return 0;
}
