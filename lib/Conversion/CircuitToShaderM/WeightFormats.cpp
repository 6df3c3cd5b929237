//===- WeightFormats.cpp - q4_0, iq4_nl/xs and bf16 dots and decoding -----===//
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
//   iq4_nl (18 bytes / 32 values): q4_0's layout, but a nibble q stands
//        for entry q of ggml's table of 16 signed bytes (IQ4_NLType::kValues):
//        v = d * table[q]. The kernels look the entry up in registers: the
//        table is four i32 words, q >> 2 picks the word and q & 3 the byte
//        (one lane), or a chain of 15 compare-and-selects over a vector of
//        nibbles (whole blocks).
//   iq4_xs (136 bytes / 256 values): f16 d, u16 scales_h, u8 scales_l[4],
//        then eight sub-blocks of 32 values in 16 bytes each, iq4_nl's
//        nibbles; sub-block ib's 6-bit scale ls is bits 4 ib..4 ib+3 of
//        scales_l (as one word) below bits 2 ib, 2 ib + 1 of scales_h:
//        v = d * (ls - 32) * table[q]. 34 words, so blocks are aligned.
//   q4_1, q5_0, q5_1 (20, 22, 24 bytes / 32 values): f16 d, then for q4_1
//        and q5_1 an f16 offset m, for q5_0 and q5_1 a 32-bit word qh whose
//        bit j is value j's fifth bit, then q4_0's 16 nibble bytes; with q
//        the nibble and its fifth bit, v = d * q + m (q4_1, q5_1) or
//        d * (q - 16) (q5_0). A block's dot product is d * sum(q' x) +
//        m * sum(x). q5_0's blocks start at even bytes, the others' at
//        words.
//   q2_k, q3_k (84, 110 bytes / 256 values): 2-bit codes, value
//        128 n + 32 j + l (n < 2, j < 4, l < 32) in bits 2 j of code byte
//        32 n + l; sixteen 16-value sub-blocks, value v in v / 16. q2_k:
//        16 scale bytes (sub-block scale sc in the low nibble, min m in
//        the high), then the 64 code bytes, f16 d, f16 dmin at 80;
//        v = d sc q - dmin m. q3_k: 32 bytes hmask (bit 4 n + j of byte l
//        is value 128 n + 32 j + l's third bit), the code bytes at 32,
//        twelve bytes of 6-bit scales at 96 (scale i's low four bits in
//        byte i % 8, the low nibble for i < 8; its top two in byte
//        8 + i % 4 at bits 2 (i / 4)), f16 d at 108;
//        v = d (sc - 32) (q + 4 bit - 4). q3_k blocks start at even bytes.
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

/// iq4_nl's value of nibble `q` (an i32 0..15), as an i32: its table as
/// four little-endian words, a select of the word, then of its byte.
static Value iq4nlValue(OpBuilder &b, Location loc, Value q) {
  WordMath wm(b, loc);
  auto word = [&](int i) {
    uint32_t w = 0;
    for (int j = 0; j < 4; ++j)
      w |= uint32_t(uint8_t(cir::IQ4_NLType::kValues[4 * i + j])) << (8 * j);
    return wm.c(int32_t(w));
  };
  Value which = wm.shr(q, 2);
  auto is = [&](int64_t v) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, which,
                                 wm.c(v));
  };
  Value w = wm.select(is(0), word(0),
                      wm.select(is(1), word(1),
                                wm.select(is(2), word(2), word(3))));
  Value byte = wm.mask(wm.shr(w, wm.shl(wm.mask(q, 3), 3)), 0xff);
  return wm.signExtendByte(byte);
}

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

SmallVector<Value> GraphLowering::emitQ4_0Dot(const DotOperands &d,
                                              bool nonLinear) {
  // Blocks of 18 bytes: an f16 scale, 16 value bytes (4 words); byte t of
  // word w holds values 4w + t (low nibble) and 16 + 4w + t (high).
  return emitHalfScaledBlockDot(
      d, 32, 18,
      [&](Value word, Value w, ArrayRef<Value> xBlocks,
          MutableArrayRef<Value> acc) {
        IndexMath im(b, d.loc);
        WordMath wm(b, d.loc);
        Value offset = im.mul(w, im.c(4));
        SmallVector<SmallVector<Value, 4>> xsLo, xsHi;
        for (Value xBlock : xBlocks) {
          xsLo.push_back(loadX4(d, im.add(xBlock, offset)));
          xsHi.push_back(loadX4(d, im.add(xBlock, im.add(offset, im.c(16)))));
        }
        auto centered = [&](int64_t shift) {
          Value q = wm.mask(wm.shr(word, shift), 0xf);
          return wm.toF32(nonLinear
                              ? iq4nlValue(b, d.loc, q)
                              : Value(arith::SubIOp::create(b, d.loc, q,
                                                            wm.c(8))));
        };
        for (int64_t t = 0; t < 4; ++t) {
          Value qLo = centered(8 * t), qHi = centered(8 * t + 4);
          for (size_t r = 0; r < xBlocks.size(); ++r) {
            acc[r] = ex::FmaOp::create(b, d.loc, qLo, xsLo[r][t], acc[r]);
            acc[r] = ex::FmaOp::create(b, d.loc, qHi, xsHi[r][t], acc[r]);
          }
        }
      });
}

/// Where the parts of a q4_1, q5_0 or q5_1 block are.
struct LegacyLayout {
  bool offset = false, fifthBits = false;
  int64_t bytes = 18, qh = 2, qs = 2;
  explicit LegacyLayout(Type element)
      : offset(isa<cir::Q4_1Type, cir::Q5_1Type>(element)),
        fifthBits(isa<cir::Q5_0Type, cir::Q5_1Type>(element)) {
    qh = offset ? 4 : 2;
    qs = qh + (fifthBits ? 4 : 0);
    bytes = qs + 16;
  }
};

