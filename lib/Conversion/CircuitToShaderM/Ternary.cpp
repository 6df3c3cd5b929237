//===- Ternary.cpp - Dot products and decoding of ternary weights ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// BitNet b1.58's ternary formats as ggml stores them (super-blocks of 256
// values, an f16 scale d after the packed values, v = d * (q - 1) with q in
// {0, 1, 2}):
//
//   tq2_0 (66 bytes): qs[64], four 2-bit values per byte: value
//         128h + 32l + m is bits 2l..2l+1 of qs[32h + m].
//   tq1_0 (54 bytes): qs[48] with five base-3 digits per byte and qh[4]
//         with four, each byte a fixed-point fraction whose leading digit
//         is (byte * 3) >> 8 and whose next ones appear after multiplying
//         by 3 (mod 256): value 32n + m is digit n of qs[m] (m < 32), value
//         160 + 16n + m digit n of qs[32 + m] (m < 16), value 240 + 4n + j
//         digit n of qh[j].
//   i2_s  (BitNet's own format): 128 codes per 32 bytes, value 32k + m in
//         bits 7-2k..6-2k of byte m, v = (code - 1) * scale, the tensor's
//         one f32 scale stored after all its blocks.
//
// The kernels decode the packed bytes in registers; no weight is ever
// expanded in memory.
//
//===----------------------------------------------------------------------===//

#include "BlockMath.h"

