//===- Reductions.cpp - Reductions and quantized stores -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "BlockMath.h"
#include "GraphLowering.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"

namespace hesper::lowering {

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Combines two partial reductions (sum_sq partials are already squared).
static Value combine(OpBuilder &b, Location loc, cir::ReduceKind kind,
                     Value x, Value y) {
  if (kind == cir::ReduceKind::max)
    return ex::MaxOp::create(b, loc, x, y);
  return ex::AddOp::create(b, loc, x, y);
}

static Value identity(OpBuilder &b, Location loc, cir::ReduceKind kind) {
  double v = kind == cir::ReduceKind::max
                 ? -std::numeric_limits<double>::infinity()
                 : 0.0;
  return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value GraphLowering::emitWorkgroupReduce(Value value, Value tid, int64_t lanes,
                                         cir::ReduceKind kind, Location loc) {
  if (lanes == 1)
    return value;
  IndexMath im(b, loc);
  auto sharedType = sm::SharedType::get(b.getContext(), lanes, b.getF32Type());
  Value tile = sm::SharedAllocOp::create(b, loc, sharedType);
  if (lanes >= shape.subgroupReduceLanes) {
    // Each subgroup reduces in registers; its first lane writes the total
    // to slot subgroup_id; after one barrier every lane combines the
    // slots in index order. The tile has a slot per lane, enough for any
    // subgroup size.
    Value total = ex::SubgroupReduceOp::create(
        b, loc,
        kind == cir::ReduceKind::max ? ex::ReduceKind::max
                                     : ex::ReduceKind::sum,
        value);
    Value lane = ex::LaneIdOp::create(b, loc, b.getI32Type());
    Value first = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, lane,
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    auto leader = scf::IfOp::create(b, loc, first);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(leader.thenBlock());
      sm::StoreOp::create(b, loc, total, tile,
                          sm::SubgroupIdOp::create(b, loc, b.getIndexType()));
    }
    sm::BarrierOp::create(b, loc);
    Value size = im.toIndex(ex::SubgroupSizeOp::create(b, loc, b.getI32Type()));
    Value subgroups = arith::DivUIOp::create(b, loc, im.c(lanes), size);
    Value first0 = sm::LoadOp::create(b, loc, b.getF32Type(), tile, im.c(0));
    auto slots = scf::ForOp::create(b, loc, im.c(1), subgroups, im.c(1),
                                    ValueRange{first0});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(slots.getBody());
      Value slot = sm::LoadOp::create(b, loc, b.getF32Type(), tile,
                                      slots.getInductionVar());
      scf::YieldOp::create(
          b, loc, combine(b, loc, kind, slots.getRegionIterArgs()[0], slot));
    }
    return guardZeroTrip(b, slots)[0];
  }
  sm::StoreOp::create(b, loc, value, tile, tid);
  sm::BarrierOp::create(b, loc);
  // A fixed tree: lane i adds lane i + s for s = lanes/2, ..., 1.
  for (int64_t s = lanes / 2; s >= 1; s /= 2) {
    auto active = scf::IfOp::create(b, loc, im.lt(tid, im.c(s)));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(active.thenBlock());
      Value mine = sm::LoadOp::create(b, loc, b.getF32Type(), tile, tid);
      Value other = sm::LoadOp::create(b, loc, b.getF32Type(), tile,
                                       im.add(tid, im.c(s)));
      sm::StoreOp::create(b, loc, combine(b, loc, kind, mine, other), tile,
                          tid);
    }
    sm::BarrierOp::create(b, loc);
  }
  return sm::LoadOp::create(b, loc, b.getF32Type(), tile, im.c(0));
}

