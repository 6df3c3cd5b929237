//===- Attention.cpp - Decode and prompt-chunk attention ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "BlockMath.h"
#include "GraphLowering.h"

namespace hesper::lowering {

//===----------------------------------------------------------------------===//
// Decode attention
//===----------------------------------------------------------------------===//

namespace {
/// f32 arithmetic with Exp ops at one location.
struct FloatMath {
  OpBuilder &b;
  Location loc;
  Value c(double v) {
    return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value max(Value x, Value y) { return ex::MaxOp::create(b, loc, x, y); }
  Value add(Value x, Value y) { return ex::AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return ex::SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return ex::MulOp::create(b, loc, x, y); }
  Value exp(Value x) { return ex::ExpOp::create(b, loc, x); }
  Value tanh(Value x) { return ex::TanhOp::create(b, loc, x); }
};
} // namespace

/// One lane: the 32 values of q8_0 block `block` (an index of 34-byte
/// blocks) of a cache, scaled, as a vector<32xf32>. An even block's values
/// start two bytes into a word: its words are the high halves of one load
/// joined with the low halves of the load one word on; an odd block's are
/// that second load as it is. (A q8_0 cache holds an even number of blocks,
/// so the last block is odd and no load passes the buffer's end.)
static Value loadQ8_0BlockVector(OpBuilder &b, Value cache, Value block,
                                 Location loc) {
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  Value byteBase = im.mul(block, im.c(34));
  Value word = im.div(byteBase, 4);
  Value low = vm.words(cache, word);
  Value high = vm.words(cache, im.add(word, im.c(1)));
  Value odd = im.lt(im.c(0), im.rem(block, 2));
  Value bytes = arith::SelectOp::create(b, loc, odd, vm.bytes(high),
                                        vm.bytesAfterHalfWord(low, high));
  Value scale = loadHalf(b, loc, cache, byteBase);
  return vm.mul(vm.splat(scale), vm.signedToF32(bytes));
}

Value GraphLowering::loadCacheVector(Value cache, Type element, Value index,
                                     Location loc) {
  if (isa<cir::Q8_0Type>(element))
    return loadQ8_0BlockVector(b, cache, IndexMath(b, loc).div(index, 32),
                               loc);
  BlockMath vm{b, loc};
  Value values = sm::LoadOp::create(
      b, loc, VectorType::get({BlockMath::kWidth}, element), cache, index);
  if (element.isF32())
    return values;
  return arith::ExtFOp::create(b, loc, vm.f32s(), values);
}

/// Elements of an f32 or f16 K cache one GPU lane loads at once when it
/// scores a position (16 bytes: one 128-bit load), or 1 where the head
/// dimension and the row stride do not keep such loads aligned (and for
/// q8_0 caches, read by the block).
static int64_t kVectorWidth(Type element, int64_t dim, int64_t rowStride) {
  if (!element.isF32() && !element.isF16())
    return 1;
  int64_t width = element.isF16() ? 8 : 4;
  return dim % width == 0 && rowStride % width == 0 ? width : 1;
}

GraphLowering::AttentionFrame
GraphLowering::beginAttention(cir::AttentionOp op, KernelState &ks,
                              int64_t lanes, Value partials) {
  AttentionFrame f;
  f.dim = op.getHeadDim();
  f.heads = op.getHeads();
  f.rowStride = op.getKvHeads() * f.dim;
  f.positions = numElements(op.getKCache().getType()) / f.rowStride;
  f.scale = op.getScale().convertToFloat();
  if (std::optional<APFloat> cap = op.getSoftcap())
    f.softcap = cap->convertToFloat();
  if (std::optional<uint64_t> window = op.getWindow())
    f.window = int64_t(*window);
  if (std::optional<uint64_t> seqLen = op.getSeqLen())
    f.seqLen = int64_t(*seqLen);
  for (Value input : {op.getQ(), op.getKCache(), op.getVCache(), op.getPos()})
    bind(ks, input, false);
  allocFor(op.getResult());
  bind(ks, op.getResult(), true);
  if (partials)
    bindBuffer(ks, partials, /*written=*/true);
  createKernel(ks, op, lanes);
  f.q = arg(ks, op.getQ());
  f.kCache = arg(ks, op.getKCache());
  f.vCache = arg(ks, op.getVCache());
  f.kElement = op.getKCache().getType().getElementType();
  f.vElement = op.getVCache().getType().getElementType();
  f.pos = arg(ks, op.getPos());
  f.out = arg(ks, op.getResult());
  return f;
}

/// One past the last position a query at i32 position `pos` reads: pos + 1,
/// with pos clamped to the cache's `positions`.
static Value attentionCount(OpBuilder &b, Location loc, Value pos,
                            int64_t positions) {
  IndexMath im(b, loc);
  Value i32Zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  Value i32Last =
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), positions - 1);
  pos = arith::MaxSIOp::create(b, loc, pos, i32Zero);
  pos = arith::MinSIOp::create(b, loc, pos, i32Last);
  return im.add(im.toIndex(pos), im.c(1));
}

/// The first position a query reads that ends at `count`: `start`, or the
/// window's first position after it.
static Value attentionFirst(OpBuilder &b, Location loc, Value count,
                            Value start, int64_t window) {
  if (window <= 0)
    return start;
  IndexMath im(b, loc);
  return arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, count, im.c(window)), start);
}

/// Runs `body` in an scf.if on `cond` (no results).
static void emitWhen(OpBuilder &b, Location loc, Value cond,
                     llvm::function_ref<void()> body) {
  auto guarded = scf::IfOp::create(b, loc, cond);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(guarded.thenBlock());
  body();
}

void GraphLowering::locateAttentionRow(AttentionFrame &f, int64_t group,
                                       Location loc, Value head) {
  IndexMath im(b, loc);
  if (!head)
    head = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value qRow = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  f.qBase = im.mul(im.add(im.mul(qRow, im.c(f.heads)), head), im.c(f.dim));
  f.kvBase = im.mul(im.div(head, group), im.c(f.dim));
  // The last position read: pos + row (with sequences, pos[row]), clamped
  // to the cache.
  Value pos;
  if (f.seqLen > 0) {
    pos = loadElement(f.pos, qRow, loc);
  } else {
    pos = loadElement(f.pos, im.c(0), loc);
    pos = arith::AddIOp::create(
        b, loc, pos, arith::IndexCastOp::create(b, loc, b.getI32Type(), qRow));
  }
  f.count = attentionCount(b, loc, pos, f.positions);
  // The row's sequence starts at the multiple of seq_len at or below its
  // last position.
  Value start = im.c(0);
  if (f.seqLen > 0)
    start = im.mul(im.div(arith::SubIOp::create(b, loc, f.count, im.c(1)),
                          f.seqLen),
                   im.c(f.seqLen));
  f.start = start;
  f.first = attentionFirst(b, loc, f.count, start, f.window);
}