namespace hesper::lowering {

/// Digit `n` (a constant, 0 = leading) of a tq1_0 byte (an i32 in 0..255).
static Value tritOf(WordMath &wm, OpBuilder &b, Location loc, Value byte,
                    int64_t n) {
  static const int64_t pow3[5] = {1, 3, 9, 27, 81};
  Value shifted = wm.mask(arith::MulIOp::create(b, loc, byte, wm.c(pow3[n])),
                          0xff);
  return wm.shr(arith::MulIOp::create(b, loc, shifted, wm.c(3)), 8);
}

/// q - 1 as f32, for a ternary code q in 0..2.
static Value centered(WordMath &wm, OpBuilder &b, Location loc, Value q) {
  return wm.toF32(arith::SubIOp::create(b, loc, q, wm.c(1)));
}

SmallVector<Value> GraphLowering::emitTQ2_0Dot(const DotOperands &d) {
  // A lane's unit is one half h of a super-block: the 32 bytes qs[32h..]
  // (8 words), which hold its 128 values as four 2-bit planes l.
  constexpr int64_t kValues = 256, kBytes = 66;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  BlockUnit u = beginBlockUnits(d, kValues, 2, rows);
  scf::ForOp loop = u.loop;
  Value zero = u.zero, blk = u.block, half = u.part;
  Value base = im.mul(u.blockIndex, im.c(kBytes));
  Value scale = loadHalf(b, loc, d.w, im.add(base, im.c(64)));
  Value quants = im.add(base, im.mul(half, im.c(32)));
  Value misaligned = isMisaligned(base, loc);
  Value unitOffset =
      im.add(im.mul(blk, im.c(kValues)), im.mul(half, im.c(128)));
  auto words = scf::ForOp::create(b, loc, im.c(0), im.c(8), im.c(1),
                                  SmallVector<Value>(rows, zero));
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(words.getBody());
    Value w = words.getInductionVar();
    Value word = loadWordAtEvenByte(b, loc, d.w,
                                    im.add(quants, im.mul(w, im.c(4))),
                                    misaligned);
    SmallVector<Value> acc(words.getRegionIterArgs());
    for (int64_t l = 0; l < 4; ++l) {
      // Byte t of the word holds value 32l + 4w + t of the unit in plane l.
      SmallVector<SmallVector<Value, 4>> xs;
      for (size_t r = 0; r < rows; ++r)
        xs.push_back(loadX4(
            d, im.add(im.add(d.xRows[r], unitOffset),
                      im.add(im.c(32 * l), im.mul(w, im.c(4))))));
      for (int64_t t = 0; t < 4; ++t) {
        Value q = centered(wm, b, loc, wm.mask(wm.shr(word, 8 * t + 2 * l), 3));
        for (size_t r = 0; r < rows; ++r)
          acc[r] = ex::FmaOp::create(b, loc, q, xs[r][t], acc[r]);
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> totals;
  for (size_t r = 0; r < rows; ++r)
    totals.push_back(ex::FmaOp::create(b, loc, scale, words.getResult(r),
                                       loop.getRegionIterArgs()[r]));
  return finishUnits(loop, totals);
}

SmallVector<Value> GraphLowering::emitTQ1_0Dot(const DotOperands &d) {
  // A lane's unit is a whole super-block: the 32 bytes qs[0..32) (8 words,
  // five digits each), the 16 bytes qs[32..48) (4 words) and qh (1 word).
  constexpr int64_t kValues = 256, kBytes = 54;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  BlockUnit u = beginBlockUnits(d, kValues, 1, rows);
  scf::ForOp loop = u.loop;
  Value zero = u.zero, blk = u.block;
  Value base = im.mul(u.blockIndex, im.c(kBytes));
  Value scale = loadHalf(b, loc, d.w, im.add(base, im.c(52)));
  Value misaligned = isMisaligned(base, loc);
  Value blockValues = im.mul(blk, im.c(kValues));

  // Words of `count` bytes starting at byte `first` of the block, digits
  // 0..digits-1 of each byte; byte 4w + t, digit n is value
  // valueBase + stride * n + 4w + t of the block.
  auto group = [&](int64_t first, int64_t count, int64_t digits,
                   int64_t valueBase, int64_t stride,
                   ValueRange init) -> SmallVector<Value> {
    auto words = scf::ForOp::create(b, loc, im.c(0), im.c(count / 4),
                                    im.c(1), init);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(words.getBody());
    Value w = words.getInductionVar();
    Value word = loadWordAtEvenByte(
        b, loc, d.w, im.add(base, im.add(im.c(first), im.mul(w, im.c(4)))),
        misaligned);
    SmallVector<Value> acc(words.getRegionIterArgs());
    for (int64_t n = 0; n < digits; ++n) {
      SmallVector<SmallVector<Value, 4>> xs;
      for (size_t r = 0; r < rows; ++r)
        xs.push_back(loadX4(
            d, im.add(im.add(d.xRows[r], blockValues),
                      im.add(im.c(valueBase + stride * n),
                             im.mul(w, im.c(4))))));
      for (int64_t t = 0; t < 4; ++t) {
        Value q = centered(wm, b, loc,
                           tritOf(wm, b, loc, wm.mask(wm.shr(word, 8 * t), 0xff),
                                  n));
        for (size_t r = 0; r < rows; ++r)
          acc[r] = ex::FmaOp::create(b, loc, q, xs[r][t], acc[r]);
      }
    }
    scf::YieldOp::create(b, loc, acc);
    b.setInsertionPointAfter(words);
    return SmallVector<Value>(words.getResults());
  };
  SmallVector<Value> acc(rows, zero);
  acc = group(0, 32, 5, 0, 32, acc);
  acc = group(32, 16, 5, 160, 16, acc);
  acc = group(48, 4, 4, 240, 4, acc);
  SmallVector<Value> totals;
  for (size_t r = 0; r < rows; ++r)
    totals.push_back(ex::FmaOp::create(b, loc, scale, acc[r],
                                       loop.getRegionIterArgs()[r]));
  return finishUnits(loop, totals);
}

SmallVector<Value> GraphLowering::emitI2_SDot(const DotOperands &d) {
  // A lane's unit is one 32-byte block (8 words, always word-aligned) of
  // 128 values in four 2-bit planes; the lane's sum of (code - 1) * x is
  // scaled once at the end.
  constexpr int64_t kValues = 128, kWords = 8;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  // The lane's unscaled sums, computed in a scope of their own so that
  // the builder is back after the loop for the scaling.
  SmallVector<Value> sums = [&] {
    OpBuilder::InsertionGuard guard(b);
    BlockUnit u = beginBlockUnits(d, kValues, 1, rows);
    scf::ForOp loop = u.loop;
    Value blk = u.block;
    Value blockWord = im.mul(u.blockIndex, im.c(kWords));
    Value unitOffset = im.mul(blk, im.c(kValues));
    auto words = scf::ForOp::create(b, loc, im.c(0), im.c(kWords), im.c(1),
                                    loop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(words.getBody());
      Value w = words.getInductionVar();
      Value word = sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                      im.add(blockWord, w));
      SmallVector<Value> acc(words.getRegionIterArgs());
      for (int64_t k = 0; k < 4; ++k) {
        SmallVector<SmallVector<Value, 4>> xs;
        for (size_t r = 0; r < rows; ++r)
          xs.push_back(loadX4(
              d, im.add(im.add(d.xRows[r], unitOffset),
                        im.add(im.c(32 * k), im.mul(w, im.c(4))))));
        for (int64_t t = 0; t < 4; ++t) {
          Value q = centered(wm, b, loc,
                             wm.mask(wm.shr(word, 8 * t + 6 - 2 * k), 3));
          for (size_t r = 0; r < rows; ++r)
            acc[r] = ex::FmaOp::create(b, loc, q, xs[r][t], acc[r]);
        }
      }
      scf::YieldOp::create(b, loc, acc);
    }
    return finishUnits(loop, SmallVector<Value>(words.getResults()));
  }();
  // Scaled once, after the loop.
  return scaledByI2S(b, loc, d.w, std::move(sums));
}

/// The four codes of `word` in bits `shift`, `shift` + 1 of each byte, less
/// one, as signed bytes (-1, 0, 1): the codes with their bytes' high bits
/// set, less one per byte, the high bits cleared again (no borrow crosses
/// a byte).
static Value centeredCodes(WordMath &wm, OpBuilder &b, Location loc,
                           Value word, int64_t shift) {
  Value codes = wm.mask(wm.shr(word, shift), 0x03030303);
  Value highBits = wm.c(static_cast<int32_t>(0x80808080u));
  return arith::XOrIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc, wm.bitOr(codes, highBits),
                            wm.c(0x01010101)),
      highBits);
}

