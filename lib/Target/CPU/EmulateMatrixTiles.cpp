//===- EmulateMatrixTiles.cpp - Subgroup matrix tiles as plain loops ------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-emulate-matrix-tiles: the CPU target's stand-in for matrix units.
// A gpu.subgroup_mma_* tile (16 x 16) is spread over a subgroup's lanes on
// a GPU; on the CPU target a subgroup is one lane, so that lane holds the
// whole tile as a vector<256 x T> (element (r, c) at r * 16 + c), and the
// ops become loops: a load gathers the tile from memory (row- or
// column-major by its `transpose`), a compute multiplies in the sums'
// type (f32 for f16 tiles, i32 for i8), in order of K, and a store
// scatters the tile. Every lane of a GPU subgroup running the kernel as a
// fiber then computes the whole tile and stores the same values: the
// results are those of the matrix units up to their rounding.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace hesper {
#define GEN_PASS_DEF_EMULATEMATRIXTILESPASS
#include "Hesper/Target/Passes.h.inc"
} // namespace hesper

using namespace mlir;

namespace {

constexpr int64_t kSide = 16;

/// The vector one lane holds a tile in.
VectorType laneVector(gpu::MMAMatrixType type) {
  return VectorType::get({type.getShape()[0] * type.getShape()[1]},
                         type.getElementType());
}

/// Builds the loops of one rewritten op.
struct TileLoops {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// `body(r, c, carried)` over the 16 x 16 elements, row-major, carrying
  /// `init` (or nothing); returns the carried value.
  Value forEach(Value init,
                llvm::function_ref<Value(Value, Value, Value)> body) {
    SmallVector<Value> inits;
    if (init)
      inits.push_back(init);
    auto rows = scf::ForOp::create(
        b, loc, c(0), c(kSide), c(1), inits,
        [&](OpBuilder &, Location, Value r, ValueRange rowCarried) {
          auto cols = scf::ForOp::create(
              b, loc, c(0), c(kSide), c(1), rowCarried,
              [&](OpBuilder &, Location, Value col, ValueRange carried) {
                Value next =
                    body(r, col, carried.empty() ? Value() : carried[0]);
                scf::YieldOp::create(b, loc,
                                     next ? ValueRange{next} : ValueRange{});
              });
          scf::YieldOp::create(b, loc, cols.getResults());
        });
    return init ? rows.getResult(0) : Value();
  }

  /// The memory index of element (r, c) of a tile at `base`.
  Value address(Value base, int64_t lead, bool transpose, Value r, Value col) {
    Value major = transpose ? col : r, minor = transpose ? r : col;
    Value offset = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, major, c(lead)), minor);
    return arith::AddIOp::create(b, loc, base, offset);
  }

  Value position(Value r, Value col) {
    return arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, r, c(kSide)), col);
  }
};

LogicalResult checkOneDimensional(Operation *op, Value memory) {
  if (cast<MemRefType>(memory.getType()).getRank() != 1)
    return op->emitOpError("the CPU target's matrix tiles need a "
                           "one-dimensional memref");
  return success();
}

