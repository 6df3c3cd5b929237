//===- CountDispatches.cpp - Report the kernels a graph launches ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITCOUNTDISPATCHESPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;

int64_t hesper::circuit::countDispatches(GraphOp graph) {
  int64_t n = 0;
  for (Operation &op : graph.getBody().front())
    n += isDispatchOp(&op);
  return n;
}

namespace {
struct CircuitCountDispatchesPass
    : circuit::impl::CircuitCountDispatchesPassBase<
          CircuitCountDispatchesPass> {
  void runOnOperation() override {
    getOperation().walk([&](GraphOp graph) { report(graph); });
    markAllAnalysesPreserved();
  }

  void report(GraphOp graph) {
    llvm::StringMap<int64_t> byName;
    SmallVector<StringRef> order;
    for (Operation &op : graph.getBody().front()) {
      if (!isDispatchOp(&op))
        continue;
      StringRef name = op.getName().getStringRef();
      if (byName[name]++ == 0)
        order.push_back(name);
    }
    int64_t total = countDispatches(graph);
    numDispatches += total;
    llvm::sort(order);
    llvm::outs() << "graph @" << graph.getSymName() << ": " << total
                 << " dispatches";
    for (auto [i, name] : llvm::enumerate(order))
      llvm::outs() << (i == 0 ? " (" : ", ") << byName[name] << " "
                   << name.drop_front(strlen("circuit."));
    llvm::outs() << (order.empty() ? "\n" : ")\n");
  }
};
} // namespace