SmallVector<Value> GraphLowering::emitTQ2_0Q8Dot(const DotOperands &d) {
  // x in q8_1 blocks. A lane's unit is word w of a super-block's 64 code
  // bytes (66-byte blocks alternate between word-aligned and two bytes
  // in: loadWordAtEvenByte): bytes 4w .. 4w + 3 of half h = w / 8, whose
  // planes l hold values 128h + 32l + 4(w % 8) .. + 3, against word
  // 1 + w % 8 of x block 8 blk + 4h + l. Each plane's codes less one go
  // into exp.dot4_i8 with x's bytes (an exact i32 sum), scaled by the
  // block's d and the x block's. On GPU targets 16 lanes share a block.
  constexpr int64_t kValues = 256, kBytes = 66, kCodeWords = 16;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  BlockUnit u = beginBlockUnits(d, kValues, kCodeWords, rows);
  Value base = im.mul(u.blockIndex, im.c(kBytes));
  Value word = loadWordAtEvenByte(b, loc, d.w,
                                  im.add(base, im.mul(u.part, im.c(4))),
                                  isMisaligned(base, loc));
  Value scale = loadHalf(b, loc, d.w, im.add(base, im.c(64)));
  Value h = im.div(u.part, 8), within = im.rem(u.part, 8);
  SmallVector<Value> acc(u.loop.getRegionIterArgs());
  for (int64_t l = 0; l < 4; ++l) {
    Value codes = centeredCodes(wm, b, loc, word, 2 * l);
    for (size_t r = 0; r < rows; ++r) {
      Value xBlock = im.add(
          d.xRows[r],
          im.mul(im.add(im.mul(u.block, im.c(8)),
                        im.add(im.mul(h, im.c(4)), im.c(l))),
                 im.c(kQ8_1Words)));
      Value x = sm::LoadOp::create(b, loc, b.getI32Type(), d.x,
                                   im.add(xBlock, im.add(within, im.c(1))));
      Value dot = ex::Dot4I8Op::create(b, loc, codes, x, wm.c(0));
      Value factor = ex::MulOp::create(b, loc, scale,
                                       loadQ8_1Scale(b, loc, d.x, xBlock));
      acc[r] = ex::FmaOp::create(b, loc, factor, wm.toF32(dot), acc[r]);
    }
  }
  return finishUnits(u.loop, acc);
}