LogicalResult GraphLowering::lowerReduce(Operation *op, cir::ReduceKind kind,
                                         ValueRange inputs, Region &prologue,
                                         Region *epilogue, Value dest) {
  Location loc = op->getLoc();
  Value result = op->getResult(0);
  auto resultType = cast<RankedTensorType>(result.getType());
  bool quantized = cir::isQuantized(resultType.getElementType());
  SmallVector<int64_t> iteration = cir::getReductionIteration(op);
  int64_t rowLength = iteration.back();
  int64_t total = 1;
  for (int64_t d : iteration)
    total *= d;
  int64_t rows = total / rowLength;
  if (failed(checkRows(op, rows, shape)))
    return failure();

  KernelState ks;
  for (Value input : inputs)
    bind(ks, input, false);
  if (dest) {
    bufferOf[result] = bufferOf.lookup(dest);
    bind(ks, dest, true);
    bind(ks, result, true);
  } else {
    allocFor(result);
    bind(ks, result, true);
  }
  int64_t lanes =
      std::max(shape.minReduceLanes,
               std::min(shape.reduceLanes, powerOfTwoAtLeast(rowLength)));
  if (quantized &&
      failed(checkQuantizedRows(op, resultType, rowLength, lanes)))
    return failure();
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value row = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value rowBase = im.mul(row, im.c(rowLength));

  // Each lane accumulates k = tid, tid + lanes, ... in order.
  Value init = identity(b, loc, kind);
  // Mutants (verification tests): a row one short, or a tail that is not
  // masked (lanes read on to a multiple of the lane count, into the next
  // row; clamped to the tensor so that nothing is read out of bounds).
  int64_t bound = rowLength;
  if (shape.mutant == "short-reduction")
    bound = rowLength - 1;
  if (shape.mutant == "unmasked-tail")
    bound = ceilDiv(rowLength, lanes) * lanes;
  auto loop = scf::ForOp::create(b, loc, tid, im.c(bound), im.c(lanes),
                                 ValueRange{init});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value lane = im.add(rowBase, loop.getInductionVar());
    if (shape.mutant == "unmasked-tail" && bound != rowLength)
      lane = arith::MinUIOp::create(b, loc, lane, im.c(rows * rowLength - 1));
    Value v;
    if (prologue.empty()) {
      auto type = cast<RankedTensorType>(inputs[0].getType());
      v = loadElement(arg(ks, inputs[0]),
                      im.broadcast(lane, type.getShape(), iteration), loc);
    } else {
      SmallVector<Value> args{im.toI32(lane)}, whole{nullptr};
      loadInputs(ks, &prologue, 1, inputs, iteration, lane, args, whole);
      v = inlineBody(ks, prologue, args, whole)[0];
    }
    v = toF32(v, loc);
    if (kind == cir::ReduceKind::sum_sq)
      v = ex::MulOp::create(b, loc, v, v);
    Value acc = combine(b, loc, kind, loop.getRegionIterArgs()[0], v);
    scf::YieldOp::create(b, loc, acc);
  }
  Value reduced =
      emitWorkgroupReduce(guardZeroTrip(b, loop)[0], tid, lanes, kind, loc);
  // The `unroll` knob: the same iterations in the same order, unrolled.
  if (failed(unrollGuarded(b, loop, shape.unroll)))
    return op->emitOpError("cannot unroll its row loop by ") << shape.unroll;

  if (!epilogue) {
    auto first = scf::IfOp::create(b, loc, im.lt(tid, im.c(1)));
    b.setInsertionPointToStart(first.thenBlock());
    sm::StoreOp::create(b, loc, reduced, arg(ks, result), row);
    finishKernel(ks, {rows, 1, 1});
    return success();
  }

  // A quantized result goes through shared memory: the epilogue's f32
  // values first, then whole blocks.
  Value staged;
  if (quantized)
    staged = sm::SharedAllocOp::create(
        b, loc, sm::SharedType::get(b.getContext(), rowLength, b.getF32Type()));
  auto each = scf::ForOp::create(b, loc, tid, im.c(rowLength), im.c(lanes));
  b.setInsertionPointToStart(each.getBody());
  Value lane = im.add(rowBase, each.getInductionVar());
  SmallVector<Value> args{im.toI32(lane), reduced}, whole{nullptr, nullptr};
  loadInputs(ks, epilogue, 2, inputs, iteration, lane, args, whole);
  SmallVector<Value> yielded = inlineBody(ks, *epilogue, args, whole);
  if (quantized) {
    sm::StoreOp::create(b, loc, toF32(yielded[0], loc), staged,
                        each.getInductionVar());
    b.setInsertionPointAfter(each);
    sm::BarrierOp::create(b, loc);
    emitQuantizedRow(staged, rowLength, row, arg(ks, result),
                     isa<cir::Q8_1Type>(resultType.getElementType()), tid,
                     lanes, loc);
  } else if (dest) {
    Value addr = im.toIndex(yielded[0]);
    auto write =
        scf::IfOp::create(b, loc, im.lt(addr, im.c(numElements(dest.getType()))));
    b.setInsertionPointToStart(write.thenBlock());
    sm::StoreOp::create(b, loc, yielded[1], arg(ks, dest), addr);
  } else {
    sm::StoreOp::create(b, loc, yielded[0], arg(ks, result), lane);
  }
  finishKernel(ks, {rows, 1, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// Quantized stores
//===----------------------------------------------------------------------===//

LogicalResult GraphLowering::checkQuantizedRows(Operation *op,
                                                RankedTensorType resultType,
                                                int64_t rowLength,
                                                int64_t lanes) {
  bool withSums = isa<cir::Q8_1Type>(resultType.getElementType());
  if (!withSums && !isa<cir::Q8_0Type>(resultType.getElementType()))
    return op->emitOpError("stores ")
           << resultType.getElementType()
           << ", but convert-circuit-to-shaderm quantizes only to q8_0 and "
              "q8_1";
  if (rowLength % 32 != 0)
    return op->emitOpError("quantizes rows of ")
           << rowLength << " values, not a multiple of the 32-value block";
  int64_t rowBytes = rowLength / 32 * (withSums ? 36 : 34);
  if (rowBytes % 4 != 0)
    return op->emitOpError("quantizes rows of ")
           << rowBytes << " bytes; convert-circuit-to-shaderm needs rows of "
           << "whole 32-bit words (an even number of q8_0 blocks)";
  int64_t sharedBytes = rowLength * 4 + rowLength / 32 * 8 + lanes * 4;
  if (sharedBytes > 32768)
    return op->emitOpError("quantizes rows of ")
           << rowLength << " values, more than fit in 32 KiB of shared memory";
  return success();
}

/// One lane (the CPU target), q8_1 blocks (whole words): a block's 32
/// values as one vector, divided by d, rounded and clamped lane by lane
/// exactly as the scalar path does, its bytes stored as 8 words.
void GraphLowering::emitQuantizedRowVector(Value values, int64_t rowLength,
                                           Value row, Value out,
                                           Location loc) {
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  const int64_t blocks = rowLength / 32;
  auto f32Const = [&](double v) {
    return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  OpBuilder::InsertionGuard guard(b);
  auto perBlock = scf::ForOp::create(b, loc, im.c(0), im.c(blocks), im.c(1));
  b.setInsertionPointToStart(perBlock.getBody());
  Value blk = perBlock.getInductionVar();
  Value v = sm::LoadOp::create(b, loc, vm.f32s(), values, im.mul(blk, im.c(32)));
  Value amax = vector::ReductionOp::create(
      b, loc, vector::CombiningKind::MAXNUMF, ex::AbsOp::create(b, loc, v));
  Value d = ex::DivOp::create(b, loc, amax, f32Const(127.0));
  Value nonzero = ex::CmpOp::create(b, loc, ex::CmpPredicate::ne, d,
                                    f32Const(0.0));
  Value safeD = ex::SelectOp::create(b, loc, nonzero, d, f32Const(1.0));
  Value scaled = arith::DivFOp::create(b, loc, v, vm.splat(safeD));
  Value r = arith::MinNumFOp::create(
      b, loc,
      arith::MaxNumFOp::create(b, loc, ex::RoundOp::create(b, loc, scaled),
                                vm.splat(f32Const(-127.0))),
      vm.splat(f32Const(127.0)));
  r = arith::SelectOp::create(b, loc, nonzero, r, vm.zeros());
  auto ints = VectorType::get({32}, i32);
  Value q = arith::FPToSIOp::create(b, loc, ints, r);
  Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, q);
  Value s = ex::MulOp::create(b, loc, d,
                              ex::ConvertOp::create(b, loc, f32, sum, false));
  Value block = im.add(im.mul(row, im.c(blocks * kQ8_1Words)),
                       im.mul(blk, im.c(kQ8_1Words)));
  sm::StoreOp::create(b, loc, ex::PackF16x2Op::create(b, loc, i32, d, s), out,
                      block);
  Value bytes = arith::TruncIOp::create(
      b, loc, VectorType::get({32}, b.getI8Type()), q);
  sm::StoreOp::create(
      b, loc,
      vector::BitCastOp::create(b, loc, VectorType::get({8}, i32), bytes), out,
      im.add(block, im.c(1)));
}

void GraphLowering::emitQuantizedRow(Value values, int64_t rowLength,
                                     Value row, Value out, bool withSums,
                                     Value tid, int64_t lanes, Location loc,
                                     Value store) {
  if (lanes == 1 && withSums && !store)
    return emitQuantizedRowVector(values, rowLength, row, out, loc);
  IndexMath im(b, loc);
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  MLIRContext *context = b.getContext();
  int64_t blocks = rowLength / 32;
  int64_t blockBytes = withSums ? 36 : 34;
  int64_t headerBytes = withSums ? 4 : 2;
  int64_t rowWords = blocks * blockBytes / 4;
  auto f32Const = [&](double v) {
    return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  auto i32Const = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  // q = clamp(round(v / d), -127, 127), 0 when d is 0: what
  // circuit.quantize specifies, as the interpreter computes it.
  auto quantizeValue = [&](Value v, Value d) -> Value {
    Value zero = f32Const(0.0);
    Value nonzero = ex::CmpOp::create(b, loc, ex::CmpPredicate::ne, d, zero);
    Value safeD = ex::SelectOp::create(b, loc, nonzero, d, f32Const(1.0));
    Value scaled = ex::DivOp::create(b, loc, v, safeD);
    Value r = ex::ClampOp::create(b, loc, ex::RoundOp::create(b, loc, scaled),
                                  f32Const(-127.0), f32Const(127.0));
    r = ex::SelectOp::create(b, loc, nonzero, r, zero);
    return ex::ConvertOp::create(b, loc, i32, r, false);
  };

  // Pass 1: per block, the scale d = amax / 127 and d * sum(q).
  Value scales =
      sm::SharedAllocOp::create(b, loc, sm::SharedType::get(context, blocks, f32));
  Value sums =
      sm::SharedAllocOp::create(b, loc, sm::SharedType::get(context, blocks, f32));
  {
    auto perBlock = scf::ForOp::create(b, loc, tid, im.c(blocks), im.c(lanes));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(perBlock.getBody());
    Value blk = perBlock.getInductionVar();
    Value base = im.mul(blk, im.c(32));
    auto amaxLoop = scf::ForOp::create(b, loc, im.c(0), im.c(32), im.c(1),
                                       ValueRange{f32Const(0.0)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(amaxLoop.getBody());
      Value v = sm::LoadOp::create(b, loc, f32, values,
                                   im.add(base, amaxLoop.getInductionVar()));
      Value m = ex::MaxOp::create(b, loc, amaxLoop.getRegionIterArgs()[0],
                                  ex::AbsOp::create(b, loc, v));
      scf::YieldOp::create(b, loc, m);
    }
    Value d = ex::DivOp::create(b, loc, amaxLoop.getResult(0),
                                f32Const(127.0));
    auto sumLoop = scf::ForOp::create(b, loc, im.c(0), im.c(32), im.c(1),
                                      ValueRange{i32Const(0)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      Value v = sm::LoadOp::create(b, loc, f32, values,
                                   im.add(base, sumLoop.getInductionVar()));
      Value q = quantizeValue(v, d);
      scf::YieldOp::create(
          b, loc,
          ValueRange{arith::AddIOp::create(b, loc,
                                           sumLoop.getRegionIterArgs()[0], q)});
    }
    Value s = ex::MulOp::create(
        b, loc, d,
        ex::ConvertOp::create(b, loc, f32, sumLoop.getResult(0), false));
    sm::StoreOp::create(b, loc, d, scales, blk);
    sm::StoreOp::create(b, loc, s, sums, blk);
  }
  sm::BarrierOp::create(b, loc);

  // Pass 2: one lane per 32-bit word of the row, assembling its 4 bytes
  // (blocks are not word-aligned in q8_0, so no lane writes a partial word).
  auto perWord = scf::ForOp::create(b, loc, tid, im.c(rowWords), im.c(lanes));
  b.setInsertionPointToStart(perWord.getBody());
  Value w = perWord.getInductionVar();
  Value word = i32Const(0);
  for (int64_t k = 0; k < 4; ++k) {
    Value offset = im.add(im.mul(w, im.c(4)), im.c(k));
    Value blk = im.div(offset, blockBytes);
    Value pos = im.rem(offset, blockBytes);
    Value d = sm::LoadOp::create(b, loc, f32, scales, blk);
    Value s = sm::LoadOp::create(b, loc, f32, sums, blk);
    Value header = ex::PackF16x2Op::create(b, loc, i32, d,
                                           withSums ? s : f32Const(0.0));
    Value inHeader = im.lt(pos, im.c(headerBytes));
    // Header byte: bits 8*pos of the packed halves.
    Value headerShift = arith::MulIOp::create(
        b, loc,
        im.toI32(arith::SelectOp::create(b, loc, inHeader, pos, im.c(0))),
        i32Const(8));
    Value headerByte = arith::ShRUIOp::create(b, loc, header, headerShift);
    // Quant byte: value j of the block.
    Value j = arith::SelectOp::create(
        b, loc, inHeader, im.c(0),
        arith::SubIOp::create(b, loc, pos, im.c(headerBytes)));
    Value v = sm::LoadOp::create(b, loc, f32, values,
                                 im.add(im.mul(blk, im.c(32)), j));
    Value q = quantizeValue(v, d);
    Value byte = arith::SelectOp::create(b, loc, inHeader, headerByte, q);
    byte = arith::AndIOp::create(b, loc, byte, i32Const(0xff));
    if (k)
      byte = arith::ShLIOp::create(b, loc, byte, i32Const(8 * k));
    word = arith::OrIOp::create(b, loc, word, byte);
  }
  if (store) {
    auto guarded = scf::IfOp::create(b, loc, store);
    b.setInsertionPointToStart(guarded.thenBlock());
  }
  sm::StoreOp::create(b, loc, word, out,
                      im.add(im.mul(row, im.c(rowWords)), w));
}

LogicalResult GraphLowering::lowerQuantize(cir::QuantizeOp op) {
  Location loc = op.getLoc();
  Value input = op.getInput();
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rowLength = inputType.getShape().back();
  int64_t rows = inputType.getNumElements() / rowLength;
  if (failed(checkRows(op, rows, shape)))
    return failure();
  int64_t lanes = quantizedRowLanes(rowLength);
  if (failed(checkQuantizedRows(op, op.getType(), rowLength, lanes)))
    return failure();
  KernelState ks;
  bind(ks, input, false);
  allocFor(op.getResult());
  bind(ks, op.getResult(), true);
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value row = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value staged = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), rowLength, b.getF32Type()));
  {
    auto each = scf::ForOp::create(b, loc, tid, im.c(rowLength), im.c(lanes));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(each.getBody());
    Value k = each.getInductionVar();
    Value v = loadElement(arg(ks, input),
                          im.add(im.mul(row, im.c(rowLength)), k), loc);
    sm::StoreOp::create(b, loc, toF32(v, loc), staged, k);
  }
  sm::BarrierOp::create(b, loc);
  emitQuantizedRow(staged, rowLength, row, arg(ks, op.getResult()),
                   isa<cir::Q8_1Type>(op.getType().getElementType()), tid,
                   lanes, loc);
  finishKernel(ks, {rows, 1, 1});
  return success();
}

/// One workgroup per row of values: its position (pos[0] + row, or
/// pos[row]) names the destination row, and a position outside the
/// destination stores nothing. A q8_0 destination is staged in shared
/// memory and quantized as circuit.quantize's rows are; f32 and f16 rows
/// are converted and stored lane by lane.
LogicalResult GraphLowering::lowerWriteRows(cir::WriteRowsOp op) {
  Location loc = op.getLoc();
  auto valuesType = op.getValues().getType();
  auto destType = cast<RankedTensorType>(op.getDest().getType());
  const int64_t rows = valuesType.getDimSize(0);
  const int64_t width = valuesType.getDimSize(1);
  const int64_t positions = destType.getNumElements() / width;
  const bool quantized = isa<cir::Q8_0Type>(destType.getElementType());
  if (failed(checkRows(op, rows, shape)))
    return failure();
  int64_t lanes = quantized
                      ? quantizedRowLanes(width)
                      : std::min(shape.reduceLanes, powerOfTwoAtLeast(width));
  if (quantized && failed(checkQuantizedRows(op, destType, width, lanes)))
    return failure();

  KernelState ks;
  bind(ks, op.getValues(), false);
  bind(ks, op.getPos(), false);
  bufferOf[op.getResult()] = bufferOf.lookup(op.getDest());
  bind(ks, op.getDest(), true);
  bind(ks, op.getResult(), true);
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Type i32 = b.getI32Type();
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value row = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value pos = arg(ks, op.getPos());
  Value position;
  if (op.getPos().getType().getNumElements() == 1)
    position = arith::AddIOp::create(b, loc, loadElement(pos, im.c(0), loc),
                                     im.toI32(row));
  else
    position = loadElement(pos, row, loc);
  Value valid = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, position,
                            arith::ConstantIntOp::create(b, loc, i32, 0)),
      arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::slt, position,
          arith::ConstantIntOp::create(b, loc, i32, positions)));
  Value at = im.toIndex(arith::SelectOp::create(
      b, loc, valid, position, arith::ConstantIntOp::create(b, loc, i32, 0)));
  Value values = arg(ks, op.getValues()), out = arg(ks, op.getResult());
  Value staged;
  if (quantized)
    staged = sm::SharedAllocOp::create(
        b, loc, sm::SharedType::get(b.getContext(), width, b.getF32Type()));
  {
    auto each = scf::ForOp::create(b, loc, tid, im.c(width), im.c(lanes));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(each.getBody());
    Value k = each.getInductionVar();
    Value v = toF32(
        loadElement(values, im.add(im.mul(row, im.c(width)), k), loc), loc);
    if (quantized) {
      sm::StoreOp::create(b, loc, v, staged, k);
    } else {
      Type element = destType.getElementType();
      if (!element.isF32())
        v = ex::ConvertOp::create(b, loc, element, v, false);
      auto write = scf::IfOp::create(b, loc, valid);
      b.setInsertionPointToStart(write.thenBlock());
      sm::StoreOp::create(b, loc, v, out, im.add(im.mul(at, im.c(width)), k));
    }
  }
  if (quantized) {
    sm::BarrierOp::create(b, loc);
    emitQuantizedRow(staged, width, at, out, /*withSums=*/false, tid, lanes,
                     loc, valid);
  }
  finishKernel(ks, {rows, 1, 1});
  return success();
}

} // namespace hesper::lowering
