//===- BlockDots.cpp - Quantized dot products as vector<32> operations ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The one-lane (CPU target) dot products of q8_0, q4_k (and q5_k) and q6_k
// weights:
// whole blocks decoded with vector operations, 32 values at a time, and
// accumulated per value in a vector<32xf32> that is summed once per row.
// The GPU kernels' versions, which spread a block over lanes, are in
// Matmul.cpp.
//
//===----------------------------------------------------------------------===//

#include "BlockMath.h"

#include <functional>

namespace hesper::lowering {


GraphLowering::HalfScaledPair
GraphLowering::loadHalfScaledPair(const DotOperands &d, Value pair,
                                  int64_t valueWords) {
  // Pairs of blocks of 2 + 4V bytes (V = valueWords): 2V + 1 words,
  // word-aligned when a row has an even number of blocks (K a multiple of
  // 64). Block A: its f16 scale is the low half of word 0 and its values
  // start two bytes in, the words (w[i] >> 16) | (w[i+1] << 16) for
  // i = 0..V-1. Block B: its scale is the high half of word V, its values
  // words V+1..2V.
  Location loc = d.loc;
  IndexMath im(b, loc);
  int64_t pairWords = 2 * valueWords + 1;
  Value rowWord = im.mul(d.n, im.c(d.k / 64 * pairWords));
  auto wordsType = VectorType::get({valueWords}, b.getI32Type());
  Value sixteen = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(wordsType, b.getI32IntegerAttr(16)));
  Value base = im.add(rowWord, im.mul(pair, im.c(pairWords)));
  auto load = [&](int64_t word) -> Value {
    return sm::LoadOp::create(b, loc, wordsType, d.w, im.add(base, im.c(word)));
  };
  HalfScaledPair p;
  p.valuesA = arith::OrIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, load(0), sixteen),
      arith::ShLIOp::create(b, loc, load(1), sixteen));
  p.valuesB = load(valueWords + 1);
  p.scaleA = ex::UnpackF16x2Op::create(
      b, loc, b.getF32Type(),
      sm::LoadOp::create(b, loc, b.getI32Type(), d.w, base), 0);
  p.scaleB = ex::UnpackF16x2Op::create(
      b, loc, b.getF32Type(),
      sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                         im.add(base, im.c(valueWords))),
      1);
  if (shape.mutant == "drop-scale") // A mutant: the block scales ignored.
    p.scaleA = p.scaleB =
        ex::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  return p;
}

SmallVector<Value> GraphLowering::emitDecodedTileDot(
    const DotOperands &d, int64_t steps, int64_t stepValues, int64_t pieces,
    llvm::function_ref<WeightPiece(size_t c, Value n, Value step, int64_t p)>
        decode) {
  // The register tile of a prompt chunk's matmul on the CPU target: piece
  // by piece, each weight row's 32 values are decoded once, then each x
  // row's 32 values are loaded once and multiplied with every weight
  // row's. Decoding a piece just before its products keeps few decoded
  // vectors live. Accumulator c * rows + r (weight row c, x row r) sees
  // its pieces in step order, so a tile of one weight row sums exactly as
  // a tile of several.
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  const size_t rows = d.xRows.size();
  ArrayRef<Value> ns = d.ns;
  assert(!ns.empty() && "emitPartialDot names the tile's weight rows");
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = vm.beginRows(steps, rows * ns.size());
  Value step = loop.getInductionVar();
  SmallVector<Value> acc(loop.getRegionIterArgs());
  Value first = im.mul(step, im.c(stepValues));
  for (int64_t p = 0; p < pieces; ++p) {
    SmallVector<WeightPiece> piece;
    for (auto [c, n] : llvm::enumerate(ns))
      piece.push_back(decode(c, n, step, p));
    for (size_t r = 0; r < rows; ++r) {
      Value at =
          im.add(im.add(d.xRows[r], first), im.c(piece.front().xOffset));
      Value xv = vm.x32(d.x, at);
      for (size_t c = 0; c < ns.size(); ++c)
        acc[c * rows + r] =
            vm.multiplyAdd(acc[c * rows + r], piece[c].weights, xv);
    }
  }
  return vm.finishRows(loop, acc);
}

SmallVector<Value> GraphLowering::emitHalfScaledBlockPairDotVector(
    const DotOperands &d, int64_t valueWords,
    llvm::function_ref<Value(Value words)> decode) {
  BlockMath vm{b, d.loc};
  // Each tile row's pair, loaded with its first piece.
  SmallVector<HalfScaledPair> loaded(d.ns.size());
  return emitDecodedTileDot(
      d, d.k / 64, 64, 2,
      [&](size_t c, Value n, Value pair, int64_t piece) -> WeightPiece {
        HalfScaledPair &p = loaded[c];
        if (piece == 0) {
          DotOperands row = d;
          row.n = n;
          p = loadHalfScaledPair(row, pair, valueWords);
        }
        Value scale = piece == 0 ? p.scaleA : p.scaleB;
        Value values = piece == 0 ? p.valuesA : p.valuesB;
        // `decode` gives signed bytes, or the f32 values themselves.
        Value decoded = decode(values);
        if (!isa<FloatType>(cast<VectorType>(decoded.getType()).getElementType()))
          decoded = vm.signedToF32(decoded);
        return {vm.mul(vm.splat(scale), decoded), 32 * piece};
      });
}

SmallVector<Value> GraphLowering::emitQ8ActivationPairDotVector(
    const DotOperands &d, int64_t valueWords,
    llvm::function_ref<Value(Value words)> decode) {
  // x in q8_1 blocks of 9 words (f16 d and s in word 0, 32 signed bytes
  // after), two per weight pair. Per block, the 32 byte products are added
  // in integers (exp.vector_dot4_i8: 8 lanes of four each, one vpdpbusd
  // with VNNI), converted once, and accumulated times d_w d_x in a
  // vector<8xf32> per x row and block of the pair (two independent
  // chains). The integer sums are exact, so the result differs from the
  // interpreter's f32 products only by the order of float additions.
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  auto loop = scf::ForOp::create(
      b, loc, im.c(0), im.c(d.k / 64), im.c(1),
      SmallVector<Value>(2 * rows, vm.zeros(BlockMath::kByteDotLanes)));
  b.setInsertionPointToStart(loop.getBody());
  Value pair = loop.getInductionVar();
  HalfScaledPair p = loadHalfScaledPair(d, pair, valueWords);
  Value wA = decode(p.valuesA), wB = decode(p.valuesB);
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (size_t r = 0; r < rows; ++r) {
    Value at = im.add(d.xRows[r], im.mul(pair, im.c(2 * kQ8_1Words)));
    auto addBlock = [&](Value sums, Value w, Value scale, Value block) {
      Value dx = loadQ8_1Scale(b, loc, d.x, block);
      Value xs = vm.bytes(vm.words(d.x, im.add(block, im.c(1))));
      return vm.add(
          sums, vm.scaledByteDot(w, xs, ex::MulOp::create(b, loc, scale, dx)));
    };
    acc[r] = addBlock(acc[r], wA, p.scaleA, at);
    acc[rows + r] =
        addBlock(acc[rows + r], wB, p.scaleB, im.add(at, im.c(kQ8_1Words)));
  }
  scf::YieldOp::create(b, loc, acc);
  b.setInsertionPointAfter(loop);
  SmallVector<Value> dots;
  for (size_t r = 0; r < rows; ++r)
    dots.push_back(
        vm.sum(vm.add(loop.getResult(r), loop.getResult(rows + r))));
  return dots;
}

