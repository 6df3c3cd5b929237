//===- ExpFolds.cpp - Constant folding and identities for Exp ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Folders evaluate ops whose operands are constants and simplify algebraic
// identities (x + 0, x * 1, select with a constant condition, ...). Float
// identities are only those that hold for every input, NaN and signed zero
// included: x * 0.0 is not folded, and x + 0.0 only folds for -0.0.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;
using namespace hesper::exp;

namespace {
using APIntFn = function_ref<std::optional<APInt>(const APInt &, const APInt &)>;
using APFloatFn =
    function_ref<std::optional<APFloat>(const APFloat &, const APFloat &)>;
} // namespace

/// Folds a binary op over integer or float constants (scalars or vectors).
static Attribute foldBinary(ArrayRef<Attribute> operands, Type resultType,
                            APIntFn intFn, APFloatFn floatFn) {
  if (intFn)
    if (Attribute r = constFoldBinaryOpConditional<IntegerAttr, APInt, void>(
            operands, resultType,
            [&](APInt a, APInt b) { return intFn(a, b); }))
      return r;
  if (floatFn)
    if (Attribute r = constFoldBinaryOpConditional<FloatAttr, APFloat, void>(
            operands, resultType,
            [&](APFloat a, APFloat b) { return floatFn(a, b); }))
      return r;
  return {};
}

static bool isIntZero(Attribute attr) {
  return attr && matchPattern(attr, m_Zero());
}
static bool isIntOne(Attribute attr) {
  return attr && matchPattern(attr, m_One());
}
static bool isFloatOne(Attribute attr) {
  return attr && matchPattern(attr, m_OneFloat());
}
static bool isFloatNegZero(Attribute attr) {
  return attr && matchPattern(attr, m_NegZeroFloat());
}
static bool isFloatPosZero(Attribute attr) {
  return attr && matchPattern(attr, m_PosZeroFloat());
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isIntZero(adaptor.getRhs()) || isFloatNegZero(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a + b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a + b;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isIntZero(adaptor.getRhs()) || isFloatPosZero(adaptor.getRhs()))
    return getLhs();
  // x - x == 0 only for integers (inf - inf is NaN).
  if (getLhs() == getRhs() && isa<IntegerType, IndexType>(
                                  getElementTypeOrSelf(getType())))
    return Builder(getContext()).getZeroAttr(getType());
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a - b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a - b;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isIntOne(adaptor.getRhs()) || isFloatOne(adaptor.getRhs()))
    return getLhs();
  if (isIntZero(adaptor.getRhs()))
    return adaptor.getRhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a * b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a * b;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isIntOne(adaptor.getRhs()) || isFloatOne(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        bool overflow = false;
        APInt r = a.sdiv_ov(b, overflow);
        if (overflow)
          return std::nullopt;
        return r;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a / b;
      });
}

OpFoldResult RemOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        return a.srem(b);
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        APFloat r = a;
        r.mod(b);
        return r;
      });
}

OpFoldResult UDivOp::fold(FoldAdaptor adaptor) {
  if (isIntOne(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        return a.udiv(b);
      },
      nullptr);
}

OpFoldResult URemOp::fold(FoldAdaptor adaptor) {
  if (isIntOne(adaptor.getRhs()))
    return Builder(getContext()).getZeroAttr(getType());
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        return a.urem(b);
      },
      nullptr);
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.slt(b) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return llvm::minnum(a, b);
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.sgt(b) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return llvm::maxnum(a, b);
      });
}

OpFoldResult UMinOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.ult(b) ? a : b;
      },
      nullptr);
}

OpFoldResult UMaxOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.ugt(b) ? a : b;
      },
      nullptr);
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  if (Attribute r = constFoldUnaryOp<IntegerAttr, APInt, void>(
          adaptor.getOperands(), [](const APInt &a) { return -a; }))
    return r;
  return constFoldUnaryOp<FloatAttr, APFloat, void>(
      adaptor.getOperands(), [](const APFloat &a) { return -a; });
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getOperand().getDefiningOp<AbsOp>())
    return inner.getResult();
  if (Attribute r = constFoldUnaryOp<IntegerAttr, APInt, void>(
          adaptor.getOperands(), [](const APInt &a) { return a.abs(); }))
    return r;
  return constFoldUnaryOp<FloatAttr, APFloat, void>(
      adaptor.getOperands(), [](const APFloat &a) { return abs(a); });
}

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

