//===- ExpToStd.cpp - Lower exp to arith, math and gpu -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Every exp op becomes upstream ops of the same types, so no type conversion
// is involved: arith for arithmetic, comparisons, conversions and bits; math
// for transcendental functions; gpu for the lane operations. Ops upstream
// lacks (sigmoid, SiLU, GELU, packing, dp4a, division by a constant) are
// expanded here.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Conversion/ExpToStd/ExpToStd.h"
#include "Hesper/Conversion/Passes.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <type_traits>

namespace hesper {
#define GEN_PASS_DEF_CONVERTEXPTOSTDPASS
#include "Hesper/Conversion/Passes.h.inc"
} // namespace hesper

using namespace mlir;
using namespace hesper;
namespace ex = hesper::exp;

static bool isFloatLike(Type type) {
  return isa<FloatType>(ex::getElementTypeOrSelf(type));
}

/// A constant of `type` (scalar, or splat vector) holding `value`.
static Value constantOf(OpBuilder &b, Location loc, Type type, double value) {
  Type element = ex::getElementTypeOrSelf(type);
  TypedAttr attr;
  if (isa<FloatType>(element))
    attr = b.getFloatAttr(element, value);
  else
    attr = b.getIntegerAttr(element, static_cast<int64_t>(value));
  if (auto vec = dyn_cast<VectorType>(type))
    attr = DenseElementsAttr::get(vec, attr);
  return arith::ConstantOp::create(b, loc, attr);
}

namespace {

/// exp binary op -> the arith (or math) op for integers or floats; `void`
/// marks a kind the verifier already rules out.
template <typename ExpOpT, typename IntOpT, typename FloatOpT>
struct BinaryLowering : OpRewritePattern<ExpOpT> {
  using OpRewritePattern<ExpOpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(ExpOpT op,
                                PatternRewriter &rewriter) const override {
    if (isFloatLike(op.getType())) {
      if constexpr (std::is_void_v<FloatOpT>)
        return rewriter.notifyMatchFailure(op, "no float form");
      else
        rewriter.replaceOpWithNewOp<FloatOpT>(op, op.getLhs(), op.getRhs());
    } else {
      if constexpr (std::is_void_v<IntOpT>)
        return rewriter.notifyMatchFailure(op, "no integer form");
      else
        rewriter.replaceOpWithNewOp<IntOpT>(op, op.getLhs(), op.getRhs());
    }
    return success();
  }
};

/// exp unary float op -> math op.
template <typename ExpOpT, typename MathOpT>
struct UnaryMathLowering : OpRewritePattern<ExpOpT> {
  using OpRewritePattern<ExpOpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(ExpOpT op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<MathOpT>(op, op.getOperand());
    return success();
  }
};

/// Lowers one op with a function: `lower(op, rewriter)` returns the value
/// that replaces it.
template <typename ExpOpT>
struct FunctionLowering : OpRewritePattern<ExpOpT> {
  using Fn = Value (*)(ExpOpT, PatternRewriter &);
  FunctionLowering(MLIRContext *context, Fn fn)
      : OpRewritePattern<ExpOpT>(context), fn(fn) {}
  LogicalResult matchAndRewrite(ExpOpT op,
                                PatternRewriter &rewriter) const override {
    Value replacement = fn(op, rewriter);
    if (!replacement)
      return failure();
    rewriter.replaceOp(op, replacement);
    return success();
  }
  Fn fn;
};

} // namespace

//===----------------------------------------------------------------------===//
// Lowering functions
//===----------------------------------------------------------------------===//

static Value lowerConstant(ex::ConstantOp op, PatternRewriter &b) {
  return arith::ConstantOp::create(b, op.getLoc(), op.getValue());
}

static Value lowerNeg(ex::NegOp op, PatternRewriter &b) {
  if (isFloatLike(op.getType()))
    return arith::NegFOp::create(b, op.getLoc(), op.getOperand());
  Value zero = constantOf(b, op.getLoc(), op.getType(), 0);
  return arith::SubIOp::create(b, op.getLoc(), zero, op.getOperand());
}

static Value lowerAbs(ex::AbsOp op, PatternRewriter &b) {
  if (isFloatLike(op.getType()))
    return math::AbsFOp::create(b, op.getLoc(), op.getOperand());
  return math::AbsIOp::create(b, op.getLoc(), op.getOperand());
}