namespace {
/// The vector pieces of the CPU target's integer tiles (emitByteTileDot,
/// emitQ4_KByteTileDot): vector<16xi32> values of four weight rows, one
/// per 128-bit lane, and their bytes.
struct ByteTileMath {
  OpBuilder &b;
  Location loc;

  static SmallVector<int64_t> iota(int64_t n) {
    SmallVector<int64_t> v;
    for (int64_t i = 0; i < n; ++i)
      v.push_back(i);
    return v;
  }
  Value zeros() {
    return arith::ConstantOp::create(
        b, loc, b.getZeroAttr(VectorType::get({16}, b.getI32Type())));
  }
  /// The 64 bytes of a vector<16xi32>.
  Value bytes(Value v) {
    return vector::BitCastOp::create(
        b, loc, VectorType::get({64}, b.getI8Type()), v);
  }
  /// Four words of `buffer` from word `at` on.
  Value quad(Value buffer, Value at) {
    return sm::LoadOp::create(b, loc, VectorType::get({4}, b.getI32Type()),
                              buffer, at);
  }
  /// `v` splat over 16 lanes of i32.
  Value splat(int64_t v) {
    auto type = VectorType::get({16}, b.getI32Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getI32IntegerAttr(v)));
  }
  Value shr(Value v, int64_t n) {
    return arith::ShRUIOp::create(b, loc, v, splat(n));
  }
  /// The low nibble of each byte of `words` shifted right by `shift`: codes
  /// of 0..15, known non-negative (vpdpbusd takes them as they are,
  /// hesper-cpu-vector-dot).
  Value nibbles(Value words, int64_t shift) {
    Value v = shift ? shr(words, shift) : words;
    Value low = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({64}, b.getI8Type()),
                               b.getI8IntegerAttr(0x0f)));
    return arith::AndIOp::create(b, loc, bytes(v), low);
  }
  /// Four words of each of the four weight rows `rows4` (of `rowWords`
  /// words each), `word` words after `base` within the row: a row per
  /// 128-bit lane.
  Value rowWords(Value w, ArrayRef<Value> rows4, int64_t rowWords, Value base,
                 int64_t word) {
    IndexMath im(b, loc);
    SmallVector<Value> quads;
    for (Value row : rows4)
      quads.push_back(quad(
          w, im.add(im.add(im.mul(row, im.c(rowWords)), base), im.c(word))));
    return concat(quads);
  }
  /// Four vector<4xi32> side by side.
  Value concat(ArrayRef<Value> q) {
    Value low = vector::ShuffleOp::create(b, loc, q[0], q[1], iota(8));
    Value high = vector::ShuffleOp::create(b, loc, q[2], q[3], iota(8));
    return vector::ShuffleOp::create(b, loc, low, high, iota(16));
  }
  /// The words that start two bytes into `low`'s: the high halves of
  /// `low` joined with the low halves of `high` (the words one further on).
  Value joinHalves(Value low, Value high) {
    return arith::OrIOp::create(
        b, loc, shr(low, 16),
        arith::ShLIOp::create(b, loc, high, splat(16)));
  }
  /// The 2-bit codes in bits `shift`, `shift` + 1 of each byte of `words`,
  /// as bytes 0..3 (which vpdpbusd takes as they are).
  Value twoBitCodes(Value words, int64_t shift) {
    Value three = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({64}, b.getI8Type()),
                               b.getI8IntegerAttr(3)));
    return arith::AndIOp::create(b, loc, bytes(shr(words, shift)), three);
  }
  /// Byte `byte` (0..15) of each 128-bit lane of `words` (four rows' 16
  /// bytes, as vector<16xi32>), zero-extended into all four of its lanes:
  /// the lane holding it spread (one vpermd), shifted and masked.
  Value rowByte(Value words, int64_t byte) {
    Value v = spread(words, byte / 4);
    if (byte % 4)
      v = shr(v, 8 * (byte % 4));
    return arith::AndIOp::create(b, loc, v, splat(0xff));
  }
  /// Lane `first` of every 128-bit lane, in all four of its lanes.
  Value spread(Value v, int64_t first) {
    SmallVector<int64_t> mask;
    for (int64_t i = 0; i < 16; ++i)
      mask.push_back(i / 4 * 4 + first);
    return vector::ShuffleOp::create(b, loc, v, v, mask);
  }
  /// The f16 in the low half of each lane, as f32.
  Value halves(Value v) {
    Value h = arith::TruncIOp::create(
        b, loc, VectorType::get({16}, b.getI16Type()), v);
    Value f16s = vector::BitCastOp::create(
        b, loc, VectorType::get({16}, b.getF16Type()), h);
    return arith::ExtFOp::create(
        b, loc, VectorType::get({16}, b.getF32Type()), f16s);
  }
  /// Bytes 0..15 (`half` 0) or 16..31 of the q8_1 block at word `at` of
  /// `x`, repeated in every 128-bit lane.
  Value xBytes(Value x, Value at, int64_t half) {
    IndexMath im(b, loc);
    return bytes(concat(SmallVector<Value>(
        4, quad(x, im.add(at, im.c(1 + 4 * half))))));
  }
  /// The x side of a tile step against ternary codes (the weights plus
  /// one, 0..2): the q8_1 block at word `at`'s d, its two halves repeated
  /// (xBytes), and -sum(x) per lane (a byte product with ones), where the
  /// sums of codes times x start: sum((q - 1) x) = sum(q x) - sum(x).
  struct TernaryX {
    Value scale, low, high, start;
  };
  TernaryX ternaryX(Value x, Value at, BlockMath &vm) {
    TernaryX t;
    t.scale = loadQ8_1Scale(b, loc, x, at);
    t.low = xBytes(x, at, 0);
    t.high = xBytes(x, at, 1);
    Value zero = zeros(), ones = vm.i8Splat(1, 64);
    Value sum = ex::VectorDot4I8Op::create(
        b, loc, ones, t.high,
        ex::VectorDot4I8Op::create(b, loc, ones, t.low, zero));
    t.start = arith::SubIOp::create(b, loc, zero, sum);
    return t;
  }
  /// `codes` (0..2, bytes 0..15 and 16..31 of four rows) against `x`,
  /// added to `acc` (per lane) times `scale` (per lane) and d_x.
  Value ternaryStep(Value acc, Value low, Value high, const TernaryX &x,
                    Value scale, BlockMath &vm) {
    Value sums = ex::VectorDot4I8Op::create(
        b, loc, high, x.high,
        ex::VectorDot4I8Op::create(b, loc, low, x.low, x.start));
    Value factor = vm.splat(x.scale, 16);
    if (scale)
      factor = vm.mul(scale, factor);
    return vm.add(acc, vm.mul(arith::SIToFPOp::create(b, loc, vm.f32s(16),
                                                      sums),
                              factor));
  }
  /// The tile's loop over `steps` steps, carrying a vector<16xf32> per
  /// group of four weight rows and x row (from zero); the builder is left
  /// inside (the caller keeps an InsertionGuard).
  scf::ForOp begin(int64_t steps, size_t rows, BlockMath &vm) {
    IndexMath im(b, loc);
    auto loop = scf::ForOp::create(
        b, loc, im.c(0), im.c(steps), im.c(1),
        SmallVector<Value>(kByteTileRows / 4 * rows, vm.zeros(16)));
    b.setInsertionPointToStart(loop.getBody());
    return loop;
  }
  /// Yields `acc` and returns the dot products, weight row c of the tile
  /// and x row r at c * rows + r: each row's four lanes summed.
  SmallVector<Value> finish(scf::ForOp loop, ValueRange acc, size_t rows,
                            BlockMath &vm) {
    scf::YieldOp::create(b, loc, acc);
    b.setInsertionPointAfter(loop);
    SmallVector<Value> dots(kByteTileRows * rows);
    for (int64_t g = 0; g < kByteTileRows / 4; ++g)
      for (size_t r = 0; r < rows; ++r) {
        Value v = rowSums(loop.getResult(g * rows + r), vm);
        for (int64_t j = 0; j < 4; ++j)
          dots[(4 * g + j) * rows + r] =
              vector::ExtractOp::create(b, loc, v, 4 * j);
      }
    return dots;
  }
  /// Each row's four lanes added in a fixed order, (0+1) + (2+3): lane
  /// 4j then holds row j's sum.
  Value rowSums(Value v, BlockMath &vm) {
    SmallVector<int64_t> swapPairs, swapHalves;
    for (int64_t i = 0; i < 16; ++i) {
      swapPairs.push_back(i ^ 1);
      swapHalves.push_back(i ^ 2);
    }
    v = vm.add(v, vector::ShuffleOp::create(b, loc, v, v, swapPairs));
    return vm.add(v, vector::ShuffleOp::create(b, loc, v, v, swapHalves));
  }
};
} // namespace

