//===- AutodiffPass.cpp - The circuit-autodiff pass -----------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Transforms/Autodiff.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "Hesper/Dialect/Exp/IR/Exp.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITAUTODIFFPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;

namespace {
struct CircuitAutodiffPass
    : circuit::impl::CircuitAutodiffPassBase<CircuitAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<GraphOp> graphs;
    for (auto graph : getOperation().getOps<GraphOp>())
      if (graphName.empty() || graph.getSymName() == graphName)
        graphs.push_back(graph);
    if (graphs.empty()) {
      getOperation().emitError("circuit-autodiff: no graph named @")
          << graphName;
      return signalPassFailure();
    }
    for (GraphOp graph : graphs)
      if (failed(run(graph)))
        return signalPassFailure();
  }

  LogicalResult run(GraphOp graph) {
    Block &body = graph.getBody().front();
    SmallVector<unsigned> indices;
    if (wrt.empty()) {
      for (BlockArgument arg : body.getArguments())
        if (cast<RankedTensorType>(arg.getType()).getElementType().isF32())
          indices.push_back(arg.getArgNumber());
    }
    for (const std::string &name : wrt) {
      std::optional<unsigned> found;
      for (unsigned i = 0, e = body.getNumArguments(); i < e; ++i) {
        auto attr = graph.getArgAttrOfType<StringAttr>(i, "circuit.name");
        if (attr && attr.getValue() == name)
          found = i;
      }
      if (!found)
        return graph.emitOpError("circuit-autodiff: no argument named '")
               << name << "'";
      indices.push_back(*found);
    }
    return differentiate(graph, indices);
  }
};
} // namespace