SmallVector<Value> GraphLowering::emitLegacyDot(const DotOperands &d,
                                                Type element) {
  // A lane per block: the 4 nibble words (byte t of word w holds values
  // 4w + t, low nibble, and 16 + 4w + t, high), their fifth bits from qh,
  // summed as q' * x and, with an offset, x alone; the block adds
  // d * sum(q' x) + m * sum(x) to each row's total.
  const LegacyLayout layout(element);
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  BlockUnit u = beginBlockUnits(d, 32, 1, rows);
  scf::ForOp loop = u.loop;
  Value zero = u.zero, blk = u.block;
  Value base = im.mul(u.blockIndex, im.c(layout.bytes));
  Value scale = loadHalf(b, loc, d.w, base);
  if (shape.mutant == "drop-scale") // A mutant: the block scale ignored.
    scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  Value offset =
      layout.offset ? loadHalf(b, loc, d.w, im.add(base, im.c(2))) : Value();
  Value qh;
  if (layout.fifthBits) {
    Value at = im.add(base, im.c(layout.qh));
    qh = loadWordAtEvenByte(b, loc, d.w, at, isMisaligned(at, loc));
  }
  Value values = im.add(base, im.c(layout.qs));
  Value misaligned = isMisaligned(values, loc);
  SmallVector<Value> xBlocks;
  for (size_t r = 0; r < rows; ++r)
    xBlocks.push_back(im.add(d.xRows[r], im.mul(blk, im.c(32))));
  const size_t sums = layout.offset ? 2 * rows : rows;
  auto inner = scf::ForOp::create(b, loc, im.c(0), im.c(4), im.c(1),
                                  SmallVector<Value>(sums, zero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(inner.getBody());
    Value w = inner.getInductionVar();
    Value word = loadWordAtEvenByte(b, loc, d.w,
                                    im.add(values, im.mul(w, im.c(4))),
                                    misaligned);
    SmallVector<Value> acc(inner.getRegionIterArgs());
    Value xOffset = im.mul(w, im.c(4));
    // The fifth bits of values 4w..4w+3 and 16+4w..16+4w+3, in the low
    // four bits.
    Value hiLo, hiHi;
    if (qh) {
      Value shift = arith::MulIOp::create(b, loc, im.toI32(w), wm.c(4));
      hiLo = wm.shr(qh, shift);
      hiHi = wm.shr(wm.shr(qh, 16), shift);
    }
    for (size_t r = 0; r < rows; ++r) {
      SmallVector<Value, 4> xLo = loadX4(d, im.add(xBlocks[r], xOffset));
      SmallVector<Value, 4> xHi =
          loadX4(d, im.add(xBlocks[r], im.add(xOffset, im.c(16))));
      for (int64_t t = 0; t < 4; ++t) {
        auto value = [&](int64_t shift, Value fifth) {
          Value q = wm.mask(wm.shr(word, shift), 0xf);
          if (fifth)
            q = wm.bitOr(q, wm.shl(wm.mask(wm.shr(fifth, t), 1), 4));
          if (!layout.offset)
            q = arith::SubIOp::create(b, loc, q, wm.c(16));
          return wm.toF32(q);
        };
        acc[r] = ex::FmaOp::create(b, loc, value(8 * t, hiLo), xLo[t], acc[r]);
        acc[r] =
            ex::FmaOp::create(b, loc, value(8 * t + 4, hiHi), xHi[t], acc[r]);
        if (layout.offset) {
          acc[rows + r] = ex::AddOp::create(b, loc, acc[rows + r], xLo[t]);
          acc[rows + r] = ex::AddOp::create(b, loc, acc[rows + r], xHi[t]);
        }
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> acc;
  for (size_t r = 0; r < rows; ++r) {
    Value total = loop.getRegionIterArgs()[r];
    if (layout.offset)
      total = ex::FmaOp::create(b, loc, offset, inner.getResult(rows + r),
                                total);
    acc.push_back(
        ex::FmaOp::create(b, loc, scale, inner.getResult(r), total));
  }
  return finishUnits(loop, acc);
}

/// Where the parts of a q2_k or q3_k super-block are.
struct KLowBitLayout {
  bool threeBits;
  int64_t bytes, codes, scales, d;
  explicit KLowBitLayout(bool threeBits)
      : threeBits(threeBits), bytes(threeBits ? 110 : 84),
        codes(threeBits ? 32 : 16), scales(threeBits ? 96 : 0),
        d(threeBits ? 108 : 80) {}
};

/// q3_k's 6-bit scale of sub-block `i` (an index 0..15), from the block's
/// scale bytes at byte `scales`.
static Value q3kScale(OpBuilder &b, Location loc, Value words, Value scales,
                      Value i) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  Value low = loadByte(b, loc, words, im.add(scales, im.rem(i, 8)));
  Value high = loadByte(b, loc, words,
                        im.add(scales, im.add(im.c(8), im.rem(i, 4))));
  Value lowShift = im.toI32(im.mul(im.div(i, 8), im.c(4)));
  Value highShift = im.toI32(im.mul(im.div(i, 4), im.c(2)));
  return wm.bitOr(wm.mask(wm.shr(low, lowShift), 0xf),
                  wm.shl(wm.mask(wm.shr(high, highShift), 3), 4));
}

/// d (sc - 32) for all sixteen sub-blocks of a q3_k super-block, as a
/// vector<16xf32>, from its twelve scale bytes (`words`, vector<3xi32>):
/// q3kScale's bit picking done lane-wise, each scale's byte and shift
/// gathered by a shuffle and a constant vector of shifts.
static Value q3kScalesVector(OpBuilder &b, Location loc, Value words,
                             Value d) {
  BlockMath vm{b, loc};
  auto i32s = VectorType::get({16}, b.getI32Type());
  Value bytes = arith::ExtUIOp::create(
      b, loc, VectorType::get({12}, b.getI32Type()),
      vector::BitCastOp::create(b, loc, VectorType::get({12}, b.getI8Type()),
                                words));
  auto constant = [&](llvm::function_ref<int32_t(int64_t)> of) -> Value {
    SmallVector<int32_t> values;
    for (int64_t i = 0; i < 16; ++i)
      values.push_back(of(i));
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(i32s, ArrayRef<int32_t>(values)));
  };
  // Bits 0..3 of scale i: byte i % 8, its high nibble for i >= 8; bits
  // 4..5: bits 2 (i / 4) of byte 8 + i % 4.
  auto field = [&](llvm::function_ref<int64_t(int64_t)> byteOf,
                   llvm::function_ref<int32_t(int64_t)> shiftOf,
                   int32_t mask) -> Value {
    SmallVector<int64_t> which;
    for (int64_t i = 0; i < 16; ++i)
      which.push_back(byteOf(i));
    Value picked = vector::ShuffleOp::create(b, loc, bytes, bytes, which);
    return arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, picked, constant(shiftOf)),
        constant([&](int64_t) { return mask; }));
  };
  Value low = field([](int64_t i) { return i % 8; },
                    [](int64_t i) { return int32_t(i / 8 * 4); }, 0xf);
  Value high = field([](int64_t i) { return 8 + i % 4; },
                     [](int64_t i) { return int32_t(i / 4 * 2); }, 3);
  Value sc = arith::SubIOp::create(
      b, loc,
      arith::OrIOp::create(
          b, loc, low,
          arith::ShLIOp::create(b, loc, high,
                                constant([](int64_t) { return 4; }))),
      constant([](int64_t) { return 32; }));
  return vm.mul(vm.splat(d, 16), arith::SIToFPOp::create(b, loc, vm.f32s(16), sc));
}

