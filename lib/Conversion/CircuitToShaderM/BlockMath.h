//===- BlockMath.h - Vector arithmetic of one-lane block dots ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Shared by the one-lane (CPU target) dot products of BlockDots.cpp
// (q8_0, q4_k, q6_k) and Ternary.cpp (tq1_0, tq2_0, i2_s).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_CONVERSION_CIRCUITTOSHADERM_BLOCKMATH_H
#define HESPER_LIB_CONVERSION_CIRCUITTOSHADERM_BLOCKMATH_H

#include "GraphLowering.h"

namespace hesper::lowering {

/// Vector arithmetic for the one-lane dot products: 32 values of a block
/// at a time, accumulated per value in a vector<32xf32> whose lanes are
/// added once per row. Products and sums may be contracted and
/// reassociated (a fixed order in the compiled code).
struct BlockMath {
  OpBuilder &b;
  Location loc;
  static constexpr int64_t kWidth = 32;
  /// Lanes of scaledByteDot's result: four bytes each.
  static constexpr int64_t kByteDotLanes = kWidth / 4;

  VectorType f32s(int64_t width = kWidth) const {
    return VectorType::get({width}, b.getF32Type());
  }
  Value zeros(int64_t width = kWidth) {
    return arith::ConstantOp::create(b, loc, b.getZeroAttr(f32s(width)));
  }
  Value splat(Value scalar, int64_t width = kWidth) {
    return vector::BroadcastOp::create(b, loc, f32s(width), scalar);
  }
  arith::FastMathFlags flags() const {
    return arith::FastMathFlags::contract | arith::FastMathFlags::reassoc;
  }
  Value mul(Value x, Value y) {
    return arith::MulFOp::create(b, loc, x, y, flags());
  }
  Value add(Value x, Value y) {
    return arith::AddFOp::create(b, loc, x, y, flags());
  }
  Value sub(Value x, Value y) {
    return arith::SubFOp::create(b, loc, x, y, flags());
  }
  Value sum(Value v) {
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, v,
                                       arith::FastMathFlags::reassoc);
  }
  /// Eight 32-bit words as their 32 bytes, in memory order.
  Value bytes(Value words) {
    return vector::BitCastOp::create(
        b, loc, VectorType::get({kWidth}, b.getI8Type()), words);
  }
  Value signedToF32(Value i8s) {
    return arith::SIToFPOp::create(b, loc, f32s(), i8s);
  }
  Value unsignedToF32(Value i8s) {
    return arith::UIToFPOp::create(b, loc, f32s(), i8s);
  }
  Value i8Splat(int64_t v, int64_t width = kWidth) {
    auto type = VectorType::get({width}, b.getI8Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getI8IntegerAttr(v)));
  }
  /// `width` lanes of the i32 `v` (8 by default: eight words, 32 bytes).
  Value i32Splat(int64_t v, int64_t width = 8) {
    auto type = VectorType::get({width}, b.getI32Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getI32IntegerAttr(v)));
  }
  /// Eight 32-bit words of `buffer` from word `word` on.
  Value words(Value buffer, Value word) {
    return sm::LoadOp::create(b, loc, VectorType::get({8}, b.getI32Type()),
                              buffer, word);
  }
  /// The 32 bytes that start two bytes into `low`'s first word: the high
  /// halves of `low`'s words joined with the low halves of `high`'s (the
  /// eight words one further on).
  Value bytesAfterHalfWord(Value low, Value high) {
    return bytes(arith::OrIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, low, i32Splat(16)),
        arith::ShLIOp::create(b, loc, high, i32Splat(16))));
  }
  /// `scale` times the dot products of 32 bytes `a` and `bytesB` in 8
  /// lanes of four (exp.vector_dot4_i8, exact in i32), as vector<8xf32>.
  Value scaledByteDot(Value a, Value bytesB, Value scale) {
    auto sums = VectorType::get({kByteDotLanes}, b.getI32Type());
    Value dot = exp::VectorDot4I8Op::create(
        b, loc, a, bytesB,
        arith::ConstantOp::create(b, loc, b.getZeroAttr(sums)));
    return mul(splat(scale, kByteDotLanes),
               arith::SIToFPOp::create(b, loc, f32s(kByteDotLanes), dot));
  }
  /// 32 consecutive f32 values of `x` from element `at` on.
  Value x32(Value x, Value at) {
    return sm::LoadOp::create(b, loc, f32s(), x, at);
  }
  /// acc + w * x.
  Value multiplyAdd(Value acc, Value w, Value x) {
    return add(acc, mul(w, x));
  }
  /// A loop over `count` units carrying one vector<32xf32> sum per x row,
  /// from zero; the builder is left inside (the caller keeps an
  /// InsertionGuard).
  scf::ForOp beginRows(int64_t count, size_t rows) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value end = arith::ConstantIndexOp::create(b, loc, count);
    auto loop = scf::ForOp::create(b, loc, zero, end, one,
                                   SmallVector<Value>(rows, zeros()));
    b.setInsertionPointToStart(loop.getBody());
    return loop;
  }
  /// Yields the next sums and returns each row's total, the lanes of its
  /// vector added once.
  SmallVector<Value> finishRows(scf::ForOp loop, ValueRange next) {
    scf::YieldOp::create(b, loc, next);
    b.setInsertionPointAfter(loop);
    SmallVector<Value> dots;
    for (Value sums : loop.getResults())
      dots.push_back(sum(sums));
    return dots;
  }
};

} // namespace hesper::lowering

#endif // HESPER_LIB_CONVERSION_CIRCUITTOSHADERM_BLOCKMATH_H