SmallVector<Value> GraphLowering::emitByteTileDot(const DotOperands &d,
                                                  Type element) {
  // A matmul of q8_1 activations with q4_0 or q8_0 weights on the CPU
  // target (a prompt chunk's, or a one-token step's), as integer products
  // of a register tile: kByteTileRows weight rows by every x row of
  // d.xRows.
  //
  // Layout: a vector<16xi32> holds four weight rows, one per 128-bit lane,
  // 16 codes each: q4_0's 16 nibble bytes (value t in the low nibble of
  // byte t, value 16 + t in its high nibble), q8_0's values 0..15 or
  // 16..31. x's bytes 0..15 and 16..31 of the same block are repeated in
  // every 128-bit lane, so each exp.vector_dot4_i8 (one 512-bit vpdpbusd
  // with AVX512-VNNI) adds 64 products of four weight rows, and lane t of
  // a row holds the sum over values 4t..4t+3 and 16+4t..16+4t+3.
  //
  // vpdpbusd multiplies unsigned bytes by signed ones, so the weight side
  // goes in unsigned, with no vpabsb/vpsignb:
  //   q4_0: its codes q (0..15), sum((q - 8) x) = sum(q x) - 8 sum(x);
  //   q8_0: w + 128 (w ^ 0x80, a_unsigned), sum(w x) =
  //         sum((w + 128) x) - 128 sum(x).
  // 8 sum(x) per lane is the same dot product with a vector of eights,
  // computed once per x block; -8 sum(x) (q4_0) or -128 sum(x) (q8_0) is
  // the start of the weight rows' sums. The i32 sums are exact; each lane
  // accumulates them
  // times d_w d_x in f32 across blocks, and a row's four lanes are added
  // at the end, so the result differs from the interpreter's only in the
  // order of float additions. The x side (broadcast halves, sums) is
  // shared by the tile's 16 rows, the weight side (loaded, realigned,
  // split into codes) by its x rows.
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  ByteTileMath bt{b, loc};
  const bool q8 = isa<cir::Q8_0Type>(element);
  constexpr int64_t kGroups = kByteTileRows / 4;
  // Words of a block's values; a pair of blocks (2 + 4V bytes each) is
  // 2V + 1 words.
  const int64_t valueWords = q8 ? 8 : 4;
  const int64_t pairWords = 2 * valueWords + 1;
  assert(static_cast<int64_t>(d.ns.size()) == kByteTileRows &&
         d.k % 64 == 0 && "lowerMatmul picks this tile");
  const size_t rows = d.xRows.size();
  auto dot = [&](Value a, Value x, Value acc) -> Value {
    return ex::VectorDot4I8Op::create(b, loc, a, x, acc);
  };
  Value zero = bt.zeros();
  // A constant of bytes 0..127: vpdpbusd takes it as it is.
  Value eights = vm.i8Splat(8, 64);

  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = bt.begin(d.k / 64, rows, vm);
  Value pair = loop.getInductionVar();
  SmallVector<Value> acc(loop.getRegionIterArgs());
  const int64_t rowWords = d.k / 64 * pairWords;
  Value pairWord = im.mul(pair, im.c(pairWords));
  // Block A, then block B of the pair (the x side of one block live at a
  // time: 3 vectors per x row).
  for (int half = 0; half < 2; ++half) {
    // Per x row: d_x, the block's two halves repeated, the sums' start.
    struct XBlock {
      Value scale, low, high, start;
    };
    SmallVector<XBlock> xs;
    for (Value xRow : d.xRows) {
      Value at = im.add(xRow, im.add(im.mul(pair, im.c(2 * kQ8_1Words)),
                                     im.c(half * kQ8_1Words)));
      XBlock x;
      x.scale = loadQ8_1Scale(b, loc, d.x, at);
      x.low = bt.xBytes(d.x, at, 0);
      x.high = bt.xBytes(d.x, at, 1);
      Value sums8 = dot(eights, x.high, dot(eights, x.low, zero));
      if (q8)
        sums8 = arith::ShLIOp::create(b, loc, sums8, bt.splat(4));
      x.start = arith::SubIOp::create(b, loc, zero, sums8);
      xs.push_back(x);
    }
    for (int64_t g = 0; g < kGroups; ++g) {
      // Four words of each of the group's rows, `word` words into the
      // pair.
      auto wordsAt = [&](int64_t word) {
        return bt.rowWords(d.w, ArrayRef(d.ns).slice(4 * g, 4), rowWords,
                           pairWord, word);
      };
      // Block A's scale is the low half of word 0 and its values start
      // two bytes in (words i and i + 1 joined); block B's scale is the
      // high half of word V, its values words V + 1 on.
      auto valuesAt = [&](int64_t word) -> Value {
        if (half == 1)
          return wordsAt(valueWords + 1 + word);
        return bt.joinHalves(wordsAt(word), wordsAt(word + 1));
      };
      Value scale =
          half == 0
              ? bt.halves(bt.spread(wordsAt(0), 0))
              : bt.halves(bt.shr(bt.spread(wordsAt(valueWords - 3), 3), 16));
      // The codes against x's bytes 0..15 and 16..31.
      Value low, high;
      if (q8) {
        Value signBits = vm.i8Splat(-128, 64);
        low = arith::XOrIOp::create(b, loc, bt.bytes(valuesAt(0)), signBits);
        high = arith::XOrIOp::create(b, loc, bt.bytes(valuesAt(4)), signBits);
      } else {
        Value codes = valuesAt(0);
        low = bt.nibbles(codes, 0);
        high = bt.nibbles(codes, 4);
      }
      for (size_t r = 0; r < rows; ++r) {
        const XBlock &x = xs[r];
        Value sums = ex::VectorDot4I8Op::create(
            b, loc, high, x.high,
            ex::VectorDot4I8Op::create(b, loc, low, x.low, x.start, q8), q8);
        Value &a = acc[g * rows + r];
        a = vm.add(a, vm.mul(arith::SIToFPOp::create(b, loc, vm.f32s(16), sums),
                             vm.mul(scale, vm.splat(x.scale, 16))));
      }
    }
  }
  return bt.finish(loop, acc, rows, vm);
}