SmallVector<Value> GraphLowering::emitI2_SQ8Dot(const DotOperands &d) {
  // x in q8_1 blocks. A lane's unit is word w of a 32-byte block: bytes
  // m = 4w .. 4w + 3, whose four planes k hold values 32k + m, against
  // word 1 + w of x block 4 blk + k. Each plane's four codes less one
  // (centeredCodes) go into exp.dot4_i8 with x's four bytes, an exact i32
  // sum scaled by the x block's d. On GPU targets the eight lanes of a
  // block read its 32 consecutive bytes. The tensor's scale multiplies
  // the totals.
  constexpr int64_t kValues = 128, kWords = 8;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  SmallVector<Value> sums = [&] {
    OpBuilder::InsertionGuard guard(b);
    BlockUnit u = beginBlockUnits(d, kValues, kWords, rows);
    Value word = sm::LoadOp::create(
        b, loc, b.getI32Type(), d.w,
        im.add(im.mul(u.blockIndex, im.c(kWords)), u.part));
    SmallVector<Value> acc(u.loop.getRegionIterArgs());
    for (int64_t k = 0; k < 4; ++k) {
      Value centered = centeredCodes(wm, b, loc, word, 6 - 2 * k);
      for (size_t r = 0; r < rows; ++r) {
        Value xBlock = im.add(
            d.xRows[r],
            im.mul(im.add(im.mul(u.block, im.c(4)), im.c(k)),
                   im.c(kQ8_1Words)));
        Value x = sm::LoadOp::create(b, loc, b.getI32Type(), d.x,
                                     im.add(xBlock, im.add(u.part, im.c(1))));
        Value dot = ex::Dot4I8Op::create(b, loc, centered, x, wm.c(0));
        acc[r] = ex::FmaOp::create(b, loc,
                                   loadQ8_1Scale(b, loc, d.x, xBlock),
                                   wm.toF32(dot), acc[r]);
      }
    }
    return finishUnits(u.loop, acc);
  }();
  return scaledByI2S(b, loc, d.w, std::move(sums));
}

//===----------------------------------------------------------------------===//
// One lane (the CPU target): whole blocks as vector operations
//===----------------------------------------------------------------------===//

namespace {
/// Vectors of `width` codes decoded at once and accumulated per value in a
/// vector<width x f32> per x row, summed once per row. Products and sums may
/// be contracted and reassociated (a fixed order in the compiled code).
struct CodeMath {
  OpBuilder &b;
  Location loc;

