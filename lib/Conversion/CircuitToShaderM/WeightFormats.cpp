//===- WeightFormats.cpp - Dot products and decoding of q4_0 and bf16 -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Two weight formats that GGUF files use widely beside the k-quants:
//
//   q4_0 (18 bytes / 32 values): f16 d, then qs[16]; value j < 16 is the
//        low nibble of qs[j], value j + 16 its high nibble; v = d * (q - 8).
//        Blocks start at even bytes; a pair of blocks is 9 words.
//   bf16 (2 bytes / value): the top half of an f32, so a 32-bit word holds
//        two values: the even one in its low half, the odd one in its high
//        half, each made an f32 by moving it to the top.
//
// (q5_k is q4_k's layout with a plane of fifth bits; its kernels are
// q4_k's, in Matmul.cpp and BlockDots.cpp.) As for every weight format,
// the kernels decode the stored words in registers.
//
//===----------------------------------------------------------------------===//

#include "BlockMath.h"

namespace hesper::lowering {

/// 0xffff0000 as the signed i32 constant it is.
static constexpr int64_t kHighHalf = -65536;

/// The bf16 value in the low (`high` false) or high half of `word`, as f32.
static Value bf16Half(OpBuilder &b, Location loc, Value word, Value high) {
  WordMath wm(b, loc);
  Value bits = wm.select(high, wm.mask(word, kHighHalf),
                         wm.shl(word, 16));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// The same for a constant half.
static Value bf16Half(OpBuilder &b, Location loc, Value word, bool high) {
  WordMath wm(b, loc);
  Value bits = high ? wm.mask(word, kHighHalf) : wm.shl(word, 16);
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

//===----------------------------------------------------------------------===//
// Lanes spread over a row (the GPU targets)
//===----------------------------------------------------------------------===//

SmallVector<Value> GraphLowering::emitQ4_0Dot(const DotOperands &d) {
  // A lane's unit is one block: its 16 value bytes as 4 words (assembled
  // from two aligned words when the block's values start mid-word), byte t
  // of word w holding values 4w + t (low nibble) and 16 + 4w + t (high).
  // The block's sum of (q - 8) * x is scaled once.
  constexpr int64_t kValues = 32, kBytes = 18;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  int64_t blocksPerRow = d.k / kValues;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocksPerRow));
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = beginUnits(d, blocksPerRow, rows);
  Value zero = loop.getInitArgs()[0];
  Value blk = loop.getInductionVar();
  Value base = im.mul(im.add(rowBlocks, blk), im.c(kBytes));
  Value scale = loadHalf(b, loc, d.w, base);
  Value values = im.add(base, im.c(2));
  Value misaligned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, im.rem(values, 4), im.c(0));
  SmallVector<Value> xBlocks;
  for (size_t r = 0; r < rows; ++r)
    xBlocks.push_back(im.add(d.xRows[r], im.mul(blk, im.c(kValues))));
  auto inner = scf::ForOp::create(b, loc, im.c(0), im.c(4), im.c(1),
                                  SmallVector<Value>(rows, zero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(inner.getBody());
    Value w = inner.getInductionVar();
    Value offset = im.mul(w, im.c(4));
    Value word =
        loadWordAtEvenByte(b, loc, d.w, im.add(values, offset), misaligned);
    SmallVector<SmallVector<Value, 4>> xsLo, xsHi;
    for (size_t r = 0; r < rows; ++r) {
      xsLo.push_back(loadX4(d, im.add(xBlocks[r], offset)));
      xsHi.push_back(loadX4(d, im.add(xBlocks[r], im.add(offset, im.c(16)))));
    }
    SmallVector<Value> acc(inner.getRegionIterArgs());
    for (int64_t t = 0; t < 4; ++t) {
      auto centered = [&](int64_t shift) {
        return wm.toF32(arith::SubIOp::create(
            b, loc, wm.mask(wm.shr(word, shift), 0xf), wm.c(8)));
      };
      Value qLo = centered(8 * t), qHi = centered(8 * t + 4);
      for (size_t r = 0; r < rows; ++r) {
        acc[r] = ex::FmaOp::create(b, loc, qLo, xsLo[r][t], acc[r]);
        acc[r] = ex::FmaOp::create(b, loc, qHi, xsHi[r][t], acc[r]);
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> totals;
  for (size_t r = 0; r < rows; ++r)
    totals.push_back(ex::FmaOp::create(b, loc, scale, inner.getResult(r),
                                       loop.getRegionIterArgs()[r]));
  return finishUnits(loop, totals);
}

SmallVector<Value> GraphLowering::emitBF16Dot(const DotOperands &d) {
  // With K a multiple of 4 and several lanes, a lane's unit is 4 values:
  // two words (one 8-byte load) against one vector load of x. Otherwise a
  // unit is one value, read from the word that holds it.
  Location loc = d.loc;
  IndexMath im(b, loc);
  const size_t rows = d.xRows.size();
  bool byFour = d.k % 4 == 0 && d.lanes > 1;
  Value rowStart = im.mul(d.n, im.c(d.k));
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = beginUnits(d, byFour ? d.k / 4 : d.k, rows);
  SmallVector<Value> acc(loop.getRegionIterArgs());
  if (byFour) {
    Value i = im.mul(loop.getInductionVar(), im.c(4));
    Value pair = sm::LoadOp::create(b, loc,
                                    VectorType::get({2}, b.getI32Type()), d.w,
                                    im.div(im.add(rowStart, i), 2));
    SmallVector<Value, 4> ws;
    for (int64_t j = 0; j < 2; ++j) {
      Value word = vector::ExtractOp::create(b, loc, pair, j);
      ws.push_back(bf16Half(b, loc, word, /*high=*/false));
      ws.push_back(bf16Half(b, loc, word, /*high=*/true));
    }
    for (size_t r = 0; r < rows; ++r) {
      SmallVector<Value, 4> xs = loadX4(d, im.add(d.xRows[r], i));
      for (int64_t j = 0; j < 4; ++j)
        acc[r] = ex::FmaOp::create(b, loc, xs[j], ws[j], acc[r]);
    }
  } else {
    Value i = loop.getInductionVar();
    Value wv = emitDequantizeQ4_0OrBF16(d.w, b.getBF16Type(),
                                        im.add(rowStart, i), loc);
    for (size_t r = 0; r < rows; ++r) {
      Value xv = toF32(loadElement(d.x, im.add(d.xRows[r], i), loc), loc);
      acc[r] = ex::FmaOp::create(b, loc, xv, wv, acc[r]);
    }
  }
  return finishUnits(loop, acc);
}

//===----------------------------------------------------------------------===//
// One lane (the CPU target): whole blocks as vector operations
//===----------------------------------------------------------------------===//

SmallVector<Value> GraphLowering::emitQ4_0DotVector(const DotOperands &d) {
  // Pairs of blocks, 36 bytes = 9 words, word-aligned when a row has an
  // even number of blocks (K a multiple of 64). Block A: d is the low half
  // of word 0, its 16 value bytes are bytes 2..17 (the high halves of
  // words 0..3 joined with the low halves of words 1..4). Block B: d is
  // the high half of word 4, its value bytes are words 5..8. Each block's
  // low nibbles, then its high ones, make 32 values in order.
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  int64_t pairs = d.k / 64;
  const size_t rows = d.xRows.size();
  Value rowWord = im.mul(d.n, im.c(pairs * 9));
  auto words4 = VectorType::get({4}, b.getI32Type());
  auto bytes16 = VectorType::get({16}, b.getI8Type());
  auto splat4 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(words4, b.getI32IntegerAttr(v)));
  };
  auto splat16 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(bytes16, b.getI8IntegerAttr(v)));
  };
  SmallVector<int64_t> inOrder;
  for (int64_t i = 0; i < 32; ++i)
    inOrder.push_back(i);
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = vm.beginRows(pairs, rows);
  Value pair = loop.getInductionVar();
  Value base = im.add(rowWord, im.mul(pair, im.c(9)));
  auto load4 = [&](int64_t word) -> Value {
    return sm::LoadOp::create(b, loc, words4, d.w,
                              im.add(base, im.c(word)));
  };
  // The 32 values (q - 8) * d of a block from its 16 value bytes.
  auto decode = [&](Value words, Value scale) -> Value {
    Value bytes = vector::BitCastOp::create(b, loc, bytes16, words);
    Value lo = arith::AndIOp::create(b, loc, bytes, splat16(0xf));
    Value hi = arith::ShRUIOp::create(b, loc, bytes, splat16(4));
    Value q = vector::ShuffleOp::create(b, loc, lo, hi, inOrder);
    q = arith::SubIOp::create(b, loc, q, vm.i8Splat(8));
    return vm.mul(vm.splat(scale), vm.signedToF32(q));
  };
  Value valuesA = arith::OrIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, load4(0), splat4(16)),
      arith::ShLIOp::create(b, loc, load4(1), splat4(16)));
  Value scaleA = ex::UnpackF16x2Op::create(
      b, loc, b.getF32Type(),
      sm::LoadOp::create(b, loc, b.getI32Type(), d.w, base), 0);
  Value scaleB = ex::UnpackF16x2Op::create(
      b, loc, b.getF32Type(),
      sm::LoadOp::create(b, loc, b.getI32Type(), d.w, im.add(base, im.c(4))),
      1);
  // The blocks' values, decoded once for every x row.
  Value wA = decode(valuesA, scaleA), wB = decode(load4(5), scaleB);
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (size_t r = 0; r < rows; ++r) {
    Value at = im.add(d.xRows[r], im.mul(pair, im.c(64)));
    acc[r] = vm.multiplyAdd(vm.multiplyAdd(acc[r], wA, vm.x32(d.x, at)), wB,
                            vm.x32(d.x, im.add(at, im.c(32))));
  }
  return vm.finishRows(loop, acc);
}