Value GraphLowering::emitAttentionScore(const AttentionFrame &f,
                                        Value position, Location loc) {
  IndexMath im(b, loc);
  FloatMath fm{b, loc};
  Value kRow = im.add(im.mul(position, im.c(f.rowStride)), f.kvBase);
  // sum(q[d] k[d]) over d in [0, n) from `at` on, the K values from
  // `loadK(d)`.
  auto dotProduct = [&](Value at, int64_t n,
                        llvm::function_ref<Value(Value)> loadK) {
    auto dot = scf::ForOp::create(b, loc, im.c(0), im.c(n), im.c(1),
                                  ValueRange{fm.c(0.0)});
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToStart(dot.getBody());
    Value d = dot.getInductionVar();
    Value qv = loadElement(f.q, im.add(f.qBase, im.add(at, d)), loc);
    scf::YieldOp::create(
        b, loc, fm.add(dot.getRegionIterArgs()[0], fm.mul(qv, loadK(d))));
    return dot.getResult(0);
  };
  Value raw;
  if (isa<cir::Q8_0Type>(f.kElement) && shape.singleLane) {
    // One lane: a block of K and of q at a time as vector<32xf32>.
    BlockMath vm{b, loc};
    auto blocks = scf::ForOp::create(b, loc, im.c(0), im.c(f.dim / 32),
                                     im.c(1), ValueRange{vm.zeros()});
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToStart(blocks.getBody());
    Value at = im.mul(blocks.getInductionVar(), im.c(32));
    Value k = loadCacheVector(f.kCache, f.kElement, im.add(kRow, at), loc);
    Value qv = vm.x32(f.q, im.add(f.qBase, at));
    scf::YieldOp::create(
        b, loc, vm.multiplyAdd(blocks.getRegionIterArgs()[0], k, qv));
    b.setInsertionPointAfter(blocks);
    raw = vm.sum(blocks.getResult(0));
  } else if (isa<cir::Q8_0Type>(f.kElement)) {
    // A q8_0 cache's head is whole 32-value blocks (the cache types'
    // check): per block, the 32 byte products in f32 and its f16 scale
    // once, instead of a scale per value.
    WordMath wm(b, loc);
    auto blocks = scf::ForOp::create(b, loc, im.c(0), im.c(f.dim / 32),
                                     im.c(1), ValueRange{fm.c(0.0)});
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToStart(blocks.getBody());
    Value at = im.mul(blocks.getInductionVar(), im.c(32));
    Value base = im.mul(im.div(im.add(kRow, at), 32), im.c(34));
    Value sum = dotProduct(at, 32, [&](Value j) {
      return wm.toF32(wm.signExtendByte(
          loadByte(b, loc, f.kCache, im.add(base, im.add(im.c(2), j)))));
    });
    Value scale = loadHalf(b, loc, f.kCache, base);
    scf::YieldOp::create(
        b, loc, fm.add(blocks.getRegionIterArgs()[0], fm.mul(scale, sum)));
    b.setInsertionPointAfter(blocks);
    raw = blocks.getResult(0);
  } else if (int64_t width = kVectorWidth(f.kElement, f.dim, f.rowStride);
             !shape.singleLane && shape.wideLoads && width > 1) {
    // A GPU lane scores its own position: its K row is read 16 bytes per
    // load (positions, and so lanes, are a row apart, so each load of a
    // subgroup touches a cache line per lane; whole 16-byte pieces make
    // the most of each, and a lane has several loads in flight: up to four
    // runs a turn). The products are added in the same order as one
    // element at a time.
    const int64_t runCount = f.dim / width;
    const int64_t perTurn = runCount % 4 == 0 ? 4 : runCount % 2 == 0 ? 2 : 1;
    auto turns = scf::ForOp::create(b, loc, im.c(0),
                                    im.c(runCount / perTurn), im.c(1),
                                    ValueRange{fm.c(0.0)});
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToStart(turns.getBody());
    Value sum = turns.getRegionIterArgs()[0];
    for (int64_t r = 0; r < perTurn; ++r) {
      Value at = im.mul(im.add(im.mul(turns.getInductionVar(), im.c(perTurn)),
                               im.c(r)),
                        im.c(width));
      SmallVector<Value> ks =
          loadF32s(f.kCache, im.add(kRow, at), width, loc);
      SmallVector<Value> qs =
          loadF32s(f.q, im.add(f.qBase, at), width, loc);
      for (int64_t j = 0; j < width; ++j)
        sum = fm.add(sum, fm.mul(qs[j], ks[j]));
    }
    scf::YieldOp::create(b, loc, sum);
    b.setInsertionPointAfter(turns);
    raw = turns.getResult(0);
  } else {
    raw = dotProduct(im.c(0), f.dim, [&](Value d) {
      return loadCacheValue(f.kCache, f.kElement, im.add(kRow, d), loc);
    });
  }
  return scaleScore(f, raw, loc);
}

Value GraphLowering::scaleScore(const AttentionFrame &f, Value dot,
                                Location loc) {
  FloatMath fm{b, loc};
  Value score = fm.mul(dot, fm.c(f.scale));
  if (f.softcap > 0)
    score = fm.mul(fm.tanh(fm.mul(score, fm.c(1.0 / f.softcap))),
                   fm.c(f.softcap));
  return score;
}

/// Lane `lane`'s dimensions of a head (lane, lane + lanes, ...), clamped
/// in range for the loads (the extra lanes of a head dimension that is not
/// a multiple of `lanes` compute a value they never store).
static SmallVector<Value> laneDimensions(OpBuilder &b, Location loc,
                                         Value lane, int64_t dim,
                                         int64_t lanes) {
  IndexMath im(b, loc);
  SmallVector<Value> dims;
  for (int64_t j = 0; j < ceilDiv(dim, lanes); ++j)
    dims.push_back(arith::MinUIOp::create(
        b, loc, im.add(lane, im.c(j * lanes)), im.c(dim - 1)));
  return dims;
}

/// Runs `store(d)` for lane `lane`'s `j`-th dimension d where it exists.
static void forOwnedDimension(OpBuilder &b, Location loc, Value lane,
                              int64_t j, int64_t dim, int64_t lanes,
                              llvm::function_ref<void(Value d)> store) {
  IndexMath im(b, loc);
  Value d = im.add(lane, im.c(j * lanes));
  emitWhen(b, loc, im.lt(d, im.c(dim)), [&] { store(d); });
}

