//===- BodyProgram.cpp - Lockstep evaluation of per-lane bodies ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "BodyProgram.h"

#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Support/Half.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace hesper;
using namespace hesper::interp;
namespace ex = hesper::exp;

namespace {
enum Opcode : unsigned {
  OpAdd, OpSub, OpMul, OpDiv, OpRem, OpUDiv, OpURem, OpMin, OpMax, OpUMin,
  OpUMax, OpNeg, OpAbs, OpCmp, OpSelect, OpConvert, OpBitcast, OpExp, OpLog,
  OpSqrt, OpRsqrt, OpTanh, OpSin, OpCos, OpFloor, OpRound, OpSigmoid, OpSilu,
  OpGelu, OpPow, OpFma, OpClamp, OpAnd, OpOr, OpXor, OpNot, OpShl, OpShrS,
  OpShrU, OpPackF16x2, OpUnpackF16x2, OpPackI8x4, OpUnpackI8x4, OpDot4I8,
  OpDivByConst, OpRemByConst, OpLaneId, OpSubgroupSize, OpSubgroupReduce,
  OpShuffleXor, OpBroadcastFirst, OpExtract
};
} // namespace

/// Classifies a scalar type; fails for vectors and other types.
static LogicalResult classify(Type type, ValKind &kind, unsigned &width) {
  if (type.isF32()) {
    kind = ValKind::F32;
    width = 32;
    return success();
  }
  if (type.isF16()) {
    kind = ValKind::F16;
    width = 16;
    return success();
  }
  if (type.isIndex()) {
    kind = ValKind::Int;
    width = 64;
    return success();
  }
  if (isa<RankedTensorType>(type)) {
    kind = ValKind::Tensor;
    width = 0;
    return success();
  }
  if (auto it = dyn_cast<IntegerType>(type)) {
    kind = ValKind::Int;
    width = it.getWidth();
    return width <= 64 ? success() : failure();
  }
  return failure();
}

static int64_t wrap(int64_t v, unsigned width) {
  if (width >= 64)
    return v;
  if (width == 1)
    return v & 1;
  uint64_t u = static_cast<uint64_t>(v) << (64 - width);
  return static_cast<int64_t>(u) >> (64 - width);
}

static uint64_t asUnsigned(int64_t v, unsigned width) {
  if (width >= 64)
    return static_cast<uint64_t>(v);
  return static_cast<uint64_t>(v) & ((uint64_t(1) << width) - 1);
}

/// Rounds a computed value to the precision of `kind`: half for f16, single
/// for f32 unless the program is `wide`.
static double roundTo(double v, ValKind kind, bool wide) {
  if (kind == ValKind::F16)
    return roundToHalf(static_cast<float>(v));
  if (kind == ValKind::F32 && !wide)
    return static_cast<float>(v);
  return v;
}