  VectorType of(Type element, int64_t width) const {
    return VectorType::get({width}, element);
  }
  arith::FastMathFlags flags() const {
    return arith::FastMathFlags::contract | arith::FastMathFlags::reassoc;
  }
  Value splatInt(Type element, int64_t width, int64_t v) {
    auto type = of(element, width);
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, IntegerAttr::get(element, v)));
  }
  Value zerosF32(int64_t width) {
    return arith::ConstantOp::create(
        b, loc, b.getZeroAttr(of(b.getF32Type(), width)));
  }
  /// `words` consecutive 32-bit words of `buffer` from word `at` on.
  Value words(Value buffer, Value at, int64_t count) {
    return sm::LoadOp::create(b, loc, of(b.getI32Type(), count), buffer, at);
  }
  /// The 4*count bytes that start at even byte 4*at (+2 when `misaligned`).
  Value bytesAtEvenByte(Value buffer, Value at, int64_t count,
                        Value misaligned) {
    IndexMath im(b, loc);
    Value low = words(buffer, at, count);
    Value high = words(buffer, im.add(at, im.c(1)), count);
    Value shifted = arith::OrIOp::create(
        b, loc,
        arith::ShRUIOp::create(b, loc, low,
                               splatInt(b.getI32Type(), count, 16)),
        arith::ShLIOp::create(b, loc, high,
                              splatInt(b.getI32Type(), count, 16)));
    Value chosen = arith::SelectOp::create(b, loc, misaligned, shifted, low);
    return vector::BitCastOp::create(b, loc, of(b.getI8Type(), 4 * count),
                                     chosen);
  }
  /// (code - 1) as f32 for i8 codes in 0..2.
  Value centered(Value codes) {
    auto type = cast<VectorType>(codes.getType());
    int64_t width = type.getNumElements();
    Value f = arith::UIToFPOp::create(b, loc, of(b.getF32Type(), width),
                                      codes);
    Value one = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(of(b.getF32Type(), width), b.getF32FloatAttr(1)));
    return arith::SubFOp::create(b, loc, f, one, flags());
  }
  /// Bits `shift`..`shift`+1 of each byte.
  Value twoBits(Value bytes, int64_t shift) {
    int64_t width = cast<VectorType>(bytes.getType()).getNumElements();
    Type i8 = b.getI8Type();
    Value shifted = shift == 0 ? bytes
                               : Value(arith::ShRUIOp::create(
                                     b, loc, bytes, splatInt(i8, width, shift)));
    return arith::AndIOp::create(b, loc, shifted, splatInt(i8, width, 3));
  }
  /// Digit `n` of each tq1_0 byte: (byte * 3^n mod 256) * 3 >> 8.
  Value trits(Value bytes, int64_t n) {
    static const int64_t pow3[5] = {1, 3, 9, 27, 81};
    int64_t width = cast<VectorType>(bytes.getType()).getNumElements();
    Type i8 = b.getI8Type(), i16 = b.getI16Type();
    Value scaled = n == 0 ? bytes
                          : Value(arith::MulIOp::create(
                                b, loc, bytes, splatInt(i8, width, pow3[n])));
    Value wide = arith::ExtUIOp::create(b, loc, of(i16, width), scaled);
    Value top = arith::ShRUIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, wide, splatInt(i16, width, 3)),
        splatInt(i16, width, 8));
    return arith::TruncIOp::create(b, loc, of(i8, width), top);
  }
  Value x(Value buffer, Value at, int64_t width) {
    return sm::LoadOp::create(b, loc, of(b.getF32Type(), width), buffer, at);
  }
  Value multiplyAdd(Value acc, Value w, Value xs) {
    return arith::AddFOp::create(
        b, loc, acc, arith::MulFOp::create(b, loc, w, xs, flags()), flags());
  }
  Value sum(Value v) {
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, v,
                                       arith::FastMathFlags::reassoc);
  }
};
} // namespace

SmallVector<Value> GraphLowering::emitTQ2_0DotVector(const DotOperands &d) {
  // One super-block per iteration: its two halves of 32 bytes (loaded as
  // words, shifted by two bytes when the block starts mid-word: 66-byte
  // blocks alternate), four planes of 2-bit codes each, against 32
  // consecutive x values per plane; the codes - 1 are summed per value and
  // the block's scale multiplies the plane sums once per block.
  constexpr int64_t kValues = 256, kBytes = 66;
  Location loc = d.loc;
  IndexMath im(b, loc);
  CodeMath cm{b, loc};
  int64_t blocks = d.k / kValues;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocks));
  OpBuilder::InsertionGuard guard(b);
  BlockMath vm{b, loc};
  scf::ForOp loop = vm.beginRows(blocks, rows);
  Value blk = loop.getInductionVar();
  Value base = im.mul(im.add(rowBlocks, blk), im.c(kBytes));
  Value misaligned = isMisaligned(base, loc);
  Value word = im.div(base, 4);
  Value scale = vector::BroadcastOp::create(
      b, loc, cm.of(b.getF32Type(), 32),
      loadHalf(b, loc, d.w, im.add(base, im.c(64))));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (int64_t h = 0; h < 2; ++h) {
    Value bytes =
        cm.bytesAtEvenByte(d.w, im.add(word, im.c(8 * h)), 8, misaligned);
    for (int64_t l = 0; l < 4; ++l) {
      Value w = arith::MulFOp::create(
          b, loc, scale, cm.centered(cm.twoBits(bytes, 2 * l)), cm.flags());
      for (size_t r = 0; r < rows; ++r) {
        Value at = im.add(im.add(d.xRows[r], im.mul(blk, im.c(kValues))),
                          im.c(128 * h + 32 * l));
        acc[r] = vm.multiplyAdd(acc[r], w, vm.x32(d.x, at));
      }
    }
  }
  return vm.finishRows(loop, acc);
}

