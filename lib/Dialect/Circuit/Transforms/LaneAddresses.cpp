//===- LaneAddresses.cpp - The addresses a lane-only gather reads ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A gather whose address body depends on the lane alone (a slice, a
// transpose, RoPE's partner permutation) has a fixed access map: lane i
// reads element f(i). circuit-autodiff transposes such a gather into a
// scatter when f is injective. The map is found here statically, the way
// an index analysis would: the body's integer ops (exp constants, add,
// sub, mul, the divisions and remainders, min/max, bit operations, shifts,
// comparisons and select, on i1 and i32) are evaluated for each lane with
// the dialect's own wrap-around semantics. Any other op, a division by
// zero, a shift past the width or a wider type makes the map unknown, and
// the caller falls back to the general rule. No graph is run.
//
//===----------------------------------------------------------------------===//

#include "LaneAddresses.h"

#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace ex = hesper::exp;

namespace {
/// The bit width of an i1 or i32 value; 0 for any other type.
unsigned widthOf(Type type) {
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer || (integer.getWidth() != 1 && integer.getWidth() != 32))
    return 0;
  return integer.getWidth();
}

uint32_t truncate(uint64_t v, unsigned width) {
  return width == 1 ? static_cast<uint32_t>(v & 1) : static_cast<uint32_t>(v);
}

int64_t asSigned(uint32_t v, unsigned width) {
  if (width == 1)
    return v ? -1 : 0;
  return static_cast<int32_t>(v);
}

/// Evaluates the integer body for one lane; std::nullopt where an op is
/// outside the evaluated set or its result is undefined.
std::optional<uint32_t> evaluate(Block &body, uint32_t lane) {
  llvm::DenseMap<Value, uint32_t> known;
  known[body.getArgument(0)] = lane;
  auto get = [&](Value v) -> std::optional<uint32_t> {
    auto found = known.find(v);
    if (found == known.end())
      return std::nullopt;
    return found->second;
  };
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() != 1)
      return std::nullopt;
    unsigned width = widthOf(op.getResult(0).getType());
    if (!width)
      return std::nullopt;
    SmallVector<uint32_t, 3> in;
    for (Value operand : op.getOperands()) {
      std::optional<uint32_t> v = get(operand);
      if (!v)
        return std::nullopt;
      in.push_back(*v);
    }
    // Binary ops have operands of the result's type; cmp's are compared
    // at their own width.
    unsigned operandWidth =
        op.getNumOperands() ? widthOf(op.getOperand(0).getType()) : width;
    if (op.getNumOperands() && !operandWidth)
      return std::nullopt;
    auto s = [&](unsigned k) { return asSigned(in[k], operandWidth); };
    std::optional<uint64_t> result =
        llvm::TypeSwitch<Operation *, std::optional<uint64_t>>(&op)
            .Case([&](ex::ConstantOp c) -> std::optional<uint64_t> {
              auto value = dyn_cast<IntegerAttr>(c.getValue());
              if (!value)
                return std::nullopt;
              return value.getValue().getZExtValue();
            })
            .Case([&](ex::AddOp) { return uint64_t(in[0]) + in[1]; })
            .Case([&](ex::SubOp) { return uint64_t(in[0]) - in[1]; })
            .Case([&](ex::MulOp) { return uint64_t(in[0]) * in[1]; })
            .Case([&](ex::DivOp) -> std::optional<uint64_t> {
              if (in[1] == 0 || (s(0) == INT32_MIN && s(1) == -1))
                return std::nullopt;
              return static_cast<uint64_t>(s(0) / s(1));
            })
            .Case([&](ex::RemOp) -> std::optional<uint64_t> {
              if (in[1] == 0 || (s(0) == INT32_MIN && s(1) == -1))
                return std::nullopt;
              return static_cast<uint64_t>(s(0) % s(1));
            })
            .Case([&](ex::UDivOp) -> std::optional<uint64_t> {
              if (in[1] == 0)
                return std::nullopt;
              return in[0] / in[1];
            })
            .Case([&](ex::URemOp) -> std::optional<uint64_t> {
              if (in[1] == 0)
                return std::nullopt;
              return in[0] % in[1];
            })
            .Case([&](ex::DivByConstOp d) -> std::optional<uint64_t> {
              uint64_t divisor = static_cast<uint64_t>(d.getDivisor());
              if (divisor == 0)
                return std::nullopt;
              return in[0] / divisor;
            })
            .Case([&](ex::RemByConstOp d) -> std::optional<uint64_t> {
              uint64_t divisor = static_cast<uint64_t>(d.getDivisor());
              if (divisor == 0)
                return std::nullopt;
              return in[0] % divisor;
            })
            .Case([&](ex::MinOp) {
              return static_cast<uint64_t>(std::min(s(0), s(1)));
            })
            .Case([&](ex::MaxOp) {
              return static_cast<uint64_t>(std::max(s(0), s(1)));
            })
            .Case([&](ex::UMinOp) { return uint64_t(std::min(in[0], in[1])); })
            .Case([&](ex::UMaxOp) { return uint64_t(std::max(in[0], in[1])); })
            .Case([&](ex::AndOp) { return uint64_t(in[0] & in[1]); })
            .Case([&](ex::OrOp) { return uint64_t(in[0] | in[1]); })
            .Case([&](ex::XorOp) { return uint64_t(in[0] ^ in[1]); })
            .Case([&](ex::ShlOp) -> std::optional<uint64_t> {
              if (in[1] >= width)
                return std::nullopt;
              return uint64_t(in[0]) << in[1];
            })
            .Case([&](ex::ShrUOp) -> std::optional<uint64_t> {
              if (in[1] >= width)
                return std::nullopt;
              return uint64_t(in[0] >> in[1]);
            })
            .Case([&](ex::ShrSOp) -> std::optional<uint64_t> {
              if (in[1] >= width)
                return std::nullopt;
              return static_cast<uint64_t>(s(0) >> in[1]);
            })
            .Case([&](ex::CmpOp c) {
              return uint64_t(ex::evaluateIntCmp(c.getPredicate(),
                                                 APInt(operandWidth, in[0]),
                                                 APInt(operandWidth, in[1])));
            })
            .Case([&](ex::SelectOp) { return uint64_t(in[0] ? in[1] : in[2]); })
            .Default([](Operation *) { return std::nullopt; });
    if (!result)
      return std::nullopt;
    known[op.getResult(0)] = truncate(*result, width);
  }
  Operation *yield = body.getTerminator();
  if (yield->getNumOperands() < 1 ||
      widthOf(yield->getOperand(0).getType()) != 32)
    return std::nullopt;
  return get(yield->getOperand(0));
}
} // namespace