FailureOr<BodyProgram> BodyProgram::compile(Block &block,
                                            unsigned subgroupSize,
                                            bool wide) {
  BodyProgram program;
  program.subgroupSize = subgroupSize;
  program.wide = wide;
  llvm::DenseMap<Value, unsigned> slots;
  for (BlockArgument arg : block.getArguments()) {
    ValKind kind;
    unsigned width;
    if (failed(classify(arg.getType(), kind, width)))
      return emitError(arg.getLoc(), "reference interpreter: unsupported "
                                     "body argument type ")
             << arg.getType();
    slots[arg] = program.numSlots++;
  }
  program.numArgs = block.getNumArguments();

  for (Operation &op : block) {
    if (auto yield = dyn_cast<circuit::YieldOp>(op)) {
      for (Value v : yield.getValues())
        program.yields.push_back(slots.lookup(v));
      break;
    }
    if (op.getNumResults() != 1)
      return op.emitOpError("is not supported by the reference interpreter");
    Instr instr;
    Value result = op.getResult(0);
    if (failed(classify(result.getType(), instr.kind, instr.width)))
      return op.emitOpError("reference interpreter: unsupported result type ")
             << result.getType() << " (vectors are not interpreted)";
    for (Value operand : op.getOperands()) {
      instr.operands.push_back(slots.lookup(operand));
      if (instr.operands.size() == 1 &&
          failed(classify(operand.getType(), instr.operandKind,
                          instr.operandWidth)))
        return op.emitOpError("reference interpreter: unsupported operand "
                              "type ")
               << operand.getType();
    }
    instr.result = program.numSlots++;
    slots[result] = instr.result;

    if (auto c = dyn_cast<ex::ConstantOp>(op)) {
      Val v;
      if (auto f = dyn_cast<FloatAttr>(c.getValue()))
        v.f = roundTo(f.getValueAsDouble(), instr.kind, wide);
      else if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
        v.i = wrap(instr.width == 1 ? i.getValue().getZExtValue()
                                    : i.getValue().getSExtValue(),
                   instr.width);
      else
        return op.emitOpError("reference interpreter: unsupported constant");
      program.constants.push_back(v);
      program.constantSlots.push_back(instr.result);
      continue;
    }

    std::optional<unsigned> opcode =
        llvm::TypeSwitch<Operation *, std::optional<unsigned>>(&op)
            .Case([](ex::AddOp) { return OpAdd; })
            .Case([](ex::SubOp) { return OpSub; })
            .Case([](ex::MulOp) { return OpMul; })
            .Case([](ex::DivOp) { return OpDiv; })
            .Case([](ex::RemOp) { return OpRem; })
            .Case([](ex::UDivOp) { return OpUDiv; })
            .Case([](ex::URemOp) { return OpURem; })
            .Case([](ex::MinOp) { return OpMin; })
            .Case([](ex::MaxOp) { return OpMax; })
            .Case([](ex::UMinOp) { return OpUMin; })
            .Case([](ex::UMaxOp) { return OpUMax; })
            .Case([](ex::NegOp) { return OpNeg; })
            .Case([](ex::AbsOp) { return OpAbs; })
            .Case([&](ex::CmpOp cmp) {
              instr.imm0 = static_cast<int64_t>(cmp.getPredicate());
              return OpCmp;
            })
            .Case([](ex::SelectOp) { return OpSelect; })
            .Case([&](ex::ConvertOp cvt) {
              instr.imm0 = cvt.getIsUnsigned();
              return OpConvert;
            })
            .Case([](ex::BitcastOp) { return OpBitcast; })
            .Case([](ex::ExpOp) { return OpExp; })
            .Case([](ex::LogOp) { return OpLog; })
            .Case([](ex::SqrtOp) { return OpSqrt; })
            .Case([](ex::RsqrtOp) { return OpRsqrt; })
            .Case([](ex::TanhOp) { return OpTanh; })
            .Case([](ex::SinOp) { return OpSin; })
            .Case([](ex::CosOp) { return OpCos; })
            .Case([](ex::FloorOp) { return OpFloor; })
            .Case([](ex::RoundOp) { return OpRound; })
            .Case([](ex::SigmoidOp) { return OpSigmoid; })
            .Case([](ex::SiluOp) { return OpSilu; })
            .Case([](ex::GeluOp) { return OpGelu; })
            .Case([](ex::PowOp) { return OpPow; })
            .Case([](ex::FmaOp) { return OpFma; })
            .Case([](ex::ClampOp) { return OpClamp; })
            .Case([](ex::AndOp) { return OpAnd; })
            .Case([](ex::OrOp) { return OpOr; })
            .Case([](ex::XorOp) { return OpXor; })
            .Case([](ex::NotOp) { return OpNot; })
            .Case([](ex::ShlOp) { return OpShl; })
            .Case([](ex::ShrSOp) { return OpShrS; })
            .Case([](ex::ShrUOp) { return OpShrU; })
            .Case([](ex::PackF16x2Op) { return OpPackF16x2; })
            .Case([&](ex::UnpackF16x2Op u) {
              instr.imm0 = u.getIndex();
              return OpUnpackF16x2;
            })
            .Case([](ex::PackI8x4Op) { return OpPackI8x4; })
            .Case([&](ex::UnpackI8x4Op u) {
              instr.imm0 = u.getIndex();
              instr.imm1 = u.getIsUnsigned();
              return OpUnpackI8x4;
            })
            .Case([](ex::Dot4I8Op) { return OpDot4I8; })
            .Case([&](ex::DivByConstOp d) {
              instr.imm0 = d.getDivisor();
              return OpDivByConst;
            })
            .Case([&](ex::RemByConstOp d) {
              instr.imm0 = d.getDivisor();
              return OpRemByConst;
            })
            .Case([](ex::LaneIdOp) { return OpLaneId; })
            .Case([](ex::SubgroupSizeOp) { return OpSubgroupSize; })
            .Case([&](ex::SubgroupReduceOp r) {
              instr.imm0 = static_cast<int64_t>(r.getKind());
              return OpSubgroupReduce;
            })
            .Case([&](ex::ShuffleXorOp s) {
              instr.imm0 = s.getMask();
              return OpShuffleXor;
            })
            .Case([](ex::BroadcastFirstOp) { return OpBroadcastFirst; })
            .Case([](circuit::ExtractOp) { return OpExtract; })
            .Default([](Operation *) { return std::nullopt; });
    if (!opcode)
      return op.emitOpError("is not supported by the reference interpreter");
    instr.opcode = *opcode;
    program.instrs.push_back(std::move(instr));
  }
  program.regs.resize(static_cast<size_t>(program.numSlots) * subgroupSize);
  return program;
}

