//===- Matmul.cpp - Matrix products and block decoding --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

namespace hesper::lowering {

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// The f32 `a * x + b * y + acc`.
static Value fma2(OpBuilder &b, Location loc, Value a, Value x, Value c,
                  Value y, Value acc) {
  return ex::FmaOp::create(b, loc, a, x, ex::FmaOp::create(b, loc, c, y, acc));
}

/// Whether the one-lane (CPU target) dot product of `element` weights with
/// rows of K values takes several weight rows at once (emitDecodedTileDot:
/// a register tile of weight rows by x rows); emitBlockDot chooses those
/// vector paths by it.
static bool hasTileVectorDot(Type element, int64_t k) {
  if (isa<cir::Q8_0Type, cir::Q4_0Type, cir::IQ4_NLType>(element))
    return k % 64 == 0;
  if (isa<cir::Q6_KType>(element))
    return k % 512 == 0;
  return isa<cir::Q4_KType, cir::Q5_KType>(element);
}

SmallVector<Value> GraphLowering::emitPartialDot(KernelState &ks, Value x,
                                                 Value weight,
                                                 ArrayRef<Value> ms,
                                                 ArrayRef<Value> ns, Value tid,
                                                 int64_t lanes, Location loc) {
  IndexMath im(b, loc);
  auto wType = cast<RankedTensorType>(weight.getType());
  int64_t k = wType.getShape().back();
  DotOperands ops{arg(ks, x), arg(ks, weight), {}, ns.front(), {},
                  k, tid, lanes, loc};
  bool q8Activations = isa<cir::Q8_1Type>(
      cast<RankedTensorType>(x.getType()).getElementType());
  // Where each x row starts: its first element, or its first q8_1 word.
  int64_t xRowStride = q8Activations ? k / 32 * kQ8_1Words : k;
  for (Value m : ms)
    ops.xRows.push_back(im.mul(m, im.c(xRowStride)));
  Type element = wType.getElementType();
  if (q8Activations && lanes == 1 &&
      static_cast<int64_t>(ns.size()) == kByteTileRows) {
    assert((isa<cir::Q4_0Type, cir::Q8_0Type, cir::Q4_KType, cir::Q2_KType,
                cir::I2_SType, cir::TQ2_0Type>(element)) &&
           "matmulTile picks this tile");
    ops.ns.assign(ns.begin(), ns.end());
    if (isa<cir::Q4_KType>(element))
      return emitQ4_KByteTileDot(ops);
    if (isa<cir::I2_SType>(element))
      return emitI2_SByteTileDot(ops);
    if (isa<cir::TQ2_0Type>(element))
      return emitTQ2_0ByteTileDot(ops);
    if (isa<cir::Q2_KType>(element))
      return emitQ2_KByteTileDot(ops);
    return emitByteTileDot(ops, element);
  }
  if (q8Activations) {
    SmallVector<Value> all;
    for (Value n : ns) {
      ops.n = n;
      llvm::append_range(all, emitQ8ActivationBlockDot(ops, element));
    }
    return all;
  }
  if (!cir::isQuantized(element) && !isa<BFloat16Type>(element)) {
    ops.ns.assign(ns.begin(), ns.end());
    return emitPlainDot(ops);
  }
  if (lanes == 1 && hasTileVectorDot(element, k)) {
    ops.ns.assign(ns.begin(), ns.end());
    return emitBlockDot(ops, element);
  }
  SmallVector<Value> all;
  for (Value n : ns) {
    ops.n = n;
    ops.ns = {n};
    llvm::append_range(all, emitBlockDot(ops, element));
  }
  return all;
}

SmallVector<Value> GraphLowering::emitBlockDot(const DotOperands &ops,
                                               Type element) {
  int64_t k = ops.k;
  // One lane (the CPU target) walks whole blocks with vector operations;
  // the formats of hasTileVectorDot take every weight row of ops.ns at
  // once.
  bool vectorBlocks = ops.lanes == 1;
  bool tile = vectorBlocks && hasTileVectorDot(element, k);
  return llvm::TypeSwitch<Type, SmallVector<Value>>(element)
      .Case([&](cir::Q8_0Type) {
        return tile ? emitQ8_0DotVector(ops) : emitQ8_0Dot(ops);
      })
      .Case([&](cir::Q4_0Type) {
        return tile ? emitQ4_0DotVector(ops) : emitQ4_0Dot(ops);
      })
      .Case([&](cir::Q2_KType) {
        return vectorBlocks ? emitKLowBitDotVector(ops, /*threeBits=*/false)
                            : emitKLowBitDot(ops, /*threeBits=*/false);
      })
      .Case([&](cir::Q3_KType) {
        return vectorBlocks ? emitKLowBitDotVector(ops, /*threeBits=*/true)
                            : emitKLowBitDot(ops, /*threeBits=*/true);
      })
      .Case<cir::Q4_1Type, cir::Q5_0Type, cir::Q5_1Type>([&](auto) {
        return vectorBlocks ? emitLegacyDotVector(ops, element)
                            : emitLegacyDot(ops, element);
      })
      .Case([&](cir::IQ4_XSType) {
        return vectorBlocks ? emitIQ4_XSDotVector(ops) : emitIQ4_XSDot(ops);
      })
      .Case([&](cir::IQ4_NLType) {
        return tile ? emitQ4_0DotVector(ops, /*nonLinear=*/true)
                    : emitQ4_0Dot(ops, /*nonLinear=*/true);
      })
      .Case([&](cir::Q4_KType) {
        return tile ? emitQ4_KDotVector(ops) : emitQ4_KDot(ops);
      })
      .Case([&](cir::Q5_KType) {
        return tile ? emitQ4_KDotVector(ops, /*fifthBits=*/true)
                    : emitQ4_KDot(ops, /*fifthBits=*/true);
      })
      .Case([&](BFloat16Type) {
        return vectorBlocks && k % 32 == 0 ? emitBF16DotVector(ops)
                                           : emitBF16Dot(ops);
      })
      .Case([&](cir::Q6_KType) {
        return tile ? emitQ6_KDotVector(ops) : emitQ6_KDot(ops);
      })
      .Case([&](cir::TQ2_0Type) {
        return vectorBlocks ? emitTQ2_0DotVector(ops) : emitTQ2_0Dot(ops);
      })
      .Case([&](cir::TQ1_0Type) {
        return vectorBlocks ? emitTQ1_0DotVector(ops) : emitTQ1_0Dot(ops);
      })
      .Case([&](cir::I2_SType) {
        return vectorBlocks ? emitI2_SDotVector(ops) : emitI2_SDot(ops);
      })
      .Default([&](Type) { return emitPlainDot(ops); });
}

scf::ForOp GraphLowering::beginUnits(const DotOperands &d, int64_t units,
                                     size_t count) {
  IndexMath im(b, d.loc);
  Value zero = ex::ConstantOp::create(b, d.loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> init(count, zero);
  auto loop = scf::ForOp::create(b, d.loc, d.tid, im.c(units), im.c(d.lanes),
                                 init);
  b.setInsertionPointToStart(loop.getBody());
  return loop;
}

GraphLowering::BlockUnit
GraphLowering::beginBlockUnits(const DotOperands &d, int64_t blockValues,
                               int64_t unitsPerBlock, size_t accumulators) {
  IndexMath im(b, d.loc);
  int64_t blocksPerRow = d.k / blockValues;
  Value rowBlocks = im.mul(d.n, im.c(blocksPerRow));
  BlockUnit u;
  u.loop = beginUnits(d, blocksPerRow * unitsPerBlock, accumulators);
  u.zero = u.loop.getInitArgs()[0];
  u.unit = u.loop.getInductionVar();
  u.block = u.unit;
  if (unitsPerBlock > 1) {
    u.block = im.div(u.unit, unitsPerBlock);
    u.part = im.rem(u.unit, unitsPerBlock);
  }
  u.blockIndex = im.add(rowBlocks, u.block);
  return u;
}

Value GraphLowering::isMisaligned(Value at, Location loc) {
  IndexMath im(b, loc);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                               im.rem(at, 4), im.c(0));
}

SmallVector<Value> GraphLowering::finishUnits(scf::ForOp loop,
                                              ValueRange next) {
  scf::YieldOp::create(b, loop.getLoc(), next);
  SmallVector<Value> totals(guardZeroTrip(b, loop));
  // The `unroll` knob. (The caller checked the factor; unrolling a loop
  // with constant-free bounds cannot fail.)
  (void)unrollGuarded(b, loop, shape.unroll);
  return totals;
}

SmallVector<Value> GraphLowering::loadF32s(Value buffer, Value index,
                                           int64_t n, Location loc) {
  SmallVector<Value> values = loadRun(b, loc, buffer, index, n);
  for (Value &v : values)
    v = toF32(v, loc);
  return values;
}

SmallVector<Value, 4> GraphLowering::loadX4(const DotOperands &d,
                                            Value index) {
  return SmallVector<Value, 4>(loadF32s(d.x, index, 4, d.loc));
}

SmallVector<Value> GraphLowering::emitPlainDot(const DotOperands &d) {
  // Lanes stride over k, kVector consecutive elements at a time (one
  // vector load of x and of w) where k allows; the components are
  // accumulated in order.
  // The `vector_width` knob chooses kVector; its check ensures it divides
  // the row. By default 4, and 8 for f16 weights where the target keeps
  // vector loads (wide-loads): 16 bytes of weights per load either way.
  Type wElement = cast<sm::BufferType>(d.w.getType()).getElementType();
  const int64_t kVector =
      shape.dotVector ? shape.dotVector
      : shape.wideLoads && wElement.isF16() && d.k % 8 == 0 ? 8
                                                             : 4;
  Location loc = d.loc;
  IndexMath im(b, loc);
  SmallVector<Value> wRows;
  for (Value n : d.ns)
    wRows.push_back(im.mul(n, im.c(d.k)));
  // A single lane (the CPU target) reads one element per iteration: the
  // loop vectorizer widens a plain loop best.
  int64_t width = d.k % kVector == 0 && d.lanes > 1 ? kVector : 1;
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  // Accumulator c * rows + r: weight row c, x row r.
  scf::ForOp loop = beginUnits(d, d.k / width, rows * wRows.size());
  Value i = im.mul(loop.getInductionVar(), im.c(width));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  if (width == 1) {
    SmallVector<Value> xv;
    for (size_t r = 0; r < rows; ++r)
      xv.push_back(toF32(loadElement(d.x, im.add(d.xRows[r], i), loc), loc));
    for (auto [c, wRow] : llvm::enumerate(wRows)) {
      Value wv = toF32(loadElement(d.w, im.add(wRow, i), loc), loc);
      for (size_t r = 0; r < rows; ++r)
        acc[c * rows + r] =
            ex::FmaOp::create(b, loc, xv[r], wv, acc[c * rows + r]);
    }
  } else {
    auto loadVector = [&](Value buffer, Value index) -> Value {
      Type element = cast<sm::BufferType>(buffer.getType()).getElementType();
      return sm::LoadOp::create(b, loc, VectorType::get({width}, element),
                                buffer, index);
    };
    // The rows' x vectors, then each weight row's load, shared by the
    // x rows.
    SmallVector<Value> xs;
    for (size_t r = 0; r < rows; ++r)
      xs.push_back(loadVector(d.x, im.add(d.xRows[r], i)));
    SmallVector<Value> ws;
    for (Value wRow : wRows)
      ws.push_back(loadVector(d.w, im.add(wRow, i)));
    for (int64_t j = 0; j < width; ++j) {
      SmallVector<Value> xv;
      for (size_t r = 0; r < rows; ++r)
        xv.push_back(toF32(vector::ExtractOp::create(b, loc, xs[r], j), loc));
      for (size_t c = 0; c < ws.size(); ++c) {
        Value wv = toF32(vector::ExtractOp::create(b, loc, ws[c], j), loc);
        for (size_t r = 0; r < rows; ++r)
          acc[c * rows + r] =
              ex::FmaOp::create(b, loc, xv[r], wv, acc[c * rows + r]);
      }
    }
  }
  return finishUnits(loop, acc);
}

SmallVector<Value> GraphLowering::emitHalfScaledBlockDot(
    const DotOperands &d, int64_t blockValues, int64_t blockBytes,
    llvm::function_ref<void(Value word, Value w, ArrayRef<Value> xBlocks,
                            MutableArrayRef<Value> acc)>
        addWord,
    bool q8Activations) {
  // Lanes stride over units of the row's blocks: on GPU targets a unit is
  // `block_words` consecutive value words of a block (kBlockWords: q8_0's
  // 8 words are 4 lanes' units), so that the lanes of a subgroup read
  // neighbouring words -- a load instruction of a subgroup then touches
  // a few cache lines, where a lane per block (34 or 18 bytes apart) would
  // touch one line every four lanes or so, and the L1 cache's line
  // throughput, not memory, would bound the kernel. The CPU target's lane
  // takes whole blocks. Each unit's partial dot product is scaled once.
  // The values are read as words; a block starts at an even byte, so when
  // its values are not word-aligned a word is assembled from the two
  // aligned words around it. With q8_1 activations, xBlocks are the x
  // blocks' first words, the sums are i32 and each is scaled by its x
  // block's d as well.
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  const int64_t blockWords = (blockBytes - 2) / 4;
  const int64_t unitWords =
      d.lanes == 1 ? blockWords
                   : std::min(blockWords, shape.blockWords ? shape.blockWords
                                                           : kBlockWords);
  BlockUnit u = beginBlockUnits(d, blockValues, blockWords / unitWords, rows);
  scf::ForOp loop = u.loop;
  Value zero = u.zero, blk = u.block;
  Value base = im.mul(u.blockIndex, im.c(blockBytes));
  Value scale = loadHalf(b, loc, d.w, base);
  if (shape.mutant == "drop-scale") // A mutant: the block scale ignored.
    scale = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  Value values = im.add(base, im.c(2)); // first value byte
  Value misaligned = isMisaligned(values, loc);
  SmallVector<Value> xBlocks;
  int64_t xBlockStride = q8Activations ? kQ8_1Words : blockValues;
  for (size_t r = 0; r < rows; ++r)
    xBlocks.push_back(im.add(d.xRows[r], im.mul(blk, im.c(xBlockStride))));
  Value innerZero = q8Activations ? wm.c(0) : zero;
  Value firstWord = u.part ? im.mul(u.part, im.c(unitWords)) : im.c(0);
  auto inner = scf::ForOp::create(b, loc, im.c(0), im.c(unitWords), im.c(1),
                                  SmallVector<Value>(rows, innerZero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(inner.getBody());
    Value w = im.add(firstWord, inner.getInductionVar());
    Value word = loadWordAtEvenByte(b, loc, d.w,
                                    im.add(values, im.mul(w, im.c(4))),
                                    misaligned);
    SmallVector<Value> acc(inner.getRegionIterArgs());
    addWord(word, w, xBlocks, acc);
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> acc;
  for (size_t r = 0; r < rows; ++r) {
    Value dot = inner.getResult(r);
    if (q8Activations)
      dot = ex::MulOp::create(b, loc, loadQ8_1Scale(b, loc, d.x, xBlocks[r]),
                              wm.toF32(dot));
    acc.push_back(
        ex::FmaOp::create(b, loc, scale, dot, loop.getRegionIterArgs()[r]));
  }
  return finishUnits(loop, acc);
}

/// Weight formats with integer kernels for q8_1 activations.
static bool hasQ8ActivationKernel(Type element) {
  return isa<cir::Q8_0Type, cir::Q4_0Type, cir::Q4_KType, cir::Q5_KType,
             cir::Q6_KType, cir::Q2_KType, cir::I2_SType, cir::TQ2_0Type>(
      element);
}

SmallVector<Value> GraphLowering::emitQ8ActivationBlockDot(const DotOperands &d,
                                                           Type element) {
  assert(hasQ8ActivationKernel(element) && "lowerMatmul refuses the others");
  bool vectorBlocks = d.lanes == 1 && d.k % 64 == 0;
  if (isa<cir::Q8_0Type>(element))
    return vectorBlocks ? emitQ8_0DotVector(d, /*q8Activations=*/true)
                        : emitQ8ActivationDot(d, /*nibbles=*/false);
  if (isa<cir::Q4_0Type>(element))
    return vectorBlocks ? emitQ4_0DotVector(d, /*nonLinear=*/false,
                                            /*q8Activations=*/true)
                        : emitQ8ActivationDot(d, /*nibbles=*/true);
  if (isa<cir::Q6_KType>(element))
    return d.lanes == 1 && d.k % 512 == 0
               ? emitQ6_KDotVector(d, /*q8Activations=*/true)
               : emitQ6_KDot(d, /*q8Activations=*/true);
  if (isa<cir::I2_SType>(element))
    return emitI2_SQ8Dot(d);
  if (isa<cir::TQ2_0Type>(element))
    return emitTQ2_0Q8Dot(d);
  if (isa<cir::Q2_KType>(element))
    return emitKLowBitDot(d, /*threeBits=*/false, /*q8Activations=*/true);
  bool fifthBits = isa<cir::Q5_KType>(element);
  return d.lanes == 1 ? emitQ4_KDotVector(d, fifthBits, /*q8Activations=*/true)
                      : emitQ4_KDot(d, fifthBits, /*q8Activations=*/true);
}

SmallVector<Value> GraphLowering::emitQ8ActivationDot(const DotOperands &d,
                                                      bool nibbles) {
  // A lane per weight block (q8_0: 34 bytes, q4_0: 18), its value words
  // against the matching words of x's q8_1 block (words 1..8 after the
  // scales), four byte products at a time (exp.dot4_i8) into an i32 sum
  // per x row, scaled by d_w d_x. q4_0: the nibbles (0..15, both halves of
  // a word in turn) go in as they are and 8 times the sum of x's bytes (a
  // dot product with four bytes of -8) comes off: exact integers, where
  // the block's rounded s would not be.
  return emitHalfScaledBlockDot(
      d, 32, nibbles ? 18 : 34,
      [&](Value word, Value w, ArrayRef<Value> xBlocks,
          MutableArrayRef<Value> sums) {
        IndexMath im(b, d.loc);
        WordMath wm(b, d.loc);
        auto xWord = [&](size_t r, int64_t offset) -> Value {
          return sm::LoadOp::create(
              b, d.loc, b.getI32Type(), d.x,
              im.add(xBlocks[r], im.add(w, im.c(offset))));
        };
        for (size_t r = 0; r < xBlocks.size(); ++r) {
          if (!nibbles) {
            sums[r] = ex::Dot4I8Op::create(b, d.loc, word, xWord(r, 1),
                                           sums[r]);
            continue;
          }
          // Low nibbles: values 4w..4w+3 (x word 1 + w); high ones:
          // 16 + 4w.. (x word 5 + w).
          Value lo = wm.mask(word, 0x0f0f0f0f);
          Value hi = wm.mask(wm.shr(word, 4), 0x0f0f0f0f);
          Value xLo = xWord(r, 1), xHi = xWord(r, 5);
          Value minusEight = wm.c(static_cast<int32_t>(0xf8f8f8f8u));
          for (auto [q, x] : {std::pair{lo, xLo}, std::pair{hi, xHi},
                              std::pair{minusEight, xLo},
                              std::pair{minusEight, xHi}})
            sums[r] = ex::Dot4I8Op::create(b, d.loc, q, x, sums[r]);
        }
      },
      /*q8Activations=*/true);
}

SmallVector<Value> GraphLowering::emitQ8_0Dot(const DotOperands &d) {
  // Blocks of 34 bytes: an f16 scale, 32 signed bytes (8 words); byte t of
  // word w is value 4w + t.
  return emitHalfScaledBlockDot(
      d, 32, 34,
      [&](Value word, Value w, ArrayRef<Value> xBlocks,
          MutableArrayRef<Value> acc) {
        IndexMath im(b, d.loc);
        WordMath wm(b, d.loc);
        SmallVector<SmallVector<Value, 4>> xs;
        for (Value xBlock : xBlocks)
          xs.push_back(loadX4(d, im.add(xBlock, im.mul(w, im.c(4)))));
        for (int64_t t = 0; t < 4; ++t) {
          // Byte t, sign-extended: shifted to the top, then arithmetically
          // down.
          Value q = arith::ShRSIOp::create(b, d.loc, wm.shl(word, 24 - 8 * t),
                                           wm.c(24));
          Value qf = wm.toF32(q);
          for (size_t r = 0; r < xs.size(); ++r)
            acc[r] = ex::FmaOp::create(b, d.loc, qf, xs[r][t], acc[r]);
        }
      });
}

SmallVector<Value> GraphLowering::emitQ4_KDot(const DotOperands &d,
                                              bool fifthBits,
                                              bool q8Activations) {
  // Super-blocks of 144 bytes (36 words, so every block is word-aligned)
  // for 256 values: f16 d and dmin, 12 bytes of packed 6-bit scales and
  // mins for eight 32-value sub-blocks, 128 bytes of 4-bit quants. Quarter
  // p of a super-block is the 32 quant bytes (8 words) at 16 + 32p, whose
  // low nibbles are sub-block 2p and high nibbles sub-block 2p + 1. A GPU
  // lane's unit is `block_words` of a quarter's words (kQ4_KBlockWords:
  // eight lanes share a super-block, so that a subgroup's loads fall on
  // few cache lines, as in emitHalfScaledBlockDot); a CPU lane's is the
  // whole quarter.
  // Per sub-block, sum(x * (d*sc*q - dmin*m)) = d*sc*sum(q*x) - dmin*m*sum(x).
  // q5_k (`fifthBits`, 176 bytes, 44 words) puts 32 bytes qh between the
  // scales and the quants: bit 2p of qh[l] adds 16 to the low nibble of
  // quant byte l of quarter p, bit 2p + 1 to its high nibble.
  // With q8_1 activations, sub-blocks 2p and 2p + 1 are x blocks
  // 8 blk + 2p and + 1: a word's four codes (both nibbles, with their fifth
  // bits, at once) go into exp.dot4_i8 with x's bytes, and ones with x's
  // bytes give sum(x), in i32 per row; each sum is scaled by its x block's
  // d afterwards.
  constexpr int64_t kValues = 256;
  const int64_t kWords = fifthBits ? 44 : 36;
  const int64_t quantWord = fifthBits ? 12 : 4;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  const int64_t unitWords =
      d.lanes == 1 ? 8
                   : std::min<int64_t>(8, shape.blockWords ? shape.blockWords
                                                           : kQ4_KBlockWords);
  const int64_t pieces = 8 / unitWords;
  BlockUnit u = beginBlockUnits(d, kValues, 4 * pieces, rows);
  scf::ForOp loop = u.loop;
  Value zero = u.zero, blk = u.block;
  Value quarter = pieces == 1 ? u.part : im.div(u.part, pieces);
  Value firstWord = pieces == 1
                        ? im.c(0)
                        : im.mul(im.rem(u.part, pieces), im.c(unitWords));
  Value blockWord = im.mul(u.blockIndex, im.c(kWords));
  // Super-blocks of 144 and 176 bytes start 16-byte aligned, and so do the
  // pieces of 4 quant (and qh) words a unit reads: whole 16-byte loads.
  // Word 0 holds d and dmin, words 1-3 the 12 scale bytes, loaded once
  // per unit.
  SmallVector<Value> headWords = loadRun(b, loc, d.w, blockWord, 4);
  Value head = headWords[0];
  Value scaleD = ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 0);
  Value scaleMin = ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 1);
  Value scaleWords[3] = {headWords[1], headWords[2], headWords[3]};
  auto scaleByte = [&](Value i) -> Value {
    Value word = wm.select(im.lt(i, im.c(4)), scaleWords[0],
                           wm.select(im.lt(i, im.c(8)), scaleWords[1],
                                     scaleWords[2]));
    Value shift = arith::MulIOp::create(b, loc, im.toI32(im.rem(i, 4)),
                                        wm.c(8));
    return wm.mask(wm.shr(word, shift), 0xff);
  };
  auto scaleAndMin = [&](Value j) -> std::pair<Value, Value> {
    auto [sc, mn] = unpackQ4_KScaleMin(im, wm, j, scaleByte);
    return {ex::MulOp::create(b, loc, scaleD, wm.toF32(sc)),
            ex::MulOp::create(b, loc, scaleMin, wm.toF32(mn))};
  };
  Value sub = im.mul(quarter, im.c(2));
  auto [dLo, mLo] = scaleAndMin(sub);
  auto [dHi, mHi] = scaleAndMin(im.add(sub, im.c(1)));

  // Eight quant words; byte t of word w holds values 4w + t (low nibble)
  // and 32 + 4w + t (high nibble) of the unit.
  Value quants =
      im.add(blockWord, im.add(im.c(quantWord), im.mul(quarter, im.c(8))));
  // The quarter's two bits of every qh byte, shifted to bits 0 and 1.
  Value qhShift = arith::MulIOp::create(b, loc, im.toI32(quarter), wm.c(2));
  Value unitOffset =
      im.add(im.mul(blk, im.c(kValues)), im.mul(quarter, im.c(64)));
  // x's blocks of the two sub-blocks, per row (q8_1 activations).
  SmallVector<Value> xBlocks;
  if (q8Activations)
    for (size_t r = 0; r < rows; ++r)
      xBlocks.push_back(im.add(
          d.xRows[r],
          im.mul(im.add(im.mul(blk, im.c(8)), sub), im.c(kQ8_1Words))));
  // Per x row: sum(q*x) and sum(x) of the low and of the high nibbles,
  // over the unit's words in order (straight-line code).
  SmallVector<Value> quantWords =
      loadRun(b, loc, d.w, im.add(quants, firstWord), unitWords);
  SmallVector<Value> qhWords;
  if (fifthBits)
    qhWords = loadRun(b, loc, d.w,
                      im.add(blockWord, im.add(im.c(4), firstWord)),
                      unitWords);
  SmallVector<Value> acc(4 * rows, q8Activations ? wm.c(0) : zero);
  for (int64_t i = 0; i < unitWords; ++i) {
    Value w = im.add(firstWord, im.c(i));
    Value word = quantWords[i];
    Value qh;
    if (fifthBits)
      qh = wm.shr(qhWords[i], qhShift);
    if (q8Activations) {
      Value lo = wm.mask(word, 0x0f0f0f0f);
      Value hi = wm.mask(wm.shr(word, 4), 0x0f0f0f0f);
      if (fifthBits) {
        lo = wm.bitOr(lo, wm.shl(wm.mask(qh, 0x01010101), 4));
        hi = wm.bitOr(hi, wm.shl(wm.mask(wm.shr(qh, 1), 0x01010101), 4));
      }
      Value ones = wm.c(0x01010101);
      for (size_t r = 0; r < rows; ++r) {
        Value *a = &acc[4 * r];
        Value xLo = sm::LoadOp::create(b, loc, b.getI32Type(), d.x,
                                       im.add(xBlocks[r], im.add(w, im.c(1))));
        Value xHi = sm::LoadOp::create(
            b, loc, b.getI32Type(), d.x,
            im.add(xBlocks[r], im.add(w, im.c(kQ8_1Words + 1))));
        a[0] = ex::Dot4I8Op::create(b, loc, lo, xLo, a[0]);
        a[1] = ex::Dot4I8Op::create(b, loc, ones, xLo, a[1]);
        a[2] = ex::Dot4I8Op::create(b, loc, hi, xHi, a[2]);
        a[3] = ex::Dot4I8Op::create(b, loc, ones, xHi, a[3]);
      }
    } else {
      // x of the low nibbles at xWord, of the high ones 32 later (both
      // multiples of 4: K is a multiple of 256), for every row.
      SmallVector<SmallVector<Value, 4>> xsLo, xsHi;
      for (size_t r = 0; r < rows; ++r) {
        Value xWord =
            im.add(im.add(d.xRows[r], unitOffset), im.mul(w, im.c(4)));
        xsLo.push_back(loadX4(d, xWord));
        xsHi.push_back(loadX4(d, im.add(xWord, im.c(32))));
      }
      for (int64_t t = 0; t < 4; ++t) {
        Value lo = wm.mask(wm.shr(word, 8 * t), 0xf);
        Value hi = wm.mask(wm.shr(word, 8 * t + 4), 0xf);
        if (fifthBits) {
          lo = wm.bitOr(lo, wm.shl(wm.mask(wm.shr(qh, 8 * t), 1), 4));
          hi = wm.bitOr(hi, wm.shl(wm.mask(wm.shr(qh, 8 * t + 1), 1), 4));
        }
        Value qLo = wm.toF32(lo), qHi = wm.toF32(hi);
        for (size_t r = 0; r < rows; ++r) {
          Value *a = &acc[4 * r];
          a[0] = ex::FmaOp::create(b, loc, qLo, xsLo[r][t], a[0]);
          a[1] = ex::AddOp::create(b, loc, a[1], xsLo[r][t]);
          a[2] = ex::FmaOp::create(b, loc, qHi, xsHi[r][t], a[2]);
          a[3] = ex::AddOp::create(b, loc, a[3], xsHi[r][t]);
        }
      }
    }
  }
  SmallVector<Value> totals;
  for (size_t r = 0; r < rows; ++r) {
    Value running = loop.getRegionIterArgs()[r];
    Value sums[4];
    for (int64_t i = 0; i < 4; ++i)
      sums[i] = acc[4 * r + i];
    Value sLo = dLo, sHi = dHi, nLo = mLo, nHi = mHi;
    if (q8Activations) {
      // Scale each sub-block's factors by its x block's d; the sums to f32.
      for (int64_t half = 0; half < 2; ++half) {
        Value dx = loadQ8_1Scale(b, loc, d.x,
                                 im.add(xBlocks[r], im.c(half * kQ8_1Words)));
        (half ? sHi : sLo) = ex::MulOp::create(b, loc, half ? dHi : dLo, dx);
        (half ? nHi : nLo) = ex::MulOp::create(b, loc, half ? mHi : mLo, dx);
      }
      for (Value &s : sums)
        s = wm.toF32(s);
    }
    running = fma2(b, loc, sLo, sums[0], sHi, sums[2], running);
    Value mins = fma2(b, loc, nLo, sums[1], nHi, sums[3], zero);
    totals.push_back(ex::SubOp::create(b, loc, running, mins));
  }
  return finishUnits(loop, totals);
}

SmallVector<Value> GraphLowering::emitQ6_KDot(const DotOperands &d,
                                              bool q8Activations) {
  // Super-blocks of 210 bytes for 256 values: ql[128] (low 4 bits), qh[64]
  // (high 2 bits), int8 scales[16], f16 d; v = d * scale * (q - 32). Value
  // 128h + 32r + l (h < 2, r < 4, l < 32) takes the low (r < 2) or high
  // nibble of ql[64h + 32(r&1) + l], bits 2r of qh[32h + l], and scale
  // 8h + 2r + l/16. A lane's unit is 16 values sharing one scale (fixed h,
  // r, l/16): four words of ql and four of qh. Blocks start at even bytes,
  // so a word is read from the two aligned words around it.
  // With q8_1 activations the unit is half of x block 8 blk + 4h + r: a
  // word's four codes (0..63) go into exp.dot4_i8 with x's bytes, and
  // bytes of -32 with the same x bytes take 32 sum(x) off, in one exact i32
  // sum, scaled once by d * scale * d_x.
  constexpr int64_t kValues = 256, kBytes = 210;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  BlockUnit u = beginBlockUnits(d, kValues, 16, rows);
  scf::ForOp loop = u.loop;
  Value zero = u.zero, blk = u.block, within = u.part;
  Value half = im.div(within, 8), r = im.rem(im.div(within, 2), 4),
        sixteenth = im.rem(within, 2);
  Value base = im.mul(u.blockIndex, im.c(kBytes));
  // Reads the 32 bits at even byte offset `at`.
  Value misaligned = isMisaligned(base, loc);
  auto wordAt = [&](Value at) {
    return loadWordAtEvenByte(b, loc, d.w, at, misaligned);
  };
  Value l0 = im.mul(sixteenth, im.c(16));
  Value qlAt = im.add(base, im.add(im.add(im.mul(half, im.c(64)),
                                          im.mul(im.rem(r, 2), im.c(32))),
                                   l0));
  Value qhAt = im.add(base, im.add(im.add(im.c(128), im.mul(half, im.c(32))),
                                   l0));
  Value scaleAt = im.add(base, im.add(im.add(im.c(192), im.mul(half, im.c(8))),
                                      im.add(im.mul(r, im.c(2)), sixteenth)));
  Value scaleInt = wm.signExtendByte(loadByte(b, loc, d.w, scaleAt));
  Value superScale = loadHalf(b, loc, d.w, im.add(base, im.c(208)));
  Value scale = ex::MulOp::create(b, loc, superScale, wm.toF32(scaleInt));
  Value r32 = im.toI32(r);
  Value lowShift = arith::MulIOp::create(b, loc, im.toI32(im.div(r, 2)),
                                         wm.c(4));
  Value highShift = arith::MulIOp::create(b, loc, r32, wm.c(2));
  Value unitOffset = im.add(im.mul(blk, im.c(kValues)),
                            im.add(im.add(im.mul(half, im.c(128)),
                                          im.mul(r, im.c(32))),
                                   l0));
  // x's q8_1 block of the unit and the unit's first value word in it, per
  // row (q8_1 activations).
  SmallVector<Value> xBlocks, xWords;
  if (q8Activations)
    for (size_t row = 0; row < rows; ++row) {
      xBlocks.push_back(im.add(
          d.xRows[row],
          im.mul(im.add(im.mul(blk, im.c(8)),
                        im.add(im.mul(half, im.c(4)), r)),
                 im.c(kQ8_1Words))));
      xWords.push_back(im.add(xBlocks.back(),
                              im.add(im.c(1), im.mul(sixteenth, im.c(4)))));
    }
  auto words = scf::ForOp::create(
      b, loc, im.c(0), im.c(4), im.c(1),
      SmallVector<Value>(rows, q8Activations ? wm.c(0) : zero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(words.getBody());
    Value w = words.getInductionVar();
    Value offset = im.mul(w, im.c(4));
    Value lowBits = wm.shr(wordAt(im.add(qlAt, offset)), lowShift);
    Value highBits = wm.shr(wordAt(im.add(qhAt, offset)), highShift);
    SmallVector<Value> acc(words.getRegionIterArgs());
    if (q8Activations) {
      Value codes = wm.bitOr(wm.mask(lowBits, 0x0f0f0f0f),
                             wm.shl(wm.mask(highBits, 0x03030303), 4));
      Value minus32 = wm.c(static_cast<int32_t>(0xe0e0e0e0u));
      for (size_t row = 0; row < rows; ++row) {
        Value x = sm::LoadOp::create(b, loc, b.getI32Type(), d.x,
                                     im.add(xWords[row], w));
        acc[row] = ex::Dot4I8Op::create(
            b, loc, minus32, x,
            ex::Dot4I8Op::create(b, loc, codes, x, acc[row]));
      }
    } else {
      SmallVector<SmallVector<Value, 4>> xs;
      for (size_t row = 0; row < rows; ++row)
        xs.push_back(
            loadX4(d, im.add(im.add(d.xRows[row], unitOffset), offset)));
      for (int64_t t = 0; t < 4; ++t) {
        Value q = wm.bitOr(wm.mask(wm.shr(lowBits, 8 * t), 0xf),
                           wm.shl(wm.mask(wm.shr(highBits, 8 * t), 3), 4));
        Value centered =
            wm.toF32(arith::SubIOp::create(b, loc, q, wm.c(32)));
        for (size_t row = 0; row < rows; ++row)
          acc[row] =
              ex::FmaOp::create(b, loc, centered, xs[row][t], acc[row]);
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> totals;
  for (size_t row = 0; row < rows; ++row) {
    Value sum = words.getResult(row), factor = scale;
    if (q8Activations) {
      sum = wm.toF32(sum);
      factor = ex::MulOp::create(b, loc, scale,
                                 loadQ8_1Scale(b, loc, d.x, xBlocks[row]));
    }
    totals.push_back(
        ex::FmaOp::create(b, loc, factor, sum, loop.getRegionIterArgs()[row]));
  }
  return finishUnits(loop, totals);
}

/// The ops of `ops` (consecutive in one block) that neither load nor
/// compute what a load needs (its address, a guard), in their order: those
/// that decode loaded values and may move below later, independent work.
/// Ops with regions stay with the loads.
static SmallVector<Operation *>
opsAfterLoads(llvm::iterator_range<Block::iterator> ops) {
  llvm::SmallPtrSet<Operation *, 32> inRange, feedsLoads;
  SmallVector<Operation *> work;
  for (Operation &op : ops) {
    inRange.insert(&op);
    if (isa<sm::LoadOp>(op) || op.getNumRegions() != 0)
      work.push_back(&op);
  }
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!feedsLoads.insert(op).second)
      continue;
    // Its operands and those of the ops nested in it.
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (Operation *def = v.getDefiningOp(); def && inRange.contains(def))
          work.push_back(def);
    });
  }
  SmallVector<Operation *> rest;
  for (Operation &op : ops)
    if (!feedsLoads.contains(&op))
      rest.push_back(&op);
  return rest;
}

/// The rows of one weight matrix ([N, K], or an expert's of [E, N, K]).
static int64_t rowsOf(Value w) {
  ArrayRef<int64_t> dims = cast<RankedTensorType>(w.getType()).getShape();
  return dims[dims.size() - 2];
}

/// The matmul tile a target takes where no knob chooses one: rows of x by
/// weight rows per subgroup, workgroup or CPU lane. GPUs take kXRows x 1.
/// The CPU target, for several rows of x (a prompt chunk), takes the
/// register tile its one-lane dot product fills best (bench: 512x2048 by
/// 2048x2048 GEMMs and gated FFN matmuls of 512 to 2048 values a row on an
/// AVX-512 core with 32 vector registers): 6 x 4 for f32 and f16 (10
/// vector loads per 24 FMAs); 6 x 2 for q8_0, q4_0 and iq4_nl rows of 2048
/// values or more, whose block pairs are decoded once per tile
/// (hasTileVectorDot; a vector<32> accumulator takes two registers), where
/// kXRows x rows no longer fit the L1 cache (at 1536 values the 8 x 1 tile
/// still ran a 32-token chunk of the demo model 5% faster), and for the
/// gated matmuls (`gated`: two weight matrices) of q8_0 and iq4_nl at any
/// row length (the demo's 512 values: 64 x 512 by 2 x 1536 x 512, 1126 ->
/// 880 us for q8_0, 1154 -> 983 us for iq4_nl; q4_0 gains nothing there);
/// kXRows x 1 for shorter rows, for the rest (the k-quants' wider decoding
/// spills with two weight rows), and for weights of several formats.
/// With q8_1 x, q4_0 or q8_0 weights (K a multiple of 64, one format)
/// whose row counts are multiples of kByteTileRows take emitByteTileDot's
/// integer tile, 4 x 16: 16 f32 accumulators of 16 lanes (a 512-token
/// prompt of the demo model, q4_0: 4 x rows 6700-6800 tok/s, 2 rows 5950,
/// 6 or 8 rows 5300-5500, which spill); a one-token step takes it too, as
/// 1 x 16 (demo decode, median of 3 alternating runs: q4_0 1561 -> 3414
/// tok/s against the per-row integer kernel, q8_0 1506 -> 1975). q4_k
/// weights (K a multiple of 256) take emitQ4_KByteTileDot's, 2 x 16: its
/// x side is twice as wide (two x blocks per quarter), and 4 rows spill
/// (64-token prompt of the demo: 2 rows 4260-4555 tok/s, 3 rows
/// 3375-3447, 4 rows 3525-3840, f32 activations 3810-4165). A one-token
/// step with f32 weights takes 4 weight rows per workgroup (1 x 4): the
/// per-row work around the dot product (its horizontal sum, the epilogue,
/// the workgroup's call) is shared by four rows (demo file decode, median
/// of 5 alternating runs: 450 tok/s with 1 row, 496 with 2, 508 with 4,
/// 490 with 8; f16 weights lost 13% with 4, so they keep 1).
static std::pair<int64_t, int64_t> matmulTile(Value x,
                                              ArrayRef<Value> weights,
                                              int64_t m, int64_t lanes,
                                              bool experts, bool gated) {
  auto typeOf = [](Value w) {
    return cast<RankedTensorType>(w.getType());
  };
  Type xElement = typeOf(x).getElementType();
  Type element = typeOf(weights.front()).getElementType();
  const bool oneFormat = llvm::all_of(weights, [&](Value w) {
    return typeOf(w).getElementType() == element;
  });
  if (lanes != 1 || experts || !oneFormat)
    return {kXRows, 1};
  const int64_t tileK =
      isa<cir::Q4_KType, cir::Q2_KType, cir::TQ2_0Type>(element) ? 256
      : isa<cir::I2_SType>(element)                              ? 128
                                                                 : 64;
  if (isa<cir::Q8_1Type>(xElement) &&
      isa<cir::Q4_0Type, cir::Q8_0Type, cir::Q4_KType, cir::Q2_KType,
          cir::I2_SType, cir::TQ2_0Type>(element) &&
      llvm::all_of(weights, [&](Value w) {
        return typeOf(w).getShape().back() % tileK == 0 &&
               rowsOf(w) % kByteTileRows == 0;
      }))
    return {isa<cir::Q4_KType, cir::Q2_KType, cir::I2_SType,
                cir::TQ2_0Type>(element)
                ? 2
                : 4,
            kByteTileRows};
  if (m == 1 && isa<FloatType>(xElement) && element.isF32())
    return {1, 4};
  if (m == 1 || cir::isQuantized(xElement))
    return {kXRows, 1};
  int64_t k = typeOf(weights.front()).getShape().back();
  if (!cir::isQuantized(element) && !isa<BFloat16Type>(element))
    return {6, 4};
  if (isa<cir::Q8_0Type, cir::Q4_0Type, cir::IQ4_NLType>(element) &&
      hasTileVectorDot(element, k) &&
      (k >= 2048 || (gated && !isa<cir::Q4_0Type>(element))))
    return {6, 2};
  return {kXRows, 1};
}

/// Weight i of a (multi_)matmul owns ceil(rows_i / tileRows) consecutive
/// workgroups of grid x: runs `body(i, weight, the workgroup's index among
/// them, rows)` for each weight, inside the condition that workgroup
/// `group` is one of its own (uniform over a workgroup, so barriers under
/// it stay legal; no condition for one weight).
static void
forEachWeightGroup(OpBuilder &b, Location loc, Value group,
                   ArrayRef<Value> weights, int64_t tileRows,
                   llvm::function_ref<void(size_t, Value, Value, int64_t)> body) {
  IndexMath im(b, loc);
  int64_t offset = 0;
  for (auto [i, w] : llvm::enumerate(weights)) {
    int64_t n = rowsOf(w);
    int64_t groups = ceilDiv(n, tileRows);
    OpBuilder::InsertionGuard guard(b);
    Value mine = group;
    if (weights.size() > 1) {
      Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                          group, im.c(offset));
      auto select = scf::IfOp::create(
          b, loc,
          arith::AndIOp::create(b, loc, lower,
                                im.lt(group, im.c(offset + groups))));
      b.setInsertionPointToStart(select.thenBlock());
      mine = arith::SubIOp::create(b, loc, group, im.c(offset));
    }
    body(i, w, mine, n);
    offset += groups;
  }
}