SmallVector<Value> GraphLowering::emitQ2_KByteTileDot(const DotOperands &d) {
  // emitByteTileDot's tile for q2_k weights, a super-block (84 bytes, 21
  // words: 16 scale bytes, 64 code bytes, f16 d and dmin) per step. Value
  // 128n + 32j + l is bits 2j of code byte 32n + l, in sub-block
  // 8n + 2j + (l >= 16) of 16 values, weighing d sc q - dmin m with the
  // sub-block's 4-bit sc and m. Per half n and plane j, x block
  // 8 blk + 4n + j: its bytes 0..15 against each group's codes of the low
  // sub-block, bytes 16..31 against the high one's, in separate i32 sums
  // (the two scales differ), and sum(x) of each half (a product with ones)
  // for the min terms, once per x block for all the tile's rows. Each
  // lane accumulates
  //   d_x (d sc_lo S_lo + d sc_hi S_hi - dmin m_lo X_lo - dmin m_hi X_hi)
  // with its row's scales (ByteTileMath::rowByte: each row's scale byte in
  // its four lanes); a row's four lanes are added at the end.
  constexpr int64_t kWords = 21, kGroups = kByteTileRows / 4;
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  ByteTileMath bt{b, loc};
  assert(static_cast<int64_t>(d.ns.size()) == kByteTileRows &&
         d.k % 256 == 0 && "lowerMatmul picks this tile");
  const size_t rows = d.xRows.size();
  const int64_t rowWords = d.k / 256 * kWords;
  auto dot = [&](Value a, Value x, Value acc) -> Value {
    return ex::VectorDot4I8Op::create(b, loc, a, x, acc);
  };
  auto toF32 = [&](Value v) -> Value {
    return arith::SIToFPOp::create(b, loc, vm.f32s(16), v);
  };
  Value zero = bt.zeros();
  Value ones = vm.i8Splat(1, 64);
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = bt.begin(d.k / 256, rows, vm);
  Value blk = loop.getInductionVar();
  Value blockWord = im.mul(blk, im.c(kWords));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  // Per group: its rows' 16 scale bytes (a row per 128-bit lane), d and
  // dmin in each row's four lanes.
  struct Group {
    Value scaleWords, d, dmin;
  };
  SmallVector<Group> groups;
  for (int64_t g = 0; g < kGroups; ++g) {
    auto wordsAt = [&](int64_t word) {
      return bt.rowWords(d.w, ArrayRef(d.ns).slice(4 * g, 4), rowWords,
                         blockWord, word);
    };
    // Words 17..20 (20: d and dmin), not 20..23: past word 20 the last
    // block of the buffer ends.
    Value head = bt.spread(wordsAt(17), 3);
    groups.push_back({wordsAt(0), bt.halves(head),
                      bt.halves(bt.shr(head, 16))});
  }
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t j = 0; j < 4; ++j) {
      // Per x row: d_x, the block's two halves repeated, each half's
      // sum(x) per lane as f32.
      struct XBlock {
        Value scale, low, high, sumLow, sumHigh;
      };
      SmallVector<XBlock> xs;
      for (Value xRow : d.xRows) {
        Value at = im.add(xRow, im.mul(im.add(im.mul(blk, im.c(8)),
                                              im.c(4 * n + j)),
                                       im.c(kQ8_1Words)));
        XBlock x;
        x.scale = loadQ8_1Scale(b, loc, d.x, at);
        x.low = bt.xBytes(d.x, at, 0);
        x.high = bt.xBytes(d.x, at, 1);
        x.sumLow = toF32(dot(ones, x.low, zero));
        x.sumHigh = toF32(dot(ones, x.high, zero));
        xs.push_back(x);
      }
      for (int64_t g = 0; g < kGroups; ++g) {
        const Group &group = groups[g];
        auto codes = [&](int64_t word) -> Value {
          return bt.twoBitCodes(
              bt.rowWords(d.w, ArrayRef(d.ns).slice(4 * g, 4), rowWords,
                          blockWord, word),
              2 * j);
        };
        Value low = codes(4 + 8 * n), high = codes(8 + 8 * n);
        // d sc and dmin m of the low (sub-block 8n + 2j) and high halves.
        auto factors = [&](int64_t s) -> std::pair<Value, Value> {
          Value v = bt.rowByte(group.scaleWords, s);
          Value sc = arith::AndIOp::create(b, loc, v, bt.splat(0xf));
          Value m = bt.shr(v, 4);
          return {vm.mul(group.d, toF32(sc)), vm.mul(group.dmin, toF32(m))};
        };
        auto [dLow, mLow] = factors(8 * n + 2 * j);
        auto [dHigh, mHigh] = factors(8 * n + 2 * j + 1);
        for (size_t r = 0; r < rows; ++r) {
          const XBlock &x = xs[r];
          Value t = vm.add(vm.mul(dLow, toF32(dot(low, x.low, zero))),
                           vm.mul(dHigh, toF32(dot(high, x.high, zero))));
          t = vm.sub(t, vm.add(vm.mul(mLow, x.sumLow),
                               vm.mul(mHigh, x.sumHigh)));
          Value &a = acc[g * rows + r];
          a = vm.add(a, vm.mul(t, vm.splat(x.scale, 16)));
        }
      }
    }
  }
  return bt.finish(loop, acc, rows, vm);
}

SmallVector<Value> GraphLowering::emitI2_SByteTileDot(const DotOperands &d) {
  // emitByteTileDot's tile for i2_s weights: per 32-byte block (128
  // values, value 32k + m in bits 6 - 2k of byte m), plane k by plane k,
  // x block 4 blk + k's bytes 0..15 and 16..31 against each group's codes
  // of those values: its rows' bytes 0..15 and 16..31 shifted and masked
  // (0..2, which vpdpbusd takes as they are). sum((q - 1) x) =
  // sum(q x) - sum(x): the sums start at -sum(x), a dot product with ones
  // once per x block for all the tile's rows. Each lane accumulates its
  // i32 sums times d_x; the tensor's scale multiplies the totals.
  constexpr int64_t kValues = 128, kWords = 8;
  constexpr int64_t kGroups = kByteTileRows / 4;
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  ByteTileMath bt{b, loc};
  assert(static_cast<int64_t>(d.ns.size()) == kByteTileRows &&
         d.k % kValues == 0 && "lowerMatmul picks this tile");
  const size_t rows = d.xRows.size();
  const int64_t rowWords = d.k / kValues * kWords;
  SmallVector<Value> dots = [&] {
    OpBuilder::InsertionGuard guard(b);
    scf::ForOp loop = bt.begin(d.k / kValues, rows, vm);
    Value blk = loop.getInductionVar();
    Value blockWord = im.mul(blk, im.c(kWords));
    SmallVector<Value> acc(loop.getRegionIterArgs());
    for (int64_t k = 0; k < 4; ++k) {
      SmallVector<ByteTileMath::TernaryX> xs;
      for (Value xRow : d.xRows)
        xs.push_back(bt.ternaryX(
            d.x,
            im.add(xRow, im.mul(im.add(im.mul(blk, im.c(4)), im.c(k)),
                                im.c(kQ8_1Words))),
            vm));
      for (int64_t g = 0; g < kGroups; ++g) {
        // Plane k's codes of bytes `word` * 4 .. + 15 of each row.
        auto codes = [&](int64_t word) -> Value {
          return bt.twoBitCodes(
              bt.rowWords(d.w, ArrayRef(d.ns).slice(4 * g, 4), rowWords,
                          blockWord, word),
              6 - 2 * k);
        };
        Value low = codes(0), high = codes(4);
        for (size_t r = 0; r < rows; ++r)
          acc[g * rows + r] = bt.ternaryStep(acc[g * rows + r], low, high,
                                             xs[r], Value(), vm);
      }
    }
    return bt.finish(loop, acc, rows, vm);
  }();
  return scaledByI2S(b, loc, d.w, std::move(dots));
}