static Value lowerClamp(ex::ClampOp op, PatternRewriter &b) {
  Location loc = op.getLoc();
  if (isFloatLike(op.getType())) {
    Value lo = arith::MaxNumFOp::create(b, loc, op.getX(), op.getLo());
    return arith::MinNumFOp::create(b, loc, lo, op.getHi());
  }
  Value lo = arith::MaxSIOp::create(b, loc, op.getX(), op.getLo());
  return arith::MinSIOp::create(b, loc, lo, op.getHi());
}

static Value lowerFma(ex::FmaOp op, PatternRewriter &b) {
  return math::FmaOp::create(b, op.getLoc(), op.getA(), op.getB(), op.getC());
}

static Value lowerCmp(ex::CmpOp op, PatternRewriter &b) {
  Location loc = op.getLoc();
  using P = ex::CmpPredicate;
  if (isFloatLike(op.getLhs().getType())) {
    arith::CmpFPredicate pred;
    switch (op.getPredicate()) {
    case P::eq: pred = arith::CmpFPredicate::OEQ; break;
    case P::ne: pred = arith::CmpFPredicate::UNE; break;
    case P::lt: pred = arith::CmpFPredicate::OLT; break;
    case P::le: pred = arith::CmpFPredicate::OLE; break;
    case P::gt: pred = arith::CmpFPredicate::OGT; break;
    case P::ge: pred = arith::CmpFPredicate::OGE; break;
    default: return nullptr; // Unsigned predicates are rejected for floats.
    }
    return arith::CmpFOp::create(b, loc, pred, op.getLhs(), op.getRhs());
  }
  arith::CmpIPredicate pred;
  switch (op.getPredicate()) {
  case P::eq: pred = arith::CmpIPredicate::eq; break;
  case P::ne: pred = arith::CmpIPredicate::ne; break;
  case P::lt: pred = arith::CmpIPredicate::slt; break;
  case P::le: pred = arith::CmpIPredicate::sle; break;
  case P::gt: pred = arith::CmpIPredicate::sgt; break;
  case P::ge: pred = arith::CmpIPredicate::sge; break;
  case P::ult: pred = arith::CmpIPredicate::ult; break;
  case P::ule: pred = arith::CmpIPredicate::ule; break;
  case P::ugt: pred = arith::CmpIPredicate::ugt; break;
  case P::uge: pred = arith::CmpIPredicate::uge; break;
  }
  return arith::CmpIOp::create(b, loc, pred, op.getLhs(), op.getRhs());
}

static Value lowerSelect(ex::SelectOp op, PatternRewriter &b) {
  return arith::SelectOp::create(b, op.getLoc(), op.getCondition(),
                                 op.getTrueValue(), op.getFalseValue());
}

static Value lowerConvert(ex::ConvertOp op, PatternRewriter &b) {
  Location loc = op.getLoc();
  Value in = op.getInput();
  Type to = op.getType();
  Type fromElt = ex::getElementTypeOrSelf(in.getType());
  Type toElt = ex::getElementTypeOrSelf(to);
  bool isUnsigned = op.getIsUnsigned();
  bool fromFloat = isa<FloatType>(fromElt), toFloat = isa<FloatType>(toElt);
  if (fromFloat && toFloat) {
    unsigned fw = fromElt.getIntOrFloatBitWidth();
    unsigned tw = toElt.getIntOrFloatBitWidth();
    if (fw < tw)
      return arith::ExtFOp::create(b, loc, to, in);
    return arith::TruncFOp::create(b, loc, to, in);
  }
  if (!fromFloat && toFloat) {
    if (fromElt.isIndex()) {
      // index -> i64 -> float.
      Type i64 = b.getI64Type();
      if (auto vec = dyn_cast<VectorType>(in.getType()))
        i64 = VectorType::get(vec.getShape(), i64);
      in = isUnsigned ? Value(arith::IndexCastUIOp::create(b, loc, i64, in))
                      : Value(arith::IndexCastOp::create(b, loc, i64, in));
    }
    if (isUnsigned)
      return arith::UIToFPOp::create(b, loc, to, in);
    return arith::SIToFPOp::create(b, loc, to, in);
  }
  if (fromFloat) {
    if (toElt.isIndex()) {
      Value i64 = isUnsigned
                      ? Value(arith::FPToUIOp::create(b, loc, b.getI64Type(), in))
                      : Value(arith::FPToSIOp::create(b, loc, b.getI64Type(), in));
      return arith::IndexCastOp::create(b, loc, to, i64);
    }
    if (isUnsigned)
      return arith::FPToUIOp::create(b, loc, to, in);
    return arith::FPToSIOp::create(b, loc, to, in);
  }
  // Integer to integer.
  if (fromElt.isIndex() || toElt.isIndex()) {
    if (isUnsigned)
      return arith::IndexCastUIOp::create(b, loc, to, in);
    return arith::IndexCastOp::create(b, loc, to, in);
  }
  unsigned fw = fromElt.getIntOrFloatBitWidth();
  unsigned tw = toElt.getIntOrFloatBitWidth();
  if (fw == tw)
    return in;
  if (fw > tw)
    return arith::TruncIOp::create(b, loc, to, in);
  if (isUnsigned)
    return arith::ExtUIOp::create(b, loc, to, in);
  return arith::ExtSIOp::create(b, loc, to, in);
}