void GraphLowering::emitTiledMatmul(
    KernelState &ks, Value x, ArrayRef<Value> weights, bool gated, int64_t m,
    Location loc,
    llvm::function_ref<void(size_t, Value, Value, Value, int64_t)> storeOutput,
    llvm::function_ref<void(Value, Value, Value, Value, int64_t)>
        combineOutputs) {
  // Workgroup (g, y) computes rows 64y.. of x by weight rows 64g'.. of the
  // weight that owns group g (a gated matmul: of both weights at once).
  // Per slice of 16 or 32 values of K (shape.gemmSlice), its 256 lanes
  // stage the x tile and each weight's tile, decoded to f32 from its
  // format (emitDequantizeElement), in workgroup memory, slice-major and
  // swizzled, two copies deep (the next slice's loads overlap this slice's
  // products); lane (tx, ty) = (tid % 16, tid / 16) multiplies x rows
  // xPer ty + i with weight rows 4 tx + j (i < xPer, j < 4) out of it:
  // 4 xPer products per value of K and weight from 16-byte workgroup reads
  // (four values each), in K order (a fixed order of sums). Rows past the
  // end are read clamped and never stored; values of K past its end read
  // as 0.
  constexpr int64_t kTile = kGemmTile;
  // Rows of x of the workgroup's tile (the gemm_rows knob: 64 or 128) and
  // the lane's register tile: xPer x rows by wPer weight rows.
  const int64_t xTileRows = gemmXRows(shape);
  const int64_t xPer = xTileRows / 16, wPer = kTile / 16;
  // With matrix units (shape.matrixUnits) the staged tiles hold f16 and
  // the products are 16 x 16 tiles of a warp (multiplyTiles below).
  const bool matrixUnits = shape.matrixUnits;
  // Matrix units' tiles are row-major, each row a slice and 8 values of
  // padding (`lead` values apart: 16-byte multiples, which wmma loads
  // need, and rows that do not all start in the same banks).
  auto leadOf = [&](int64_t slice) { return matrixUnits ? slice + 8 : slice; };
  // Values of K a slice: the option's, unless the tiles (and matrix units'
  // output tile) would then pass kGemmMaxTileBytes.
  auto tileBytes = [&](int64_t slice) {
    int64_t tiles = xTileRows + (gated ? 2 : 1) * kTile;
    return (shape.doubleBuffer ? 2 : 1) * tiles * leadOf(slice) *
               (matrixUnits ? 2 : 4) +
           (matrixUnits ? kTile * kTile * 4 : 0);
  };
  const int64_t kSlice =
      shape.gemmSlice && tileBytes(shape.gemmSlice) <= kGemmMaxTileBytes
          ? shape.gemmSlice
          : kGemmSlice;
  const int64_t lead = leadOf(kSlice);
  assert(kTile * kSlice % (4 * kGemmLanes) == 0 && "whole runs a lane");
  IndexMath im(b, loc);
  auto xType = cast<RankedTensorType>(x.getType());
  const int64_t k = xType.getShape().back();
  Type f32 = b.getF32Type();
  auto toF32 = [&](Value v) -> Value {
    return v.getType() == f32 ? v
                              : Value(ex::ConvertOp::create(b, loc, f32, v,
                                                            false));
  };
  Type staged = matrixUnits ? Type(b.getF16Type()) : f32;
  auto toStaged = [&](Value v) -> Value {
    return v.getType() == staged
               ? v
               : Value(ex::ConvertOp::create(b, loc, staged, v, false));
  };
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value group = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value block = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  Value tx = im.rem(tid, 16), ty = im.div(tid, 16);
  Value xLane = im.mul(ty, im.c(xPer)), wLane = im.mul(tx, im.c(wPer));
  Value firstX = im.mul(block, im.c(xTileRows));
  // Two copies of each tile with double buffering (below).
  auto sharedTile = [&](int64_t rows) -> Value {
    return sm::SharedAllocOp::create(
        b, loc,
        sm::SharedType::get(b.getContext(),
                            (shape.doubleBuffer ? 2 : 1) * rows * lead,
                            staged));
  };
  Value xTile = sharedTile(xTileRows);
  SmallVector<Value> wTiles;
  for (size_t i = 0; i < (gated ? 2 : 1); ++i)
    wTiles.push_back(sharedTile(kTile));
  // Matrix units: a weight's 64 x 64 results, row-major by x row, where
  // the warps' tiles meet and each lane reads its own 4 x 4 back (one
  // weight after the other).
  Value outTile;
  if (matrixUnits)
    outTile = sm::SharedAllocOp::create(
        b, loc, sm::SharedType::get(b.getContext(), kTile * kTile, f32));

  // The GEMM of the weights `ws` (one, or a gated matmul's two) whose
  // weight rows start at `firstW`, n rows each; returns, per weight, the
  // lane's xPer x wPer sums, x row i and weight row j at i * wPer + j.
  auto gemm = [&](ArrayRef<Value> ws, Value firstW, int64_t n) {
    const int64_t sums = xPer * wPer;
    Value zero = ex::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    // Matrix units: warp w (of 8) multiplies x rows 16 (w % 4).. with
    // weight rows 32 (w / 4).. of each weight, two 16 x 16 accumulator
    // tiles per weight, one tile product per slice of 16 values of K.
    Type accTile = gpu::MMAMatrixType::get({16, 16}, f32, "COp");
    Value warpRow, warpCol;
    SmallVector<Value> inits(sums * ws.size(), zero);
    if (matrixUnits) {
      Value warp = im.div(tid, 32);
      warpRow = im.mul(im.rem(warp, 4), im.c(16));
      warpCol = im.mul(im.div(warp, 4), im.c(32));
      inits.assign(2 * ws.size(),
                   sm::MatrixFillOp::create(b, loc, accTile, zero));
    }
    // Staging. When K is a multiple of 4, lane tid takes values
    // 4 (tid % 4) .. + 3 of the slice of row tid / 4 of each tile, read
    // with one vector load (x, plain weights) or decoded together
    // (emitDequantizeRun: one block's loads and scales for all four), a
    // run lying wholly inside K or wholly past it. Otherwise it takes one
    // value at a time, e = tid + 256 s: row e / 16, value e % 16 of the
    // slice. A tile of 128 rows takes twice the runs (slotOf: where value
    // c of row r goes); values past K are 0.
    const int64_t width = k % 4 == 0 ? 4 : 1;
    const int64_t perRow = kSlice / width;
    const int64_t slices = ceilDiv(k, kSlice);
    // Value v of row r of a SIMT tile of `rows` rows is at
    // v * rows + (r ^ sw(v)) (value-major, swizzled): sw(v) is a multiple
    // of 4 that puts the staging stores of a warp (32 / (kSlice / 4) rows,
    // kSlice / 4 runs of 4 values each) in 32 distinct banks and keeps
    // every aligned group of 4 rows together (the products' 16-byte
    // reads). At v * rows + r the 4 runs of a row fell in one bank: a
    // 4-way conflict on every staging store (H200, Nsight Compute; q8_0
    // gated FFN of a 512-row chunk, swizzled and with the decoding after
    // the products below: 1.22 -> 1.04 ms). Matrix units' tiles are
    // row-major: r * lead + v, a run's 4 values side by side.
    const int64_t swizzleStep = std::max<int64_t>(4, 4 * 32 / kSlice);
    // r ^ sw(v), the row's place within value v's column (SIMT tiles).
    auto swizzled = [&](Value v, Value row) -> Value {
      Value sw = im.mul(im.rem(im.div(v, 4), kSlice / 4), im.c(swizzleStep));
      return arith::XOrIOp::create(b, loc, row, sw);
    };
    auto slotOf = [&](Value v, Value row, int64_t rows) -> Value {
      if (matrixUnits)
        return im.add(im.mul(row, im.c(lead)), v);
      Value at = im.mul(v, im.c(rows));
      return im.add(at, swizzled(v, row));
    };
    // `width` values of `buffer` (of `element`s) from `index` on, as f32.
    auto read = [&](Value buffer, Type element,
                    Value index) -> SmallVector<Value> {
      if (!cir::isQuantized(element) && !isa<BFloat16Type>(element))
        return loadF32s(buffer, index, width, loc);
      if (width == 4)
        return SmallVector<Value>(
            emitDequantizeRun(buffer, element, index, loc));
      return {emitDequantizeElement(buffer, element, index, loc)};
    };
    // The lane's values of the slice that starts at K index `first`, per
    // tile (x, then each weight): (slot, value) pairs, the values already
    // of the staged type.
    using Staging = SmallVector<SmallVector<std::pair<Value, Value>>>;
    auto readSlice = [&](Value first) {
      Staging perTile(1 + ws.size());
      // Tile t's runs: its rows (of x from firstX, of weight t - 1 from
      // firstW, clamped to `last`) read from `buffer`.
      auto stageTile = [&](size_t t, int64_t rows, Value buffer, Type element,
                           Value firstRow, int64_t last) {
        for (int64_t s = 0; s < rows * kSlice / (kGemmLanes * width); ++s) {
          Value e = im.add(tid, im.c(s * kGemmLanes));
          Value row = im.div(e, perRow),
                col = im.mul(im.rem(e, perRow), im.c(width));
          Value at = im.add(first, col);
          Value inK = im.lt(at, im.c(k));
          Value kRead = k % kSlice == 0
                            ? at
                            : Value(arith::MinUIOp::create(b, loc, at,
                                                           im.c(k - width)));
          Value clamped = arith::MinUIOp::create(
              b, loc, im.add(firstRow, row), im.c(last));
          SmallVector<Value> values =
              read(buffer, element, im.add(im.mul(clamped, im.c(k)), kRead));
          for (auto [c, v] : llvm::enumerate(values)) {
            Value f = toF32(v);
            if (k % kSlice != 0)
              f = arith::SelectOp::create(b, loc, inK, f, zero);
            perTile[t].push_back(
                {slotOf(im.add(col, im.c(c)), row, rows), toStaged(f)});
          }
        }
      };
      stageTile(0, xTileRows, arg(ks, x), xType.getElementType(), firstX,
                m - 1);
      for (auto [t, w] : llvm::enumerate(ws))
        stageTile(1 + t, kTile, arg(ks, w),
                  cast<RankedTensorType>(w.getType()).getElementType(), firstW,
                  n - 1);
      return perTile;
    };
    // Stores a slice's values into copy `copy` (0 or 1) of the tiles.
    auto storeSlice = [&](const Staging &perTile, Value copy) {
      for (auto [t, pairs] : llvm::enumerate(perTile)) {
        Value base =
            im.mul(copy, im.c((t == 0 ? xTileRows : kTile) * lead));
        for (auto [slot, value] : pairs)
          sm::StoreOp::create(b, loc, value, t == 0 ? xTile : wTiles[t - 1],
                              im.add(base, slot));
      }
    };
    // The lanes' loads of slice s + 1 are issued before slice s's
    // products and stored after them. Double buffering: slice s is
    // multiplied out of copy s % 2 of the tiles and slice s + 1 goes to the
    // other, so one barrier a slice separates a copy's stores from its
    // reads (the barrier after slice s - 1's products has every lane done
    // with the copy slice s + 1 overwrites). With one copy, a second
    // barrier comes before the stores. The last slice re-reads itself.
    const int64_t copies = shape.doubleBuffer ? 2 : 1;
    storeSlice(readSlice(im.c(0)), im.c(0));
    sm::BarrierOp::create(b, loc);
    auto loop = scf::ForOp::create(b, loc, im.c(0), im.c(slices), im.c(1),
                                   inits);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value slice = loop.getInductionVar();
    Value copy = copies == 2 ? im.rem(slice, 2) : im.c(0);
    Value base = im.mul(copy, im.c(kTile * lead));
    Value xBase = im.mul(copy, im.c(xTileRows * lead));
    Value nextSlice = arith::MinUIOp::create(b, loc, im.add(slice, im.c(1)),
                                             im.c(slices - 1));
    Block *body = loop.getBody();
    Operation *beforeNext = body->empty() ? nullptr : &body->back();
    Staging next = readSlice(im.mul(nextSlice, im.c(kSlice)));
    // The ops that decode slice s + 1's loads (everything readSlice made
    // but the loads and what their addresses need), moved below the
    // products, so that a warp multiplies while its loads are in flight
    // instead of waiting for them first.
    SmallVector<Operation *> decoding = opsAfterLoads(
        llvm::make_range(beforeNext ? std::next(beforeNext->getIterator())
                                    : body->begin(),
                         body->end()));
    SmallVector<Value> acc(loop.getRegionIterArgs());
    // The slice's products: a warp's tiles (multiplyTiles), or each
    // lane's xPer x wPer register tile (multiplyLanes).
    auto multiplyTiles = [&] {
      // The tiles are row-major (slot = row * lead + value): the x tile
      // read row-major is A (x rows by values of K), a weight tile read
      // column-major is B (values of K by weight rows).
      Type f16 = b.getF16Type();
      // A mutant: the x tile read column-major, as if it were stored so.
      const bool aColumns = shape.mutant == "tile-layout";
      // One tile product per 16 values of the slice.
      for (int64_t h = 0; h < kSlice / 16; ++h) {
        Value a = sm::MatrixLoadOp::create(
            b, loc, gpu::MMAMatrixType::get({16, 16}, f16, "AOp"), xTile,
            im.add(xBase, im.add(im.mul(warpRow, im.c(lead)), im.c(16 * h))),
            lead, /*transpose=*/aColumns);
        for (auto [t, tile] :
             llvm::enumerate(ArrayRef(wTiles).take_front(ws.size())))
          for (int64_t j = 0; j < 2; ++j) {
            Value rows = im.add(warpCol, im.c(16 * j));
            Value bTile = sm::MatrixLoadOp::create(
                b, loc, gpu::MMAMatrixType::get({16, 16}, f16, "BOp"), tile,
                im.add(base, im.add(im.mul(rows, im.c(lead)), im.c(16 * h))),
                lead, /*transpose=*/true);
            Value &sum = acc[2 * t + j];
            sum = sm::MatrixMmaOp::create(b, loc, accTile, a, bTile, sum,
                                          /*a_transpose=*/aColumns,
                                          /*b_transpose=*/true);
          }
      }
    };
    // Lane (tx, ty) holds x rows xPer ty + i and weight rows 4 tx + j:
    // each value of K is one or two 16-byte reads of the x tile and one of
    // each weight tile (consecutive slots) for 4 xPer products a weight.
    auto multiplyLanes = [&] {
      for (int64_t c = 0; c < kSlice; ++c) {
        Value column = im.add(base, im.c(c * kTile));
        Value xColumn = im.add(xBase, im.c(c * xTileRows));
        // Row `lane` + i of the column (lane a multiple of 4): its aligned
        // group of 4 swizzled (an xor by a constant), plus i % 4, so that
        // 4 rows read as one.
        auto rowAt = [&](Value lane, int64_t i) -> Value {
          return im.add(swizzled(im.c(c), im.add(lane, im.c(i / 4 * 4))),
                        im.c(i % 4));
        };
        SmallVector<Value> xs;
        for (int64_t i = 0; i < xPer; ++i)
          xs.push_back(sm::LoadOp::create(b, loc, f32, xTile,
                                          im.add(xColumn, rowAt(xLane, i))));
        for (auto [t, tile] :
             llvm::enumerate(ArrayRef(wTiles).take_front(ws.size()))) {
          for (int64_t j = 0; j < wPer; ++j) {
            Value wv = sm::LoadOp::create(b, loc, f32, tile,
                                          im.add(column, rowAt(wLane, j)));
            for (int64_t i = 0; i < xPer; ++i) {
              Value &sum = acc[t * sums + i * wPer + j];
              sum = ex::FmaOp::create(b, loc, xs[i], wv, sum);
            }
          }
        }
      }
    };
    if (matrixUnits)
      multiplyTiles();
    else
      multiplyLanes();
    for (Operation *op : decoding)
      op->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    if (copies == 1)
      sm::BarrierOp::create(b, loc);
    storeSlice(next, copies == 2 ? Value(arith::SubIOp::create(
                                       b, loc, im.c(1), copy))
                                 : im.c(0));
    sm::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, acc);
    b.setInsertionPointAfter(loop);
    if (!matrixUnits)
      return SmallVector<Value>(loop.getResults());
    // The warps' tiles meet in workgroup memory, a weight at a time; each
    // lane reads back the outputs the SIMT kernel's lane would hold (x row
    // 4 ty + i, weight row 4 tx + j at i * wPer + j).
    SmallVector<Value> results;
    for (size_t t = 0; t < ws.size(); ++t) {
      if (t > 0)
        sm::BarrierOp::create(b, loc);
      for (int64_t j = 0; j < 2; ++j)
        sm::MatrixStoreOp::create(
            b, loc, loop.getResult(2 * t + j), outTile,
            im.add(im.mul(warpRow, im.c(kTile)),
                   im.add(warpCol, im.c(16 * j))),
            kTile);
      sm::BarrierOp::create(b, loc);
      for (int64_t i = 0; i < xPer; ++i)
        for (int64_t j = 0; j < wPer; ++j)
          results.push_back(sm::LoadOp::create(
              b, loc, f32, outTile,
              im.add(im.mul(im.add(xLane, im.c(i)), im.c(kTile)),
                     im.add(wLane, im.c(j)))));
    }
    return results;
  };
  // Runs `body(x row, weight row, i * wPer + j)` for this lane's outputs
  // that exist.
  auto forEachOutput = [&](Value firstW, int64_t n,
                           llvm::function_ref<void(Value, Value, int64_t)>
                               body) {
    for (int64_t i = 0; i < xPer; ++i)
      for (int64_t j = 0; j < wPer; ++j) {
        OpBuilder::InsertionGuard guard(b);
        Value xRow = im.add(firstX, im.add(xLane, im.c(i)));
        Value wRow = im.add(firstW, im.add(wLane, im.c(j)));
        auto exists = scf::IfOp::create(
            b, loc,
            arith::AndIOp::create(b, loc, im.lt(xRow, im.c(m)),
                                  im.lt(wRow, im.c(n))));
        b.setInsertionPointToStart(exists.thenBlock());
        body(xRow, wRow, i * wPer + j);
      }
  };

  if (gated) {
    int64_t n = rowsOf(weights[0]);
    Value firstW = im.mul(group, im.c(kTile));
    SmallVector<Value> sums = gemm(weights, firstW, n);
    const int64_t half = xPer * wPer;
    forEachOutput(firstW, n, [&](Value xRow, Value wRow, int64_t s) {
      combineOutputs(sums[s], sums[half + s], xRow, wRow, n);
    });
    return;
  }
  forEachWeightGroup(
      b, loc, group, weights, kTile,
      [&](size_t i, Value w, Value mine, int64_t n) {
        Value firstW = im.mul(mine, im.c(kTile));
        SmallVector<Value> sums = gemm({w}, firstW, n);
        forEachOutput(firstW, n, [&](Value xRow, Value wRow, int64_t s) {
          storeOutput(i, sums[s], xRow, wRow, n);
        });
      });
}

