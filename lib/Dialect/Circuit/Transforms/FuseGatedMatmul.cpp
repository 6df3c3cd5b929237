//===- FuseGatedMatmul.cpp - Gate and up projections in one kernel --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-fuse-gated-matmul: map(x · Aᵀ, x · Bᵀ) -> gated_matmul(x, A, B)
// with the map's body as the combine body; likewise two expert_matmuls of
// the same x and ids -> one expert_matmul of both weights. It runs before
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

/// A product the pattern fuses: a matmul without an epilogue, or an
/// expert_matmul of one weight (`ids` set).
struct Product {
  Operation *op = nullptr;
  Value x, ids, weight;
};

static std::optional<Product> productOf(Value v) {
  if (auto mm = v.getDefiningOp<MatmulOp>(); mm && mm.getEpilogue().empty())
    return Product{mm, mm.getX(), Value(), mm.getWeight()};
  if (auto em = v.getDefiningOp<ExpertMatmulOp>();
      em && em.getWeights().size() == 1)
    return Product{em, em.getX(), em.getIds(), em.getWeights()[0]};
  return std::nullopt;
}

struct FuseGatedMatmul : OpRewritePattern<MapOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MapOp map,
                                PatternRewriter &rewriter) const override {
    if (map.getInputs().size() != 2)
      return rewriter.notifyMatchFailure(map, "does not have two inputs");
    if (!isa<Float32Type, Float16Type>(map.getType().getElementType()))
      return rewriter.notifyMatchFailure(map, "is not a float tensor");
    Product products[2];
    for (int k = 0; k < 2; ++k) {
      Value input = map.getInputs()[k];
      std::optional<Product> product = productOf(input);
      if (!product)
        return rewriter.notifyMatchFailure(
            map, "an input is not a matmul without an epilogue or a "
                 "one-weight expert_matmul");
      products[k] = *product;
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
    if (products[0].op == products[1].op)
      return rewriter.notifyMatchFailure(map, "reads one matmul twice");
    if (products[0].x != products[1].x)
      return rewriter.notifyMatchFailure(
          map, "the matmuls read different activations");
    if (products[0].ids != products[1].ids)
      return rewriter.notifyMatchFailure(
          map, "the products do not choose the same experts");
    for (const Product &product : products) {
      SmallVector<Value> reads{product.x, product.weight};
      if (product.ids)
        reads.push_back(product.ids);
      if (hasInPlaceWriteBetween(product.op, map, reads))
        return rewriter.notifyMatchFailure(
            map, "a buffer a matmul reads is written in place before the "
                 "map");
    }

    rewriter.setInsertionPoint(map);
    Operation *fused;
    Region *combine;
    if (products[0].ids) {
      auto experts = ExpertMatmulOp::create(
          rewriter, map.getLoc(), map.getType(), products[0].x,
          products[0].ids,
          ValueRange{products[0].weight, products[1].weight});
      fused = experts;
      combine = &experts.getCombine();
    } else {
      auto gated = GatedMatmulOp::create(rewriter, map.getLoc(), map.getType(),
                                         products[0].x, products[0].weight,
                                         products[1].weight);
      fused = gated;
      combine = &gated.getCombine();
    }
    rewriter.inlineRegionBefore(map.getBody(), *combine, combine->end());
    rewriter.replaceOp(map, fused->getResult(0));
    rewriter.eraseOp(products[0].op);
    rewriter.eraseOp(products[1].op);
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