static Value lowerBitcast(ex::BitcastOp op, PatternRewriter &b) {
  return arith::BitcastOp::create(b, op.getLoc(), op.getType(),
                                  op.getInput());
}

static Value lowerSigmoidOf(PatternRewriter &b, Location loc, Value x) {
  Type t = x.getType();
  Value one = constantOf(b, loc, t, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
}

static Value lowerSigmoid(ex::SigmoidOp op, PatternRewriter &b) {
  return lowerSigmoidOf(b, op.getLoc(), op.getOperand());
}

static Value lowerSilu(ex::SiluOp op, PatternRewriter &b) {
  Value x = op.getOperand();
  return arith::MulFOp::create(b, op.getLoc(), x,
                               lowerSigmoidOf(b, op.getLoc(), x));
}

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
static Value lowerGelu(ex::GeluOp op, PatternRewriter &b) {
  Location loc = op.getLoc();
  Value x = op.getOperand();
  Type t = x.getType();
  Value x3 = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x),
                                   x);
  Value inner = arith::AddFOp::create(
      b, loc, x,
      arith::MulFOp::create(b, loc, constantOf(b, loc, t, 0.044715), x3));
  Value scaled = arith::MulFOp::create(
      b, loc, constantOf(b, loc, t, 0.7978845608028654), inner);
  Value onePlus = arith::AddFOp::create(b, loc, constantOf(b, loc, t, 1.0),
                                        math::TanhOp::create(b, loc, scaled));
  return arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, constantOf(b, loc, t, 0.5), x),
      onePlus);
}

static Value lowerNot(ex::NotOp op, PatternRewriter &b) {
  Value ones = constantOf(b, op.getLoc(), op.getType(), -1);
  return arith::XOrIOp::create(b, op.getLoc(), op.getOperand(), ones);
}

/// The 16 bits of a half (rounded from f32 if needed) as an i32.
static Value halfBits(PatternRewriter &b, Location loc, Value v) {
  if (v.getType().isF32())
    v = arith::TruncFOp::create(b, loc, b.getF16Type(), v);
  Value bits = arith::BitcastOp::create(b, loc, b.getI16Type(), v);
  return arith::ExtUIOp::create(b, loc, b.getI32Type(), bits);
}

static Value lowerPackF16x2(ex::PackF16x2Op op, PatternRewriter &b) {
  Location loc = op.getLoc();
  Value lo = halfBits(b, loc, op.getLo());
  Value hi = halfBits(b, loc, op.getHi());
  Value shifted = arith::ShLIOp::create(
      b, loc, hi, constantOf(b, loc, b.getI32Type(), 16));
  return arith::OrIOp::create(b, loc, lo, shifted);
}

static Value lowerUnpackF16x2(ex::UnpackF16x2Op op, PatternRewriter &b) {
  Location loc = op.getLoc();
  Value word = op.getWord();
  if (op.getIndex() == 1)
    word = arith::ShRUIOp::create(b, loc, word,
                                  constantOf(b, loc, b.getI32Type(), 16));
  Value bits = arith::TruncIOp::create(b, loc, b.getI16Type(), word);
  Value half = arith::BitcastOp::create(b, loc, b.getF16Type(), bits);
  if (op.getType().isF16())
    return half;
  return arith::ExtFOp::create(b, loc, op.getType(), half);
}