LogicalResult GraphLowering::lowerMatmul(Operation *op, Value x,
                                         ArrayRef<Value> weights,
                                         ArrayRef<Region *> epilogues,
                                         ValueRange inputs, Region *combine,
                                         Value expertIds, bool xPerSlot) {
  Location loc = op->getLoc();
  auto xType = cast<RankedTensorType>(x.getType());
  if (isa<cir::Q8_1Type>(xType.getElementType())) {
    for (Value w : weights) {
      Type wElt = cast<RankedTensorType>(w.getType()).getElementType();
      if (!hasQ8ActivationKernel(wElt))
        return op->emitOpError("with q8_1 activations and ")
               << wElt
               << " weights is not supported by convert-circuit-to-shaderm "
                  "(q8_1 activations need q8_0, q4_0, q4_k, q5_k, q6_k, "
                  "q2_k, i2_s or tq2_0 weights)";
    }
  } else if (cir::isQuantized(xType.getElementType())) {
    return op->emitOpError("with ")
           << xType.getElementType()
           << " activations is not supported by convert-circuit-to-shaderm "
              "yet";
  }
  int64_t k = xType.getShape().back();
  int64_t m = xType.getNumElements() / k;
  // An expert_matmul's result rows are the slots of ids; each reads its
  // token's x row (or its own) and its expert's weight rows.
  int64_t slots = 1, experts = 1;
  if (expertIds) {
    auto idsType = cast<RankedTensorType>(expertIds.getType());
    m = idsType.getNumElements();
    slots = idsType.getShape().back();
    experts = cast<RankedTensorType>(weights[0].getType()).getDimSize(0);
  }
  int64_t lanes = shape.dotLanes;
  // Prompt chunks on GPU targets: the tiled GEMM (emitTiledMatmul), unless
  // knobs shape the kernel as the matvec-like one below (lanes, rows,
  // cols), which reads each weight row once per kXRows rows of x.
  const bool tiled = !shape.singleLane && lanes == kDotLanes && !expertIds &&
                     m >= kGemmMinRows && shape.xRows == 0 &&
                     shape.cols == 0 &&
                     !isa<cir::Q8_1Type>(xType.getElementType());
  // With a known subgroup size that divides the workgroup, each subgroup
  // computes one output row and combines it with a subgroup reduction: no
  // shared memory and no barrier, and a workgroup does lanes/subgroup rows
  // (a barrier per row costs more than the row's work on CPU devices, and
  // a warp per row is the usual matvec on GPUs). `subgroup_reduce = false`
  // turns it off.
  int64_t rowsPerGroup = 1;
  bool subgroupsOff =
      shape.subgroupReduceLanes == std::numeric_limits<int64_t>::max();
  if (subgroupSize > 1 && subgroupSize <= lanes &&
      lanes % subgroupSize == 0 && !subgroupsOff)
    rowsPerGroup = lanes / subgroupSize;
  // The `cols` knob: each subgroup (or workgroup, or CPU lane) computes
  // `cols` weight rows, rowsPerGroup apart, so a workgroup's tile is
  // rowsPerGroup * cols weight rows by xRows rows of x. The `rows` and
  // `cols` knobs override the target's choice.
  auto [defaultXRows, defaultCols] =
      matmulTile(x, weights, m, lanes, expertIds != nullptr,
                 /*gated=*/combine != nullptr);
  const int64_t cols = shape.cols ? shape.cols : defaultCols;
  const int64_t tileRows = rowsPerGroup * cols;
  int64_t totalGroups = 0;
  for (Value w : weights)
    totalGroups += ceilDiv(rowsOf(w), tileRows);
  if (combine) // Both weights' rows of a group are computed together.
    totalGroups = ceilDiv(rowsOf(weights[0]), tileRows);
  // With a subgroup per weight row, each subgroup also takes several rows
  // of x at once (the tokens of a prompt chunk), so that a weight row is
  // read and decoded once per kXRows tokens: the matvec becomes a GEMM.
  // A single-lane workgroup (the CPU target) holds its rows' dot products
  // whole, so it takes several x rows too.
  // (Rows of an expert_matmul may each read another expert: one per
  // workgroup.)
  int64_t xRows = (rowsPerGroup > 1 || lanes == 1) && !expertIds
                      ? std::min<int64_t>(m, shape.xRows ? shape.xRows
                                                         : defaultXRows)
                      : 1;
  int64_t xBlocks = ceilDiv(m, xRows);
  if (tiled) { // emitTiledMatmul's grid
    xBlocks = ceilDiv(m, gemmXRows(shape));
    totalGroups = 0;
    for (Value w : combine ? weights.take_front() : weights)
      totalGroups += ceilDiv(rowsOf(w), kGemmTile);
  }
  if (totalGroups > shape.maxGridDim || xBlocks > shape.maxGridDim)
    return op->emitOpError("has more output rows than "
                           "convert-circuit-to-shaderm launches in one grid "
                           "dimension");

  KernelState ks;
  bind(ks, x, false);
  if (expertIds)
    bind(ks, expertIds, false);
  for (Value w : weights)
    bind(ks, w, false);
  for (Value input : inputs)
    bind(ks, input, false);
  for (Value result : op->getResults()) {
    allocFor(result);
    bind(ks, result, true);
  }
  createKernel(ks, op, tiled ? kGemmLanes : lanes);
  IndexMath im(b, loc);
  auto storeValue = [&](Value value, Value result, Value lane) {
    auto resultElement =
        cast<RankedTensorType>(result.getType()).getElementType();
    if (value.getType() != resultElement)
      value = ex::ConvertOp::create(b, loc, resultElement, value, false);
    sm::StoreOp::create(b, loc, value, arg(ks, result), lane);
  };
  // Stores output `r` of weight `i` for x row `mi` (its epilogue applied).
  auto store = [&](size_t i, Value dot, Value mi, Value r, int64_t n) {
    Value result = op->getResult(i);
    Value lane = im.add(im.mul(mi, im.c(n)), r);
    Value stored = dot;
    Region *epilogue = epilogues[i];
    if (epilogue && !epilogue->empty()) {
      SmallVector<Value> args{im.toI32(lane), dot}, whole{nullptr, nullptr};
      auto resultType = cast<RankedTensorType>(result.getType());
      loadInputs(ks, epilogue, 2, inputs, resultType.getShape(), lane, args,
                 whole);
      stored = inlineBody(ks, *epilogue, args, whole)[0];
    }
    storeValue(stored, result, lane);
  };
  // A gated matmul's output for x row `mi`, weight row `r`: the combine
  // body on its two dot products.
  auto storeCombined = [&](Value gate, Value up, Value mi, Value r,
                           int64_t n) {
    Value lane = im.add(im.mul(mi, im.c(n)), r);
    Value value = inlineBody(ks, *combine, {im.toI32(lane), gate, up},
                             {nullptr, nullptr, nullptr})[0];
    storeValue(value, op->getResult(0), lane);
  };
  if (tiled) {
    emitTiledMatmul(ks, x, weights, combine != nullptr, m, loc, store,
                    storeCombined);
    finishKernel(ks, {totalGroups, xBlocks, 1});
    return success();
  }
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  // Workgroup x: a tile of weight rows; y: a block of xRows rows of x
  // (activations of consecutive tokens); the last block may be partial,
  // its loads clamped to the last row and its stores skipped. The CPU
  // target's wide f32/f16 tiles swap the two: its threads take
  // consecutive workgroups (x fastest), so the x blocks of one weight tile
  // run back to back and the tile is read from memory once, not once per
  // x block (measured: 1.5-2x on a 1B model's gated FFN for 32 and 128
  // rows). The narrower tiles of block formats run slower that way (their
  // x rows, reread per weight tile, outweigh the weights they save).
  const bool blocksFirst = lanes == 1 && cols >= 4 && xBlocks > 1;
  Value group = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(),
                                          blocksFirst ? sm::Dim::y : sm::Dim::x);
  Value block = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(),
                                          blocksFirst ? sm::Dim::x : sm::Dim::y);
  const std::array<int64_t, 3> grid =
      blocksFirst ? std::array<int64_t, 3>{xBlocks, totalGroups, 1}
                  : std::array<int64_t, 3>{totalGroups, xBlocks, 1};
  SmallVector<Value> xRowIds, ms;
  for (int64_t i = 0; i < xRows; ++i) {
    Value id = xRows == 1 ? block
                          : im.add(im.mul(block, im.c(xRows)), im.c(i));
    xRowIds.push_back(id);
    ms.push_back(xRows == 1
                     ? id
                     : Value(arith::MinUIOp::create(b, loc, id, im.c(m - 1))));
  }
  // An expert_matmul's first weight row: ids[r] (clamped into [0, E)) times
  // the rows of one expert; x row r, or its token's.
  Value expertBase;
  if (expertIds) {
    Value id = sm::LoadOp::create(b, loc, b.getI32Type(),
                                  arg(ks, expertIds), xRowIds[0]);
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    Value clamped =
        arith::MinUIOp::create(b, loc,
                               im.toIndex(arith::MaxSIOp::create(b, loc, id,
                                                                 zero)),
                               im.c(experts - 1));
    expertBase = im.mul(clamped, im.c(rowsOf(weights[0])));
    if (!xPerSlot && slots > 1)
      ms[0] = im.div(ms[0], slots);
  }
  Value subgroup, laneInSubgroup;
  if (rowsPerGroup > 1) {
    subgroup = sm::SubgroupIdOp::create(b, loc, b.getIndexType());
    laneInSubgroup =
        im.toIndex(ex::LaneIdOp::create(b, loc, b.getI32Type()));
  }

  // The weight rows of tile `tile` of an n-row weight: this subgroup's
  // first row, then every rowsPerGroup-th; rows past the end of a partial
  // last tile are read clamped to row n - 1 and never stored. The caller
  // skips a subgroup whose first row is past the end.
  struct Tile {
    SmallVector<Value> rows, reads;
  };
  auto tileOf = [&](Value tile, int64_t n) {
    Tile t;
    Value first = tileRows == 1 ? tile : im.mul(tile, im.c(tileRows));
    if (rowsPerGroup > 1)
      first = im.add(first, subgroup);
    for (int64_t c = 0; c < cols; ++c) {
      Value r = c == 0 ? first : im.add(first, im.c(c * rowsPerGroup));
      t.rows.push_back(r);
      t.reads.push_back(c == 0 || n % tileRows == 0
                            ? r
                            : Value(arith::MinUIOp::create(b, loc, r,
                                                           im.c(n - 1))));
      if (expertBase)
        t.reads.back() = im.add(expertBase, t.reads.back());
    }
    return t;
  };
  // Runs `body` for each x row of the block and each weight row of the
  // tile that exists, row by row: a row's outputs are neighbours in
  // memory, so that a CPU lane's epilogues of one row, straight-line code
  // ending in neighbouring stores, become vector code (LLVM's SLP
  // vectorizer).
  auto forEachOutput = [&](const Tile &t, int64_t n,
                           llvm::function_ref<void(int64_t, int64_t)> body) {
    for (int64_t i = 0; i < xRows; ++i) {
      OpBuilder::InsertionGuard guard(b);
      if (m % xRows != 0 && i >= m % xRows) {
        auto exists = scf::IfOp::create(b, loc, im.lt(xRowIds[i], im.c(m)));
        b.setInsertionPointToStart(exists.thenBlock());
      }
      for (int64_t c = 0; c < cols; ++c) {
        OpBuilder::InsertionGuard colGuard(b);
        if (c > 0 && n % tileRows != 0) {
          auto exists = scf::IfOp::create(b, loc, im.lt(t.rows[c], im.c(n)));
          b.setInsertionPointToStart(exists.thenBlock());
        }
        body(c, i);
      }
    }
  };
  // This lane's partial dot products of the tile with weight `w`, combined
  // into whole ones (on the lane that stores them: the subgroup's first
  // lane, or the workgroup's), c * xRows + i.
  auto tileDots = [&](Value w, const Tile &t) {
    SmallVector<Value> dots;
    if (rowsPerGroup > 1) {
      for (Value partial : emitPartialDot(ks, x, w, ms, t.reads,
                                          laneInSubgroup, subgroupSize, loc))
        dots.push_back(ex::SubgroupReduceOp::create(
            b, loc, ex::ReduceKind::sum, partial));
    } else if (lanes == 1) {
      dots = emitPartialDot(ks, x, w, ms, t.reads, tid, lanes, loc);
    } else {
      for (Value partial :
           emitPartialDot(ks, x, w, ms, t.reads, tid, lanes, loc))
        dots.push_back(emitWorkgroupReduce(partial, tid, lanes,
                                           cir::ReduceKind::sum, loc));
    }
    return dots;
  };
  // Enters the tile when its first row exists (uniform over a subgroup),
  // then the lane that holds the whole dot products.
  auto enterTile = [&](const Tile &t, int64_t n, bool leaderOnly) {
    if (leaderOnly) {
      Value leader = rowsPerGroup > 1 ? laneInSubgroup : tid;
      auto first = scf::IfOp::create(b, loc, im.lt(leader, im.c(1)));
      b.setInsertionPointToStart(first.thenBlock());
      return;
    }
    if (rowsPerGroup > 1 || n % tileRows != 0) {
      auto inRange = scf::IfOp::create(b, loc, im.lt(t.rows[0], im.c(n)));
      b.setInsertionPointToStart(inRange.thenBlock());
    }
  };
  if (combine) {
    // gated_matmul: the tile's two dot products per output, then the
    // combine body on the lane that holds both.
    int64_t n = rowsOf(weights[0]);
    Tile t = tileOf(group, n);
    enterTile(t, n, false);
    SmallVector<Value> dots[2];
    for (int w = 0; w < 2; ++w)
      dots[w] = tileDots(weights[w], t);
    enterTile(t, n, true);
    forEachOutput(t, n, [&](int64_t c, int64_t i) {
      storeCombined(dots[0][c * xRows + i], dots[1][c * xRows + i],
                    xRowIds[i], t.rows[c], n);
    });
    finishKernel(ks, grid);
    return success();
  }

  forEachWeightGroup(
      b, loc, group, weights, tileRows,
      [&](size_t i, Value w, Value mine, int64_t n) {
        Tile t = tileOf(mine, n);
        // A workgroup-wide reduction needs every lane: only subgroups skip
        // their tile.
        if (rowsPerGroup > 1)
          enterTile(t, n, false);
        SmallVector<Value> dots = tileDots(w, t);
        if (lanes > 1)
          enterTile(t, n, true);
        forEachOutput(t, n, [&](int64_t c, int64_t k) {
          store(i, dots[c * xRows + k], xRowIds[k], t.rows[c], n);
        });
      });
  finishKernel(ks, grid);
  return success();
}