void BodyProgram::run(int64_t numLanes,
                      function_ref<void(int64_t, Val *)> setArgs,
                      function_ref<void(int64_t, const Val *)> take) {
  std::vector<Val> results(yields.size());
  std::unique_ptr<bool[]> active(new bool[subgroupSize]);
  for (int64_t base = 0; base < numLanes; base += subgroupSize) {
    unsigned lanes = static_cast<unsigned>(
        std::min<int64_t>(subgroupSize, numLanes - base));
    for (unsigned l = 0; l < subgroupSize; ++l) {
      active[l] = l < lanes;
      Val *regsOfLane = &regs[static_cast<size_t>(l) * numSlots];
      for (size_t c = 0; c < constants.size(); ++c)
        regsOfLane[constantSlots[c]] = constants[c];
      if (active[l])
        setArgs(base + l, regsOfLane);
    }
    for (const Instr &instr : instrs)
      step(instr, subgroupSize, active.get());
    for (unsigned l = 0; l < lanes; ++l) {
      const Val *regsOfLane = &regs[static_cast<size_t>(l) * numSlots];
      for (size_t y = 0; y < yields.size(); ++y)
        results[y] = regsOfLane[yields[y]];
      take(base + l, results.data());
    }
  }
}

static bool compareInts(ex::CmpPredicate p, int64_t a, int64_t b,
                        unsigned width) {
  uint64_t ua = asUnsigned(a, width), ub = asUnsigned(b, width);
  switch (p) {
  case ex::CmpPredicate::eq:
    return a == b;
  case ex::CmpPredicate::ne:
    return a != b;
  case ex::CmpPredicate::lt:
    return a < b;
  case ex::CmpPredicate::le:
    return a <= b;
  case ex::CmpPredicate::gt:
    return a > b;
  case ex::CmpPredicate::ge:
    return a >= b;
  case ex::CmpPredicate::ult:
    return ua < ub;
  case ex::CmpPredicate::ule:
    return ua <= ub;
  case ex::CmpPredicate::ugt:
    return ua > ub;
  case ex::CmpPredicate::uge:
    return ua >= ub;
  }
  return false;
}