std::optional<std::vector<int32_t>>
hesper::circuit::laneOnlyAddresses(GatherOp op) {
  if (!op.getInputs().empty())
    return std::nullopt;
  Block &body = op.getBody().front();
  int64_t lanes = op.getType().getNumElements();
  std::vector<int32_t> out(lanes);
  for (int64_t i = 0; i < lanes; ++i) {
    std::optional<uint32_t> address = evaluate(body, static_cast<uint32_t>(i));
    if (!address)
      return std::nullopt;
    out[i] = static_cast<int32_t>(*address);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Row gathers
//===----------------------------------------------------------------------===//

namespace {
/// The integer constant `v` is, if it is an exp constant.
std::optional<int64_t> constantOf(Value v) {
  auto c = v.getDefiningOp<ex::ConstantOp>();
  if (!c)
    return std::nullopt;
  auto value = dyn_cast<IntegerAttr>(c.getValue());
  if (!value)
    return std::nullopt;
  return value.getValue().getSExtValue();
}

/// Whether `v` is `lane div width` (`rem` false) or `lane rem width`.
bool isLaneBy(Value v, Value lane, int64_t width, bool rem) {
  if (rem) {
    auto r = v.getDefiningOp<ex::RemByConstOp>();
    return r && r.getInput() == lane &&
           static_cast<int64_t>(r.getDivisor()) == width;
  }
  auto d = v.getDefiningOp<ex::DivByConstOp>();
  return d && d.getInput() == lane &&
         static_cast<int64_t>(d.getDivisor()) == width;
}

/// Whether `v` is `indices[lane div width] * width`, `indices` being the
/// whole-tensor block argument `indices`.
bool isScaledRow(Value v, Value lane, Value indices, int64_t width) {
  auto mul = v.getDefiningOp<ex::MulOp>();
  if (!mul)
    return false;
  for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())}) {
    auto extract = x.getDefiningOp<hesper::circuit::ExtractOp>();
    if (extract && extract.getTensor() == indices &&
        isLaneBy(extract.getIndex(), lane, width, /*rem=*/false) &&
        constantOf(y) == width)
      return true;
  }
  return false;
}
} // namespace

Value hesper::circuit::rowGatherIndices(GatherOp op) {
  auto source = cast<RankedTensorType>(op.getSource().getType());
  ArrayRef<int64_t> shape = op.getType().getShape();
  if (op.getInputs().size() != 1 || source.getRank() != 2 ||
      shape.size() != 2 || shape[1] != source.getDimSize(1))
    return {};
  Value indices = op.getInputs()[0];
  auto indexType = cast<RankedTensorType>(indices.getType());
  if (indexType.getRank() != 1 || indexType.getDimSize(0) != shape[0] ||
      !indexType.getElementType().isInteger(32))
    return {};
  Block &body = op.getBody().front();
  Value lane = body.getArgument(0), whole = body.getArgument(1);
  if (whole.getType() != indexType)
    return {};
  int64_t width = shape[1];
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<ex::AddOp>();
  if (!add)
    return {};
  for (auto [x, y] : {std::pair(add.getLhs(), add.getRhs()),
                      std::pair(add.getRhs(), add.getLhs())})
    if (isScaledRow(x, lane, whole, width) &&
        isLaneBy(y, lane, width, /*rem=*/true))
      return indices;
  return {};
}