SmallVector<Value> GraphLowering::emitKLowBitDot(const DotOperands &d,
                                                 bool threeBits,
                                                 bool q8Activations) {
  // A lane's unit is one 16-value sub-block g = 8 n + 2 j + h: its codes
  // are bits 2 j of the 16 code bytes at 32 n + 16 h (four words), its
  // q3_k third bits bit 4 n + j of the hmask bytes at 16 h. The sums
  // sum(q x) (and for q2_k sum(x)) are scaled once per sub-block.
  // With q8_1 activations (q2_k), the sub-block is half h of x block
  // 8 blk + 4 n + j: a word's four codes (bytes 0..3) go into exp.dot4_i8
  // with x's bytes, and bytes of one with the same x bytes give sum(x), in
  // exact i32 sums, scaled by the x block's d as well.
  assert((!q8Activations || !threeBits) && "q8_1 activations: q2_k only");
  const KLowBitLayout layout(threeBits);
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  BlockUnit u = beginBlockUnits(d, 256, 16, rows);
  scf::ForOp loop = u.loop;
  Value g = u.part;
  Value base = im.mul(u.blockIndex, im.c(layout.bytes));
  Value misaligned = isMisaligned(base, loc);
  Value n = im.div(g, 8), j = im.rem(im.div(g, 2), 4), h = im.rem(g, 2);
  Value shift = im.toI32(im.mul(j, im.c(2)));
  Value bitIndex = im.toI32(im.add(im.mul(n, im.c(4)), j));
  Value codes = im.add(base, im.add(im.c(layout.codes),
                                    im.add(im.mul(n, im.c(32)),
                                           im.mul(h, im.c(16)))));
  Value bits = im.add(base, im.mul(h, im.c(16)));
  // Where the sub-block's f32 x values start, per row (f32 activations).
  SmallVector<Value> xSub;
  if (!q8Activations)
    for (size_t r = 0; r < rows; ++r)
      xSub.push_back(im.add(d.xRows[r],
                            im.add(im.mul(u.block, im.c(256)),
                                   im.mul(g, im.c(16)))));
  const size_t sums = threeBits ? rows : 2 * rows;
  SmallVector<Value> acc(sums, q8Activations ? wm.c(0) : u.zero);
  // x's q8_1 block of the sub-block, per row (q8_1 activations).
  SmallVector<Value> xBlocks;
  if (q8Activations)
    for (size_t r = 0; r < rows; ++r)
      xBlocks.push_back(im.add(
          d.xRows[r],
          im.mul(im.add(im.mul(u.block, im.c(8)),
                        im.add(im.mul(n, im.c(4)), j)),
                 im.c(kQ8_1Words))));
  for (int64_t w = 0; w < 4; ++w) {
    Value word = loadWordAtEvenByte(b, loc, d.w, im.add(codes, im.c(4 * w)),
                                    misaligned);
    if (q8Activations) {
      Value q = wm.mask(wm.shr(word, shift), 0x03030303);
      for (size_t r = 0; r < rows; ++r) {
        Value x = sm::LoadOp::create(
            b, loc, b.getI32Type(), d.x,
            im.add(xBlocks[r], im.add(im.mul(h, im.c(4)), im.c(1 + w))));
        acc[r] = ex::Dot4I8Op::create(b, loc, q, x, acc[r]);
        acc[rows + r] =
            ex::Dot4I8Op::create(b, loc, wm.c(0x01010101), x, acc[rows + r]);
      }
      continue;
    }
    Value hm = threeBits ? loadWordAtEvenByte(b, loc, d.w,
                                              im.add(bits, im.c(4 * w)),
                                              misaligned)
                         : Value();
    for (size_t r = 0; r < rows; ++r) {
      SmallVector<Value, 4> xs = loadX4(d, im.add(xSub[r], im.c(4 * w)));
      for (int64_t t = 0; t < 4; ++t) {
        Value q = wm.mask(
            wm.shr(word, arith::AddIOp::create(b, loc, shift, wm.c(8 * t))),
            3);
        if (hm) {
          Value bit = wm.mask(
              wm.shr(hm, arith::AddIOp::create(b, loc, bitIndex,
                                               wm.c(8 * t))),
              1);
          q = arith::SubIOp::create(
              b, loc, arith::AddIOp::create(b, loc, q, wm.shl(bit, 2)),
              wm.c(4));
        }
        acc[r] = ex::FmaOp::create(b, loc, wm.toF32(q), xs[t], acc[r]);
        if (!threeBits)
          acc[rows + r] = ex::AddOp::create(b, loc, acc[rows + r], xs[t]);
      }
    }
  }
  SmallVector<Value> next;
  if (threeBits) {
    Value scale = loadHalf(b, loc, d.w, im.add(base, im.c(layout.d)));
    if (shape.mutant == "drop-scale") // A mutant: the block scale ignored.
      scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value sc = q3kScale(b, loc, d.w, im.add(base, im.c(layout.scales)), g);
    Value dl = ex::MulOp::create(
        b, loc, scale, wm.toF32(arith::SubIOp::create(b, loc, sc, wm.c(32))));
    for (size_t r = 0; r < rows; ++r)
      next.push_back(ex::FmaOp::create(b, loc, dl, acc[r],
                                       loop.getRegionIterArgs()[r]));
  } else {
    Value scale = loadHalf(b, loc, d.w, im.add(base, im.c(layout.d)));
    if (shape.mutant == "drop-scale") // A mutant: the block scale ignored.
      scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value dmin = loadHalf(b, loc, d.w, im.add(base, im.c(layout.d + 2)));
    Value sm = loadByte(b, loc, d.w, im.add(base, g));
    Value dl = ex::MulOp::create(b, loc, scale, wm.toF32(wm.mask(sm, 0xf)));
    Value ml = ex::MulOp::create(b, loc, dmin, wm.toF32(wm.shr(sm, 4)));
    for (size_t r = 0; r < rows; ++r) {
      Value qx = acc[r], x = acc[rows + r], dlx = dl, mlx = ml;
      if (q8Activations) {
        Value dx = loadQ8_1Scale(b, loc, d.x, xBlocks[r]);
        qx = wm.toF32(qx);
        x = wm.toF32(x);
        dlx = ex::MulOp::create(b, loc, dl, dx);
        mlx = ex::MulOp::create(b, loc, ml, dx);
      }
      Value total = ex::FmaOp::create(b, loc, dlx, qx,
                                      loop.getRegionIterArgs()[r]);
      next.push_back(ex::SubOp::create(
          b, loc, total, ex::MulOp::create(b, loc, mlx, x)));
    }
  }
  return finishUnits(loop, next);
}

