//===- FuseMatmulEpilogue.cpp - Fold a map into a matmul's epilogue ------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-fuse-matmul-epilogue: map(matmul(x, w), extra...) becomes one
// matmul whose epilogue runs the map's body on the accumulated value (after
// the matmul's own epilogue, if it has one). The map's other inputs become
// the matmul's epilogue inputs.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITFUSEMATMULEPILOGUEPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

namespace {

struct FuseMapIntoMatmulEpilogue : OpRewritePattern<MapOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MapOp map,
                                PatternRewriter &rewriter) const override {
    // Find the matmul among the map's inputs.
    MatmulOp matmul;
    unsigned index = 0;
    for (auto [k, input] : llvm::enumerate(map.getInputs()))
      if (auto m = input.getDefiningOp<MatmulOp>()) {
        matmul = m;
        index = k;
        break;
      }
    if (!matmul)
      return rewriter.notifyMatchFailure(map, "reads no matmul result");
    if (!hasOnlyUser(matmul.getResult(), map) ||
        !matmul.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(map,
                                         "the matmul result has other uses");
    Block &mapBody = map.getBody().front();
    if (mapBody.getArgument(1 + index).getType() !=
        elementTypeOf(matmul.getResult()))
      return rewriter.notifyMatchFailure(
          map, "reads the matmul result whole, at computed indices");
    if (map.getType().getShape() != matmul.getType().getShape())
      return rewriter.notifyMatchFailure(
          map, "does not iterate over the matmul's result shape");
    if (!map.getType().getElementType().isF32() &&
        !map.getType().getElementType().isF16())
      return rewriter.notifyMatchFailure(map,
                                         "a matmul result must be a float");
    // The fused op takes the map's place: the map's reads stay where they
    // are, the matmul's (activations, weight, epilogue inputs) move down.
    if (hasInPlaceWriteBetween(matmul, map, matmul->getOperands()))
      return rewriter.notifyMatchFailure(
          map, "a buffer the matmul reads is written in place before the "
               "map");
    if (countKernelBuffers({matmul, map}) > kMaxKernelBuffers)
      return rewriter.notifyMatchFailure(
          map, "the fused kernel would bind more buffers than a kernel may");

    // The fused op replaces the map, after everything the map reads.
    SmallVector<Value> extras(matmul.getInputs());
    unsigned firstMapExtra = extras.size();
    for (auto [k, input] : llvm::enumerate(map.getInputs()))
      if (k != index)
        extras.push_back(input);
    rewriter.setInsertionPoint(map);
    auto fused = MatmulOp::create(rewriter, map.getLoc(), map.getType(),
                                  matmul.getX(), matmul.getWeight(), extras);

    Location loc = map.getLoc();
    SmallVector<Type> types{rewriter.getI32Type(), rewriter.getF32Type()};
    SmallVector<Location> locs(2, loc);
    Block &oldEpilogue = matmul.getEpilogue().empty()
                             ? mapBody // unused
                             : matmul.getEpilogue().front();
    for (auto [k, extra] : llvm::enumerate(extras)) {
      // Keep each input's reading mode (element or whole) from its body.
      Type argType;
      if (k < firstMapExtra) {
        argType = oldEpilogue.getArgument(2 + k).getType();
      } else {
        unsigned mapIndex = k - firstMapExtra;
        mapIndex += mapIndex >= index ? 1 : 0;
        argType = mapBody.getArgument(1 + mapIndex).getType();
      }
      types.push_back(argType);
      locs.push_back(extra.getLoc());
    }
    Block *block = rewriter.createBlock(&fused.getEpilogue(), {}, types, locs);
    Value lane = block->getArgument(0);
    Value acc = block->getArgument(1);
    // The matmul's own epilogue first, then the map.
    Value product = acc;
    if (!matmul.getEpilogue().empty()) {
      SmallVector<Value> args{lane, acc};
      for (unsigned k = 0; k < firstMapExtra; ++k)
        args.push_back(block->getArgument(2 + k));
      product = inlineBody(rewriter, oldEpilogue, args).front();
    } else if (!matmul.getType().getElementType().isF32()) {
      // The unfused matmul stored the accumulator rounded to its element
      // type; the map read that.
      product = exp::ConvertOp::create(rewriter, loc,
                                       matmul.getType().getElementType(), acc);
    }
    SmallVector<Value> mapArgs{lane};
    unsigned next = firstMapExtra;
    for (unsigned k = 0; k < map.getInputs().size(); ++k)
      mapArgs.push_back(k == index ? product : block->getArgument(2 + next++));
    Value result = inlineBody(rewriter, mapBody, mapArgs).front();
    YieldOp::create(rewriter, loc, result);

    rewriter.replaceOp(map, fused.getResult());
    rewriter.eraseOp(matmul);
    return success();
  }
};

struct CircuitFuseMatmulEpiloguePass
    : circuit::impl::CircuitFuseMatmulEpiloguePassBase<
          CircuitFuseMatmulEpiloguePass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(getOperation(),
                                 populateFuseMatmulEpiloguePatterns, numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateFuseMatmulEpiloguePatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseMapIntoMatmulEpilogue>(patterns.getContext());
}
