//===- CSEQuantize.cpp - Quantize each tensor once ------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-cse-quantize: a second circuit.quantize of the same tensor to the
// same format reuses the first one's result. Quantization is pure, so this
// is always legal within a graph; the first one dominates the second because
// both sit in the graph's single block.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITCSEQUANTIZEPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

namespace {

struct ReuseEarlierQuantize : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    for (Operation *user : op.getInput().getUsers()) {
      auto other = dyn_cast<QuantizeOp>(user);
      if (!other || other == op || other.getType() != op.getType() ||
          other->getBlock() != op->getBlock() || !other->isBeforeInBlock(op))
        continue;
      rewriter.replaceOp(op, other.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(
        op, "no earlier quantization of the same tensor to the same format");
  }
};

struct CircuitCSEQuantizePass
    : circuit::impl::CircuitCSEQuantizePassBase<CircuitCSEQuantizePass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(getOperation(), populateCSEQuantizePatterns,
                                 numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateCSEQuantizePatterns(RewritePatternSet &patterns) {
  patterns.add<ReuseEarlierQuantize>(patterns.getContext());
}