/// iq4_xs: the scale d * (ls - 32) of sub-block `ib` (an i32 0..7), from
/// the block's first two words (`head`: d and scales_h; `low`: scales_l).
static Value iq4xsScale(OpBuilder &b, Location loc, Value head, Value low,
                        Value ib) {
  WordMath wm(b, loc);
  Value four = arith::MulIOp::create(b, loc, ib, wm.c(4));
  Value two = arith::MulIOp::create(b, loc, ib, wm.c(2));
  Value ls = wm.bitOr(wm.mask(wm.shr(low, four), 0xf),
                      wm.shl(wm.mask(wm.shr(wm.shr(head, 16), two), 3), 4));
  Value d = ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 0);
  return ex::MulOp::create(
      b, loc, d, wm.toF32(arith::SubIOp::create(b, loc, ls, wm.c(32))));
}

SmallVector<Value> GraphLowering::emitIQ4_XSDot(const DotOperands &d) {
  // A lane's unit is one sub-block: its 4 quant words (byte t of word w
  // holds values 4w + t, low nibble, and 16 + 4w + t, high), summed as
  // table[q] * x and scaled once.
  constexpr int64_t kValues = 256, kWords = 34;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  BlockUnit u = beginBlockUnits(d, kValues, 8, rows);
  scf::ForOp loop = u.loop;
  Value blockWord = im.mul(u.blockIndex, im.c(kWords));
  Value head = sm::LoadOp::create(b, loc, b.getI32Type(), d.w, blockWord);
  Value low = sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                 im.add(blockWord, im.c(1)));
  Value scale = iq4xsScale(b, loc, head, low, im.toI32(u.part));
  if (shape.mutant == "drop-scale") // A mutant: the block scale ignored.
    scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  Value quants = im.add(blockWord, im.add(im.c(2), im.mul(u.part, im.c(4))));
  Value unitOffset =
      im.add(im.mul(u.block, im.c(kValues)), im.mul(u.part, im.c(32)));
  auto words = scf::ForOp::create(b, loc, im.c(0), im.c(4), im.c(1),
                                  SmallVector<Value>(rows, u.zero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(words.getBody());
    Value w = words.getInductionVar();
    SmallVector<Value> acc(words.getRegionIterArgs());
    Value word = sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                    im.add(quants, w));
    SmallVector<SmallVector<Value, 4>> xsLo, xsHi;
    for (size_t r = 0; r < rows; ++r) {
      Value at = im.add(im.add(d.xRows[r], unitOffset), im.mul(w, im.c(4)));
      xsLo.push_back(loadX4(d, at));
      xsHi.push_back(loadX4(d, im.add(at, im.c(16))));
    }
    for (int64_t t = 0; t < 4; ++t) {
      Value qLo = wm.toF32(iq4nlValue(b, loc, wm.mask(wm.shr(word, 8 * t), 0xf)));
      Value qHi =
          wm.toF32(iq4nlValue(b, loc, wm.mask(wm.shr(word, 8 * t + 4), 0xf)));
      for (size_t r = 0; r < rows; ++r) {
        acc[r] = ex::FmaOp::create(b, loc, qLo, xsLo[r][t], acc[r]);
        acc[r] = ex::FmaOp::create(b, loc, qHi, xsHi[r][t], acc[r]);
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> acc;
  for (size_t r = 0; r < rows; ++r)
    acc.push_back(ex::FmaOp::create(b, loc, scale, words.getResult(r),
                                    loop.getRegionIterArgs()[r]));
  return finishUnits(loop, acc);
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

/// iq4_nl's values of 32 nibbles (a vector<32xi8>): each the table's
/// element at its nibble, extracts at dynamic positions gathered into a
/// vector, which LLVM's x86 backend turns into byte permutes of the table
/// (vpshufb with AVX2, vpermb with AVX-512; SSE-only levels get scalar
/// lookups).
static Value iq4nlValues(OpBuilder &b, Location loc, Value q) {
  Value table = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({16}, b.getI8Type()),
                             ArrayRef<int8_t>(cir::IQ4_NLType::kValues)));
  SmallVector<Value> values;
  for (int64_t i = 0; i < 32; ++i) {
    Value nibble = vector::ExtractOp::create(b, loc, q, i);
    Value at =
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), nibble);
    values.push_back(vector::ExtractOp::create(b, loc, table,
                                               ArrayRef<OpFoldResult>{at}));
  }
  return vector::FromElementsOp::create(
      b, loc, VectorType::get({32}, b.getI8Type()), values);
}

