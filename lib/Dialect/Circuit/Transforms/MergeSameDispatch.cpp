//===- MergeSameDispatch.cpp - One dispatch for matmuls of one input -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-merge-same-dispatch: matmuls (and multi_matmuls) of the same
// activation tensor become one circuit.multi_matmul at the later one's
// position: Q, K and V, or gate and up, read the activations once and launch
// once. Matmuls whose epilogues take extra inputs are left alone (their
// inputs broadcast over one result shape each).
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITMERGESAMEDISPATCHPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

namespace {

/// The parts of a matmul or multi_matmul that merging needs.
struct Product {
  Operation *op = nullptr;
  Value x;
  SmallVector<Value> weights;
  SmallVector<Region *> epilogues;
};

std::optional<Product> getProduct(Operation *op) {
  Product p;
  p.op = op;
  if (auto m = dyn_cast<MatmulOp>(op)) {
    if (!m.getInputs().empty())
      return std::nullopt; // Epilogue inputs: not mergeable.
    p.x = m.getX();
    p.weights.push_back(m.getWeight());
    p.epilogues.push_back(&m.getEpilogue());
    return p;
  }
  if (auto m = dyn_cast<MultiMatmulOp>(op)) {
    p.x = m.getX();
    p.weights.append(m.getWeights().begin(), m.getWeights().end());
    for (Region &r : m.getEpilogues())
      p.epilogues.push_back(&r);
    return p;
  }
  return std::nullopt;
}

struct MergeMatmuls : RewritePattern {
  MergeMatmuls(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult checkLegal(PatternRewriter &rewriter, const Product &a,
                           const Product &b) const {
    if (Operation *user = firstUserUpTo(a.op, b.op))
      return rewriter.notifyMatchFailure(
          b.op, user == b.op
                    ? "depends on the earlier matmul"
                    : "the earlier matmul's result is used in between");
    SmallVector<Value> reads{a.x};
    reads.append(a.weights);
    if (hasInPlaceWriteBetween(a.op, b.op, reads))
      return rewriter.notifyMatchFailure(
          b.op, "a buffer the earlier matmul reads is written in place in "
                "between");
    if (countKernelBuffers({a.op, b.op}) > kMaxKernelBuffers)
      return rewriter.notifyMatchFailure(
          b.op, "the merged kernel would bind more buffers than a kernel "
                "may");
    return success();
  }

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    std::optional<Product> b = getProduct(op);
    if (!b)
      return failure();
    std::optional<Product> a = findEarlierPartner<Product>(
        op, getProduct, [&](const Product &candidate) {
          return candidate.x == b->x &&
                 succeeded(checkLegal(rewriter, candidate, *b));
        });
    if (!a)
      return rewriter.notifyMatchFailure(
          op, "no earlier matmul of the same activations can be merged");

    SmallVector<Value> weights(a->weights);
    weights.append(b->weights);
    SmallVector<Type> resultTypes(a->op->getResultTypes());
    resultTypes.append(b->op->getResultTypes().begin(),
                       b->op->getResultTypes().end());
    rewriter.setInsertionPoint(op);
    OperationState state(op->getLoc(), MultiMatmulOp::getOperationName());
    MultiMatmulOp::build(rewriter, state, resultTypes, b->x, weights,
                         static_cast<unsigned>(weights.size()));
    auto merged = cast<MultiMatmulOp>(rewriter.create(state));
    unsigned r = 0;
    for (const Product *p : {&*a, &*b})
      for (Region *epilogue : p->epilogues) {
        Region &into = merged.getEpilogues()[r++];
        rewriter.inlineRegionBefore(*epilogue, into, into.end());
      }
    unsigned nA = a->op->getNumResults();
    rewriter.replaceOp(a->op, merged.getResults().take_front(nA));
    rewriter.replaceOp(op, merged.getResults().drop_front(nA));
    return success();
  }
};

struct CircuitMergeSameDispatchPass
    : circuit::impl::CircuitMergeSameDispatchPassBase<
          CircuitMergeSameDispatchPass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(getOperation(),
                                 populateMergeSameDispatchPatterns, numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateMergeSameDispatchPatterns(
    RewritePatternSet &patterns) {
  patterns.add<MergeMatmuls>(patterns.getContext());
}
