//===- ExampleMode.cpp - hesper-run --example ------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Builds an example graph (lib/Models/ExampleGraphs.cpp) with the
// GraphBuilder API, prints it before and after canonicalization and fusion
// with its dispatch counts, validates the fusion against the unfused graph,
// and checks the interpreter's result against the example's formula.
//
//===----------------------------------------------------------------------===//

#include "ExampleMode.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Interpreter/Validate.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using hesper::models::ExampleGraph;
using hesper::models::ExampleShape;

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

/// Runs the graph in the reference interpreter and compares it with the
/// double-precision formula; returns false on a mismatch.
static bool interpretAndCheck(ModuleOp module, ExampleGraph example,
                              const ExampleShape &shape) {
  using hesper::interp::HostTensor;
  auto graph = *module.getOps<GraphOp>().begin();
  std::vector<HostTensor> args;
  for (BlockArgument arg : graph.getBody().front().getArguments()) {
    HostTensor t(cast<RankedTensorType>(arg.getType()));
    StringRef name =
        graph.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "circuit.name")
            .getValue();
    for (int64_t i = 0, e = t.getNumElements(); i < e; ++i) {
      double value = hesper::models::exampleInput(name, i, shape);
      if (name == "pos")
        t.setInt(i, static_cast<int32_t>(value));
      else
        t.setFloat(i, static_cast<float>(value));
    }
    args.push_back(std::move(t));
  }
  auto results = hesper::interp::runGraph(graph, args);
  if (failed(results))
    return false;
  std::vector<float> got = (*results)[0].toFloats();
  std::vector<double> want =
      hesper::models::exampleReference(example, shape);
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

int hesper::run::runExampleMode(ExampleGraph example, const ExampleShape &shape,
                                bool quiet) {
  if (example == ExampleGraph::Rope && shape.dim % 2 != 0) {
    llvm::errs() << "error: rope needs an even --dim (the head size), got "
                 << shape.dim << "\n";
    return 1;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module =
      hesper::models::buildExampleGraph(context, example, shape);
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

  // Fuse a copy and check it against the unfused graph.
  OwningOpRef<ModuleOp> fusedModule = module->clone();
  PassManager fusePm(&context);
  hesper::circuit::buildHesperFusePipeline(fusePm);
  if (failed(fusePm.run(*fusedModule))) {
    llvm::errs() << "error: fusion failed\n";
    return 1;
  }
  if (!quiet && example == ExampleGraph::LlamaLayer) {
    llvm::outs() << "// After hesper-fuse:\n";
    fusedModule->print(llvm::outs());
    llvm::outs() << "\n";
  }
  printCounts(*fusedModule, "fused");
  auto report = hesper::interp::validateTransform(
      *module->getOps<GraphOp>().begin(),
      *fusedModule->getOps<GraphOp>().begin());
  if (failed(report) || !report->matches) {
    llvm::errs() << "error: the fused graph does not match the source"
                 << (succeeded(report) ? ": " + report->firstMismatch : "")
                 << "\n";
    return 1;
  }
  llvm::outs() << "fusion validated: " << report->compared
               << " values compared, max error "
               << llvm::format("%.3g", report->maxError) << "\n";
  if (example == ExampleGraph::LlamaLayer)
    return 0;
  if (!interpretAndCheck(*module, example, shape)) {
    llvm::errs() << "error: the interpreted result does not match the "
                    "formula\n";
    return 1;
  }
  return 0;
}
