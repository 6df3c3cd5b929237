//===- hesper-run.cpp - Build and run Hesper programs --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-run is the user-facing runner. In this version it builds one of the
// example graphs with the C++ builder API, verifies it, simplifies it with the
// canonicalizer and CSE, and reports what it would launch: the graph's IR and
// the number of dispatch-level primitives (kernels before fusion). Execution
// on the Vulkan and CUDA backends arrives with the runtime.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

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
  return 0;
}