/// Rewrites one of the four tile ops (emulatedOp) on the lanes' vectors.
LogicalResult emulate(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  TileLoops loops{b, loc};
  Value replacement;
  if (auto load = dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(op)) {
    if (failed(checkOneDimensional(op, load.getSrcMemref())))
      return failure();
    Type type = load.getType(); // already the lane's vector
    Value init = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
    int64_t lead = load.getLeadDimension().getZExtValue();
    bool transpose = load.getTranspose().value_or(false);
    Value base = load.getIndices()[0];
    replacement = loops.forEach(init, [&](Value r, Value col, Value tile) {
      Value element = memref::LoadOp::create(
          b, loc, load.getSrcMemref(),
          ValueRange{loops.address(base, lead, transpose, r, col)});
      return vector::InsertOp::create(b, loc, element, tile,
                                      OpFoldResult(loops.position(r, col)));
    });
  } else if (auto store = dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(op)) {
    if (failed(checkOneDimensional(op, store.getDstMemref())))
      return failure();
    int64_t lead = store.getLeadDimension().getZExtValue();
    bool transpose = store.getTranspose().value_or(false);
    Value base = store.getIndices()[0];
    loops.forEach(Value(), [&](Value r, Value col, Value) {
      Value element = vector::ExtractOp::create(
          b, loc, store.getSrc(), OpFoldResult(loops.position(r, col)));
      memref::StoreOp::create(
          b, loc, element, store.getDstMemref(),
          ValueRange{loops.address(base, lead, transpose, r, col)});
      return Value();
    });
  } else if (auto fill = dyn_cast<gpu::SubgroupMmaConstantMatrixOp>(op)) {
    replacement =
        vector::BroadcastOp::create(b, loc, fill.getType(), fill.getValue());
  } else {
    auto mma = cast<gpu::SubgroupMmaComputeOp>(op);
    // The loads put element (r, c) at r * 16 + c whatever their layout,
    // so the transposes need no further handling here.
    Type sumType = cast<VectorType>(mma.getType()).getElementType();
    bool isFloat = isa<FloatType>(sumType);
    auto widen = [&](Value v) -> Value {
      if (v.getType() == sumType)
        return v;
      return isFloat ? Value(arith::ExtFOp::create(b, loc, sumType, v))
                     : Value(arith::ExtSIOp::create(b, loc, sumType, v));
    };
    replacement = loops.forEach(
        mma.getOpC(), [&](Value r, Value col, Value tile) {
          Value at = loops.position(r, col);
          Value sum = vector::ExtractOp::create(b, loc, tile, OpFoldResult(at));
          auto ks = scf::ForOp::create(b, loc, loops.c(0), loops.c(kSide),
                                       loops.c(1), ValueRange{sum});
          {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(ks.getBody());
            Value k = ks.getInductionVar();
            Value a = widen(vector::ExtractOp::create(
                b, loc, mma.getOpA(), OpFoldResult(loops.position(r, k))));
            Value w = widen(vector::ExtractOp::create(
                b, loc, mma.getOpB(), OpFoldResult(loops.position(k, col))));
            Value acc = ks.getRegionIterArgs()[0];
            Value next =
                isFloat
                    ? Value(arith::AddFOp::create(
                          b, loc, acc, arith::MulFOp::create(b, loc, a, w)))
                    : Value(arith::AddIOp::create(
                          b, loc, acc, arith::MulIOp::create(b, loc, a, w)));
            scf::YieldOp::create(b, loc, next);
          }
          return vector::InsertOp::create(b, loc, ks.getResult(0), tile,
                                          OpFoldResult(at));
        });
  }
  if (replacement)
    op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
  return success();
}

bool emulatedOp(Operation *op) {
  return isa<gpu::SubgroupMmaLoadMatrixOp, gpu::SubgroupMmaStoreMatrixOp,
             gpu::SubgroupMmaConstantMatrixOp, gpu::SubgroupMmaComputeOp>(op);
}

struct EmulateMatrixTilesPass
    : hesper::impl::EmulateMatrixTilesPassBase<EmulateMatrixTilesPass> {
  void runOnOperation() override {
    // Every tile op, before anything changes: one without an emulation
    // fails the pass.
    SmallVector<Operation *> ops;
    WalkResult walk = getOperation()->walk([&](Operation *op) {
      if (emulatedOp(op)) {
        ops.push_back(op);
      } else if (op->getName().getStringRef().starts_with(
                     "gpu.subgroup_mma_")) {
        op->emitOpError("has no emulation on the CPU target");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    // Every value that carries a tile (the ops' results, loop arguments
    // and results) carries the lane's vector from here on; then the ops
    // are rewritten on those vectors.
    auto retype = [](Value v) {
      if (auto tile = dyn_cast<gpu::MMAMatrixType>(v.getType()))
        v.setType(laneVector(tile));
    };
    getOperation()->walk([&](Operation *op) {
      for (Value result : op->getResults())
        retype(result);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            retype(arg);
    });
    for (Operation *op : ops)
      if (failed(emulate(op)))
        return signalPassFailure();
  }
};

} // namespace