bool hesper::exp::evaluateIntCmp(CmpPredicate pred, const APInt &a,
                                 const APInt &b) {
  switch (pred) {
  case CmpPredicate::eq:
    return a == b;
  case CmpPredicate::ne:
    return a != b;
  case CmpPredicate::lt:
    return a.slt(b);
  case CmpPredicate::le:
    return a.sle(b);
  case CmpPredicate::gt:
    return a.sgt(b);
  case CmpPredicate::ge:
    return a.sge(b);
  case CmpPredicate::ult:
    return a.ult(b);
  case CmpPredicate::ule:
    return a.ule(b);
  case CmpPredicate::ugt:
    return a.ugt(b);
  case CmpPredicate::uge:
    return a.uge(b);
  }
  return false;
}

static bool evaluateCmp(CmpPredicate pred, const APFloat &a,
                        const APFloat &b) {
  APFloat::cmpResult c = a.compare(b);
  switch (pred) {
  case CmpPredicate::eq:
    return c == APFloat::cmpEqual;
  case CmpPredicate::ne:
    return c != APFloat::cmpEqual;
  case CmpPredicate::lt:
    return c == APFloat::cmpLessThan;
  case CmpPredicate::le:
    return c == APFloat::cmpLessThan || c == APFloat::cmpEqual;
  case CmpPredicate::gt:
    return c == APFloat::cmpGreaterThan;
  case CmpPredicate::ge:
    return c == APFloat::cmpGreaterThan || c == APFloat::cmpEqual;
  default:
    return false; // Unsigned predicates are rejected for floats.
  }
}

OpFoldResult CmpOp::fold(FoldAdaptor adaptor) {
  CmpPredicate pred = getPredicate();
  Type resultType = getType();
  if (auto a = dyn_cast_or_null<IntegerAttr>(adaptor.getLhs()))
    if (auto b = dyn_cast_or_null<IntegerAttr>(adaptor.getRhs()))
      return IntegerAttr::get(resultType,
                              evaluateIntCmp(pred, a.getValue(), b.getValue()));
  if (auto a = dyn_cast_or_null<FloatAttr>(adaptor.getLhs()))
    if (auto b = dyn_cast_or_null<FloatAttr>(adaptor.getRhs()))
      return IntegerAttr::get(resultType,
                              evaluateCmp(pred, a.getValue(), b.getValue()));
  // x == x and friends hold for integers (not for NaN floats).
  if (getLhs() == getRhs() && isa<IntegerType>(resultType) &&
      isa<IntegerType, IndexType>(getLhs().getType())) {
    bool reflexive = pred == CmpPredicate::eq || pred == CmpPredicate::le ||
                     pred == CmpPredicate::ge || pred == CmpPredicate::ule ||
                     pred == CmpPredicate::uge;
    return IntegerAttr::get(resultType, reflexive);
  }
  return {};
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getTrueValue() == getFalseValue())
    return getTrueValue();
  if (auto cond = dyn_cast_or_null<IntegerAttr>(adaptor.getCondition()))
    return cond.getValue().isOne() ? getTrueValue() : getFalseValue();
  return {};
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

OpFoldResult ConvertOp::fold(FoldAdaptor adaptor) {
  Type from = getInput().getType(), to = getType();
  if (from == to)
    return getInput();
  Attribute input = adaptor.getInput();
  if (!input || isa<VectorType>(to))
    return {};
  bool isUnsigned = getIsUnsigned();
  auto widthOf = [](Type t) {
    return t.isIndex() ? 64u : t.getIntOrFloatBitWidth();
  };
  if (auto i = dyn_cast<IntegerAttr>(input)) {
    APInt v = i.getValue();
    if (auto ft = dyn_cast<FloatType>(to)) {
      APFloat f(ft.getFloatSemantics());
      f.convertFromAPInt(v, /*IsSigned=*/!isUnsigned,
                         APFloat::rmNearestTiesToEven);
      return FloatAttr::get(to, f);
    }
    unsigned w = widthOf(to);
    return IntegerAttr::get(to, isUnsigned ? v.zextOrTrunc(w)
                                           : v.sextOrTrunc(w));
  }
  if (auto f = dyn_cast<FloatAttr>(input)) {
    APFloat v = f.getValue();
    if (auto ft = dyn_cast<FloatType>(to)) {
      bool losesInfo = false;
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      return FloatAttr::get(to, v);
    }
    // Float to integer rounds toward zero and is undefined out of range
    // (and for NaN): fold only in-range values.
    APSInt result(widthOf(to), isUnsigned);
    bool isExact = false;
    if (v.convertToInteger(result, APFloat::rmTowardZero, &isExact) ==
        APFloat::opInvalidOp)
      return {};
    return IntegerAttr::get(to, APInt(result));
  }
  return {};
}