//===----------------------------------------------------------------------===//
// Reading one quantized element (gathers from an embedding table)
//===----------------------------------------------------------------------===//

/// Values `index` .. `index` + n - 1 (n = 1, or 4 with `index` a
/// multiple of 4) of a q4_k (or, with `fifthBits`, q5_k) buffer of words.
/// 144-byte blocks: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128
/// bytes of nibbles; value 64c + p: byte 16 + 32c + p%32, the low nibble
/// for p < 32, sub-block j = 2c + (p >= 32). q5_k's 176-byte blocks have
/// qh[32] at byte 16 (the nibbles at 48): bit j of qh[p % 32] adds 16.
/// Four values share their sub-block (scale and min) and one aligned word
/// of quant bytes (and of qh bytes); each is d*sc*q - dmin*m, computed the
/// same way whatever n.
static SmallVector<Value, 4> dequantizeQ4_KValues(OpBuilder &b, Location loc,
                                                  Value words, bool fifthBits,
                                                  Value index, int64_t n) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  Value within = im.rem(index, 256);
  Value base = im.mul(im.div(index, 256), im.c(fifthBits ? 176 : 144));
  Value c = im.div(within, 64), p = im.rem(within, 64);
  Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, p,
                                     im.c(32));
  Value j = im.add(im.mul(c, im.c(2)),
                   arith::SelectOp::create(b, loc, high, im.c(1), im.c(0)));
  // The n bytes from byte `at` on: one byte, or one aligned word's four.
  auto bytesAt = [&](Value at) {
    SmallVector<Value, 4> bytes;
    if (n == 1) {
      bytes.push_back(loadByte(b, loc, words, at));
      return bytes;
    }
    Value word =
        sm::LoadOp::create(b, loc, b.getI32Type(), words, im.div(at, 4));
    for (int64_t t = 0; t < n; ++t)
      bytes.push_back(wm.mask(wm.shr(word, 8 * t), 0xff));
    return bytes;
  };
  SmallVector<Value, 4> quants = bytesAt(
      im.add(base, im.add(im.add(im.c(fifthBits ? 48 : 16),
                                 im.mul(c, im.c(32))),
                          im.rem(p, 32))));
  SmallVector<Value, 4> qhs;
  if (fifthBits)
    qhs = bytesAt(im.add(base, im.add(im.c(16), im.rem(p, 32))));
  auto [sc, mn] = unpackQ4_KScaleMin(im, wm, j, [&](Value k) {
    return loadByte(b, loc, words, im.add(base, im.add(im.c(4), k)));
  });
  Value d = loadHalf(b, loc, words, base),
        dmin = loadHalf(b, loc, words, im.add(base, im.c(2)));
  SmallVector<Value, 4> values;
  for (int64_t t = 0; t < n; ++t) {
    Value byte = quants[t];
    Value q = wm.select(high, wm.shr(byte, 4), wm.mask(byte, 0xf));
    if (fifthBits) {
      Value bit = wm.mask(wm.shr(qhs[t], im.toI32(j)), 1);
      q = wm.bitOr(q, wm.shl(bit, 4));
    }
    Value scaled = ex::MulOp::create(
        b, loc, ex::MulOp::create(b, loc, d, wm.toF32(sc)), wm.toF32(q));
    values.push_back(ex::SubOp::create(
        b, loc, scaled, ex::MulOp::create(b, loc, dmin, wm.toF32(mn))));
  }
  return values;
}