/// The 32 nibbles of 16 bytes (four words as a vector<4xi32>) in value
/// order: the low nibbles, then the high ones.
static Value nibblesInOrder(OpBuilder &b, Location loc, Value words) {
  auto bytes16 = VectorType::get({16}, b.getI8Type());
  Value fifteen = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(bytes16, b.getI8IntegerAttr(0xf)));
  Value four = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(bytes16, b.getI8IntegerAttr(4)));
  SmallVector<int64_t> inOrder;
  for (int64_t i = 0; i < 32; ++i)
    inOrder.push_back(i);
  Value bytes = vector::BitCastOp::create(b, loc, bytes16, words);
  Value lo = arith::AndIOp::create(b, loc, bytes, fifteen);
  Value hi = arith::ShRUIOp::create(b, loc, bytes, four);
  return vector::ShuffleOp::create(b, loc, lo, hi, inOrder);
}

SmallVector<Value> GraphLowering::emitIQ4_XSDotVector(const DotOperands &d) {
  // One super-block (34 words) per iteration: per sub-block, its 16 quant
  // bytes as 32 table values, times the sub-block's scale, against 32
  // consecutive values of each x row.
  constexpr int64_t kValues = 256, kWords = 34;
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  int64_t blocks = d.k / kValues;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocks));
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = vm.beginRows(blocks, rows);
  Value blk = loop.getInductionVar();
  Value blockWord = im.mul(im.add(rowBlocks, blk), im.c(kWords));
  Value head = sm::LoadOp::create(b, loc, b.getI32Type(), d.w, blockWord);
  Value low = sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                 im.add(blockWord, im.c(1)));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  WordMath wm(b, loc);
  for (int64_t ib = 0; ib < 8; ++ib) {
    Value scale = iq4xsScale(b, loc, head, low, wm.c(ib));
    if (shape.mutant == "drop-scale")
      scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value words = sm::LoadOp::create(
        b, loc, VectorType::get({4}, b.getI32Type()), d.w,
        im.add(blockWord, im.c(2 + 4 * ib)));
    Value w = vm.mul(vm.splat(scale),
                     vm.signedToF32(iq4nlValues(b, loc,
                                                nibblesInOrder(b, loc, words))));
    for (size_t r = 0; r < rows; ++r) {
      Value at = im.add(d.xRows[r],
                        im.add(im.mul(blk, im.c(kValues)), im.c(32 * ib)));
      acc[r] = vm.multiplyAdd(acc[r], w, vm.x32(d.x, at));
    }
  }
  return vm.finishRows(loop, acc);
}

/// The `count` words at even byte `at` of `words` as a vector of i32 (the
/// vector form of loadWordAtEvenByte): the aligned ones, or, when
/// `misaligned` (at % 4 == 2), the halves of the count + 1 aligned words
/// around them. The second load's start is clamped into the buffer: it is
/// only used when misaligned, and then it exists.
static Value wordsAtEvenByte(OpBuilder &b, Location loc, Value words,
                             Value at, Value misaligned, int64_t count) {
  IndexMath im(b, loc);
  int64_t length = cast<sm::BufferType>(words.getType()).getLength();
  auto type = VectorType::get({count}, b.getI32Type());
  Value first = im.div(at, 4);
  Value w0 = sm::LoadOp::create(b, loc, type, words, first);
  Value next = arith::MinUIOp::create(
      b, loc, im.add(first, im.c(1)),
      im.c(std::max<int64_t>(length - count, 0)));
  Value w1 = sm::LoadOp::create(b, loc, type, words, next);
  Value sixteen = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getI32IntegerAttr(16)));
  Value joined = arith::OrIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, w0, sixteen),
      arith::ShLIOp::create(b, loc, w1, sixteen));
  return arith::SelectOp::create(b, loc, misaligned, joined, w0);
}