static bool compareFloats(ex::CmpPredicate p, double a, double b) {
  switch (p) {
  case ex::CmpPredicate::eq:
    return a == b;
  case ex::CmpPredicate::ne:
    return !(a == b); // Unordered: true if either is NaN.
  case ex::CmpPredicate::lt:
    return a < b;
  case ex::CmpPredicate::le:
    return a <= b;
  case ex::CmpPredicate::gt:
    return a > b;
  case ex::CmpPredicate::ge:
    return a >= b;
  default:
    return false;
  }
}

/// Float to integer, rounding toward zero; NaN gives 0 and out-of-range
/// values saturate (the IR leaves them undefined).
static int64_t floatToInt(double v, unsigned width, bool isUnsigned) {
  if (std::isnan(v))
    return 0;
  double t = std::trunc(v);
  double lo, hi;
  if (isUnsigned) {
    lo = 0;
    hi = width >= 64 ? 18446744073709551615.0
                     : std::ldexp(1.0, static_cast<int>(width)) - 1;
  } else {
    lo = width >= 64 ? -9223372036854775808.0
                     : -std::ldexp(1.0, static_cast<int>(width) - 1);
    hi = width >= 64 ? 9223372036854775807.0
                     : std::ldexp(1.0, static_cast<int>(width) - 1) - 1;
  }
  t = std::min(std::max(t, lo), hi);
  if (isUnsigned && t >= 9223372036854775808.0)
    return wrap(static_cast<int64_t>(static_cast<uint64_t>(t)), width);
  return wrap(static_cast<int64_t>(t), width);
}

/// GELU, tanh form, in the precision of T (float or double).
template <typename T> static T gelu(T x) {
  const T k = T(0.7978845608028654); // sqrt(2 / pi)
  return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
}