static Value lowerPackI8x4(ex::PackI8x4Op op, PatternRewriter &b) {
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  Value mask = constantOf(b, loc, i32, 0xff);
  Value word;
  for (unsigned k = 0; k < 4; ++k) {
    Value byte = arith::AndIOp::create(b, loc, op->getOperand(k), mask);
    if (k)
      byte = arith::ShLIOp::create(b, loc, byte, constantOf(b, loc, i32, 8 * k));
    word = word ? Value(arith::OrIOp::create(b, loc, word, byte)) : byte;
  }
  return word;
}

/// Byte `k` of `word`, sign- or zero-extended to i32.
static Value extractByte(PatternRewriter &b, Location loc, Value word,
                         unsigned k, bool isUnsigned) {
  Type i32 = b.getI32Type();
  if (k)
    word = arith::ShRUIOp::create(b, loc, word, constantOf(b, loc, i32, 8 * k));
  Value byte = arith::TruncIOp::create(b, loc, b.getI8Type(), word);
  if (isUnsigned)
    return arith::ExtUIOp::create(b, loc, i32, byte);
  return arith::ExtSIOp::create(b, loc, i32, byte);
}

static Value lowerUnpackI8x4(ex::UnpackI8x4Op op, PatternRewriter &b) {
  return extractByte(b, op.getLoc(), op.getWord(), op.getIndex(),
                     op.getIsUnsigned());
}

/// Portable dp4a: four sign-extended byte products added to the accumulator.
/// Backends may match this back to their instruction.
static Value lowerDot4I8(ex::Dot4I8Op op, PatternRewriter &b) {
  Location loc = op.getLoc();
  Value sum = op.getAcc();
  for (unsigned k = 0; k < 4; ++k) {
    Value x = extractByte(b, loc, op.getA(), k, /*isUnsigned=*/false);
    Value y = extractByte(b, loc, op.getB(), k, /*isUnsigned=*/false);
    sum = arith::AddIOp::create(b, loc, sum, arith::MulIOp::create(b, loc, x, y));
  }
  return sum;
}

/// The vector form everywhere it reaches this pass (the CPU target first
/// takes it to VNNI where the ISA has it): the bytes widened to i32 and
/// multiplied, then added in pairs twice (even lanes plus odd lanes: the
/// first is the pattern x86 selects as vpmaddwd), so lane i adds products
/// 4i .. 4i + 3.
static Value lowerVectorDot4I8(ex::VectorDot4I8Op op, PatternRewriter &b) {
  Location loc = op.getLoc();
  int64_t bytes = op.getA().getType().getNumElements();
  auto wide = VectorType::get({bytes}, b.getI32Type());
  Value a = op.getAUnsigned()
                ? Value(arith::ExtUIOp::create(b, loc, wide, op.getA()))
                : Value(arith::ExtSIOp::create(b, loc, wide, op.getA()));
  Value sums = arith::MulIOp::create(
      b, loc, a, arith::ExtSIOp::create(b, loc, wide, op.getB()));
  for (int64_t lanes = bytes / 2; lanes >= bytes / 4; lanes /= 2) {
    SmallVector<int64_t> even, odd;
    for (int64_t i = 0; i < lanes; ++i) {
      even.push_back(2 * i);
      odd.push_back(2 * i + 1);
    }
    sums = arith::AddIOp::create(
        b, loc, vector::ShuffleOp::create(b, loc, sums, sums, even),
        vector::ShuffleOp::create(b, loc, sums, sums, odd));
  }
  return arith::AddIOp::create(b, loc, op.getAcc(), sums);
}

/// floor(x / d) for x read as unsigned: a shift for powers of two; for an i32
/// input otherwise the high half of x * ceil(2^64 / d) in 64 bits, which is
/// exact for every 32-bit x (the error term x * (m d - 2^64) / (d 2^64) stays
/// below 1/d); `divui` for wider types.
static Value divideByConstant(PatternRewriter &b, Location loc, Value x,
                              uint64_t d) {
  Type type = x.getType();
  if (d == 1)
    return x;
  if ((d & (d - 1)) == 0)
    return arith::ShRUIOp::create(b, loc, x,
                                  constantOf(b, loc, type, llvm::Log2_64(d)));
  if (!type.isInteger(32))
    return arith::DivUIOp::create(b, loc, x,
                                  constantOf(b, loc, type, static_cast<double>(d)));
  if (d >= (uint64_t(1) << 32))
    return constantOf(b, loc, type, 0);
  // m = ceil(2^64 / d) < 2^63 for d >= 3.
  uint64_t m = ~uint64_t(0) / d + 1;
  Type i64 = b.getI64Type();
  Value wide = arith::ExtUIOp::create(b, loc, i64, x);
  Value magic = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(i64, static_cast<int64_t>(m)));
  auto product = arith::MulUIExtendedOp::create(b, loc, wide, magic);
  return arith::TruncIOp::create(b, loc, type, product.getHigh());
}

