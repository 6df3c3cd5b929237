//===- Elementwise.cpp - zeros, map, gather, scatters, scatter_add -------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

namespace hesper::lowering {

//===----------------------------------------------------------------------===//
// zeros
//===----------------------------------------------------------------------===//

/// True when every element of `zeros` is overwritten before anything reads
/// it: its only use is as the destination of a scatter or scatter_multi
/// whose grid covers it and whose address for it is the lane itself.
static bool isOverwrittenWhole(cir::ZerosOp zeros) {
  Value value = zeros.getResult();
  if (!value.hasOneUse())
    return false;
  OpOperand &use = *value.use_begin();
  Operation *user = use.getOwner();
  int64_t grid = 0;
  unsigned destIndex = 0;
  if (auto s = dyn_cast<cir::ScatterOp>(user)) {
    if (use.get() != s.getDest())
      return false;
    grid = s.getGrid();
  } else if (auto s = dyn_cast<cir::ScatterMultiOp>(user)) {
    auto dests = s.getDests();
    auto it = llvm::find(dests, value);
    if (it == dests.end() || llvm::count(dests, value) != 1)
      return false;
    destIndex = it - dests.begin();
    grid = s.getGrid();
  } else {
    return false;
  }
  if (grid < numElements(value.getType()))
    return false;
  Block &body = user->getRegion(0).front();
  auto yield = cast<cir::YieldOp>(body.getTerminator());
  return yield.getOperand(2 * destIndex) == body.getArgument(0);
}

LogicalResult GraphLowering::lowerZeros(cir::ZerosOp op) {
  // A buffer that the next kernel writes in full needs no clearing.
  if (isOverwrittenWhole(op)) {
    allocFor(op.getResult());
    return success();
  }
  Value buffer = allocFor(op.getResult());
  auto type = cast<sm::BufferType>(buffer.getType());
  int64_t n = type.getLength();
  KernelState ks;
  bind(ks, op.getResult(), /*written=*/true);
  int64_t lanes = std::min(shape.elementwiseLanes, powerOfTwoAtLeast(n));
  createKernel(ks, op, lanes);
  Location loc = op.getLoc();
  IndexMath im(b, loc);
  Value gid = sm::GlobalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  auto guard = scf::IfOp::create(b, loc, im.lt(gid, im.c(n)));
  b.setInsertionPointToStart(guard.thenBlock());
  Type element = type.getElementType();
  Value zero = zeroOf(b, loc, element);
  sm::StoreOp::create(b, loc, zero, arg(ks, op.getResult()), gid);
  finishKernel(ks, {ceilDiv(n, lanes), 1, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// map, gather, scatter, scatter_multi
//===----------------------------------------------------------------------===//

/// An elementwise kernel's `grid` lanes fit one grid dimension.
static LogicalResult checkElementwiseGrid(Operation *op,
                                          const KernelShape &shape,
                                          int64_t grid) {
  if (ceilDiv(grid, shape.elementwiseLanes) <= shape.maxGridDim)
    return success();
  return op->emitOpError("has ")
         << grid << " lanes, more than convert-circuit-to-shaderm "
         << "launches in one grid dimension";
}

/// The workgroup size of an elementwise kernel of `grid` lanes: the
/// target's, or the next power of two above a smaller grid; on GPU targets
/// at least 32 (whole subgroups).
static int64_t elementwiseWorkgroup(const KernelShape &shape, int64_t grid) {
  int64_t lanes = std::min(shape.elementwiseLanes, powerOfTwoAtLeast(grid));
  return shape.singleLane ? lanes : std::max<int64_t>(lanes, 32);
}

LogicalResult GraphLowering::lowerVectorMap(cir::MapOp map, int64_t width) {
  std::string why = cir::mapVectorObstacle(map, width);
  if (!why.empty())
    return map.emitOpError("cannot take vector_width = ")
           << width << ": " << why;
  Location loc = map.getLoc();
  Region &body = map.getBody();
  const int64_t grid = numElements(map.getType()) / width;
  if (failed(checkElementwiseGrid(map, shape, grid)))
    return failure();
  KernelState ks;
  for (Value input : map.getInputs())
    bind(ks, input, false);
  allocFor(map.getResult());
  bind(ks, map.getResult(), true);
  int64_t lanes = elementwiseWorkgroup(shape, grid);
  createKernel(ks, map, lanes);
  IndexMath im(b, loc);
  Value gid = sm::GlobalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value inRange =
      im.lt(gid, im.c(shape.mutant == "guard-off-by-one" ? grid - 1 : grid));
  auto guard = scf::IfOp::create(b, loc, inRange);
  b.setInsertionPointToStart(guard.thenBlock());
  // Lane i takes elements width*i .. width*i + width - 1: one vector load
  // per input, the body once per element, one vector store.
  Value first = im.mul(gid, im.c(width));
  SmallVector<Value> vectors;
  for (Value input : map.getInputs()) {
    Type element = cast<RankedTensorType>(input.getType()).getElementType();
    vectors.push_back(sm::LoadOp::create(b, loc,
                                         VectorType::get({width}, element),
                                         arg(ks, input), first));
  }
  SmallVector<Value> results;
  SmallVector<Value> whole(body.getNumArguments(), nullptr);
  for (int64_t j = 0; j < width; ++j) {
    SmallVector<Value> args{im.toI32(im.add(first, im.c(j)))};
    for (Value v : vectors)
      args.push_back(vector::ExtractOp::create(b, loc, v, j));
    results.push_back(inlineBody(ks, body, args, whole)[0]);
  }
  Value stored = vector::FromElementsOp::create(
      b, loc, VectorType::get({width}, map.getType().getElementType()),
      results);
  sm::StoreOp::create(b, loc, stored, arg(ks, map.getResult()), first);
  finishKernel(ks, {ceilDiv(grid, lanes), 1, 1});
  return success();
}

LogicalResult GraphLowering::lowerElementwise(Operation *op) {
  if (auto map = dyn_cast<cir::MapOp>(op); map && shape.mapVector > 1)
    return lowerVectorMap(map, shape.mapVector);
  Region &body = op->getRegion(0);
  ValueRange inputs;
  SmallVector<Value> dests;
  Value source;
  int64_t grid = 0;
  SmallVector<int64_t> iteration;
  if (auto map = dyn_cast<cir::MapOp>(op)) {
    inputs = map.getInputs();
    grid = numElements(map.getType());
    iteration.assign(map.getType().getShape().begin(),
                     map.getType().getShape().end());
  } else if (auto gather = dyn_cast<cir::GatherOp>(op)) {
    inputs = gather.getInputs();
    source = gather.getSource();
    grid = numElements(gather.getType());
    iteration.assign(gather.getType().getShape().begin(),
                     gather.getType().getShape().end());
  } else if (auto scatter = dyn_cast<cir::ScatterOp>(op)) {
    inputs = scatter.getInputs();
    dests.push_back(scatter.getDest());
    grid = scatter.getGrid();
    iteration.push_back(grid);
  } else {
    auto multi = cast<cir::ScatterMultiOp>(op);
    inputs = multi.getInputs();
    llvm::append_range(dests, multi.getDests());
    grid = multi.getGrid();
    iteration.push_back(grid);
  }
  if (failed(checkElementwiseGrid(op, shape, grid)))
    return failure();

  // Results: scatters write their destinations in place, maps and gathers
  // a fresh buffer.
  KernelState ks;
  for (Value input : inputs)
    bind(ks, input, false);
  if (source)
    bind(ks, source, false);
  if (dests.empty()) {
    allocFor(op->getResult(0));
    bind(ks, op->getResult(0), true);
  } else {
    for (auto [dest, result] : llvm::zip(dests, op->getResults())) {
      bufferOf[result] = bufferOf.lookup(dest);
      bind(ks, dest, true);
      bind(ks, result, true);
    }
  }

  // Subgroup operations see every lane of a subgroup; lanes past the end
  // would join with clamped values, where the op means only the active
  // lanes. Full subgroups are required instead (32 is a multiple of every
  // subgroup size up to NVIDIA's warp: 8 on lavapipe, 16, 32).
  if (hasLaneOps(body) && !shape.singleLane && grid % 32 != 0)
    return op->emitOpError("has subgroup operations in its body over ")
           << grid << " lanes; convert-circuit-to-shaderm needs a multiple "
           << "of 32 lanes so that every subgroup is full";
  int64_t lanes = elementwiseWorkgroup(shape, grid);
  createKernel(ks, op, lanes);
  Location loc = op->getLoc();
  IndexMath im(b, loc);
  Value gid = sm::GlobalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  // A mutant: the bounds guard one short (the last lane never writes).
  Value inRange =
      im.lt(gid, im.c(shape.mutant == "guard-off-by-one" ? grid - 1 : grid));
  // Bodies with subgroup operations run on every lane of the subgroup (on
  // a clamped lane for the loads); only the stores are guarded.
  bool allLanes = hasLaneOps(body);
  Value lane = gid;
  if (allLanes) {
    lane = arith::SelectOp::create(b, loc, inRange, gid, im.c(0));
  } else {
    auto guard = scf::IfOp::create(b, loc, inRange);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  SmallVector<Value> args{im.toI32(allLanes ? gid : lane)};
  SmallVector<Value> whole{nullptr};
  loadInputs(ks, &body, 1, inputs, iteration, lane, args, whole);
  SmallVector<Value> yielded = inlineBody(ks, body, args, whole);
  if (allLanes) {
    auto guard = scf::IfOp::create(b, loc, inRange);
    b.setInsertionPointToStart(guard.thenBlock());
  }

  if (dests.empty() && !source) {
    sm::StoreOp::create(b, loc, yielded[0], arg(ks, op->getResult(0)), gid);
  } else if (source) {
    // out[i] = source[addr], or zero when addr is out of range.
    int64_t size = numElements(source.getType());
    Value addr = im.toIndex(yielded[0]);
    Value valid = im.lt(addr, im.c(size)); // unsigned: negatives fail too
    Value safe = arith::SelectOp::create(b, loc, valid, addr, im.c(0));
    Type sourceElement =
        cast<RankedTensorType>(source.getType()).getElementType();
    Value v =
        cir::isQuantized(sourceElement)
            ? emitDequantizeElement(arg(ks, source), sourceElement, safe, loc)
            : loadElement(arg(ks, source), safe, loc);
    Type element = v.getType();
    Value zero = zeroOf(b, loc, element);
    v = arith::SelectOp::create(b, loc, valid, v, zero);
    sm::StoreOp::create(b, loc, v, arg(ks, op->getResult(0)), gid);
  } else {
    for (auto [d, dest] : llvm::enumerate(dests)) {
      int64_t size = numElements(dest.getType());
      Value addr = im.toIndex(yielded[2 * d]);
      auto write = scf::IfOp::create(b, loc, im.lt(addr, im.c(size)));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(write.thenBlock());
      sm::StoreOp::create(b, loc, yielded[2 * d + 1], arg(ks, dest), addr);
    }
  }
  finishKernel(ks, {ceilDiv(grid, lanes), 1, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// scatter_add
//===----------------------------------------------------------------------===//

// One lane per column d of the result: it clears its column, then walks the
// source rows in order and adds row s's element d into row indices[s]. The
// lanes own disjoint columns, so nothing races and every element sees its
// additions in the same order on every backend; the work is R·D stores and
// S·D additions, against the R·S·D steps of a reduction that asks every
// result element which rows name it.
LogicalResult GraphLowering::lowerScatterAdd(cir::ScatterAddOp op) {
  int64_t rows = op.getType().getShape()[0];
  int64_t width = op.getType().getShape()[1];
  int64_t sourceRows =
      cast<RankedTensorType>(op.getSource().getType()).getShape()[0];
  if (ceilDiv(width, shape.elementwiseLanes) > shape.maxGridDim)
    return op->emitOpError("has ")
           << width << " columns, more than convert-circuit-to-shaderm "
           << "launches in one grid dimension";
  KernelState ks;
  bind(ks, op.getSource(), false);
  bind(ks, op.getIndices(), false);
  allocFor(op.getResult());
  bind(ks, op.getResult(), true);
  int64_t lanes = std::min(shape.elementwiseLanes, powerOfTwoAtLeast(width));
  createKernel(ks, op, lanes);
  Location loc = op.getLoc();
  IndexMath im(b, loc);
  Value column = sm::GlobalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  auto guard = scf::IfOp::create(b, loc, im.lt(column, im.c(width)));
  b.setInsertionPointToStart(guard.thenBlock());
  Value out = arg(ks, op.getResult());
  Value zero = zeroOf(b, loc, b.getF32Type());

  auto clear = scf::ForOp::create(b, loc, im.c(0), im.c(rows), im.c(1));
  b.setInsertionPointToStart(clear.getBody());
  sm::StoreOp::create(
      b, loc, zero, out,
      im.add(im.mul(clear.getInductionVar(), im.c(width)), column));
  b.setInsertionPointAfter(clear);

  auto walk = scf::ForOp::create(b, loc, im.c(0), im.c(sourceRows), im.c(1));
  b.setInsertionPointToStart(walk.getBody());
  Value s = walk.getInductionVar();
  Value row = im.toIndex(loadElement(arg(ks, op.getIndices()), s, loc));
  // Unsigned: a negative index is past the end too.
  auto inRange = scf::IfOp::create(b, loc, im.lt(row, im.c(rows)));
  b.setInsertionPointToStart(inRange.thenBlock());
  Value at = im.add(im.mul(row, im.c(width)), column);
  Value add = loadElement(arg(ks, op.getSource()),
                          im.add(im.mul(s, im.c(width)), column), loc);
  Value sum = ex::AddOp::create(b, loc, loadElement(out, at, loc), add);
  sm::StoreOp::create(b, loc, sum, out, at);
  b.setInsertionPointAfter(walk);
  finishKernel(ks, {ceilDiv(width, lanes), 1, 1});
  return success();
}

} // namespace hesper::lowering