/// Stores one row's partial results for range `split` (emitAttentionCombine
/// reads them): lane 0 the maximum `m` and sum `l`, every lane the
/// weighted V sums `acc` of the dimensions it owns.
static void storeAttentionPartials(OpBuilder &b, Location loc, Value scratch,
                                   Value rowHead, Value split, int64_t splits,
                                   Value m, Value l, ValueRange acc,
                                   Value tid, int64_t dim, int64_t lanes) {
  IndexMath im(b, loc);
  Value at = im.mul(im.add(im.mul(rowHead, im.c(splits)), split),
                    im.c(dim + 2));
  emitWhen(b, loc, im.lt(tid, im.c(1)), [&] {
    sm::StoreOp::create(b, loc, m, scratch, at);
    sm::StoreOp::create(b, loc, l, scratch, im.add(at, im.c(1)));
  });
  for (int64_t j = 0; j < ceilDiv(dim, lanes); ++j)
    forOwnedDimension(b, loc, tid, j, dim, lanes, [&](Value d) {
      sm::StoreOp::create(b, loc, acc[j], scratch,
                          im.add(at, im.add(im.c(2), d)));
    });
}

/// Rows of queries a chunk-attention workgroup takes: up to 16, as many as
/// keep its staged queries and scores within 12 KiB of workgroup memory
/// (Vulkan guarantees 16 KiB).
static int64_t chunkAttentionRows(int64_t rows, int64_t dim, int64_t lanes) {
  int64_t tile = std::min<int64_t>(16, rows);
  while (tile > 1 && tile * (dim + lanes) * 4 > 12 * 1024)
    tile /= 2;
  return tile;
}

/// One workgroup per query head. Each tile of positions: every lane scores
/// one position (a dot product over the head dimension) into shared
/// memory; after a barrier every lane reads the tile's scores in index
/// order to update the running maximum and sum (the same values in every
/// lane), rescales its accumulators and adds the tile's weighted V rows for
/// the dimensions it owns (d = lane, lane + 64, ...). Only positions up to
/// `pos` are read (from `first` on, with a sliding window). With one lane
/// (the CPU target) see emitAttentionSingleLane.
///
/// A cache of more than kAttentionSplitTiles tiles is split into ranges of
/// that many tiles (flash-decoding): workgroup z of the first kernel runs
/// the tiles of range z that lie in [first, pos] and stores its running
/// maximum, sum and weighted V sums (nothing to add: the lowest float, 0,
/// 0); a second kernel, a workgroup per head and row, combines the ranges
/// in index order (each rescaled by exp(m_z - max m)). The ranges are
/// fixed by the cache's size, so the command list stays the same from
/// token to token, the work per workgroup stays bounded as the position
/// grows, and the result is the same run to run.
LogicalResult GraphLowering::lowerAttention(cir::AttentionOp op) {
  Location loc = op.getLoc();
  const int64_t heads = op.getHeads(), dim = op.getHeadDim(),
                group = heads / op.getKvHeads();
  const int64_t rows = numElements(op.getQ().getType()) / (heads * dim);
  if (failed(checkRows(op, heads, shape)) ||
      failed(checkRows(op, rows, shape)))
    return failure();
  KernelState ks;
  if (shape.singleLane) {
    AttentionFrame f = beginAttention(op, ks, 1);
    if (dim % BlockMath::kWidth == 0 &&
        dim / BlockMath::kWidth <= kMaxAttentionChunks) {
      emitGroupedAttentionSingleLane(f, group, loc);
      finishKernel(ks, {heads / group, rows, 1});
    } else {
      emitAttentionSingleLane(f, group, loc);
      finishKernel(ks, {heads, rows, 1});
    }
    return success();
  }

  // The `lanes` knob: lanes and positions per tile (kAttentionTile).
  const int64_t lanes = shape.attentionLanes;
  const int64_t owned = ceilDiv(dim, lanes); // dimensions per lane
  int64_t splitPositions = lanes * kAttentionSplitTiles;
  // A row reads its own sequence's positions (a batch step's caches hold
  // several sequences of seq_len).
  int64_t positions =
      numElements(op.getKCache().getType()) / (op.getKvHeads() * dim);
  if (std::optional<uint64_t> seqLen = op.getSeqLen())
    positions = std::min<int64_t>(positions, int64_t(*seqLen));
  int64_t splits = ceilDiv(positions, splitPositions);
  // A prompt chunk of one sequence (emitChunkAttention) already has a
  // workgroup per head and tile of rows: only as many ranges as bring the
  // grid to kChunkAttentionWorkgroups, of whole tiles of positions (512
  // rows of 32 heads take none: 1024 workgroups, no partial sums in
  // memory, where ranges of 128 positions of a 4096-position cache would
  // keep 272 MB of them).
  const bool chunk = rows > 1 && !op.getSeqLen();
  if (chunk) {
    int64_t workgroups =
        heads * ceilDiv(rows, chunkAttentionRows(rows, dim, lanes));
    splits = std::clamp<int64_t>(
        ceilDiv(kChunkAttentionWorkgroups, workgroups), 1, splits);
    splitPositions = ceilDiv(ceilDiv(positions, splits), lanes) * lanes;
    splits = ceilDiv(positions, splitPositions);
  }
  if (splits > shape.maxGridDim)
    return op.emitOpError("has a cache of ")
           << positions << " positions, more than "
           << shape.maxGridDim * splitPositions
           << " that convert-circuit-to-shaderm splits over one grid "
              "dimension";
  // Per (row, head, range): the running maximum, the sum and dim weighted
  // V sums.
  const int64_t partialStride = dim + 2;
  Value partials;
  if (splits > 1)
    partials = allocScratch(rows * heads * splits * partialStride,
                            b.getF32Type(), loc);
  // A prompt chunk of one sequence: query rows share K and V rows.
  if (chunk) {
    emitChunkAttention(op, rows, lanes, splits, splitPositions, partials);
    if (partials)
      emitAttentionCombine(op, partials, rows, splits, lanes);
    return success();
  }
  AttentionFrame f = beginAttention(op, ks, lanes, partials);
  IndexMath im(b, loc);
  FloatMath fm{b, loc};
  Type f32 = b.getF32Type();
  Value vCache = f.vCache;
  Value scores = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), lanes, f32));
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  locateAttentionRow(f, group, loc);
  Value kvBase = f.kvBase, count = f.count;
  const int64_t rowStride = f.rowStride;
  SmallVector<Value> dims = laneDimensions(b, loc, tid, dim, lanes);
  // The positions this workgroup takes: all of [first, count), or the part
  // of its range of them (ranges counted from the row's sequence's start).
  Value begin = f.first, end = count, split;
  if (partials) {
    split = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::z);
    Value rangeBegin = im.add(f.start, im.mul(split, im.c(splitPositions)));
    begin = arith::MaxUIOp::create(b, loc, f.first, rangeBegin);
    end = arith::MinUIOp::create(
        b, loc, count, im.add(rangeBegin, im.c(splitPositions)));
  }

  Value lowest = fm.c(-std::numeric_limits<float>::max());
  SmallVector<Value> init{lowest, fm.c(0.0)};
  for (int64_t j = 0; j < owned; ++j)
    init.push_back(fm.c(0.0));
  auto tiles = scf::ForOp::create(b, loc, begin, end, im.c(lanes), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value tile = tiles.getInductionVar();
    ValueRange carried = tiles.getRegionIterArgs();
    Value t = im.add(tile, tid);
    // Score of position t (the lowest float past the end: it never wins
    // the maximum and is never summed).
    auto scored = scf::IfOp::create(b, loc, TypeRange{f32}, im.lt(t, end),
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(scored.thenBlock());
      scf::YieldOp::create(b, loc, emitAttentionScore(f, t, loc));
      b.setInsertionPointToStart(scored.elseBlock());
      scf::YieldOp::create(b, loc, lowest);
    }
    sm::StoreOp::create(b, loc, scored.getResult(0), scores, tid);
    sm::BarrierOp::create(b, loc);

    // Positions in this tile: min(64, end - tile) >= 1.
    Value n = arith::MinUIOp::create(b, loc, im.c(lanes),
                                     arith::SubIOp::create(b, loc, end, tile));
    auto maxLoop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1),
                                      ValueRange{lowest});
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value s = sm::LoadOp::create(b, loc, f32, scores,
                                   maxLoop.getInductionVar());
      scf::YieldOp::create(b, loc, fm.max(maxLoop.getRegionIterArgs()[0], s));
    }
    Value tileMax = guardZeroTrip(b, maxLoop)[0];
    Value mNew = fm.max(carried[0], tileMax);
    Value correction = fm.exp(fm.sub(carried[0], mNew));

    SmallVector<Value> sums{fm.c(0.0)};
    for (int64_t j = 0; j < owned; ++j)
      sums.push_back(fm.mul(carried[2 + j], correction));
    auto accLoop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1), sums);
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(accLoop.getBody());
      Value i = accLoop.getInductionVar();
      ValueRange acc = accLoop.getRegionIterArgs();
      Value s = sm::LoadOp::create(b, loc, f32, scores, i);
      Value p = fm.exp(fm.sub(s, mNew));
      SmallVector<Value> next{fm.add(acc[0], p)};
      Value vRow = im.add(im.mul(im.add(tile, i), im.c(rowStride)), kvBase);
      for (int64_t j = 0; j < owned; ++j) {
        Value v = loadCacheValue(vCache, f.vElement, im.add(vRow, dims[j]),
                                 loc);
        next.push_back(fm.add(acc[1 + j], fm.mul(p, v)));
      }
      scf::YieldOp::create(b, loc, next);
    }
    ValueRange accumulated = guardZeroTrip(b, accLoop);
    // Unrolled (the same positions in the same order), so that a lane's V
    // loads of several positions are independent of each other's sums and
    // can be in flight together: a workgroup per head and range leaves an
    // SM too few warps to hide one load's latency per position.
    (void)unrollGuarded(b, accLoop, kAttentionVUnroll);
    // Every lane has read the tile's scores before the next tile writes
    // them.
    sm::BarrierOp::create(b, loc);
    SmallVector<Value> yielded{
        mNew, fm.add(fm.mul(carried[1], correction), accumulated[0])};
    for (int64_t j = 0; j < owned; ++j)
      yielded.push_back(accumulated[1 + j]);
    scf::YieldOp::create(b, loc, yielded);
  }
  ValueRange final = guardZeroTrip(b, tiles);
  if (!partials) {
    for (int64_t j = 0; j < owned; ++j)
      forOwnedDimension(b, loc, tid, j, dim, lanes, [&](Value d) {
        Value value = ex::DivOp::create(b, loc, final[2 + j], final[1]);
        sm::StoreOp::create(b, loc, value, f.out, im.add(f.qBase, d));
      });
    finishKernel(ks, {heads, rows, 1});
    return success();
  }

  // The range's partial results: lane 0 its maximum and sum, every lane
  // its dimensions' sums.
  Value head = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value qRow = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  Value rowHead = im.add(im.mul(qRow, im.c(heads)), head);
  storeAttentionPartials(b, loc, ks.argOf.lookup(partials), rowHead, split,
                         splits, final[0], final[1], final.drop_front(2), tid,
                         dim, lanes);
  finishKernel(ks, {heads, rows, splits});

  emitAttentionCombine(op, partials, rows, splits, lanes);
  return success();
}