OpFoldResult BitcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<BitcastOp>())
    if (inner.getInput().getType() == getType())
      return inner.getInput();
  Attribute input = adaptor.getInput();
  if (!input || isa<VectorType>(getType()))
    return {};
  APInt bits;
  if (auto i = dyn_cast<IntegerAttr>(input))
    bits = i.getValue();
  else if (auto f = dyn_cast<FloatAttr>(input))
    bits = f.getValue().bitcastToAPInt();
  else
    return {};
  if (auto ft = dyn_cast<FloatType>(getType()))
    return FloatAttr::get(getType(), APFloat(ft.getFloatSemantics(), bits));
  return IntegerAttr::get(getType(), bits);
}

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

/// Folds a scalar f32/f64-representable math function on a constant.
static OpFoldResult foldFloatUnary(Attribute operand, Type type,
                                   double (*fn)(double)) {
  auto f = dyn_cast_or_null<FloatAttr>(operand);
  if (!f)
    return {};
  double r = fn(f.getValueAsDouble());
  if (std::isnan(r))
    return {};
  return FloatAttr::get(type, r);
}

OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  auto f = dyn_cast_or_null<FloatAttr>(adaptor.getOperand());
  if (!f || f.getValue().isNegative())
    return {};
  return foldFloatUnary(f, getType(), [](double x) { return std::sqrt(x); });
}

OpFoldResult FloorOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getOperand(), getType(),
                        [](double x) { return std::floor(x); });
}

OpFoldResult RoundOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getOperand(), getType(),
                        [](double x) { return std::round(x); });
}

OpFoldResult ClampOp::fold(FoldAdaptor adaptor) {
  auto lo = dyn_cast_or_null<IntegerAttr>(adaptor.getLo());
  auto hi = dyn_cast_or_null<IntegerAttr>(adaptor.getHi());
  auto x = dyn_cast_or_null<IntegerAttr>(adaptor.getX());
  if (lo && hi && x) {
    APInt v = x.getValue();
    if (v.slt(lo.getValue()))
      v = lo.getValue();
    if (v.sgt(hi.getValue()))
      v = hi.getValue();
    return IntegerAttr::get(getType(), v);
  }
  auto flo = dyn_cast_or_null<FloatAttr>(adaptor.getLo());
  auto fhi = dyn_cast_or_null<FloatAttr>(adaptor.getHi());
  auto fx = dyn_cast_or_null<FloatAttr>(adaptor.getX());
  if (flo && fhi && fx)
    return FloatAttr::get(getType(),
                          llvm::minnum(llvm::maxnum(fx.getValue(),
                                                    flo.getValue()),
                                       fhi.getValue()));
  return {};
}

//===----------------------------------------------------------------------===//
// Bit operations
//===----------------------------------------------------------------------===//

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  if (isIntZero(adaptor.getRhs()))
    return adaptor.getRhs();
  if (auto rhs = dyn_cast_or_null<IntegerAttr>(adaptor.getRhs()))
    if (rhs.getValue().isAllOnes())
      return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a & b;
      },
      nullptr);
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs() || isIntZero(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a | b;
      },
      nullptr);
}

OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return Builder(getContext()).getZeroAttr(getType());
  if (isIntZero(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a ^ b;
      },
      nullptr);
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getOperand().getDefiningOp<NotOp>())
    return inner.getOperand();
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      adaptor.getOperands(), [](const APInt &a) { return ~a; });
}

/// Shifts by the bit width or more are undefined and left alone.
static std::optional<APInt> checkedShift(const APInt &a, const APInt &b,
                                         APInt (APInt::*shift)(unsigned)
                                             const) {
  if (b.uge(a.getBitWidth()))
    return std::nullopt;
  return (a.*shift)(static_cast<unsigned>(b.getZExtValue()));
}

OpFoldResult ShlOp::fold(FoldAdaptor adaptor) {
  if (isIntZero(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) {
        return checkedShift(a, b, &APInt::shl);
      },
      nullptr);
}

OpFoldResult ShrSOp::fold(FoldAdaptor adaptor) {
  if (isIntZero(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) {
        return checkedShift(a, b, &APInt::ashr);
      },
      nullptr);
}

OpFoldResult ShrUOp::fold(FoldAdaptor adaptor) {
  if (isIntZero(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) {
        return checkedShift(a, b, &APInt::lshr);
      },
      nullptr);
}