SmallVector<Value> GraphLowering::emitLegacyDotVector(const DotOperands &d,
                                                      Type element) {
  // A block's 16 nibble bytes as 32 values in order, each with its fifth
  // bit from qh, made d * q + m (or d * (q - 16)) and multiplied with 32
  // consecutive values of each x row. q4_1 and q5_1 blocks are whole words:
  // one per iteration. q5_0's 22-byte blocks go in pairs (44 bytes, 11
  // words) when a row has an even number of them: block A's scale is the
  // low half of word 0, its qh the two halves around word 1's start, its
  // nibbles the 16 bytes from byte 6; block B's scale is the high half of
  // word 5, its qh word 6, its nibbles words 7..10. Otherwise one block
  // per iteration, its words assembled where they start mid-word.
  const LegacyLayout layout(element);
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  BlockMath vm{b, loc};
  const int64_t blocks = d.k / 32;
  const bool pairs = layout.bytes % 4 != 0 && blocks % 2 == 0;
  const int64_t perStep = pairs ? 2 : 1;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocks));
  auto bytes32 = VectorType::get({32}, b.getI8Type());
  auto words4 = VectorType::get({4}, b.getI32Type());

  // One block's 32 weights from its scale, offset (or null), qh word (or
  // null) and four nibble words.
  auto decode = [&](Value scale, Value offset, Value qh, Value words) {
    if (shape.mutant == "drop-scale") // A mutant: the block scale ignored.
      scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value q = nibblesInOrder(b, loc, words);
    if (qh) {
      // Value j's fifth bit is bit j % 8 of qh's byte j / 8: the four
      // bytes spread eight lanes each, masked with each lane's bit, make
      // 16 or 0.
      Value four = vector::BitCastOp::create(
          b, loc, VectorType::get({4}, b.getI8Type()),
          vector::BroadcastOp::create(
              b, loc, VectorType::get({1}, b.getI32Type()), qh));
      SmallVector<int64_t> byteOfLane;
      SmallVector<int8_t> bitOfLane;
      for (int64_t j = 0; j < 32; ++j) {
        byteOfLane.push_back(j / 8);
        bitOfLane.push_back(static_cast<int8_t>(1u << (j % 8)));
      }
      Value spread = vector::ShuffleOp::create(b, loc, four, four, byteOfLane);
      Value set = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          arith::AndIOp::create(
              b, loc, spread,
              arith::ConstantOp::create(
                  b, loc,
                  DenseElementsAttr::get(bytes32,
                                         ArrayRef<int8_t>(bitOfLane)))),
          vm.i8Splat(0));
      q = arith::OrIOp::create(
          b, loc, q,
          arith::SelectOp::create(b, loc, set, vm.i8Splat(16),
                                  vm.i8Splat(0)));
    }
    if (offset)
      return vm.add(vm.mul(vm.splat(scale), vm.unsignedToF32(q)),
                    vm.splat(offset));
    return vm.mul(vm.splat(scale),
                  vm.signedToF32(
                      arith::SubIOp::create(b, loc, q, vm.i8Splat(16))));
  };
  auto half = [&](Value word, int64_t which) -> Value {
    return ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), word, which);
  };

  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = vm.beginRows(blocks / perStep, rows);
  Value step = loop.getInductionVar();
  Value first = im.add(rowBlocks, im.mul(step, im.c(perStep)));
  SmallVector<Value> ws;
  if (pairs) {
    // The pair's first word (rows hold whole pairs: `first` is even).
    Value base = im.mul(im.div(first, 2), im.c(layout.bytes / 2));
    auto word = [&](int64_t i) -> Value {
      return sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                im.add(base, im.c(i)));
    };
    auto four = [&](int64_t i) -> Value {
      return sm::LoadOp::create(b, loc, words4, d.w, im.add(base, im.c(i)));
    };
    Value sixteen = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(words4, b.getI32IntegerAttr(16)));
    Value w0 = word(0), w1 = word(1), w5 = word(5);
    Value qhA = wm.bitOr(wm.shr(w0, 16), wm.shl(w1, 16));
    Value nibblesA = arith::OrIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, four(1), sixteen),
        arith::ShLIOp::create(b, loc, four(2), sixteen));
    ws.push_back(decode(half(w0, 0), Value(), qhA, nibblesA));
    ws.push_back(decode(half(w5, 1), Value(), word(6), four(7)));
  } else {
    Value base = im.mul(first, im.c(layout.bytes));
    auto wordAt = [&](int64_t offset) {
      Value at = im.add(base, im.c(offset));
      return loadWordAtEvenByte(b, loc, d.w, at, isMisaligned(at, loc));
    };
    Value head = wordAt(0);
    Value qsAt = im.add(base, im.c(layout.qs));
    ws.push_back(decode(
        half(head, 0), layout.offset ? half(head, 1) : Value(),
        layout.fifthBits ? wordAt(layout.qh) : Value(),
        wordsAtEvenByte(b, loc, d.w, qsAt, isMisaligned(qsAt, loc), 4)));
  }
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (size_t r = 0; r < rows; ++r) {
    Value at = im.add(d.xRows[r], im.mul(step, im.c(32 * perStep)));
    for (auto [i, w] : llvm::enumerate(ws))
      acc[r] = vm.multiplyAdd(acc[r], w,
                              vm.x32(d.x, im.add(at, im.c(32 * i))));
  }
  return vm.finishRows(loop, acc);
}