/// A prompt chunk's attention (flash attention): a workgroup per head and
/// tile of up to 16 query rows (grid y) shares every K and V row it reads
/// among the tile's rows, instead of a workgroup per row reading them
/// again. The tile's queries are staged in workgroup memory. Per tile of
/// `lanes` positions:
///   1. lane t reads K row t once and scores it against every query row
///      (the lowest float where the row may not read t: causal, or out of
///      its window) into a [rows x lanes] score block;
///   2. lane r (one per query row) takes its row's maximum, keeps the
///      running maximum m_r and the correction exp(m_old - m_r);
///   3. lane t turns its column into p = exp(s - m_r) (0 where masked);
///   4. lane r adds its row's p in position order to the running sum, and
///      every lane rescales its accumulators (a row's sums of the
///      dimensions it owns) and adds p times each V row, V read once for
///      all rows.
/// The order of every sum is fixed, so results are the same run to run; it
/// is not the per-row kernel's order, so a chunk equals token-by-token
/// decode to rounding. With `partials` (a cache of more than
/// kAttentionSplitTiles tiles) grid z takes a range of positions and
/// stores each row's maximum, sum and weighted V sums for
/// emitAttentionCombine, as the per-row kernel does.
void GraphLowering::emitChunkAttention(cir::AttentionOp op, int64_t rows,
                                       int64_t lanes, int64_t splits,
                                       int64_t splitPositions,
                                       Value partials) {
  Location loc = op.getLoc();
  const int64_t heads = op.getHeads(), dim = op.getHeadDim(),
                group = heads / op.getKvHeads();
  const int64_t owned = ceilDiv(dim, lanes);
  const int64_t tileRows = chunkAttentionRows(rows, dim, lanes);
  KernelState ks;
  AttentionFrame f = beginAttention(op, ks, lanes, partials);
  IndexMath im(b, loc);
  FloatMath fm{b, loc};
  Type f32 = b.getF32Type();
  auto shared = [&](int64_t n) {
    return sm::SharedAllocOp::create(
        b, loc, sm::SharedType::get(b.getContext(), n, f32));
  };
  Value queries = shared(tileRows * dim);
  Value scores = shared(tileRows * lanes);
  Value maxima = shared(tileRows), sums = shared(tileRows),
        corrections = shared(tileRows);
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value head = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value rowTile =
      sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  Value row0 = im.mul(rowTile, im.c(tileRows));
  Value kvBase = im.mul(im.div(head, group), im.c(dim));
  Value lowest = fm.c(-std::numeric_limits<float>::max());
  auto isLane = [&](int64_t n) { return im.lt(tid, im.c(n)); };
  auto when = [&](Value cond, llvm::function_ref<void()> body) {
    emitWhen(b, loc, cond, body);
  };

  // The positions each tile row reads: [first_r, count_r), count_r =
  // pos + row + 1 clamped to the cache (a partial tile's extra rows take
  // the last row's, computing values they never store).
  Value pos0 = loadElement(f.pos, im.c(0), loc);
  SmallVector<Value> firsts, counts;
  for (int64_t r = 0; r < tileRows; ++r) {
    Value row = arith::MinUIOp::create(b, loc, im.add(row0, im.c(r)),
                                       im.c(rows - 1));
    Value count = attentionCount(
        b, loc, arith::AddIOp::create(b, loc, pos0, im.toI32(row)),
        f.positions);
    counts.push_back(count);
    firsts.push_back(attentionFirst(b, loc, count, im.c(0), f.window));
  }
  // The workgroup's positions: from its first row's first to its last
  // row's end (the part of them in its range).
  Value begin = firsts.front(), end = counts.back(), split;
  if (partials) {
    split = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::z);
    Value rangeBegin = im.mul(split, im.c(splitPositions));
    begin = arith::MaxUIOp::create(b, loc, begin, rangeBegin);
    end = arith::MinUIOp::create(b, loc, end,
                                 im.add(rangeBegin, im.c(splitPositions)));
  }

  // Stage the queries; lane r < tileRows starts row r's maximum and sum.
  {
    auto copy = scf::ForOp::create(b, loc, tid, im.c(tileRows * dim),
                                   im.c(lanes));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(copy.getBody());
    Value i = copy.getInductionVar();
    Value r = im.div(i, dim), d = im.rem(i, dim);
    Value row = arith::MinUIOp::create(b, loc, im.add(row0, r),
                                       im.c(rows - 1));
    Value at = im.add(im.mul(im.add(im.mul(row, im.c(heads)), head),
                             im.c(dim)),
                      d);
    sm::StoreOp::create(b, loc, loadElement(f.q, at, loc), queries, i);
  }
  when(isLane(tileRows), [&] {
    sm::StoreOp::create(b, loc, lowest, maxima, tid);
    sm::StoreOp::create(b, loc, fm.c(0.0), sums, tid);
  });
  sm::BarrierOp::create(b, loc);

  SmallVector<Value> dims = laneDimensions(b, loc, tid, dim, lanes);
  SmallVector<Value> init(tileRows * owned, fm.c(0.0));
  auto tiles = scf::ForOp::create(b, loc, begin, end, im.c(lanes), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value tile = tiles.getInductionVar();
    Value t = im.add(tile, tid);
    Value inTile = im.lt(t, end);
    // Whether row r reads position t.
    auto reads = [&](int64_t r) {
      Value notBefore = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::uge, t, firsts[r]);
      return arith::AndIOp::create(
          b, loc, inTile,
          arith::AndIOp::create(b, loc, notBefore, im.lt(t, counts[r])));
    };
    // 1. K row t against every query row.
    auto scored = scf::IfOp::create(
        b, loc, SmallVector<Type>(tileRows, f32), inTile,
        /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(scored.thenBlock());
      Value kRow = im.add(im.mul(t, im.c(f.rowStride)), kvBase);
      // K read 16 bytes per load where the layout allows (as in
      // emitAttentionScore), the products added in element order.
      const int64_t width =
          shape.wideLoads ? kVectorWidth(f.kElement, dim, f.rowStride) : 1;
      auto dot = scf::ForOp::create(b, loc, im.c(0), im.c(dim / width),
                                    im.c(1),
                                    SmallVector<Value>(tileRows, fm.c(0.0)));
      {
        OpBuilder::InsertionGuard body(b);
        b.setInsertionPointToStart(dot.getBody());
        Value at = im.mul(dot.getInductionVar(), im.c(width));
        SmallVector<Value> ks =
            width > 1
                ? loadF32s(f.kCache, im.add(kRow, at), width, loc)
                : SmallVector<Value>{loadCacheValue(f.kCache, f.kElement,
                                                    im.add(kRow, at), loc)};
        SmallVector<Value> next(dot.getRegionIterArgs());
        for (auto [j, k] : llvm::enumerate(ks)) {
          Value d = im.add(at, im.c(j));
          for (int64_t r = 0; r < tileRows; ++r) {
            Value q = sm::LoadOp::create(b, loc, f32, queries,
                                         im.add(im.c(r * dim), d));
            next[r] = fm.add(next[r], fm.mul(q, k));
          }
        }
        scf::YieldOp::create(b, loc, next);
      }
      SmallVector<Value> results;
      for (int64_t r = 0; r < tileRows; ++r)
        results.push_back(scaleScore(f, dot.getResult(r), loc));
      scf::YieldOp::create(b, loc, results);
      b.setInsertionPointToStart(scored.elseBlock());
      scf::YieldOp::create(b, loc, SmallVector<Value>(tileRows, lowest));
    }
    for (int64_t r = 0; r < tileRows; ++r) {
      Value s = arith::SelectOp::create(b, loc, reads(r), scored.getResult(r),
                                        lowest);
      sm::StoreOp::create(b, loc, s, scores, im.add(im.c(r * lanes), tid));
    }
    sm::BarrierOp::create(b, loc);

    // Positions in this tile: min(lanes, end - tile) >= 1.
    Value n = arith::MinUIOp::create(b, loc, im.c(lanes),
                                     arith::SubIOp::create(b, loc, end, tile));
    // Lane r: row r's n values of the score block folded by `combine`
    // from `init`, in position order.
    Value rowScores = im.mul(tid, im.c(lanes));
    auto foldRow = [&](Value init,
                       llvm::function_ref<Value(Value, Value)> combine) {
      auto fold = scf::ForOp::create(b, loc, im.c(0), n, im.c(1),
                                     ValueRange{init});
      {
        OpBuilder::InsertionGuard body(b);
        b.setInsertionPointToStart(fold.getBody());
        Value s = sm::LoadOp::create(
            b, loc, f32, scores, im.add(rowScores, fold.getInductionVar()));
        scf::YieldOp::create(b, loc,
                             combine(fold.getRegionIterArgs()[0], s));
      }
      return guardZeroTrip(b, fold)[0];
    };
    // 2. Lane r: row r's new maximum and the correction of its old sums.
    when(isLane(tileRows), [&] {
      Value old = sm::LoadOp::create(b, loc, f32, maxima, tid);
      Value mNew = fm.max(old, foldRow(lowest, [&](Value m, Value s) {
                            return fm.max(m, s);
                          }));
      sm::StoreOp::create(b, loc, mNew, maxima, tid);
      sm::StoreOp::create(b, loc, fm.exp(fm.sub(old, mNew)), corrections,
                          tid);
    });
    sm::BarrierOp::create(b, loc);
    // 3. Lane t: its column's weights.
    for (int64_t r = 0; r < tileRows; ++r) {
      Value at = im.add(im.c(r * lanes), tid);
      Value s = sm::LoadOp::create(b, loc, f32, scores, at);
      Value m = sm::LoadOp::create(b, loc, f32, maxima, im.c(r));
      Value p = arith::SelectOp::create(b, loc, reads(r),
                                        fm.exp(fm.sub(s, m)), fm.c(0.0));
      sm::StoreOp::create(b, loc, p, scores, at);
    }
    sm::BarrierOp::create(b, loc);
    // 4. Lane r: row r's sum; every lane: its dimensions of every row.
    when(isLane(tileRows), [&] {
      Value added = foldRow(fm.c(0.0), [&](Value l, Value p) {
        return fm.add(l, p);
      });
      Value l = fm.mul(sm::LoadOp::create(b, loc, f32, sums, tid),
                       sm::LoadOp::create(b, loc, f32, corrections, tid));
      sm::StoreOp::create(b, loc, fm.add(l, added), sums, tid);
    });
    SmallVector<Value> acc;
    for (int64_t r = 0; r < tileRows; ++r) {
      Value c = sm::LoadOp::create(b, loc, f32, corrections, im.c(r));
      for (int64_t j = 0; j < owned; ++j)
        acc.push_back(fm.mul(tiles.getRegionIterArgs()[r * owned + j], c));
    }
    auto accLoop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1), acc);
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(accLoop.getBody());
      Value i = accLoop.getInductionVar();
      Value vRow = im.add(im.mul(im.add(tile, i), im.c(f.rowStride)), kvBase);
      SmallVector<Value> v;
      for (int64_t j = 0; j < owned; ++j)
        v.push_back(loadCacheValue(f.vCache, f.vElement,
                                   im.add(vRow, dims[j]), loc));
      SmallVector<Value> next;
      for (int64_t r = 0; r < tileRows; ++r) {
        Value p = sm::LoadOp::create(b, loc, f32, scores,
                                     im.add(im.c(r * lanes), i));
        for (int64_t j = 0; j < owned; ++j)
          next.push_back(fm.add(accLoop.getRegionIterArgs()[r * owned + j],
                                fm.mul(p, v[j])));
      }
      scf::YieldOp::create(b, loc, next);
    }
    ValueRange accumulated = guardZeroTrip(b, accLoop);
    // Every lane is done with the tile's weights, maxima and corrections
    // before the next tile writes them.
    sm::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, accumulated);
  }
  ValueRange final = guardZeroTrip(b, tiles);

  // Each real row of the tile: its output, or its range's partial results.
  Value scratch = partials ? ks.argOf.lookup(partials) : Value();
  for (int64_t r = 0; r < tileRows; ++r) {
    Value row = im.add(row0, im.c(r));
    when(im.lt(row, im.c(rows)), [&] {
      Value rowHead = im.add(im.mul(row, im.c(heads)), head);
      Value sum = sm::LoadOp::create(b, loc, f32, sums, im.c(r));
      if (!partials) {
        for (int64_t j = 0; j < owned; ++j)
          forOwnedDimension(b, loc, tid, j, dim, lanes, [&](Value d) {
            Value value = ex::DivOp::create(b, loc, final[r * owned + j], sum);
            sm::StoreOp::create(b, loc, value, f.out,
                                im.add(im.mul(rowHead, im.c(dim)), d));
          });
        return;
      }
      storeAttentionPartials(
          b, loc, scratch, rowHead, split, splits,
          sm::LoadOp::create(b, loc, f32, maxima, im.c(r)), sum,
          final.slice(r * owned, owned), tid, dim, lanes);
    });
  }
  finishKernel(ks, {heads, ceilDiv(rows, tileRows), splits});
}

