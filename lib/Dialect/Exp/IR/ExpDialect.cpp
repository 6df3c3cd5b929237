//===- ExpDialect.cpp - Exp dialect registration -------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Exp/IR/Exp.h"

using namespace mlir;
using namespace hesper::exp;

#include "Hesper/Dialect/Exp/IR/ExpDialect.cpp.inc"
#include "Hesper/Dialect/Exp/IR/ExpEnums.cpp.inc"

void ExpDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Hesper/Dialect/Exp/IR/ExpOps.cpp.inc"
      >();
}

Operation *ExpDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed || typed.getType() != type)
    return nullptr;
  if (!isa<IntegerAttr, FloatAttr, DenseElementsAttr>(typed))
    return nullptr;
  return ConstantOp::create(builder, loc, type, typed);
}
