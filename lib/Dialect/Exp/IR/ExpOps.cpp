//===- ExpOps.cpp - Exp op verifiers and custom syntax -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallString.h"

using namespace mlir;
using namespace hesper::exp;

Type hesper::exp::getI1SameShape(Type type) {
  auto i1 = IntegerType::get(type.getContext(), 1);
  if (auto vec = dyn_cast<VectorType>(type))
    return VectorType::get(vec.getShape(), i1, vec.getScalableDims());
  return i1;
}

Type hesper::exp::getElementTypeOrSelf(Type type) {
  if (auto vec = dyn_cast<VectorType>(type))
    return vec.getElementType();
  return type;
}

/// Two types have the same shape when both are scalars or both are vectors of
/// the same shape.
static bool haveSameShape(Type a, Type b) {
  auto va = dyn_cast<VectorType>(a);
  auto vb = dyn_cast<VectorType>(b);
  if (!va || !vb)
    return !va && !vb;
  return va.getShape() == vb.getShape();
}

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `: type` when the condition is `i1` with a scalar result (or the vector
/// condition has the result's shape); `: cond-type, type` otherwise.
static ParseResult parseSelectConditionType(OpAsmParser &parser,
                                            Type &conditionType,
                                            Type &resultType) {
  Type first;
  if (parser.parseType(first))
    return failure();
  if (succeeded(parser.parseOptionalComma())) {
    conditionType = first;
    return parser.parseType(resultType);
  }
  resultType = first;
  conditionType = getI1SameShape(first);
  return success();
}

static void printSelectConditionType(OpAsmPrinter &p, Operation *,
                                     Type conditionType, Type resultType) {
  if (conditionType != getI1SameShape(resultType))
    p << conditionType << ", ";
  p << resultType;
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

void ConstantOp::getAsmResultNames(
    function_ref<void(Value, StringRef)> setNameFn) {
  Type type = getType();
  if (auto intAttr = dyn_cast<IntegerAttr>(getValue())) {
    SmallString<16> name;
    llvm::raw_svector_ostream os(name);
    if (type.isInteger(1)) {
      os << (intAttr.getInt() ? "true" : "false");
    } else {
      os << 'c' << intAttr.getValue();
      if (!type.isIndex())
        os << '_' << type;
    }
    setNameFn(getResult(), os.str());
    return;
  }
  setNameFn(getResult(), "cst");
}

LogicalResult ConstantOp::verify() {
  auto value = getValue();
  if (value.getType() != getType())
    return emitOpError("expects the value's type to match the result type, "
                       "got ")
           << value.getType() << " and " << getType();
  if (isa<VectorType>(getType())) {
    if (!isa<DenseElementsAttr>(value))
      return emitOpError("expects a dense elements attribute for a vector "
                         "constant, got ")
             << value;
    return success();
  }
  if (isa<FloatType>(getType()) ? !isa<FloatAttr>(value)
                                : !isa<IntegerAttr>(value))
    return emitOpError("expects an integer or float attribute matching the "
                       "result type, got ")
           << value;
  return success();
}

//===----------------------------------------------------------------------===//
// CmpOp / SelectOp
//===----------------------------------------------------------------------===//

LogicalResult CmpOp::verify() {
  bool isUnsignedPredicate = getPredicate() >= CmpPredicate::ult;
  if (isUnsignedPredicate &&
      isa<FloatType>(getElementTypeOrSelf(getLhs().getType())))
    return emitOpError("expects an integer operand for unsigned predicate '")
           << stringifyCmpPredicate(getPredicate()) << "', got "
           << getLhs().getType();
  return success();
}

LogicalResult VectorDot4I8Op::verify() {
  int64_t bytes = getA().getType().getNumElements();
  int64_t lanes = getAcc().getType().getNumElements();
  if (bytes != 4 * lanes)
    return emitOpError("expects four bytes per accumulator lane, got ")
           << getA().getType() << " for " << getAcc().getType();
  return success();
}

LogicalResult SelectOp::verify() {
  Type condType = getCondition().getType();
  Type resultType = getType();
  if (condType.isInteger(1))
    return success();
  if (!isa<VectorType>(resultType) || !haveSameShape(condType, resultType))
    return emitOpError("expects an i1 condition or a vector of i1 with the "
                       "result's shape, got ")
           << condType << " for result " << resultType;
  return success();
}

//===----------------------------------------------------------------------===//
// ConvertOp / BitcastOp
//===----------------------------------------------------------------------===//

LogicalResult ConvertOp::verify() {
  Type from = getInput().getType(), to = getType();
  if (!haveSameShape(from, to))
    return emitOpError("expects input and result of the same shape, got ")
           << from << " and " << to;
  Type fromElt = getElementTypeOrSelf(from), toElt = getElementTypeOrSelf(to);
  if (getIsUnsigned() && isa<FloatType>(fromElt) && isa<FloatType>(toElt))
    return emitOpError("expects an integer side for 'unsigned', got ")
           << from << " to " << to;
  return success();
}

static unsigned getBitWidthOrZero(Type type) {
  Type elt = getElementTypeOrSelf(type);
  if (elt.isIndex())
    return 0;
  return elt.getIntOrFloatBitWidth();
}

LogicalResult BitcastOp::verify() {
  Type from = getInput().getType(), to = getType();
  if (!haveSameShape(from, to))
    return emitOpError("expects input and result of the same shape, got ")
           << from << " and " << to;
  unsigned fromBits = getBitWidthOrZero(from), toBits = getBitWidthOrZero(to);
  if (fromBits == 0 || fromBits != toBits)
    return emitOpError("expects element types of the same bit width, got ")
           << from << " and " << to;
  return success();
}

#define GET_OP_CLASSES
#include "Hesper/Dialect/Exp/IR/ExpOps.cpp.inc"
