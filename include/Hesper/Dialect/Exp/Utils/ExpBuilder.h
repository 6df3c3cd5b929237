//===- ExpBuilder.h - Terse construction of exp expressions ----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// ExpBuilder wraps an OpBuilder positioned in a per-lane body and offers one
// method per exp op, so that a body reads like the expression it computes:
//
//   ExpBuilder e(builder, loc);
//   Value y = e.mul(e.mul(x, e.rsqrt(e.add(mean, e.f32(eps)))), w);
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_EXP_UTILS_EXPBUILDER_H
#define HESPER_DIALECT_EXP_UTILS_EXPBUILDER_H

#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/IR/Builders.h"

namespace hesper {
namespace exp {

class ExpBuilder {
public:
  ExpBuilder(mlir::OpBuilder &builder, mlir::Location loc)
      : b(builder), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }

  // Constants.
  mlir::Value f32(double v) {
    return ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  mlir::Value i32(int64_t v) {
    return ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  mlir::Value constant(mlir::Type type, double v) {
    if (mlir::isa<mlir::FloatType>(type))
      return ConstantOp::create(b, loc, b.getFloatAttr(type, v));
    return ConstantOp::create(
        b, loc, b.getIntegerAttr(type, static_cast<int64_t>(v)));
  }

  // Arithmetic.
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return AddOp::create(b, loc, x, y);
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return SubOp::create(b, loc, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return MulOp::create(b, loc, x, y);
  }
  mlir::Value div(mlir::Value x, mlir::Value y) {
    return DivOp::create(b, loc, x, y);
  }
  mlir::Value rem(mlir::Value x, mlir::Value y) {
    return RemOp::create(b, loc, x, y);
  }
  mlir::Value min(mlir::Value x, mlir::Value y) {
    return MinOp::create(b, loc, x, y);
  }
  mlir::Value max(mlir::Value x, mlir::Value y) {
    return MaxOp::create(b, loc, x, y);
  }
  mlir::Value neg(mlir::Value x) { return NegOp::create(b, loc, x); }
  mlir::Value abs(mlir::Value x) { return AbsOp::create(b, loc, x); }
  mlir::Value fma(mlir::Value x, mlir::Value y, mlir::Value z) {
    return FmaOp::create(b, loc, x, y, z);
  }
  mlir::Value clamp(mlir::Value x, mlir::Value lo, mlir::Value hi) {
    return ClampOp::create(b, loc, x, lo, hi);
  }

  // Comparison and selection.
  mlir::Value cmp(CmpPredicate p, mlir::Value x, mlir::Value y) {
    return CmpOp::create(b, loc, p, x, y);
  }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) {
    return SelectOp::create(b, loc, c, x, y);
  }

  // Conversions.
  mlir::Value convert(mlir::Value x, mlir::Type to, bool isUnsigned = false) {
    return ConvertOp::create(b, loc, to, x, isUnsigned);
  }
  mlir::Value toF32(mlir::Value x) { return convert(x, b.getF32Type()); }
  mlir::Value toI32(mlir::Value x) { return convert(x, b.getI32Type()); }

  // Math.
  mlir::Value exp(mlir::Value x) { return ExpOp::create(b, loc, x); }
  mlir::Value log(mlir::Value x) { return LogOp::create(b, loc, x); }
  mlir::Value sqrt(mlir::Value x) { return SqrtOp::create(b, loc, x); }
  mlir::Value rsqrt(mlir::Value x) { return RsqrtOp::create(b, loc, x); }
  mlir::Value tanh(mlir::Value x) { return TanhOp::create(b, loc, x); }
  mlir::Value sin(mlir::Value x) { return SinOp::create(b, loc, x); }
  mlir::Value cos(mlir::Value x) { return CosOp::create(b, loc, x); }
  mlir::Value pow(mlir::Value x, mlir::Value y) {
    return PowOp::create(b, loc, x, y);
  }
  mlir::Value silu(mlir::Value x) { return SiluOp::create(b, loc, x); }
  mlir::Value gelu(mlir::Value x) { return GeluOp::create(b, loc, x); }
  mlir::Value round(mlir::Value x) { return RoundOp::create(b, loc, x); }

  // Integer helpers.
  mlir::Value divConst(mlir::Value x, int64_t d) {
    return DivByConstOp::create(b, loc, x, d);
  }
  mlir::Value remConst(mlir::Value x, int64_t d) {
    return RemByConstOp::create(b, loc, x, d);
  }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace exp
} // namespace hesper

#endif // HESPER_DIALECT_EXP_UTILS_EXPBUILDER_H
