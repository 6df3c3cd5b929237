//===- Attention.cpp - Decode and prompt-chunk attention ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

namespace hesper::lowering {

//===----------------------------------------------------------------------===//
// Decode attention
//===----------------------------------------------------------------------===//

/// Positions per tile of the attention kernel, and its lanes. The reference
/// interpreter walks the positions in tiles of the same size.
static constexpr int64_t kAttentionTile = 64;

/// One workgroup per query head. Each tile of positions: every lane scores
/// one position (a dot product over the head dimension) into shared
/// memory; after a barrier every lane reads the tile's scores in index
/// order to update the running maximum and sum (the same values in every
/// lane), rescales its accumulators and adds the tile's weighted V rows for
/// the dimensions it owns (d = lane, lane + 64, ...). Only positions up to
/// `pos` are read.
LogicalResult GraphLowering::lowerAttention(cir::AttentionOp op) {
  Location loc = op.getLoc();
  const int64_t heads = op.getHeads(), dim = op.getHeadDim(),
                group = heads / op.getKvHeads();
  const int64_t rowStride = op.getKvHeads() * dim;
  const int64_t positions = numElements(op.getKCache().getType()) / rowStride;
  const int64_t lanes = kAttentionTile;
  const int64_t owned = ceilDiv(dim, lanes); // dimensions per lane
  const int64_t rows = numElements(op.getQ().getType()) / (heads * dim);
  if (failed(checkRows(op, heads, shape)) ||
      failed(checkRows(op, rows, shape)))
    return failure();
  if (shape.singleLane)
    return lowerAttentionSingleLane(op);

  KernelState ks;
  for (Value input : {op.getQ(), op.getKCache(), op.getVCache(), op.getPos()})
    bind(ks, input, false);
  allocFor(op.getResult());
  bind(ks, op.getResult(), true);
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Type f32 = b.getF32Type();
  auto constant = [&](double v) {
    return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v)).getResult();
  };
  auto fmax = [&](Value x, Value y) {
    return ex::MaxOp::create(b, loc, x, y).getResult();
  };
  auto fadd = [&](Value x, Value y) {
    return ex::AddOp::create(b, loc, x, y).getResult();
  };
  auto fmul = [&](Value x, Value y) {
    return ex::MulOp::create(b, loc, x, y).getResult();
  };
  auto fexp = [&](Value x) { return ex::ExpOp::create(b, loc, x).getResult(); };
  Value q = arg(ks, op.getQ()), kCache = arg(ks, op.getKCache()),
        vCache = arg(ks, op.getVCache()), out = arg(ks, op.getResult());

  Value scores = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), lanes, f32));
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value head = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value qRow = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  Value qBase = im.mul(im.add(im.mul(qRow, im.c(heads)), head), im.c(dim));
  Value kvBase = im.mul(im.div(head, group), im.c(dim));
  // The last position read: pos + row, clamped to the cache.
  Value pos = loadElement(arg(ks, op.getPos()), im.c(0), loc);
  pos = arith::AddIOp::create(b, loc, pos,
                              arith::IndexCastOp::create(
                                  b, loc, b.getI32Type(), qRow));
  Value i32Zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  Value i32Last =
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), positions - 1);
  pos = arith::MaxSIOp::create(b, loc, pos, i32Zero);
  pos = arith::MinSIOp::create(b, loc, pos, i32Last);
  Value count = im.add(im.toIndex(pos), im.c(1));
  // This lane's dimensions, clamped in range for the loads (the extra
  // lanes of a head dimension that is not a multiple of 64 compute a value
  // they never store).
  SmallVector<Value> dims;
  for (int64_t j = 0; j < owned; ++j)
    dims.push_back(arith::MinUIOp::create(b, loc, im.add(tid, im.c(j * lanes)),
                                          im.c(dim - 1)));

  Value lowest = constant(-std::numeric_limits<float>::max());
  SmallVector<Value> init{lowest, constant(0.0)};
  for (int64_t j = 0; j < owned; ++j)
    init.push_back(constant(0.0));
  auto tiles = scf::ForOp::create(b, loc, im.c(0), count, im.c(lanes), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value tile = tiles.getInductionVar();
    ValueRange carried = tiles.getRegionIterArgs();
    Value t = im.add(tile, tid);
    // Score of position t (the lowest float past the end: it never wins
    // the maximum and is never summed).
    auto scored = scf::IfOp::create(b, loc, TypeRange{f32}, im.lt(t, count),
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(scored.thenBlock());
      Value kRow = im.add(im.mul(t, im.c(rowStride)), kvBase);
      auto dot = scf::ForOp::create(b, loc, im.c(0), im.c(dim), im.c(1),
                                    ValueRange{constant(0.0)});
      {
        OpBuilder::InsertionGuard body(b);
        b.setInsertionPointToStart(dot.getBody());
        Value d = dot.getInductionVar();
        Value qv = loadElement(q, im.add(qBase, d), loc);
        Value kv = loadElement(kCache, im.add(kRow, d), loc);
        scf::YieldOp::create(
            b, loc, fadd(dot.getRegionIterArgs()[0], fmul(qv, kv)));
      }
      Value scale = constant(op.getScale().convertToFloat());
      scf::YieldOp::create(b, loc, fmul(dot.getResult(0), scale));
      b.setInsertionPointToStart(scored.elseBlock());
      scf::YieldOp::create(b, loc, lowest);
    }
    sm::StoreOp::create(b, loc, scored.getResult(0), scores, tid);
    sm::BarrierOp::create(b, loc);

    // Positions in this tile: min(64, count - tile) >= 1.
    Value n = arith::MinUIOp::create(b, loc, im.c(lanes),
                                     arith::SubIOp::create(b, loc, count, tile));
    auto maxLoop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1),
                                      ValueRange{lowest});
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value s = sm::LoadOp::create(b, loc, f32, scores,
                                   maxLoop.getInductionVar());
      scf::YieldOp::create(b, loc, fmax(maxLoop.getRegionIterArgs()[0], s));
    }
    Value tileMax = guardZeroTrip(b, maxLoop)[0];
    Value mNew = fmax(carried[0], tileMax);
    Value correction = fexp(ex::SubOp::create(b, loc, carried[0], mNew));

    SmallVector<Value> sums{constant(0.0)};
    for (int64_t j = 0; j < owned; ++j)
      sums.push_back(fmul(carried[2 + j], correction));
    auto accLoop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1), sums);
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(accLoop.getBody());
      Value i = accLoop.getInductionVar();
      ValueRange acc = accLoop.getRegionIterArgs();
      Value s = sm::LoadOp::create(b, loc, f32, scores, i);
      Value p = fexp(ex::SubOp::create(b, loc, s, mNew));
      SmallVector<Value> next{fadd(acc[0], p)};
      Value vRow = im.add(im.mul(im.add(tile, i), im.c(rowStride)), kvBase);
      for (int64_t j = 0; j < owned; ++j) {
        Value v = loadElement(vCache, im.add(vRow, dims[j]), loc);
        next.push_back(fadd(acc[1 + j], fmul(p, v)));
      }
      scf::YieldOp::create(b, loc, next);
    }
    ValueRange accumulated = guardZeroTrip(b, accLoop);
    // Every lane has read the tile's scores before the next tile writes
    // them.
    sm::BarrierOp::create(b, loc);
    SmallVector<Value> yielded{
        mNew, fadd(fmul(carried[1], correction), accumulated[0])};
    for (int64_t j = 0; j < owned; ++j)
      yielded.push_back(accumulated[1 + j]);
    scf::YieldOp::create(b, loc, yielded);
  }
  ValueRange final = guardZeroTrip(b, tiles);
  for (int64_t j = 0; j < owned; ++j) {
    Value d = im.add(tid, im.c(j * lanes));
    auto inRange = scf::IfOp::create(b, loc, im.lt(d, im.c(dim)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inRange.thenBlock());
    Value value = ex::DivOp::create(b, loc, final[2 + j], final[1]);
    sm::StoreOp::create(b, loc, value, out, im.add(qBase, d));
  }
  finishKernel(ks, {heads, rows, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// Single-lane attention (the CPU target)
//===----------------------------------------------------------------------===//

/// One workgroup of one lane per (query row, head). The same tiles of 64
/// positions as above, in the same order, with the head's accumulators in a
/// scratch row instead of spread over lanes: score the tile's positions
/// into scratch, take their maximum, rescale the accumulators once, then
/// add each position's weighted V row. Every inner loop runs over the head
/// dimension, which the CPU code generator vectorizes.
LogicalResult GraphLowering::lowerAttentionSingleLane(cir::AttentionOp op) {
  Location loc = op.getLoc();
  const int64_t heads = op.getHeads(), dim = op.getHeadDim(),
                group = heads / op.getKvHeads();
  const int64_t rowStride = op.getKvHeads() * dim;
  const int64_t positions = numElements(op.getKCache().getType()) / rowStride;
  const int64_t rows = numElements(op.getQ().getType()) / (heads * dim);

  KernelState ks;
  for (Value input : {op.getQ(), op.getKCache(), op.getVCache(), op.getPos()})
    bind(ks, input, false);
  allocFor(op.getResult());
  bind(ks, op.getResult(), true);
  createKernel(ks, op, 1);
  IndexMath im(b, loc);
  Type f32 = b.getF32Type();
  auto constant = [&](double v) {
    return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v)).getResult();
  };
  auto fmax = [&](Value x, Value y) {
    return ex::MaxOp::create(b, loc, x, y).getResult();
  };
  auto fadd = [&](Value x, Value y) {
    return ex::AddOp::create(b, loc, x, y).getResult();
  };
  auto fmul = [&](Value x, Value y) {
    return ex::MulOp::create(b, loc, x, y).getResult();
  };
  auto fexp = [&](Value x) { return ex::ExpOp::create(b, loc, x).getResult(); };
  // `body(i)` for i in [0, n), with no carried values.
  auto forEach = [&](Value n, llvm::function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  };
  Value q = arg(ks, op.getQ()), kCache = arg(ks, op.getKCache()),
        vCache = arg(ks, op.getVCache()), out = arg(ks, op.getResult());
  Value scores = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), kAttentionTile, f32));
  Value acc = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), dim, f32));

  Value head = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value qRow = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  Value qBase = im.mul(im.add(im.mul(qRow, im.c(heads)), head), im.c(dim));
  Value kvBase = im.mul(im.div(head, group), im.c(dim));
  Value pos = loadElement(arg(ks, op.getPos()), im.c(0), loc);
  pos = arith::AddIOp::create(
      b, loc, pos, arith::IndexCastOp::create(b, loc, b.getI32Type(), qRow));
  pos = arith::MaxSIOp::create(
      b, loc, pos, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
  pos = arith::MinSIOp::create(
      b, loc, pos,
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), positions - 1));
  Value count = im.add(im.toIndex(pos), im.c(1));
  forEach(im.c(dim),
          [&](Value d) { sm::StoreOp::create(b, loc, constant(0.0), acc, d); });

  Value lowest = constant(-std::numeric_limits<float>::max());
  auto tiles = scf::ForOp::create(b, loc, im.c(0), count, im.c(kAttentionTile),
                                  ValueRange{lowest, constant(0.0)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value tile = tiles.getInductionVar();
    Value m = tiles.getRegionIterArgs()[0], l = tiles.getRegionIterArgs()[1];
    Value n = arith::MinUIOp::create(b, loc, im.c(kAttentionTile),
                                     arith::SubIOp::create(b, loc, count, tile));
    Value scale = constant(op.getScale().convertToFloat());
    // Scores of the tile's positions, and their maximum.
    auto scoreLoop =
        scf::ForOp::create(b, loc, im.c(0), n, im.c(1), ValueRange{lowest});
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(scoreLoop.getBody());
      Value i = scoreLoop.getInductionVar();
      Value kRow = im.add(im.mul(im.add(tile, i), im.c(rowStride)), kvBase);
      auto dot = scf::ForOp::create(b, loc, im.c(0), im.c(dim), im.c(1),
                                    ValueRange{constant(0.0)});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(dot.getBody());
        Value d = dot.getInductionVar();
        Value qv = loadElement(q, im.add(qBase, d), loc);
        Value kv = loadElement(kCache, im.add(kRow, d), loc);
        scf::YieldOp::create(
            b, loc, fadd(dot.getRegionIterArgs()[0], fmul(qv, kv)));
      }
      Value s = fmul(dot.getResult(0), scale);
      sm::StoreOp::create(b, loc, s, scores, i);
      scf::YieldOp::create(b, loc, fmax(scoreLoop.getRegionIterArgs()[0], s));
    }
    Value mNew = fmax(m, guardZeroTrip(b, scoreLoop)[0]);
    Value correction = fexp(ex::SubOp::create(b, loc, m, mNew));
    forEach(im.c(dim), [&](Value d) {
      Value a = sm::LoadOp::create(b, loc, f32, acc, d);
      sm::StoreOp::create(b, loc, fmul(a, correction), acc, d);
    });
    auto weighLoop =
        scf::ForOp::create(b, loc, im.c(0), n, im.c(1), ValueRange{constant(0.0)});
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(weighLoop.getBody());
      Value i = weighLoop.getInductionVar();
      Value s = sm::LoadOp::create(b, loc, f32, scores, i);
      Value p = fexp(ex::SubOp::create(b, loc, s, mNew));
      Value vRow = im.add(im.mul(im.add(tile, i), im.c(rowStride)), kvBase);
      forEach(im.c(dim), [&](Value d) {
        Value a = sm::LoadOp::create(b, loc, f32, acc, d);
        Value v = loadElement(vCache, im.add(vRow, d), loc);
        sm::StoreOp::create(b, loc, fadd(a, fmul(p, v)), acc, d);
      });
      scf::YieldOp::create(b, loc, fadd(weighLoop.getRegionIterArgs()[0], p));
    }
    Value tileSum = guardZeroTrip(b, weighLoop)[0];
    scf::YieldOp::create(b, loc,
                         ValueRange{mNew, fadd(fmul(l, correction), tileSum)});
  }
  Value total = guardZeroTrip(b, tiles)[1];
  forEach(im.c(dim), [&](Value d) {
    Value a = sm::LoadOp::create(b, loc, f32, acc, d);
    sm::StoreOp::create(b, loc, ex::DivOp::create(b, loc, a, total), out,
                        im.add(qBase, d));
  });
  finishKernel(ks, {heads, rows, 1});
  return success();
}

} // namespace hesper::lowering