void GraphLowering::emitAttentionCombine(cir::AttentionOp op, Value partials,
                                         int64_t rows, int64_t splits,
                                         int64_t lanes) {
  Location loc = op.getLoc();
  const int64_t heads = op.getHeads(), dim = op.getHeadDim();
  const int64_t owned = ceilDiv(dim, lanes), partialStride = dim + 2;
  IndexMath im(b, loc);
  FloatMath fm{b, loc};
  Type f32 = b.getF32Type();
  // The combine kernel: per head and row, the ranges in index order.
  KernelState combine;
  bindBuffer(combine, partials, /*written=*/false);
  bind(combine, op.getResult(), /*written=*/true);
  createKernel(combine, op, lanes);
  Value parts = combine.argOf.lookup(partials);
  Value out = arg(combine, op.getResult());
  Value lowest = fm.c(-std::numeric_limits<float>::max());
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value head = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value qRow = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  Value rowHead = im.add(im.mul(qRow, im.c(heads)), head);
  Value rowParts = im.mul(rowHead, im.c(splits * partialStride));
  SmallVector<Value> dims = laneDimensions(b, loc, tid, dim, lanes);
  auto partAt = [&](Value s, int64_t offset) {
    return im.add(rowParts, im.add(im.mul(s, im.c(partialStride)),
                                   im.c(offset)));
  };
  auto maxLoop = scf::ForOp::create(b, loc, im.c(0), im.c(splits), im.c(1),
                                    ValueRange{lowest});
  {
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToStart(maxLoop.getBody());
    Value m = sm::LoadOp::create(b, loc, f32, parts,
                                 partAt(maxLoop.getInductionVar(), 0));
    scf::YieldOp::create(b, loc, fm.max(maxLoop.getRegionIterArgs()[0], m));
  }
  Value mAll = maxLoop.getResult(0);
  SmallVector<Value> sums(1 + owned, fm.c(0.0));
  auto sumLoop = scf::ForOp::create(b, loc, im.c(0), im.c(splits), im.c(1),
                                    sums);
  {
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToStart(sumLoop.getBody());
    Value s = sumLoop.getInductionVar();
    ValueRange acc = sumLoop.getRegionIterArgs();
    Value m = sm::LoadOp::create(b, loc, f32, parts, partAt(s, 0));
    Value w = fm.exp(fm.sub(m, mAll));
    Value l = sm::LoadOp::create(b, loc, f32, parts, partAt(s, 1));
    SmallVector<Value> next{fm.add(acc[0], fm.mul(l, w))};
    for (int64_t j = 0; j < owned; ++j) {
      Value v = sm::LoadOp::create(b, loc, f32, parts,
                                   im.add(partAt(s, 2), dims[j]));
      next.push_back(fm.add(acc[1 + j], fm.mul(v, w)));
    }
    scf::YieldOp::create(b, loc, next);
  }
  Value qBase = im.mul(rowHead, im.c(dim));
  for (int64_t j = 0; j < owned; ++j)
    forOwnedDimension(b, loc, tid, j, dim, lanes, [&](Value d) {
      Value value = ex::DivOp::create(b, loc, sumLoop.getResult(1 + j),
                                      sumLoop.getResult(0));
      sm::StoreOp::create(b, loc, value, out, im.add(qBase, d));
    });
  finishKernel(combine, {heads, rows, 1});
}