void BodyProgram::step(const Instr &in, unsigned lanes, const bool *active) {
  auto reg = [&](unsigned lane, unsigned slot) -> Val & {
    return regs[static_cast<size_t>(lane) * numSlots + slot];
  };
  const bool isFloat = in.operandKind != ValKind::Int;
  const unsigned w = in.width;

  // Lane-exchanging ops see the whole group at once.
  if (in.opcode == OpSubgroupReduce || in.opcode == OpShuffleXor ||
      in.opcode == OpBroadcastFirst) {
    unsigned src = in.operands[0];
    std::vector<Val> v(lanes);
    for (unsigned l = 0; l < lanes; ++l)
      v[l] = reg(l, src);
    if (in.opcode == OpBroadcastFirst) {
      for (unsigned l = 0; l < lanes; ++l)
        if (active[l]) {
          for (unsigned m = 0; m < lanes; ++m)
            reg(m, in.result) = v[l];
          return;
        }
      return;
    }
    if (in.opcode == OpShuffleXor) {
      for (unsigned l = 0; l < lanes; ++l) {
        unsigned other = l ^ static_cast<unsigned>(in.imm0);
        reg(l, in.result) =
            (other < lanes && active[other]) ? v[other] : v[l];
      }
      return;
    }
    // Butterfly reduction; inactive lanes contribute the identity.
    auto kind = static_cast<ex::ReduceKind>(in.imm0);
    for (unsigned l = 0; l < lanes; ++l) {
      if (active[l])
        continue;
      if (kind == ex::ReduceKind::sum) {
        v[l] = Val();
      } else if (isFloat) {
        v[l].f = kind == ex::ReduceKind::max
                     ? -std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::infinity();
      } else {
        v[l].i = kind == ex::ReduceKind::max ? wrap(int64_t(1) << (w - 1), w)
                                             : wrap((int64_t(1) << (w - 1)) - 1, w);
      }
    }
    std::vector<Val> next(lanes);
    for (unsigned offset = lanes / 2; offset >= 1; offset /= 2) {
      for (unsigned l = 0; l < lanes; ++l) {
        const Val &a = v[l], &b = v[l ^ offset];
        Val r;
        if (isFloat) {
          if (kind == ex::ReduceKind::sum)
            r.f = roundTo(a.f + b.f, in.kind, wide);
          else if (kind == ex::ReduceKind::max)
            r.f = std::fmax(a.f, b.f);
          else
            r.f = std::fmin(a.f, b.f);
        } else {
          if (kind == ex::ReduceKind::sum)
            r.i = wrap(static_cast<int64_t>(static_cast<uint64_t>(a.i) +
                                            static_cast<uint64_t>(b.i)),
                       w);
          else if (kind == ex::ReduceKind::max)
            r.i = std::max(a.i, b.i);
          else
            r.i = std::min(a.i, b.i);
        }
        next[l] = r;
      }
      v.swap(next);
    }
    for (unsigned l = 0; l < lanes; ++l)
      reg(l, in.result) = v[l];
    return;
  }

  for (unsigned l = 0; l < lanes; ++l) {
    if (!active[l])
      continue;
    auto op = [&](unsigned k) -> const Val & {
      return reg(l, in.operands[k]);
    };
    Val r;
    auto f1 = [&](double v) { r.f = roundTo(v, in.kind, wide); };
    // Library math runs in the operand's own precision: float for f32 and
    // f16 (so the result is the single-precision function's), double when
    // the program is wide.
    const bool narrow = !(wide && in.operandKind == ValKind::F32);
    auto m1 = [&](auto fn) {
      narrow ? f1(fn(static_cast<float>(op(0).f))) : f1(fn(op(0).f));
    };
    auto m2 = [&](auto fn) {
      narrow ? f1(fn(static_cast<float>(op(0).f), static_cast<float>(op(1).f)))
             : f1(fn(op(0).f, op(1).f));
    };
    auto m3 = [&](auto fn) {
      narrow ? f1(fn(static_cast<float>(op(0).f), static_cast<float>(op(1).f),
                     static_cast<float>(op(2).f)))
             : f1(fn(op(0).f, op(1).f, op(2).f));
    };
    auto i1 = [&](int64_t v) { r.i = wrap(v, w); };
    auto uadd = [](int64_t a, int64_t b) {
      return static_cast<int64_t>(static_cast<uint64_t>(a) +
                                  static_cast<uint64_t>(b));
    };
    switch (in.opcode) {
    case OpAdd:
      isFloat ? f1(op(0).f + op(1).f) : i1(uadd(op(0).i, op(1).i));
      break;
    case OpSub:
      isFloat ? f1(op(0).f - op(1).f)
              : i1(static_cast<int64_t>(static_cast<uint64_t>(op(0).i) -
                                        static_cast<uint64_t>(op(1).i)));
      break;
    case OpMul:
      isFloat ? f1(op(0).f * op(1).f)
              : i1(static_cast<int64_t>(static_cast<uint64_t>(op(0).i) *
                                        static_cast<uint64_t>(op(1).i)));
      break;
    case OpDiv:
      if (isFloat)
        f1(op(0).f / op(1).f);
      else if (op(1).i == 0 ||
               (op(1).i == -1 && op(0).i == wrap(int64_t(1) << (w - 1), w)))
        i1(op(1).i == 0 ? 0 : op(0).i);
      else
        i1(op(0).i / op(1).i);
      break;
    case OpRem:
      if (isFloat)
        m2([](auto a, auto b) { return std::fmod(a, b); });
      else
        i1(op(1).i == 0 || op(1).i == -1 ? 0 : op(0).i % op(1).i);
      break;
    case OpUDiv: {
      uint64_t b = asUnsigned(op(1).i, w);
      i1(b ? static_cast<int64_t>(asUnsigned(op(0).i, w) / b) : 0);
      break;
    }
    case OpURem: {
      uint64_t b = asUnsigned(op(1).i, w);
      i1(b ? static_cast<int64_t>(asUnsigned(op(0).i, w) % b) : 0);
      break;
    }
    case OpMin:
      isFloat ? f1(std::fmin(op(0).f, op(1).f))
              : i1(std::min(op(0).i, op(1).i));
      break;
    case OpMax:
      isFloat ? f1(std::fmax(op(0).f, op(1).f))
              : i1(std::max(op(0).i, op(1).i));
      break;
    case OpUMin:
      i1(asUnsigned(op(0).i, w) < asUnsigned(op(1).i, w) ? op(0).i : op(1).i);
      break;
    case OpUMax:
      i1(asUnsigned(op(0).i, w) > asUnsigned(op(1).i, w) ? op(0).i : op(1).i);
      break;
    case OpNeg:
      isFloat ? f1(-op(0).f)
              : i1(static_cast<int64_t>(0 - static_cast<uint64_t>(op(0).i)));
      break;
    case OpAbs:
      isFloat ? f1(std::fabs(op(0).f))
              : i1(op(0).i < 0 ? static_cast<int64_t>(
                                     0 - static_cast<uint64_t>(op(0).i))
                               : op(0).i);
      break;
    case OpCmp: {
      auto p = static_cast<ex::CmpPredicate>(in.imm0);
      r.i = isFloat ? compareFloats(p, op(0).f, op(1).f)
                    : compareInts(p, op(0).i, op(1).i, in.operandWidth);
      break;
    }
    case OpSelect:
      r = op(0).i ? op(1) : op(2);
      break;
    case OpConvert: {
      bool isUnsigned = in.imm0 != 0;
      bool toFloat = in.kind != ValKind::Int;
      if (isFloat && toFloat) {
        f1(op(0).f);
      } else if (!isFloat && toFloat) {
        f1(isUnsigned ? static_cast<double>(asUnsigned(op(0).i, in.operandWidth))
                      : static_cast<double>(op(0).i));
      } else if (isFloat) {
        r.i = floatToInt(op(0).f, w, isUnsigned);
      } else {
        int64_t v = isUnsigned ? static_cast<int64_t>(
                                     asUnsigned(op(0).i, in.operandWidth))
                               : op(0).i;
        i1(v);
      }
      break;
    }
    case OpBitcast: {
      if (isFloat) {
        if (in.operandKind == ValKind::F16) {
          i1(floatToHalfBits(static_cast<float>(op(0).f)));
        } else {
          float single = static_cast<float>(op(0).f);
          uint32_t bits;
          std::memcpy(&bits, &single, 4);
          i1(static_cast<int32_t>(bits));
        }
      } else if (in.kind == ValKind::F16) {
        r.f = halfBitsToFloat(static_cast<uint16_t>(op(0).i));
      } else {
        uint32_t bits = static_cast<uint32_t>(op(0).i);
        float single;
        std::memcpy(&single, &bits, 4);
        r.f = single;
      }
      break;
    }
    case OpExp:
      m1([](auto x) { return std::exp(x); });
      break;
    case OpLog:
      m1([](auto x) { return std::log(x); });
      break;
    case OpSqrt:
      m1([](auto x) { return std::sqrt(x); });
      break;
    case OpRsqrt:
      m1([](auto x) { return decltype(x)(1) / std::sqrt(x); });
      break;
    case OpTanh:
      m1([](auto x) { return std::tanh(x); });
      break;
    case OpSin:
      m1([](auto x) { return std::sin(x); });
      break;
    case OpCos:
      m1([](auto x) { return std::cos(x); });
      break;
    case OpFloor:
      f1(std::floor(op(0).f));
      break;
    case OpRound:
      f1(std::round(op(0).f));
      break;
    case OpSigmoid:
      m1([](auto x) {
        return decltype(x)(1) / (decltype(x)(1) + std::exp(-x));
      });
      break;
    case OpSilu:
      m1([](auto x) { return x / (decltype(x)(1) + std::exp(-x)); });
      break;
    case OpGelu:
      m1([](auto x) { return gelu(x); });
      break;
    case OpPow:
      m2([](auto a, auto b) { return std::pow(a, b); });
      break;
    case OpFma:
      m3([](auto a, auto b, auto c) { return std::fma(a, b, c); });
      break;
    case OpClamp:
      if (isFloat)
        f1(std::fmin(std::fmax(op(0).f, op(1).f), op(2).f));
      else
        i1(std::min(std::max(op(0).i, op(1).i), op(2).i));
      break;
    case OpAnd:
      i1(op(0).i & op(1).i);
      break;
    case OpOr:
      i1(op(0).i | op(1).i);
      break;
    case OpXor:
      i1(op(0).i ^ op(1).i);
      break;
    case OpNot:
      i1(~op(0).i);
      break;
    case OpShl: {
      uint64_t s = asUnsigned(op(1).i, w);
      i1(s >= w ? 0 : static_cast<int64_t>(asUnsigned(op(0).i, w) << s));
      break;
    }
    case OpShrS: {
      uint64_t s = asUnsigned(op(1).i, w);
      i1(s >= w ? (op(0).i < 0 ? -1 : 0) : op(0).i >> s);
      break;
    }
    case OpShrU: {
      uint64_t s = asUnsigned(op(1).i, w);
      i1(s >= w ? 0 : static_cast<int64_t>(asUnsigned(op(0).i, w) >> s));
      break;
    }
    case OpPackF16x2:
      i1(static_cast<int32_t>(
          static_cast<uint32_t>(floatToHalfBits(static_cast<float>(op(0).f))) |
          (static_cast<uint32_t>(floatToHalfBits(static_cast<float>(op(1).f))) << 16)));
      break;
    case OpUnpackF16x2: {
      uint32_t word = static_cast<uint32_t>(op(0).i);
      r.f = halfBitsToFloat(
          static_cast<uint16_t>(in.imm0 == 0 ? word : word >> 16));
      break;
    }
    case OpPackI8x4: {
      uint32_t word = 0;
      for (unsigned k = 0; k < 4; ++k)
        word |= (static_cast<uint32_t>(op(k).i) & 0xffu) << (8 * k);
      i1(static_cast<int32_t>(word));
      break;
    }
    case OpUnpackI8x4: {
      uint32_t byte =
          (static_cast<uint32_t>(op(0).i) >> (8 * in.imm0)) & 0xffu;
      i1(in.imm1 ? static_cast<int64_t>(byte)
                 : static_cast<int64_t>(static_cast<int8_t>(byte)));
      break;
    }
    case OpDot4I8: {
      int64_t sum = op(2).i;
      for (unsigned k = 0; k < 4; ++k)
        sum += static_cast<int8_t>(static_cast<uint32_t>(op(0).i) >> (8 * k)) *
               static_cast<int8_t>(static_cast<uint32_t>(op(1).i) >> (8 * k));
      i1(sum);
      break;
    }
    case OpDivByConst:
      i1(static_cast<int64_t>(asUnsigned(op(0).i, w) /
                              static_cast<uint64_t>(in.imm0)));
      break;
    case OpRemByConst:
      i1(static_cast<int64_t>(asUnsigned(op(0).i, w) %
                              static_cast<uint64_t>(in.imm0)));
      break;
    case OpLaneId:
      i1(l);
      break;
    case OpSubgroupSize:
      i1(subgroupSize);
      break;
    case OpExtract: {
      const HostTensor *t = op(0).t;
      int64_t index = op(1).i;
      if (index >= 0 && index < t->getNumElements()) {
        if (t->getElementType().isInteger(32))
          r.i = t->getInt(index);
        else
          r.f = t->getDouble(index);
      }
      break;
    }
    default:
      break;
    }
    reg(l, in.result) = r;
  }
}