static Value lowerDivByConst(ex::DivByConstOp op, PatternRewriter &b) {
  return divideByConstant(b, op.getLoc(), op.getInput(),
                          static_cast<uint64_t>(op.getDivisor()));
}

static Value lowerRemByConst(ex::RemByConstOp op, PatternRewriter &b) {
  Location loc = op.getLoc();
  uint64_t d = static_cast<uint64_t>(op.getDivisor());
  Type type = op.getType();
  if ((d & (d - 1)) == 0)
    return arith::AndIOp::create(b, loc, op.getInput(),
                                 constantOf(b, loc, type,
                                            static_cast<double>(d - 1)));
  Value q = divideByConstant(b, loc, op.getInput(), d);
  Value qd = arith::MulIOp::create(
      b, loc, q, constantOf(b, loc, type, static_cast<double>(d)));
  return arith::SubIOp::create(b, loc, op.getInput(), qd);
}

static Value lowerLaneId(ex::LaneIdOp op, PatternRewriter &b) {
  Value id = gpu::LaneIdOp::create(b, op.getLoc(), /*upper_bound=*/nullptr);
  return arith::IndexCastOp::create(b, op.getLoc(), op.getType(), id);
}

static Value lowerSubgroupSize(ex::SubgroupSizeOp op, PatternRewriter &b) {
  Value size = gpu::SubgroupSizeOp::create(b, op.getLoc(),
                                           /*upper_bound=*/nullptr);
  return arith::IndexCastOp::create(b, op.getLoc(), op.getType(), size);
}

static Value lowerSubgroupReduce(ex::SubgroupReduceOp op, PatternRewriter &b) {
  bool isFloat = isFloatLike(op.getType());
  gpu::AllReduceOperation kind;
  switch (op.getKind()) {
  case ex::ReduceKind::sum:
    kind = gpu::AllReduceOperation::ADD;
    break;
  case ex::ReduceKind::max:
    kind = isFloat ? gpu::AllReduceOperation::MAXNUMF
                   : gpu::AllReduceOperation::MAXSI;
    break;
  case ex::ReduceKind::min:
    kind = isFloat ? gpu::AllReduceOperation::MINNUMF
                   : gpu::AllReduceOperation::MINSI;
    break;
  }
  return gpu::SubgroupReduceOp::create(b, op.getLoc(), op.getValue(), kind,
                                       /*uniform=*/false);
}

static Value lowerShuffleXor(ex::ShuffleXorOp op, PatternRewriter &b) {
  Location loc = op.getLoc();
  Value width = arith::IndexCastOp::create(
      b, loc, b.getI32Type(),
      gpu::SubgroupSizeOp::create(b, loc, /*upper_bound=*/nullptr));
  Value mask = constantOf(b, loc, b.getI32Type(), op.getMask());
  auto shuffle = gpu::ShuffleOp::create(b, loc, op.getValue(), mask, width,
                                        gpu::ShuffleMode::XOR);
  return shuffle.getShuffleResult();
}

