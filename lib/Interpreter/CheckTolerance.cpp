//===- CheckTolerance.cpp - Tolerances of the interpreter's --check -------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The tolerance each value of a graph is compared within under --check
// (looser after accumulating ops and f16 results, and inherited along the
// graph), and the comparison itself.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/Interpreter.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;

static Tolerance looser(Tolerance a, Tolerance b) {
  return {std::max(a.abs, b.abs), std::max(a.rel, b.rel)};
}

static Tolerance ownTolerance(Operation *op, Type resultType) {
  constexpr Tolerance elementwise{1e-5, 1e-4}, accumulated{1e-3, 1e-3};
  Tolerance tol =
      isa<ReduceOp, ReduceEpilogueOp, ReduceScatterEpilogueOp, ScatterAddOp,
          MatmulOp, MultiMatmulOp, GatedMatmulOp, ExpertMatmulOp,
          AttentionOp>(op)
          ? accumulated
          : elementwise;
  auto tensor = dyn_cast<RankedTensorType>(resultType);
  if (tensor && tensor.getElementType().isF16())
    tol.rel = std::max(tol.rel, 2e-3);
  return tol;
}

llvm::DenseMap<Value, Tolerance>
hesper::interp::computeCheckTolerances(GraphOp graph) {
  llvm::DenseMap<Value, Tolerance> tolerances;
  Block &body = graph.getBody().front();
  for (BlockArgument arg : body.getArguments())
    tolerances[arg] = ownTolerance(graph, arg.getType());
  for (Operation &op : body.without_terminator()) {
    // Bodies are isolated from above: the op's operands are all it reads.
    Tolerance inputs;
    for (Value operand : op.getOperands()) {
      auto it = tolerances.find(operand);
      if (it != tolerances.end())
        inputs = looser(inputs, it->second);
    }
    for (Value result : op.getResults()) {
      Tolerance tol = looser(inputs, ownTolerance(&op, result.getType()));
      tolerances[result] = tol;
      // An in-place write gives the argument it updates this version's
      // tolerance too.
      Value root = getWrittenBufferRoot(result);
      if (root != result && isa<BlockArgument>(root))
        tolerances[root] = looser(tolerances[root], tol);
    }
  }
  return tolerances;
}

Comparison hesper::interp::compareWithinTolerance(const HostTensor &got,
                                                  const HostTensor &want,
                                                  Tolerance tol) {
  Comparison result;
  std::vector<float> g = got.toFloats(), w = want.toFloats();
  if (g.size() != w.size()) {
    result.maxError = INFINITY;
    result.mismatch = 0;
    return result;
  }
  // Quantized values may differ by one step of their block's scale where
  // the two sides round the scaled value differently.
  bool quantized = isQuantized(want.getElementType());
  constexpr size_t kBlock = 32;
  double step = 0;
  for (size_t k = 0; k < w.size(); ++k) {
    if (quantized && k % kBlock == 0) {
      double amax = 0;
      for (size_t j = k; j < std::min(w.size(), k + kBlock); ++j)
        amax = std::max(amax, std::fabs(double(w[j])));
      step = 1.01 * amax / 127.0;
    }
    double allowed = tol.abs + tol.rel * std::fabs(double(w[k])) + step;
    // NaN matches only NaN and an infinity only itself; the rest within
    // the tolerance.
    bool match;
    double err;
    if (std::isnan(w[k]) || std::isnan(g[k]) || std::isinf(w[k]) ||
        std::isinf(g[k])) {
      match = std::isnan(w[k]) ? std::isnan(g[k]) : g[k] == w[k];
      err = match ? 0 : INFINITY;
    } else {
      err = std::fabs(double(g[k]) - double(w[k]));
      match = err <= allowed;
    }
    result.maxError = std::max(result.maxError, err);
    if (!match && result.mismatch < 0) {
      result.mismatch = static_cast<int64_t>(k);
      result.got = g[k];
      result.want = w[k];
    }
  }
  return result;
}