SmallVector<Value> GraphLowering::emitTQ2_0ByteTileDot(const DotOperands &d) {
  // emitByteTileDot's tile for tq2_0 weights. A row's 66-byte super-block
  // starts at an even byte: on a word (its 64 code bytes are words 0..15
  // from there, its f16 d the low half of word 16) or two bytes into one
  // (code word i is the high half of word i joined with the low half of
  // word i + 1, d the high half of word 16). With an even number of
  // blocks a row, a step takes a pair of blocks (33 words), the first on
  // a word and the second two bytes in, for every row alike. With an odd
  // number the rows alternate: a step takes one block, and each row's
  // 128-bit lane picks its own reading (a select; about 15% slower, so
  // only then). Value 128h + 32l + m of a block is bits 2l of its code
  // byte 32h + m: per half h and plane l, x block 8 blk + 4h + l against
  // each group's codes of those values (0..2), the sums started at
  // -sum(x) as in emitI2_SByteTileDot, each lane's accumulated times its
  // row's d and d_x.
  constexpr int64_t kBytes = 66, kPairWords = 33;
  constexpr int64_t kGroups = kByteTileRows / 4;
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  ByteTileMath bt{b, loc};
  assert(static_cast<int64_t>(d.ns.size()) == kByteTileRows &&
         d.k % 256 == 0 && "lowerMatmul picks this tile");
  const size_t rows = d.xRows.size();
  const int64_t blocks = d.k / 256;
  const bool pairs = blocks % 2 == 0;
  const int64_t perStep = pairs ? 2 : 1;
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = bt.begin(blocks / perStep, rows, vm);
  Value step = loop.getInductionVar();
  SmallVector<Value> acc(loop.getRegionIterArgs());
  // Reading block `block` of the step for group g: its code words i .. i +
  // 3 and its d, of each row.
  struct Reader {
    std::function<Value(int64_t)> codeWords;
    Value scale;
  };
  std::function<Reader(int64_t, int64_t)> reader;
  // Odd block counts: each row's block's first word, and which rows' blocks
  // start mid-word (a mask over the rows' 128-bit lanes), per group.
  SmallVector<SmallVector<Value, 4>> firstWords;
  SmallVector<Value> midWord;
  if (pairs) {
    Value pairWord = im.mul(step, im.c(kPairWords));
    reader = [&, pairWord](int64_t g, int64_t block) {
      auto wordsAt = [&, g, pairWord](int64_t word) {
        return bt.rowWords(d.w, ArrayRef(d.ns).slice(4 * g, 4),
                           blocks / 2 * kPairWords, pairWord, word);
      };
      Reader r;
      r.codeWords = [&, wordsAt, block](int64_t i) {
        return block == 0 ? wordsAt(i)
                          : bt.joinHalves(wordsAt(16 + i), wordsAt(17 + i));
      };
      r.scale = block == 0
                    ? bt.halves(bt.spread(wordsAt(16), 0))
                    : bt.halves(bt.shr(bt.spread(wordsAt(29), 3), 16));
      return r;
    };
  } else {
    for (int64_t g = 0; g < kGroups; ++g) {
      SmallVector<Value, 4> words;
      SmallVector<Value> lanes;
      for (int64_t r = 0; r < 4; ++r) {
        Value byte =
            im.mul(im.add(im.mul(d.ns[4 * g + r], im.c(blocks)), step),
                   im.c(kBytes));
        words.push_back(im.div(byte, 4));
        lanes.append(4, isMisaligned(byte, loc));
      }
      firstWords.push_back(words);
      midWord.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({16}, b.getI1Type()), lanes));
    }
    reader = [&](int64_t g, int64_t) {
      auto quads = [&, g](int64_t i) {
        SmallVector<Value> q;
        for (Value word : firstWords[g])
          q.push_back(bt.quad(d.w, im.add(word, im.c(i))));
        return bt.concat(q);
      };
      Reader r;
      Value mid = midWord[g];
      r.codeWords = [&, quads, mid](int64_t i) -> Value {
        Value here = quads(i);
        return arith::SelectOp::create(
            b, loc, mid, bt.joinHalves(here, quads(i + 1)), here);
      };
      // Word 16 of each row's block (only that word: past it the last
      // block of the buffer ends), in the row's four lanes.
      SmallVector<Value> heads;
      for (Value word : firstWords[g])
        heads.append(4, sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                           im.add(word, im.c(16))));
      Value head = vector::FromElementsOp::create(
          b, loc, VectorType::get({16}, b.getI32Type()), heads);
      r.scale = bt.halves(
          arith::SelectOp::create(b, loc, mid, bt.shr(head, 16), head));
      return r;
    };
  }
  for (int64_t block = 0; block < perStep; ++block) {
    SmallVector<Reader> readers;
    for (int64_t g = 0; g < kGroups; ++g)
      readers.push_back(reader(g, block));
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t l = 0; l < 4; ++l) {
        SmallVector<ByteTileMath::TernaryX> xs;
        for (Value xRow : d.xRows)
          xs.push_back(bt.ternaryX(
              d.x,
              im.add(xRow, im.mul(im.add(im.mul(step, im.c(8 * perStep)),
                                         im.c(8 * block + 4 * h + l)),
                                  im.c(kQ8_1Words))),
              vm));
        for (int64_t g = 0; g < kGroups; ++g) {
          auto codes = [&](int64_t i) -> Value {
            return bt.twoBitCodes(readers[g].codeWords(i), 2 * l);
          };
          Value low = codes(8 * h), high = codes(8 * h + 4);
          for (size_t r = 0; r < rows; ++r)
            acc[g * rows + r] =
                bt.ternaryStep(acc[g * rows + r], low, high, xs[r],
                               readers[g].scale, vm);
        }
      }
    }
  }
  return bt.finish(loop, acc, rows, vm);
}