SmallVector<Value> GraphLowering::emitKLowBitDotVector(const DotOperands &d,
                                                       bool threeBits) {
  // One super-block per iteration: for each half n, its 32 code bytes
  // once; for each j, bits 2 j of them are the 32 values
  // 128 n + 32 j .. + 31 in order (the first 16 one sub-block, the last 16
  // the next), with q3_k's third bits bit 4 n + j of the 32 hmask bytes.
  // The sixteen sub-blocks' scales (and q2_k's mins) are decoded once per
  // super-block as a vector<16xf32>, and each pair's is spread over the
  // low and high 16 lanes by a shuffle: no scalar work per sub-block. The
  // code bytes (and q3_k's hmask bytes) are widened to 32-bit lanes once,
  // and each j's bits picked there: shifts and masks rather than a
  // widening shuffle per j (the shuffle port is what limits this loop).
  const KLowBitLayout layout(threeBits);
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  BlockMath vm{b, loc};
  int64_t blocks = d.k / 256;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocks));
  auto words32 = VectorType::get({32}, b.getI32Type());
  auto splatWord = [&](int64_t v) { return vm.i32Splat(v, 32); };
  auto widen = [&](Value bytes) -> Value {
    return arith::ExtUIOp::create(b, loc, words32, bytes);
  };
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = vm.beginRows(blocks, rows);
  Value blk = loop.getInductionVar();
  Value base = im.mul(im.add(rowBlocks, blk), im.c(layout.bytes));
  Value misaligned = isMisaligned(base, loc);
  Value scale = loadHalf(b, loc, d.w, im.add(base, im.c(layout.d)));
  if (shape.mutant == "drop-scale") // A mutant: the block scale ignored.
    scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  // Per sub-block: d sc (q3_k: d (sc - 32)) and q2_k's dmin m.
  Value scales, mins;
  if (threeBits) {
    scales = q3kScalesVector(
        b, loc,
        wordsAtEvenByte(b, loc, d.w, im.add(base, im.c(layout.scales)),
                        isMisaligned(im.add(base, im.c(layout.scales)), loc),
                        3),
        scale);
  } else {
    // q2_k blocks are whole words (84 bytes): the scale bytes are words
    // 0..3, d and dmin the halves of word 20.
    Value word = im.div(base, 4);
    Value dmin = ex::UnpackF16x2Op::create(
        b, loc, b.getF32Type(),
        sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                           im.add(word, im.c(layout.d / 4))),
        1);
    Value bytes = vector::BitCastOp::create(
        b, loc, VectorType::get({16}, b.getI8Type()),
        sm::LoadOp::create(b, loc, VectorType::get({4}, b.getI32Type()), d.w,
                           word));
    auto nibbles = [&](bool high) -> Value {
      Value n = high ? Value(arith::ShRUIOp::create(b, loc, bytes,
                                                    vm.i8Splat(4, 16)))
                     : Value(arith::AndIOp::create(b, loc, bytes,
                                                   vm.i8Splat(0xf, 16)));
      return arith::UIToFPOp::create(b, loc, vm.f32s(16), n);
    };
    scales = vm.mul(vm.splat(scale, 16), nibbles(false));
    mins = vm.mul(vm.splat(dmin, 16), nibbles(true));
  }
  Value hmask = threeBits ? widen(vm.bytes(wordsAtEvenByte(
                               b, loc, d.w, base, misaligned, 8)))
                         : Value();
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (int64_t n = 0; n < 2; ++n) {
    Value codes = widen(vm.bytes(wordsAtEvenByte(
        b, loc, d.w, im.add(base, im.c(layout.codes + 32 * n)), misaligned,
        8)));
    for (int64_t j = 0; j < 4; ++j) {
      Value q = arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, codes, splatWord(2 * j)),
          splatWord(3));
      // Sub-blocks g and g + 1: the vector's low and high 16 lanes.
      const int64_t g = 8 * n + 2 * j;
      SmallVector<int64_t> pair(16, g);
      pair.append(16, g + 1);
      auto perHalf = [&](Value perSubBlock) -> Value {
        return vector::ShuffleOp::create(b, loc, perSubBlock, perSubBlock,
                                         pair);
      };
      Value w;
      if (threeBits) {
        Value bit = arith::AndIOp::create(
            b, loc,
            arith::ShRUIOp::create(b, loc, hmask, splatWord(4 * n + j)),
            splatWord(1));
        q = arith::SubIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc, q,
                arith::ShLIOp::create(b, loc, bit, splatWord(2))),
            splatWord(4));
        w = vm.mul(perHalf(scales),
                   arith::SIToFPOp::create(b, loc, vm.f32s(), q));
      } else {
        w = vm.sub(vm.mul(perHalf(scales),
                          arith::SIToFPOp::create(b, loc, vm.f32s(), q)),
                   perHalf(mins));
      }
      for (size_t r = 0; r < rows; ++r) {
        Value at = im.add(d.xRows[r],
                          im.add(im.mul(blk, im.c(256)),
                                 im.c(128 * n + 32 * j)));
        acc[r] = vm.multiplyAdd(acc[r], w, vm.x32(d.x, at));
      }
    }
  }
  return vm.finishRows(loop, acc);
}