SmallVector<Value> GraphLowering::emitTQ1_0DotVector(const DotOperands &d) {
  // One super-block per iteration: qs[0..32) as 32 bytes (five digits,
  // values 32n + m), qs[32..48) as 16 bytes (five digits, values 160 + 16n
  // + m), both loaded as words and shifted when the 54-byte block starts
  // mid-word; qh's four bytes (values 240 + 4n + j) one by one.
  constexpr int64_t kValues = 256, kBytes = 54;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  CodeMath cm{b, loc};
  int64_t blocks = d.k / kValues;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocks));
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Value> init;
  for (size_t r = 0; r < rows; ++r) {
    init.push_back(cm.zerosF32(32));
    init.push_back(cm.zerosF32(16));
    init.push_back(ex::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0)));
  }
  auto loop = scf::ForOp::create(b, loc, im.c(0), im.c(blocks), im.c(1),
                                 init);
  b.setInsertionPointToStart(loop.getBody());
  Value blk = loop.getInductionVar();
  Value base = im.mul(im.add(rowBlocks, blk), im.c(kBytes));
  Value misaligned = isMisaligned(base, loc);
  Value word = im.div(base, 4);
  Value d32 = loadHalf(b, loc, d.w, im.add(base, im.c(52)));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  Value blockX = im.mul(blk, im.c(kValues));
  // 32 bytes, then 16 (the groups' widths), five digits each.
  for (auto [group, width, firstValue] :
       {std::tuple<int64_t, int64_t, int64_t>{0, 32, 0}, {1, 16, 160}}) {
    Value bytes = cm.bytesAtEvenByte(d.w, im.add(word, im.c(8 * group)),
                                     width / 4, misaligned);
    Value scale = vector::BroadcastOp::create(
        b, loc, cm.of(b.getF32Type(), width), d32);
    for (int64_t n = 0; n < 5; ++n) {
      Value w = arith::MulFOp::create(b, loc, scale,
                                      cm.centered(cm.trits(bytes, n)),
                                      cm.flags());
      for (size_t r = 0; r < rows; ++r) {
        Value at = im.add(im.add(d.xRows[r], blockX),
                          im.c(firstValue + width * n));
        Value &sum = acc[3 * r + group];
        sum = cm.multiplyAdd(sum, w, cm.x(d.x, at, width));
      }
    }
  }
  // qh: byte j's digit n is value 240 + 4n + j.
  Value qh = loadWordAtEvenByte(b, loc, d.w, im.add(base, im.c(48)),
                                misaligned);
  for (int64_t j = 0; j < 4; ++j) {
    Value byte = wm.mask(wm.shr(qh, 8 * j), 0xff);
    for (int64_t n = 0; n < 4; ++n) {
      Value q = ex::MulOp::create(b, loc, d32,
                                  centered(wm, b, loc, tritOf(wm, b, loc, byte, n)));
      for (size_t r = 0; r < rows; ++r) {
        Value at = im.add(im.add(d.xRows[r], blockX), im.c(240 + 4 * n + j));
        acc[3 * r + 2] = ex::FmaOp::create(
            b, loc, q, loadElement(d.x, at, loc), acc[3 * r + 2]);
      }
    }
  }
  scf::YieldOp::create(b, loc, acc);
  b.setInsertionPointAfter(loop);
  SmallVector<Value> dots;
  for (size_t r = 0; r < rows; ++r) {
    Value total = ex::AddOp::create(b, loc, cm.sum(loop.getResult(3 * r)),
                                    cm.sum(loop.getResult(3 * r + 1)));
    dots.push_back(ex::AddOp::create(b, loc, total, loop.getResult(3 * r + 2)));
  }
  return dots;
}