SmallVector<Value> GraphLowering::emitQ4_KByteTileDot(const DotOperands &d) {
  // emitByteTileDot's tile for q4_k weights: per super-block (36 words:
  // f16 d and dmin, 12 bytes of 6-bit scales and mins, then four quarters
  // of 32 code bytes) and quarter c, a row's 32 bytes hold sub-block 2c in
  // their low nibbles and 2c + 1 in their high ones; x block j lines up
  // with sub-block j. Per sub-block, lane by lane,
  //   d_x (d sc sum(q x) - dmin m sum(x)),
  // with sum(q x) the codes' integer dot product (vpdpbusd) and sum(x) the
  // same with a vector of ones, once per x block. sc and m are taken from
  // the scale bytes of each 128-bit lane (its row's) by byte shuffles.
  Location loc = d.loc;
  IndexMath im(b, loc);
  BlockMath vm{b, loc};
  ByteTileMath bt{b, loc};
  constexpr int64_t kGroups = kByteTileRows / 4;
  constexpr int64_t kWords = 36;
  assert(static_cast<int64_t>(d.ns.size()) == kByteTileRows &&
         d.k % 256 == 0 && "lowerMatmul picks this tile");
  const size_t rows = d.xRows.size();
  auto shr = [&](Value v, int64_t n) { return bt.shr(v, n); };
  auto shl = [&](Value v, int64_t n) -> Value {
    return arith::ShLIOp::create(b, loc, v, bt.splat(n));
  };
  auto mask = [&](Value v, int64_t m) -> Value {
    return arith::AndIOp::create(b, loc, v, bt.splat(m));
  };
  auto orI = [&](Value x, Value y) -> Value {
    return arith::OrIOp::create(b, loc, x, y);
  };
  auto toF32 = [&](Value v) -> Value {
    return arith::SIToFPOp::create(b, loc, vm.f32s(16), v);
  };
  auto dot = [&](Value a, Value x, Value acc) -> Value {
    return ex::VectorDot4I8Op::create(b, loc, a, x, acc);
  };
  Value zero = bt.zeros();
  Value ones = vm.i8Splat(1, 64);
  Value zeroBytes = vm.i8Splat(0, 64);
  // Byte t of each row's 16 bytes (a 128-bit lane), zero-extended into
  // every one of the row's four lanes.
  auto laneByte = [&](Value rowBytes, int64_t t) -> Value {
    SmallVector<int64_t> m;
    for (int64_t o = 0; o < 64; ++o)
      m.push_back(o % 4 == 0 ? o / 16 * 16 + t : 64);
    return vector::BitCastOp::create(
        b, loc, VectorType::get({16}, b.getI32Type()),
        vector::ShuffleOp::create(b, loc, rowBytes, zeroBytes, m));
  };

  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = bt.begin(d.k / 256, rows, vm);
  Value block = loop.getInductionVar();
  SmallVector<Value> acc(loop.getRegionIterArgs());
  const int64_t rowWords = d.k / 256 * kWords;
  Value blockWord = im.mul(block, im.c(kWords));
  // Four words of each of group g's rows, `word` words into the
  // super-block.
  auto wordsAt = [&](int64_t g, int64_t word) {
    return bt.rowWords(d.w, ArrayRef(d.ns).slice(4 * g, 4), rowWords,
                       blockWord, word);
  };
  // Per group, once per super-block: words 0..3 of each row, d and dmin
  // then the 12 scale bytes (bytes 4..15 of the lane).
  struct Head {
    Value d, dmin, bytes;
  };
  SmallVector<Head> heads;
  for (int64_t g = 0; g < kGroups; ++g) {
    Value head = wordsAt(g, 0);
    Value scaleWord = bt.spread(head, 0);
    heads.push_back({bt.halves(scaleWord), bt.halves(shr(scaleWord, 16)),
                     bt.bytes(head)});
  }
  for (int64_t c = 0; c < 4; ++c) {
    // x blocks 2c and 2c + 1, per x row: d_x, the two halves repeated,
    // and d_x sum(x) per lane.
    struct XBlock {
      Value scale, low, high, sum;
    };
    SmallVector<XBlock> xs[2];
    for (int64_t h = 0; h < 2; ++h)
      for (Value xRow : d.xRows) {
        Value at = im.add(
            xRow, im.add(im.mul(block, im.c(8 * kQ8_1Words)),
                         im.c((2 * c + h) * kQ8_1Words)));
        XBlock x;
        x.scale = loadQ8_1Scale(b, loc, d.x, at);
        x.low = bt.xBytes(d.x, at, 0);
        x.high = bt.xBytes(d.x, at, 1);
        x.sum = vm.mul(toF32(dot(ones, x.high, dot(ones, x.low, zero))),
                       vm.splat(x.scale, 16));
        xs[h].push_back(x);
      }
    for (int64_t g = 0; g < kGroups; ++g) {
      const Head &head = heads[g];
      auto scaleByte = [&](int64_t i) { return laneByte(head.bytes, 4 + i); };
      // Sub-block j's d sc and dmin m per row.
      auto scales = [&](int64_t j) -> std::pair<Value, Value> {
        Value sc, m;
        if (j < 4) {
          sc = mask(scaleByte(j), 63);
          m = mask(scaleByte(j + 4), 63);
        } else {
          Value packed = scaleByte(j + 4);
          sc = orI(mask(packed, 15), shl(shr(scaleByte(j - 4), 6), 4));
          m = orI(shr(packed, 4), shl(shr(scaleByte(j), 6), 4));
        }
        return {vm.mul(head.d, toF32(sc)), vm.mul(head.dmin, toF32(m))};
      };
      // The quarter's code bytes 0..15 and 16..31 of each row.
      Value first = wordsAt(g, 4 + 8 * c), second = wordsAt(g, 8 + 8 * c);
      for (int64_t h = 0; h < 2; ++h) {
        auto [dsc, dm] = scales(2 * c + h);
        Value low = bt.nibbles(first, 4 * h),
              high = bt.nibbles(second, 4 * h);
        for (size_t r = 0; r < rows; ++r) {
          const XBlock &x = xs[h][r];
          Value sums = dot(high, x.high, dot(low, x.low, zero));
          Value &a = acc[g * rows + r];
          a = vm.add(a, vm.mul(toF32(sums),
                               vm.mul(dsc, vm.splat(x.scale, 16))));
          a = vm.sub(a, vm.mul(x.sum, dm));
        }
      }
    }
  }
  return bt.finish(loop, acc, rows, vm);
}

SmallVector<Value> GraphLowering::emitQ8_0DotVector(const DotOperands &d,
                                                   bool q8Activations) {
  // q8_0: 8 words of 32 signed bytes per block.
  BlockMath vm{b, d.loc};
  auto decode = [&](Value words) { return vm.bytes(words); };
  return q8Activations ? emitQ8ActivationPairDotVector(d, 8, decode)
                       : emitHalfScaledBlockPairDotVector(d, 8, decode);
}