//===----------------------------------------------------------------------===//
// Single-lane attention (the CPU target)
//===----------------------------------------------------------------------===//

/// `body(i)` for i in [0, n): an scf.for with no carried values.
static void emitForEach(OpBuilder &b, Location loc, Value n,
                        llvm::function_ref<void(Value)> body) {
  IndexMath im(b, loc);
  auto loop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

/// A loop over 0 .. n carrying `init`: `body(i, carried)` gives the values
/// the next iteration carries. Returns the loop's results, guarded against
/// zero trips (guardZeroTrip).
static SmallVector<Value>
emitFold(OpBuilder &b, Location loc, Value n, ValueRange init,
         llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  IndexMath im(b, loc);
  auto loop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()));
  }
  return SmallVector<Value>(guardZeroTrip(b, loop));
}

/// One workgroup of one lane per (query row, head). The same tiles of 64
/// positions as above, in the same order, with the head's accumulators in a
/// scratch row instead of spread over lanes: score the tile's positions
/// into scratch, take their maximum, rescale the accumulators once, then
/// add each position's weighted V row. Every inner loop runs over the head
/// dimension, which the CPU code generator vectorizes.
void GraphLowering::emitAttentionSingleLane(AttentionFrame &f, int64_t group,
                                            Location loc) {
  IndexMath im(b, loc);
  FloatMath fm{b, loc};
  Type f32 = b.getF32Type();
  const int64_t dim = f.dim, rowStride = f.rowStride;
  Value vCache = f.vCache, out = f.out;
  auto forEach = [&](Value n, llvm::function_ref<void(Value)> body) {
    emitForEach(b, loc, n, body);
  };
  Value scores = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), kAttentionTile, f32));
  Value acc = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), dim, f32));
  locateAttentionRow(f, group, loc);
  Value qBase = f.qBase, kvBase = f.kvBase, count = f.count;
  forEach(im.c(dim),
          [&](Value d) { sm::StoreOp::create(b, loc, fm.c(0.0), acc, d); });

  Value lowest = fm.c(-std::numeric_limits<float>::max());
  auto tiles = scf::ForOp::create(b, loc, f.first, count,
                                  im.c(kAttentionTile),
                                  ValueRange{lowest, fm.c(0.0)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value tile = tiles.getInductionVar();
    Value m = tiles.getRegionIterArgs()[0], l = tiles.getRegionIterArgs()[1];
    Value n = arith::MinUIOp::create(b, loc, im.c(kAttentionTile),
                                     arith::SubIOp::create(b, loc, count, tile));
    // Scores of the tile's positions, and their maximum.
    Value tileMax = emitFold(
        b, loc, n, ValueRange{lowest},
        [&](Value i, ValueRange max) -> SmallVector<Value> {
          Value s = emitAttentionScore(f, im.add(tile, i), loc);
          sm::StoreOp::create(b, loc, s, scores, i);
          return {fm.max(max[0], s)};
        })[0];
    Value mNew = fm.max(m, tileMax);
    Value correction = fm.exp(fm.sub(m, mNew));
    // The weights exp(s - mNew), in place of the scores, and their sum: a
    // loop of its own, which the vectorizer widens (exp is a polynomial on
    // the CPU target).
    Value tileSum = emitFold(
        b, loc, n, ValueRange{fm.c(0.0)},
        [&](Value i, ValueRange sum) -> SmallVector<Value> {
          Value p =
              fm.exp(fm.sub(sm::LoadOp::create(b, loc, f32, scores, i), mNew));
          sm::StoreOp::create(b, loc, p, scores, i);
          return {fm.add(sum[0], p)};
        })[0];
    forEach(im.c(dim), [&](Value d) {
      Value a = sm::LoadOp::create(b, loc, f32, acc, d);
      sm::StoreOp::create(b, loc, fm.mul(a, correction), acc, d);
    });
    forEach(n, [&](Value i) {
      Value p = sm::LoadOp::create(b, loc, f32, scores, i);
      Value vRow = im.add(im.mul(im.add(tile, i), im.c(rowStride)), kvBase);
      forEach(im.c(dim), [&](Value d) {
        Value a = sm::LoadOp::create(b, loc, f32, acc, d);
        Value v = loadCacheValue(vCache, f.vElement, im.add(vRow, d), loc);
        sm::StoreOp::create(b, loc, fm.add(a, fm.mul(p, v)), acc, d);
      });
    });
    scf::YieldOp::create(b, loc,
                         ValueRange{mNew, fm.add(fm.mul(l, correction), tileSum)});
  }
  Value total = guardZeroTrip(b, tiles)[1];
  forEach(im.c(dim), [&](Value d) {
    Value a = sm::LoadOp::create(b, loc, f32, acc, d);
    sm::StoreOp::create(b, loc, ex::DivOp::create(b, loc, a, total), out,
                        im.add(qBase, d));
  });
}

