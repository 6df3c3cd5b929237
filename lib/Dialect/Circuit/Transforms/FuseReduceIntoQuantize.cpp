//===- FuseReduceIntoQuantize.cpp - Normalize and quantize in one op -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-fuse-reduce-into-quantize: quantize(reduce_epilogue(...)) becomes a
// reduce_epilogue with a q8_1 (or q8_0) result, which quantizes each row as
// it stores it. The values quantized are exactly those the unfused
// reduce_epilogue stored (an f16 result is rounded to f16 first).
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITFUSEREDUCEINTOQUANTIZEPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

namespace {

struct FuseQuantizeIntoReduceEpilogue : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QuantizeOp quantize,
                                PatternRewriter &rewriter) const override {
    auto reduce = quantize.getInput().getDefiningOp<ReduceEpilogueOp>();
    if (!reduce)
      return rewriter.notifyMatchFailure(
          quantize, "does not quantize a reduce_epilogue result");
    if (!hasOnlyUser(reduce.getResult(), quantize) ||
        !reduce.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(
          quantize, "the reduce_epilogue result has other uses");
    Type stored = reduce.getType().getElementType();
    if (isQuantized(stored))
      return rewriter.notifyMatchFailure(
          quantize, "the reduce_epilogue quantizes already");
    int64_t rowLength = reduce.getType().getShape().back();
    if (rowLength % getQuantBlockSize(quantize.getType().getElementType()))
      return rewriter.notifyMatchFailure(
          quantize, "rows are not whole quantization blocks");
    if (hasInPlaceWriteBetween(reduce, quantize, reduce.getInputs()))
      return rewriter.notifyMatchFailure(
          quantize, "a buffer the reduction reads is written in place in "
                    "between");

    rewriter.setInsertionPoint(quantize);
    auto fused = ReduceEpilogueOp::create(
        rewriter, reduce.getLoc(), quantize.getType(), reduce.getKind(),
        reduce.getInputs(), reduce.getOverAttr());
    rewriter.inlineRegionBefore(reduce.getPrologue(), fused.getPrologue(),
                                fused.getPrologue().end());
    rewriter.inlineRegionBefore(reduce.getEpilogue(), fused.getEpilogue(),
                                fused.getEpilogue().end());
    // The epilogue now yields the f32 value to quantize.
    if (!stored.isF32()) {
      auto yield = cast<YieldOp>(fused.getEpilogue().front().getTerminator());
      rewriter.setInsertionPoint(yield);
      Value widened =
          exp::ConvertOp::create(rewriter, yield.getLoc(),
                                 rewriter.getF32Type(), yield.getValues()[0]);
      rewriter.modifyOpInPlace(
          yield, [&] { yield.getValuesMutable().assign(widened); });
    }
    rewriter.replaceOp(quantize, fused.getResult());
    rewriter.eraseOp(reduce);
    return success();
  }
};

struct CircuitFuseReduceIntoQuantizePass
    : circuit::impl::CircuitFuseReduceIntoQuantizePassBase<
          CircuitFuseReduceIntoQuantizePass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(
            getOperation(), populateFuseReduceIntoQuantizePatterns, numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateFuseReduceIntoQuantizePatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseQuantizeIntoReduceEpilogue>(patterns.getContext());
}