SmallVector<Value> GraphLowering::emitQ4_KDotVector(const DotOperands &d,
                                                    bool fifthBits,
                                                    bool q8Activations) {
  // One super-block (36 words) per step: per quarter c, the 32 quant
  // bytes at word 4 + 8c hold sub-block 2c in their low nibbles and 2c + 1
  // in their high ones, each against 32 consecutive values of x. The 64
  // values d*sc*q - dmin*m are decoded once and multiplied with every x
  // row (emitDecodedTileDot: a prompt chunk's rows share the decoding).
  // q5_k (`fifthBits`, 44 words): the 32 bytes qh at word 4 give each
  // quarter c a fifth bit (bit 2c for the low nibbles, 2c + 1 for the high
  // ones) and the quants start at word 12.
  // With q8_1 activations (x's blocks of 32 line up with the sub-blocks),
  // each sub-block's codes q (0..31) multiply x's bytes in integers
  // (exp.vector_dot4_i8, 8 lanes of four), and so do ones, for sum(x):
  // d sc d_x sum(q x) and dmin m d_x sum(x) accumulate in two
  // vector<8xf32> per row, subtracted at the end.
  constexpr int64_t kValues = 256;
  const int64_t kWords = fifthBits ? 44 : 36;
  const int64_t quantWord = fifthBits ? 12 : 4;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  BlockMath vm{b, loc};
  int64_t blocks = d.k / kValues;
  // The super-block at word `word`: its f16 scale and min scale, and
  // q5_k's fifth bits.
  struct SuperBlock {
    Value word, scaleD, scaleMin, qh;
  };
  auto superBlockAt = [&](Value word) {
    Value head = sm::LoadOp::create(b, loc, b.getI32Type(), d.w, word);
    SuperBlock s{word,
                 ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 0),
                 ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 1),
                 {}};
    if (fifthBits)
      s.qh = vm.bytes(vm.words(d.w, im.add(word, im.c(4))));
    return s;
  };
  // Quarter c of a super-block: its two sub-blocks' codes (low nibbles,
  // then high) and their scales d*sc and mins dmin*m.
  struct Quarter {
    Value lo, hi, dLo, dHi, mLo, mHi;
    /// q4_k: the 32 quant bytes widened to 32-bit lanes (the f32 path).
    Value wide;
  };
  auto quarterOf = [&](const SuperBlock &s, int64_t c) {
    auto scaleByte = [&](Value i) -> Value {
      return loadByte(b, loc, d.w,
                      im.add(im.mul(s.word, im.c(4)), im.add(im.c(4), i)));
    };
    Quarter q;
    Value quants =
        vm.bytes(vm.words(d.w, im.add(s.word, im.c(quantWord + 8 * c))));
    q.lo = arith::AndIOp::create(b, loc, quants, vm.i8Splat(0xf));
    q.hi = arith::ShRUIOp::create(b, loc, quants, vm.i8Splat(4));
    if (!fifthBits)
      q.wide = arith::ExtUIOp::create(
          b, loc, VectorType::get({32}, b.getI32Type()), quants);
    if (fifthBits) {
      // Bit `bit` of every qh byte, moved to bit 4.
      auto fifth = [&](int64_t bit) -> Value {
        Value one = arith::AndIOp::create(
            b, loc, arith::ShRUIOp::create(b, loc, s.qh, vm.i8Splat(bit)),
            vm.i8Splat(1));
        return arith::ShLIOp::create(b, loc, one, vm.i8Splat(4));
      };
      q.lo = arith::OrIOp::create(b, loc, q.lo, fifth(2 * c));
      q.hi = arith::OrIOp::create(b, loc, q.hi, fifth(2 * c + 1));
    }
    auto [scLo, mnLo] = unpackQ4_KScaleMin(im, wm, im.c(2 * c), scaleByte);
    auto [scHi, mnHi] =
        unpackQ4_KScaleMin(im, wm, im.c(2 * c + 1), scaleByte);
    q.dLo = ex::MulOp::create(b, loc, s.scaleD, wm.toF32(scLo));
    q.dHi = ex::MulOp::create(b, loc, s.scaleD, wm.toF32(scHi));
    q.mLo = ex::MulOp::create(b, loc, s.scaleMin, wm.toF32(mnLo));
    q.mHi = ex::MulOp::create(b, loc, s.scaleMin, wm.toF32(mnHi));
    return q;
  };
  auto blockWordOf = [&](Value n, Value blk) {
    return im.mul(im.add(im.mul(n, im.c(blocks)), blk), im.c(kWords));
  };
  if (!q8Activations) {
    // Piece p: sub-block p, the values d*sc*q - dmin*m. Each tile row's
    // super-block is read with its first piece, a quarter with its first.
    SmallVector<SuperBlock> superBlocks(d.ns.size());
    SmallVector<Quarter> quarters(d.ns.size());
    return emitDecodedTileDot(
        d, blocks, kValues, 8,
        [&](size_t t, Value n, Value blk, int64_t p) -> WeightPiece {
          if (p == 0)
            superBlocks[t] = superBlockAt(blockWordOf(n, blk));
          if (p % 2 == 0)
            quarters[t] = quarterOf(superBlocks[t], p / 2);
          const Quarter &q = quarters[t];
          bool low = p % 2 == 0;
          // q4_k's codes from the widened bytes (a mask or a shift in
          // 32-bit lanes): one widening shuffle per quarter rather than
          // one per piece (measured: +3.5% decode on the demo file; q5_k,
          // whose fifth bits would be widened too, gains nothing).
          Value codes;
          if (fifthBits) {
            codes = vm.unsignedToF32(low ? q.lo : q.hi);
          } else {
            codes = arith::SIToFPOp::create(
                b, loc, vm.f32s(),
                low ? Value(arith::AndIOp::create(b, loc, q.wide,
                                                  vm.i32Splat(0xf, 32)))
                    : Value(arith::ShRUIOp::create(b, loc, q.wide,
                                                   vm.i32Splat(4, 32))));
          }
          return {vm.sub(vm.mul(vm.splat(low ? q.dLo : q.dHi), codes),
                         vm.splat(low ? q.mLo : q.mHi)),
                  32 * p};
        });
  }
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  auto loop = scf::ForOp::create(
      b, loc, im.c(0), im.c(blocks), im.c(1),
      SmallVector<Value>(2 * rows, vm.zeros(BlockMath::kByteDotLanes)));
  b.setInsertionPointToStart(loop.getBody());
  Value blk = loop.getInductionVar();
  SuperBlock s = superBlockAt(blockWordOf(d.n, blk));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  Value ones = vm.i8Splat(1);
  for (int64_t c = 0; c < 4; ++c) {
    Quarter q = quarterOf(s, c);
    // Sub-block 2c + half of x row r against codes q, scaled by sc and m.
    auto addSub = [&](size_t r, int64_t half, Value codes, Value sc,
                      Value m) {
      Value xBlock = im.add(
          d.xRows[r], im.mul(im.add(im.mul(blk, im.c(8)), im.c(2 * c + half)),
                             im.c(kQ8_1Words)));
      Value dx = loadQ8_1Scale(b, loc, d.x, xBlock);
      Value xs = vm.bytes(vm.words(d.x, im.add(xBlock, im.c(1))));
      acc[r] = vm.add(acc[r], vm.scaledByteDot(
                                  codes, xs, ex::MulOp::create(b, loc, sc, dx)));
      acc[rows + r] = vm.add(
          acc[rows + r],
          vm.scaledByteDot(ones, xs, ex::MulOp::create(b, loc, m, dx)));
    };
    for (size_t r = 0; r < rows; ++r) {
      addSub(r, 0, q.lo, q.dLo, q.mLo);
      addSub(r, 1, q.hi, q.dHi, q.mHi);
    }
  }
  scf::YieldOp::create(b, loc, acc);
  b.setInsertionPointAfter(loop);
  SmallVector<Value> dots;
  for (size_t r = 0; r < rows; ++r)
    dots.push_back(vm.sub(vm.sum(loop.getResult(r)),
                          vm.sum(loop.getResult(rows + r))));
  return dots;
}