//===----------------------------------------------------------------------===//
// Packing and dot products
//===----------------------------------------------------------------------===//

OpFoldResult UnpackF16x2Op::fold(FoldAdaptor adaptor) {
  // unpack(pack(a, b)) is a (or b) rounded to f16, not a itself; only fold
  // constants.
  auto word = dyn_cast_or_null<IntegerAttr>(adaptor.getWord());
  if (!word)
    return {};
  uint32_t w = static_cast<uint32_t>(word.getValue().getZExtValue());
  uint16_t half = static_cast<uint16_t>(getIndex() == 0 ? w : w >> 16);
  APFloat h(APFloat::IEEEhalf(), APInt(16, half));
  bool losesInfo = false;
  h.convert(cast<FloatType>(getType()).getFloatSemantics(),
            APFloat::rmNearestTiesToEven, &losesInfo);
  return FloatAttr::get(getType(), h);
}

OpFoldResult PackI8x4Op::fold(FoldAdaptor adaptor) {
  uint32_t word = 0;
  for (auto [i, attr] : llvm::enumerate(adaptor.getOperands())) {
    auto byte = dyn_cast_or_null<IntegerAttr>(attr);
    if (!byte)
      return {};
    word |= (static_cast<uint32_t>(byte.getValue().getZExtValue()) & 0xffu)
            << (8 * i);
  }
  return IntegerAttr::get(getType(), APInt(32, word));
}

OpFoldResult UnpackI8x4Op::fold(FoldAdaptor adaptor) {
  unsigned index = getIndex();
  if (auto pack = getWord().getDefiningOp<PackI8x4Op>()) {
    // The byte is recovered exactly only if the packed value already fits.
    Value src = pack->getOperand(index);
    APInt c;
    if (matchPattern(src, m_ConstantInt(&c))) {
      bool fits = getIsUnsigned() ? c.isIntN(8) : c.isSignedIntN(8);
      if (fits)
        return IntegerAttr::get(getType(), c);
    }
  }
  auto word = dyn_cast_or_null<IntegerAttr>(adaptor.getWord());
  if (!word)
    return {};
  APInt byte = word.getValue().extractBits(8, 8 * index);
  return IntegerAttr::get(getType(), getIsUnsigned() ? byte.zext(32)
                                                     : byte.sext(32));
}

OpFoldResult Dot4I8Op::fold(FoldAdaptor adaptor) {
  auto a = dyn_cast_or_null<IntegerAttr>(adaptor.getA());
  auto b = dyn_cast_or_null<IntegerAttr>(adaptor.getB());
  auto acc = dyn_cast_or_null<IntegerAttr>(adaptor.getAcc());
  if (!a || !b || !acc)
    return {};
  APInt sum = acc.getValue();
  for (unsigned i = 0; i < 4; ++i)
    sum += a.getValue().extractBits(8, 8 * i).sext(32) *
           b.getValue().extractBits(8, 8 * i).sext(32);
  return IntegerAttr::get(getType(), sum);
}

//===----------------------------------------------------------------------===//
// Division by a constant
//===----------------------------------------------------------------------===//

/// x / d and x mod d for x read as unsigned; a divisor wider than x's type
/// gives 0 and x.
static std::pair<APInt, APInt> unsignedDivRem(const APInt &x, uint64_t d) {
  unsigned width = x.getBitWidth();
  if (width < 64 && d >= (uint64_t(1) << width))
    return {APInt::getZero(width), x};
  APInt divisor(width, d);
  return {x.udiv(divisor), x.urem(divisor)};
}

OpFoldResult DivByConstOp::fold(FoldAdaptor adaptor) {
  uint64_t d = static_cast<uint64_t>(getDivisor());
  if (d == 1)
    return getInput();
  auto x = dyn_cast_or_null<IntegerAttr>(adaptor.getInput());
  if (!x)
    return {};
  return IntegerAttr::get(getType(), unsignedDivRem(x.getValue(), d).first);
}

OpFoldResult RemByConstOp::fold(FoldAdaptor adaptor) {
  uint64_t d = static_cast<uint64_t>(getDivisor());
  if (d == 1)
    return Builder(getContext()).getZeroAttr(getType());
  auto x = dyn_cast_or_null<IntegerAttr>(adaptor.getInput());
  if (!x)
    return {};
  return IntegerAttr::get(getType(), unsignedDivRem(x.getValue(), d).second);
}