SmallVector<Value> GraphLowering::emitBF16DotVector(const DotOperands &d) {
  // 32 values (16 words) per iteration: the words as 32 halves in memory
  // order, widened and moved to the top of 32-bit lanes, are the f32
  // values.
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  int64_t chunks = d.k / 32;
  const size_t rows = d.xRows.size();
  Value rowWord = im.mul(d.n, im.c(d.k / 2));
  auto halves = VectorType::get({32}, b.getI16Type());
  auto wide = VectorType::get({32}, b.getI32Type());
  Value sixteen = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(wide, b.getI32IntegerAttr(16)));
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = vm.beginRows(chunks, rows);
  Value chunk = loop.getInductionVar();
  Value words = sm::LoadOp::create(b, loc,
                                   VectorType::get({16}, b.getI32Type()), d.w,
                                   im.add(rowWord, im.mul(chunk, im.c(16))));
  Value bits = arith::ShLIOp::create(
      b, loc,
      arith::ExtUIOp::create(b, loc, wide,
                             vector::BitCastOp::create(b, loc, halves, words)),
      sixteen);
  Value w = vector::BitCastOp::create(b, loc, vm.f32s(), bits);
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (size_t r = 0; r < rows; ++r) {
    Value at = im.add(d.xRows[r], im.mul(chunk, im.c(32)));
    acc[r] = vm.multiplyAdd(acc[r], w, vm.x32(d.x, at));
  }
  return vm.finishRows(loop, acc);
}

//===----------------------------------------------------------------------===//
// Reading one element (gathers from an embedding table)
//===----------------------------------------------------------------------===//

Value GraphLowering::emitDequantizeQ4_0OrBF16(Value words, Type element,
                                              Value index, Location loc) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  if (element.isBF16()) {
    Value word = sm::LoadOp::create(b, loc, b.getI32Type(), words,
                                    im.div(index, 2));
    Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                       im.rem(index, 2), im.c(0));
    return bf16Half(b, loc, word, high);
  }
  // q4_0: value j of a block is the low (j < 16) or high nibble of byte
  // 2 + j % 16.
  Value base = im.mul(im.div(index, 32), im.c(18));
  Value j = im.rem(index, 32);
  Value byte = loadByte(b, loc, words,
                        im.add(base, im.add(im.c(2), im.rem(j, 16))));
  Value q = wm.select(im.lt(j, im.c(16)), wm.mask(byte, 0xf),
                      wm.shr(byte, 4));
  return ex::MulOp::create(
      b, loc, loadHalf(b, loc, words, base),
      wm.toF32(arith::SubIOp::create(b, loc, q, wm.c(8))));
}

} // namespace hesper::lowering