/// One lane, a workgroup per KV head and query row: the query heads of the
/// KV group (`group` of them) share each K and V row the workgroup reads,
/// so a row comes from memory once per group instead of once per head.
/// The head dimension is whole vectors of 32 (at most
/// kMaxAttentionChunks). Per tile of kAttentionTile positions: each K
/// row's vectors are loaded once and scored against every head's q; the
/// weights exp(s - m) and their sums per head in loops of their own (the
/// vectorizer widens them); then, for heads two at a time, their
/// accumulators stay in registers over the tile's positions while each V
/// row's vectors are loaded once for both. Every head's arithmetic is the
/// single-head kernel's (the same tiles, the same running maximum), so
/// the results are the interpreter's up to the order of the sums.
void GraphLowering::emitGroupedAttentionSingleLane(AttentionFrame &f,
                                                   int64_t group,
                                                   Location loc) {
  IndexMath im(b, loc);
  FloatMath fm{b, loc};
  BlockMath vm{b, loc};
  Type f32 = b.getF32Type();
  const int64_t dim = f.dim, rowStride = f.rowStride;
  const int64_t width = BlockMath::kWidth, chunks = dim / width;
  const int64_t tileSize = kAttentionTile;
  auto forEach = [&](Value n, llvm::function_ref<void(Value)> body) {
    emitForEach(b, loc, n, body);
  };
  // Head g's scores (then weights) of the tile at g * tileSize, its
  // accumulators at g * dim.
  Value scores = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), group * tileSize, f32));
  Value acc = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), group * dim, f32));
  Value kvHead =
      sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  // The group's first head; its heads' q rows follow one another.
  locateAttentionRow(f, group, loc, im.mul(kvHead, im.c(group)));
  Value count = f.count;
  forEach(im.c(group * dim),
          [&](Value d) { sm::StoreOp::create(b, loc, fm.c(0.0), acc, d); });
  auto qAt = [&](int64_t g, int64_t c) {
    return vm.x32(f.q, im.add(f.qBase, im.c(g * dim + c * width)));
  };
  auto rowVectors = [&](Value cache, Type element, Value position) {
    Value row = im.add(im.mul(position, im.c(rowStride)), f.kvBase);
    SmallVector<Value> vectors;
    for (int64_t c = 0; c < chunks; ++c)
      vectors.push_back(
          loadCacheVector(cache, element, im.add(row, im.c(c * width)), loc));
    return vectors;
  };

  Value lowest = fm.c(-std::numeric_limits<float>::max());
  // Carried per head: the running maximum (first `group`), then the sum.
  SmallVector<Value> init(group, lowest);
  init.append(group, fm.c(0.0));
  auto tiles =
      scf::ForOp::create(b, loc, f.first, count, im.c(tileSize), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value tile = tiles.getInductionVar();
    ValueRange carried = tiles.getRegionIterArgs();
    Value n = arith::MinUIOp::create(b, loc, im.c(tileSize),
                                     arith::SubIOp::create(b, loc, count, tile));
    // Scores of the tile's positions for every head, and their maxima.
    SmallVector<Value> tileMax = emitFold(
        b, loc, n, SmallVector<Value>(group, lowest),
        [&](Value i, ValueRange max) {
          SmallVector<Value> k =
              rowVectors(f.kCache, f.kElement, im.add(tile, i));
          SmallVector<Value> maxima;
          for (int64_t g = 0; g < group; ++g) {
            Value dot = vm.zeros();
            for (int64_t c = 0; c < chunks; ++c)
              dot = vm.multiplyAdd(dot, qAt(g, c), k[c]);
            Value s = scaleScore(f, vm.sum(dot), loc);
            sm::StoreOp::create(b, loc, s, scores,
                                im.add(im.c(g * tileSize), i));
            maxima.push_back(fm.max(max[g], s));
          }
          return maxima;
        });
    SmallVector<Value> mNew, correction, next;
    for (int64_t g = 0; g < group; ++g) {
      mNew.push_back(fm.max(carried[g], tileMax[g]));
      correction.push_back(fm.exp(fm.sub(carried[g], mNew[g])));
    }
    // Each head's weights exp(s - mNew), in place, and their sum.
    SmallVector<Value> tileSum;
    for (int64_t g = 0; g < group; ++g)
      tileSum.push_back(emitFold(
          b, loc, n, ValueRange{fm.c(0.0)},
          [&](Value i, ValueRange sum) -> SmallVector<Value> {
            Value at = im.add(im.c(g * tileSize), i);
            Value p = fm.exp(
                fm.sub(sm::LoadOp::create(b, loc, f32, scores, at), mNew[g]));
            sm::StoreOp::create(b, loc, p, scores, at);
            return {fm.add(sum[0], p)};
          })[0]);
    // Weighted V rows, two heads at a time.
    for (int64_t g0 = 0; g0 < group; g0 += 2) {
      SmallVector<int64_t> pair{g0};
      if (g0 + 1 < group)
        pair.push_back(g0 + 1);
      SmallVector<Value> sums;
      for (int64_t g : pair)
        for (int64_t c = 0; c < chunks; ++c)
          sums.push_back(vm.mul(
              sm::LoadOp::create(b, loc, vm.f32s(), acc,
                                 im.c(g * dim + c * width)),
              vm.splat(correction[g])));
      SmallVector<Value> done = emitFold(
          b, loc, n, sums, [&](Value i, ValueRange weighed) {
            SmallVector<Value> v =
                rowVectors(f.vCache, f.vElement, im.add(tile, i));
            SmallVector<Value> updated;
            for (auto [h, g] : llvm::enumerate(pair)) {
              Value p = vm.splat(sm::LoadOp::create(
                  b, loc, f32, scores, im.add(im.c(g * tileSize), i)));
              for (int64_t c = 0; c < chunks; ++c)
                updated.push_back(
                    vm.multiplyAdd(weighed[h * chunks + c], p, v[c]));
            }
            return updated;
          });
      for (auto [h, g] : llvm::enumerate(pair))
        for (int64_t c = 0; c < chunks; ++c)
          sm::StoreOp::create(b, loc, done[h * chunks + c], acc,
                              im.c(g * dim + c * width));
    }
    next.append(mNew);
    for (int64_t g = 0; g < group; ++g)
      next.push_back(
          fm.add(fm.mul(carried[group + g], correction[g]), tileSum[g]));
    scf::YieldOp::create(b, loc, next);
  }
  SmallVector<Value> totals(guardZeroTrip(b, tiles));
  for (int64_t g = 0; g < group; ++g)
    forEach(im.c(dim), [&](Value d) {
      Value a = sm::LoadOp::create(b, loc, f32, acc,
                                   im.add(im.c(g * dim), d));
      sm::StoreOp::create(b, loc,
                          ex::DivOp::create(b, loc, a, totals[group + g]),
                          f.out, im.add(im.add(f.qBase, im.c(g * dim)), d));
    });
}

} // namespace hesper::lowering