SmallVector<Value, 4> GraphLowering::emitDequantizeRun(Value words,
                                                       Type element,
                                                       Value index,
                                                       Location loc) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  SmallVector<Value, 4> values;
  // Byte t of a word, sign-extended or not.
  auto byteOf = [&](Value word, int64_t t) {
    return wm.mask(wm.shr(word, 8 * t), 0xff);
  };
  if (isa<cir::Q8_0Type>(element) && shape.mutant != "block-size") {
    // Values index.. of one 34-byte block: 4 bytes at an even offset.
    Value base = im.mul(im.div(index, 32), im.c(34));
    Value at = im.add(base, im.add(im.c(2), im.rem(index, 32)));
    Value word = loadWordAtEvenByte(b, loc, words, at, isMisaligned(at, loc));
    Value d = loadHalf(b, loc, words, base);
    for (int64_t t = 0; t < 4; ++t)
      values.push_back(ex::MulOp::create(
          b, loc, d, wm.toF32(wm.signExtendByte(byteOf(word, t)))));
    return values;
  }
  if (isa<cir::Q4_KType, cir::Q5_KType>(element))
    return dequantizeQ4_KValues(b, loc, words, isa<cir::Q5_KType>(element),
                                index, 4);
  for (int64_t t = 0; t < 4; ++t)
    values.push_back(
        emitDequantizeElement(words, element, im.add(index, im.c(t)), loc));
  return values;
}

