//===- FuseGatedMatmul.cpp - Gate and up projections in one kernel --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-fuse-gated-matmul: map(x · Aᵀ, x · Bᵀ) -> gated_matmul(x, A, B)
// with the map's body as the combine body. It runs before
// circuit-merge-same-dispatch, which would otherwise merge the two matmuls
// into a multi_matmul whose results the map reads back from memory.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITFUSEGATEDMATMULPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

namespace {

struct FuseGatedMatmul : OpRewritePattern<MapOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MapOp map,
                                PatternRewriter &rewriter) const override {
    if (map.getInputs().size() != 2)
      return rewriter.notifyMatchFailure(map, "does not have two inputs");
    if (!isa<Float32Type, Float16Type>(map.getType().getElementType()))
      return rewriter.notifyMatchFailure(map, "is not a float tensor");
    MatmulOp products[2];
    for (int k = 0; k < 2; ++k) {
      Value input = map.getInputs()[k];
      products[k] = input.getDefiningOp<MatmulOp>();
      if (!products[k])
        return rewriter.notifyMatchFailure(map, "an input is not a matmul");
      if (!products[k].getEpilogue().empty())
        return rewriter.notifyMatchFailure(map, "a matmul has an epilogue");
      if (!hasOnlyUser(input, map))
        return rewriter.notifyMatchFailure(map,
                                           "a matmul has another user");
      if (cast<RankedTensorType>(input.getType()).getShape() !=
          map.getType().getShape())
        return rewriter.notifyMatchFailure(map,
                                           "a matmul's shape is not the map's");
      if (readsInputWhole(*getInputsInfo(map), k, input.getType()))
        return rewriter.notifyMatchFailure(map, "reads a matmul whole");
    }
    if (products[0] == products[1])
      return rewriter.notifyMatchFailure(map, "reads one matmul twice");
    if (products[0].getX() != products[1].getX())
      return rewriter.notifyMatchFailure(
          map, "the matmuls read different activations");
    for (MatmulOp product : products)
      if (hasInPlaceWriteBetween(product, map,
                                 ValueRange{product.getX(),
                                            product.getWeight()}))
        return rewriter.notifyMatchFailure(
            map, "a buffer a matmul reads is written in place before the "
                 "map");

    rewriter.setInsertionPoint(map);
    auto gated = GatedMatmulOp::create(
        rewriter, map.getLoc(), map.getType(), products[0].getX(),
        products[0].getWeight(), products[1].getWeight());
    rewriter.inlineRegionBefore(map.getBody(), gated.getCombine(),
                                gated.getCombine().end());
    rewriter.replaceOp(map, gated.getResult());
    rewriter.eraseOp(products[0]);
    rewriter.eraseOp(products[1]);
    return success();
  }
};

struct CircuitFuseGatedMatmulPass
    : circuit::impl::CircuitFuseGatedMatmulPassBase<
          CircuitFuseGatedMatmulPass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(getOperation(),
                                 populateFuseGatedMatmulPatterns, numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateFuseGatedMatmulPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseGatedMatmul>(patterns.getContext());
}