static Value lowerBroadcastFirst(ex::BroadcastFirstOp op, PatternRewriter &b) {
  return gpu::SubgroupBroadcastOp::create(
      b, op.getLoc(), op.getValue(), /*lane=*/Value(),
      gpu::BroadcastType::first_active_lane);
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void hesper::populateExpToStdPatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<
      BinaryLowering<ex::AddOp, arith::AddIOp, arith::AddFOp>,
      BinaryLowering<ex::SubOp, arith::SubIOp, arith::SubFOp>,
      BinaryLowering<ex::MulOp, arith::MulIOp, arith::MulFOp>,
      BinaryLowering<ex::DivOp, arith::DivSIOp, arith::DivFOp>,
      BinaryLowering<ex::RemOp, arith::RemSIOp, arith::RemFOp>,
      BinaryLowering<ex::UDivOp, arith::DivUIOp, void>,
      BinaryLowering<ex::URemOp, arith::RemUIOp, void>,
      BinaryLowering<ex::MinOp, arith::MinSIOp, arith::MinNumFOp>,
      BinaryLowering<ex::MaxOp, arith::MaxSIOp, arith::MaxNumFOp>,
      BinaryLowering<ex::UMinOp, arith::MinUIOp, void>,
      BinaryLowering<ex::UMaxOp, arith::MaxUIOp, void>,
      BinaryLowering<ex::AndOp, arith::AndIOp, void>,
      BinaryLowering<ex::OrOp, arith::OrIOp, void>,
      BinaryLowering<ex::XorOp, arith::XOrIOp, void>,
      BinaryLowering<ex::ShlOp, arith::ShLIOp, void>,
      BinaryLowering<ex::ShrSOp, arith::ShRSIOp, void>,
      BinaryLowering<ex::ShrUOp, arith::ShRUIOp, void>,
      BinaryLowering<ex::PowOp, void, math::PowFOp>,
      UnaryMathLowering<ex::ExpOp, math::ExpOp>,
      UnaryMathLowering<ex::LogOp, math::LogOp>,
      UnaryMathLowering<ex::SqrtOp, math::SqrtOp>,
      UnaryMathLowering<ex::RsqrtOp, math::RsqrtOp>,
      UnaryMathLowering<ex::TanhOp, math::TanhOp>,
      UnaryMathLowering<ex::SinOp, math::SinOp>,
      UnaryMathLowering<ex::CosOp, math::CosOp>,
      UnaryMathLowering<ex::FloorOp, math::FloorOp>,
      UnaryMathLowering<ex::RoundOp, math::RoundOp>>(context);
  patterns.add<FunctionLowering<ex::ConstantOp>>(context, lowerConstant);
  patterns.add<FunctionLowering<ex::NegOp>>(context, lowerNeg);
  patterns.add<FunctionLowering<ex::AbsOp>>(context, lowerAbs);
  patterns.add<FunctionLowering<ex::ClampOp>>(context, lowerClamp);
  patterns.add<FunctionLowering<ex::FmaOp>>(context, lowerFma);
  patterns.add<FunctionLowering<ex::CmpOp>>(context, lowerCmp);
  patterns.add<FunctionLowering<ex::SelectOp>>(context, lowerSelect);
  patterns.add<FunctionLowering<ex::ConvertOp>>(context, lowerConvert);
  patterns.add<FunctionLowering<ex::BitcastOp>>(context, lowerBitcast);
  patterns.add<FunctionLowering<ex::SigmoidOp>>(context, lowerSigmoid);
  patterns.add<FunctionLowering<ex::SiluOp>>(context, lowerSilu);
  patterns.add<FunctionLowering<ex::GeluOp>>(context, lowerGelu);
  patterns.add<FunctionLowering<ex::NotOp>>(context, lowerNot);
  patterns.add<FunctionLowering<ex::PackF16x2Op>>(context, lowerPackF16x2);
  patterns.add<FunctionLowering<ex::UnpackF16x2Op>>(context, lowerUnpackF16x2);
  patterns.add<FunctionLowering<ex::PackI8x4Op>>(context, lowerPackI8x4);
  patterns.add<FunctionLowering<ex::UnpackI8x4Op>>(context, lowerUnpackI8x4);
  patterns.add<FunctionLowering<ex::Dot4I8Op>>(context, lowerDot4I8);
  patterns.add<FunctionLowering<ex::VectorDot4I8Op>>(context,
                                                     lowerVectorDot4I8);
  patterns.add<FunctionLowering<ex::DivByConstOp>>(context, lowerDivByConst);
  patterns.add<FunctionLowering<ex::RemByConstOp>>(context, lowerRemByConst);
  patterns.add<FunctionLowering<ex::LaneIdOp>>(context, lowerLaneId);
  patterns.add<FunctionLowering<ex::SubgroupSizeOp>>(context,
                                                     lowerSubgroupSize);
  patterns.add<FunctionLowering<ex::SubgroupReduceOp>>(context,
                                                       lowerSubgroupReduce);
  patterns.add<FunctionLowering<ex::ShuffleXorOp>>(context, lowerShuffleXor);
  patterns.add<FunctionLowering<ex::BroadcastFirstOp>>(context,
                                                       lowerBroadcastFirst);
}

namespace {
struct ConvertExpToStdPass
    : hesper::impl::ConvertExpToStdPassBase<ConvertExpToStdPass> {
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.addIllegalDialect<ex::ExpDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    populateExpToStdPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