Value GraphLowering::emitDequantizeElement(Value words, Type element,
                                           Value index, Location loc) {
  if (isa<cir::TQ1_0Type, cir::TQ2_0Type>(element))
    return emitDequantizeTernary(words, element, index, loc);
  if (isa<cir::Q4_0Type, cir::Q4_1Type, cir::Q5_0Type, cir::Q5_1Type,
          cir::Q2_KType, cir::Q3_KType, cir::IQ4_NLType, cir::IQ4_XSType,
          BFloat16Type>(
          element))
    return emitDequantizeQ4_0OrBF16(words, element, index, loc);
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  if (isa<cir::Q8_0Type>(element)) {
    // 34-byte blocks: f16 d, then 32 int8 values.
    Value base = im.mul(im.div(index, 32), im.c(34));
    // A mutant: values located with a block of 16 (in bounds, wrong).
    int64_t within = shape.mutant == "block-size" ? 16 : 32;
    Value q = wm.signExtendByte(loadByte(
        b, loc, words, im.add(base, im.add(im.c(2), im.rem(index, within)))));
    return ex::MulOp::create(b, loc, loadHalf(b, loc, words, base), wm.toF32(q));
  }
  Value within = im.rem(index, 256);
  if (isa<cir::Q4_KType, cir::Q5_KType>(element))
    return dequantizeQ4_KValues(b, loc, words, isa<cir::Q5_KType>(element),
                                index, 1)[0];
  // q6_k: 210-byte blocks: ql[128], qh[64], int8 scales[16], f16 d; value
  // 128h + 32r + l: the low (r < 2) or high nibble of ql[64h + 32(r&1) + l],
  // bits 2r of qh[32h + l], scale 8h + 2r + l/16; v = d * scale * (q - 32).
  Value base = im.mul(im.div(index, 256), im.c(210));
  Value h = im.div(within, 128), r = im.rem(im.div(within, 32), 4),
        l = im.rem(within, 32);
  Value ql = loadByte(
      b, loc, words,
      im.add(base, im.add(im.add(im.mul(h, im.c(64)),
                                 im.mul(im.rem(r, 2), im.c(32))),
                          l)));
  Value qh = loadByte(
      b, loc, words,
      im.add(base, im.add(im.add(im.c(128), im.mul(h, im.c(32))), l)));
  Value nibble = wm.select(im.lt(r, im.c(2)), wm.mask(ql, 0xf), wm.shr(ql, 4));
  Value twoBits = wm.mask(
      wm.shr(qh, arith::MulIOp::create(b, loc, im.toI32(r), wm.c(2))), 3);
  Value q = arith::SubIOp::create(b, loc, wm.bitOr(nibble, wm.shl(twoBits, 4)),
                                  wm.c(32));
  Value scale = wm.signExtendByte(loadByte(
      b, loc, words,
      im.add(base, im.add(im.add(im.c(192), im.mul(h, im.c(8))),
                          im.add(im.mul(r, im.c(2)), im.div(l, 16))))));
  Value d = loadHalf(b, loc, words, im.add(base, im.c(208)));
  return ex::MulOp::create(
      b, loc, ex::MulOp::create(b, loc, d, wm.toF32(scale)), wm.toF32(q));
}

} // namespace hesper::lowering