SmallVector<Value> GraphLowering::emitQ6_KDotVector(const DotOperands &d,
                                                    bool q8Activations) {
  // Pairs of q6_k super-blocks: 420 bytes, 105 words, word-aligned when a
  // row has an even number of super-blocks (K a multiple of 512); the
  // first block of a pair starts on a word, the second two bytes past one.
  // For the 32 values 128h + 32r + l (l < 32) of a block: the low (r < 2)
  // or high nibble of the 32 bytes ql[64h + 32(r & 1) + l], bits 2r of the
  // 32 bytes qh[32h + l], minus 32, times d * scales[8h + 2r + l / 16].
  // With q8_1 activations the 32 values of piece p (below) are x block
  // 16 pair + p: their codes (0..63, read unsigned) multiply x's bytes in
  // integers (exp.vector_dot4_i8, 8 lanes of four values), bytes of 32
  // with the same x bytes give 32 sum(x) per lane, and the difference is
  // exact; lanes 0-3 take the first scale, 4-7 the second, times d_x.
  constexpr int64_t kBytes = 210;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  BlockMath vm{b, loc};
  int64_t pairs = d.k / 512;
  // A vector of `width` lanes: `first` in its first half, `second` in its
  // second (the first 16 of 32 values take one scale, the last 16 the
  // next; so do lanes 0-3 and 4-7 of their byte sums).
  auto halves = [&](Value first, Value second, int64_t width) -> Value {
    SmallVector<bool> firstHalf(width, false);
    std::fill(firstHalf.begin(), firstHalf.begin() + width / 2, true);
    Value mask = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({width}, b.getI1Type()),
                               ArrayRef<bool>(firstHalf)));
    return arith::SelectOp::create(b, loc, mask, vm.splat(first, width),
                                   vm.splat(second, width));
  };
  // Piece p: the 32 values 128h + 32r of block p / 8 of the pair, with
  // h = p / 4 % 2 and r = p % 4: their codes q (0..63) and their two
  // scales d * scales[..]. Pieces read their bytes independently; the
  // loads they share are one after LLVM's CSE (the loop stores nothing).
  struct Piece {
    Value codes, scaleFirst, scaleSecond;
  };
  auto pieceOf = [&](Value n, Value pair, int64_t p) -> Piece {
    int64_t blockInPair = p / 8, h = p / 4 % 2, r = p % 4;
    Value pairWord = im.mul(im.add(im.mul(n, im.c(pairs)), pair), im.c(105));
    // Byte offsets within the block; the second block's are 2 past a word.
    int64_t start = blockInPair * kBytes;
    Value blockByte = im.add(im.mul(pairWord, im.c(4)), im.c(start));
    // The 32 bytes at byte `offset` of the block.
    auto load32 = [&](int64_t offset) -> Value {
      int64_t at = start + offset;
      Value word = im.add(pairWord, im.c(at / 4));
      Value low = vm.words(d.w, word);
      if (at % 4 == 0)
        return vm.bytes(low);
      return vm.bytesAfterHalfWord(low, vm.words(d.w, im.add(word, im.c(1))));
    };
    Value superScale = loadHalf(b, loc, d.w, im.add(blockByte, im.c(208)));
    auto scaleOf = [&](int64_t i) -> Value {
      Value q = wm.signExtendByte(
          loadByte(b, loc, d.w, im.add(blockByte, im.c(192 + i))));
      return ex::MulOp::create(b, loc, superScale, wm.toF32(q));
    };
    Value qh = load32(128 + 32 * h);
    Value ql = load32(64 * h + 32 * (r & 1));
    Value nibble =
        r < 2 ? Value(arith::AndIOp::create(b, loc, ql, vm.i8Splat(0xf)))
              : Value(arith::ShRUIOp::create(b, loc, ql, vm.i8Splat(4)));
    Value twoBits = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, qh, vm.i8Splat(2 * r)),
        vm.i8Splat(3));
    Value q = arith::OrIOp::create(
        b, loc, nibble,
        arith::ShLIOp::create(b, loc, twoBits, vm.i8Splat(4)));
    int64_t scale = 8 * h + 2 * r;
    return {q, scaleOf(scale), scaleOf(scale + 1)};
  };
  if (!q8Activations) {
    auto decode = [&](size_t, Value n, Value pair, int64_t p) -> WeightPiece {
      Piece piece = pieceOf(n, pair, p);
      Value scales =
          halves(piece.scaleFirst, piece.scaleSecond, BlockMath::kWidth);
      Value q = arith::SubIOp::create(b, loc, piece.codes, vm.i8Splat(32));
      return {vm.mul(scales, vm.signedToF32(q)), 32 * p};
    };
    return emitDecodedTileDot(d, pairs, 512, 16, decode);
  }
  const size_t rows = d.xRows.size();
  constexpr int64_t lanes = BlockMath::kByteDotLanes;
  auto sums = VectorType::get({lanes}, b.getI32Type());
  Value noSums = arith::ConstantOp::create(b, loc, b.getZeroAttr(sums));
  Value thirtyTwo = vm.i8Splat(32);
  OpBuilder::InsertionGuard guard(b);
  auto loop = scf::ForOp::create(b, loc, im.c(0), im.c(pairs), im.c(1),
                                 SmallVector<Value>(rows, vm.zeros(lanes)));
  b.setInsertionPointToStart(loop.getBody());
  Value pair = loop.getInductionVar();
  SmallVector<Value> acc(loop.getRegionIterArgs());
  for (int64_t p = 0; p < 16; ++p) {
    Piece piece = pieceOf(d.n, pair, p);
    for (size_t r = 0; r < rows; ++r) {
      Value xBlock = im.add(
          d.xRows[r],
          im.mul(im.add(im.mul(pair, im.c(16)), im.c(p)), im.c(kQ8_1Words)));
      Value dx = loadQ8_1Scale(b, loc, d.x, xBlock);
      Value xs = vm.bytes(vm.words(d.x, im.add(xBlock, im.c(1))));
      Value dot = ex::VectorDot4I8Op::create(b, loc, piece.codes, xs, noSums,
                                             /*a_unsigned=*/true);
      Value offsets =
          ex::VectorDot4I8Op::create(b, loc, thirtyTwo, xs, noSums);
      Value exact = arith::SubIOp::create(b, loc, dot, offsets);
      Value scales =
          halves(ex::MulOp::create(b, loc, piece.scaleFirst, dx),
                 ex::MulOp::create(b, loc, piece.scaleSecond, dx), lanes);
      acc[r] = vm.add(
          acc[r],
          vm.mul(scales, arith::SIToFPOp::create(b, loc, vm.f32s(lanes),
                                                  exact)));
    }
  }
  scf::YieldOp::create(b, loc, acc);
  b.setInsertionPointAfter(loop);
  SmallVector<Value> dots;
  for (size_t r = 0; r < rows; ++r)
    dots.push_back(vm.sum(loop.getResult(r)));
  return dots;
}

} // namespace hesper::lowering