SmallVector<Value> GraphLowering::emitQ4_0DotVector(const DotOperands &d,
                                                    bool nonLinear,
                                                    bool q8Activations) {
  // q4_0: 4 words of 16 bytes per block; the low nibbles, then the high
  // ones, are its 32 values in order, minus 8 (iq4_nl: table entries).
  Location loc = d.loc;
  BlockMath vm{b, loc};
  auto decode = [&](Value words) -> Value {
    Value q = nibblesInOrder(b, loc, words);
    if (!nonLinear)
      return arith::SubIOp::create(b, loc, q, vm.i8Splat(8));
    return iq4nlValues(b, loc, q);
  };
  // q4_0 in f32: the 16 bytes widened to 32-bit lanes once, where the low
  // nibbles (values 0..15) and the high ones (16..31) are a mask and a
  // shift apart, minus 8, converted: one widening shuffle per block where
  // the byte path takes five (the shuffle port bounds this loop).
  auto decodeFloats = [&](Value words) -> Value {
    auto splat = [&](int64_t v) { return vm.i32Splat(v, 16); };
    Value bytes = arith::ExtUIOp::create(
        b, loc, VectorType::get({16}, b.getI32Type()),
        vector::BitCastOp::create(
            b, loc, VectorType::get({16}, b.getI8Type()), words));
    Value lo = arith::SubIOp::create(
        b, loc, arith::AndIOp::create(b, loc, bytes, splat(0xf)), splat(8));
    Value hi = arith::SubIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, bytes, splat(4)), splat(8));
    SmallVector<int64_t> inOrder;
    for (int64_t i = 0; i < 32; ++i)
      inOrder.push_back(i);
    return arith::SIToFPOp::create(
        b, loc, vm.f32s(), vector::ShuffleOp::create(b, loc, lo, hi, inOrder));
  };
  if (q8Activations)
    return emitQ8ActivationPairDotVector(d, 4, decode);
  if (nonLinear)
    return emitHalfScaledBlockPairDotVector(d, 4, decode);
  return emitHalfScaledBlockPairDotVector(d, 4, decodeFloats);
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
  if (isa<cir::IQ4_XSType>(element)) {
    // Value j of sub-block ib: the low (j < 16) or high nibble of byte
    // 8 + 16 ib + j % 16, times the sub-block's scale.
    Value base = im.mul(im.div(index, 256), im.c(136));
    Value within = im.rem(index, 256);
    Value ib = im.div(within, 32), j = im.rem(within, 32);
    // Blocks are 34 words: the first two words are whole.
    Value head = sm::LoadOp::create(b, loc, b.getI32Type(), words,
                                    im.div(base, 4));
    Value low = sm::LoadOp::create(b, loc, b.getI32Type(), words,
                                   im.add(im.div(base, 4), im.c(1)));
    Value scale = iq4xsScale(b, loc, head, low, im.toI32(ib));
    Value byte = loadByte(
        b, loc, words,
        im.add(base, im.add(im.c(8), im.add(im.mul(ib, im.c(16)),
                                            im.rem(j, 16)))));
    Value q = wm.select(im.lt(j, im.c(16)), wm.mask(byte, 0xf),
                        wm.shr(byte, 4));
    return ex::MulOp::create(b, loc, scale, wm.toF32(iq4nlValue(b, loc, q)));
  }
  if (isa<cir::Q2_KType, cir::Q3_KType>(element)) {
    // Value v of a block: bits 2 j of code byte 32 n + l (v = 128 n +
    // 32 j + l), in sub-block v / 16.
    const KLowBitLayout layout(isa<cir::Q3_KType>(element));
    Value base = im.mul(im.div(index, 256), im.c(layout.bytes));
    Value v = im.rem(index, 256);
    Value n = im.div(v, 128), j = im.div(im.rem(v, 128), 32);
    Value l = im.rem(v, 32), g = im.div(v, 16);
    Value byte = loadByte(
        b, loc, words,
        im.add(base, im.add(im.c(layout.codes),
                            im.add(im.mul(n, im.c(32)), l))));
    Value q = wm.mask(wm.shr(byte, im.toI32(im.mul(j, im.c(2)))), 3);
    if (layout.threeBits) {
      Value bits = loadByte(b, loc, words, im.add(base, l));
      Value bit = wm.mask(
          wm.shr(bits, im.toI32(im.add(im.mul(n, im.c(4)), j))), 1);
      q = arith::SubIOp::create(
          b, loc, arith::AddIOp::create(b, loc, q, wm.shl(bit, 2)), wm.c(4));
      Value sc = q3kScale(b, loc, words, im.add(base, im.c(layout.scales)), g);
      Value dl = ex::MulOp::create(
          b, loc, loadHalf(b, loc, words, im.add(base, im.c(layout.d))),
          wm.toF32(arith::SubIOp::create(b, loc, sc, wm.c(32))));
      return ex::MulOp::create(b, loc, dl, wm.toF32(q));
    }
    Value sm = loadByte(b, loc, words, im.add(base, g));
    Value dl = ex::MulOp::create(
        b, loc, loadHalf(b, loc, words, im.add(base, im.c(layout.d))),
        wm.toF32(wm.mask(sm, 0xf)));
    Value ml = ex::MulOp::create(
        b, loc, loadHalf(b, loc, words, im.add(base, im.c(layout.d + 2))),
        wm.toF32(wm.shr(sm, 4)));
    return ex::SubOp::create(b, loc, ex::MulOp::create(b, loc, dl, wm.toF32(q)),
                             ml);
  }
  if (isa<cir::Q4_1Type, cir::Q5_0Type, cir::Q5_1Type>(element)) {
    // Value j: the low (j < 16) or high nibble of nibble byte j % 16, with
    // bit j % 8 of qh's byte j / 8 above it.
    const LegacyLayout layout(element);
    Value base = im.mul(im.div(index, 32), im.c(layout.bytes));
    Value j = im.rem(index, 32);
    Value byte = loadByte(
        b, loc, words, im.add(base, im.add(im.c(layout.qs), im.rem(j, 16))));
    Value q = wm.select(im.lt(j, im.c(16)), wm.mask(byte, 0xf),
                        wm.shr(byte, 4));
    if (layout.fifthBits) {
      Value bits = loadByte(
          b, loc, words, im.add(base, im.add(im.c(layout.qh), im.div(j, 8))));
      Value bit = wm.mask(wm.shr(bits, im.toI32(im.rem(j, 8))), 1);
      q = wm.bitOr(q, wm.shl(bit, 4));
    }
    Value scale = loadHalf(b, loc, words, base);
    if (layout.offset)
      return ex::FmaOp::create(b, loc, scale, wm.toF32(q),
                               loadHalf(b, loc, words, im.add(base, im.c(2))));
    return ex::MulOp::create(
        b, loc, scale, wm.toF32(arith::SubIOp::create(b, loc, q, wm.c(16))));
  }
  // q4_0 and iq4_nl: value j of a block is the low (j < 16) or high
  // nibble of byte 2 + j % 16.
  Value base = im.mul(im.div(index, 32), im.c(18));
  Value j = im.rem(index, 32);
  Value byte = loadByte(b, loc, words,
                        im.add(base, im.add(im.c(2), im.rem(j, 16))));
  Value q = wm.select(im.lt(j, im.c(16)), wm.mask(byte, 0xf),
                      wm.shr(byte, 4));
  Value value = isa<cir::IQ4_NLType>(element)
                    ? iq4nlValue(b, loc, q)
                    : Value(arith::SubIOp::create(b, loc, q, wm.c(8)));
  return ex::MulOp::create(b, loc, loadHalf(b, loc, words, base),
                           wm.toF32(value));
}

} // namespace hesper::lowering