SmallVector<Value> GraphLowering::emitI2_SDotVector(const DotOperands &d) {
  // One 32-byte block (word-aligned) per iteration: four planes of 2-bit
  // codes (bits 6-2k of byte m: value 32k + m) against 32 x values each.
  constexpr int64_t kValues = 128, kWords = 8;
  Location loc = d.loc;
  IndexMath im(b, loc);
  CodeMath cm{b, loc};
  int64_t blocks = d.k / kValues;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocks));
  OpBuilder::InsertionGuard guard(b);
  BlockMath vm{b, loc};
  scf::ForOp loop = vm.beginRows(blocks, rows);
  Value blk = loop.getInductionVar();
  Value bytes =
      vm.bytes(vm.words(d.w, im.mul(im.add(rowBlocks, blk), im.c(kWords))));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (int64_t k = 0; k < 4; ++k) {
    Value w = cm.centered(cm.twoBits(bytes, 6 - 2 * k));
    for (size_t r = 0; r < rows; ++r) {
      Value at = im.add(im.add(d.xRows[r], im.mul(blk, im.c(kValues))),
                        im.c(32 * k));
      acc[r] = vm.multiplyAdd(acc[r], w, vm.x32(d.x, at));
    }
  }
  SmallVector<Value> dots = vm.finishRows(loop, acc);
  return scaledByI2S(b, loc, d.w, std::move(dots));
}

Value GraphLowering::emitDequantizeTernary(Value words, Type element,
                                           Value index, Location loc) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  Value within = im.rem(index, 256);
  if (isa<cir::TQ2_0Type>(element)) {
    Value base = im.mul(im.div(index, 256), im.c(66));
    Value h = im.div(within, 128), l = im.rem(im.div(within, 32), 4),
          m = im.rem(within, 32);
    Value byte = loadByte(b, loc, words,
                          im.add(base, im.add(im.mul(h, im.c(32)), m)));
    Value shift = arith::MulIOp::create(b, loc, im.toI32(l), wm.c(2));
    Value q = centered(wm, b, loc, wm.mask(wm.shr(byte, shift), 3));
    return ex::MulOp::create(
        b, loc, loadHalf(b, loc, words, im.add(base, im.c(64))), q);
  }
  // tq1_0: the byte and the digit of the value, by its group.
  Value base = im.mul(im.div(index, 256), im.c(54));
  Value inFirst = im.lt(within, im.c(160));
  Value inSecond = im.lt(within, im.c(240));
  Value second = arith::SubIOp::create(b, loc, within, im.c(160));
  Value third = arith::SubIOp::create(b, loc, within, im.c(240));
  auto pick = [&](Value a, Value b2, Value c) -> Value {
    return arith::SelectOp::create(
        b, loc, inFirst, a, arith::SelectOp::create(b, loc, inSecond, b2, c));
  };
  Value offset = pick(im.rem(within, 32), im.add(im.c(32), im.rem(second, 16)),
                      im.add(im.c(48), im.rem(third, 4)));
  Value digit = pick(im.div(within, 32), im.div(second, 16),
                     im.div(third, 4));
  Value byte = loadByte(b, loc, words, im.add(base, offset));
  // byte * 3^digit (mod 256), then its leading digit.
  Value d32 = im.toI32(digit);
  Value factor = wm.c(1);
  for (int64_t n = 1; n < 5; ++n)
    factor = wm.select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             d32, wm.c(n)),
                       wm.c(int64_t(std::pow(3, n))), factor);
  Value shifted =
      wm.mask(arith::MulIOp::create(b, loc, byte, factor), 0xff);
  Value q = centered(
      wm, b, loc, wm.shr(arith::MulIOp::create(b, loc, shifted, wm.c(3)), 8));
  return ex::MulOp::create(
      b, loc, loadHalf(b, loc, words, im.add(base, im.c(52))), q);
}

} // namespace hesper::lowering
