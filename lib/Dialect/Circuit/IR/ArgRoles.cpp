//===- ArgRoles.cpp - What a graph argument is for ------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

using namespace mlir;
using namespace hesper::circuit;

LogicalResult hesper::circuit::verifyArgRoles(GraphOp op, unsigned i) {
  Attribute role = op.getArgAttr(i, kArgRoleAttr);
  Attribute tensor = op.getArgAttr(i, kArgTensorAttr);
  Attribute rows = op.getArgAttr(i, kArgRowsAttr);
  std::optional<ArgRole> kind = ArgRole::Input;
  if (role) {
    auto name = dyn_cast<StringAttr>(role);
    kind = name ? symbolizeArgRole(name.getValue()) : std::nullopt;
    if (!kind)
      return op.emitOpError("expects argument #")
             << i << "'s " << kArgRoleAttr
             << " to be one of input, weight, tokens, position, last_row, "
                "rope_freqs, rope_freqs_swa, cache, targets, got "
             << role;
  }
  if ((tensor || rows) && kind != ArgRole::Weight)
    return op.emitOpError("expects ")
           << kArgTensorAttr << " and " << kArgRowsAttr
           << " only on a weight argument, got them on argument #" << i;
  if (tensor && !isa<StringAttr>(tensor))
    return op.emitOpError("expects argument #")
           << i << "'s " << kArgTensorAttr << " to be a string, got " << tensor;
  if (Attribute bound = op.getArgAttr(i, kArgBoundAttr)) {
    auto value = dyn_cast<IntegerAttr>(bound);
    auto type = dyn_cast<RankedTensorType>(op.getArgumentTypes()[i]);
    if (kind != ArgRole::Tokens && kind != ArgRole::Targets)
      return op.emitOpError("expects ")
             << kArgBoundAttr << " only on a tokens or targets argument, got "
             << "it on argument #" << i;
    if (!value || value.getInt() <= 0 || !type ||
        !type.getElementType().isInteger(32))
      return op.emitOpError("expects argument #")
             << i << "'s " << kArgBoundAttr
             << " to be a positive integer on an i32 tensor, got " << bound;
  }
  if (rows) {
    auto range = dyn_cast<DenseI64ArrayAttr>(rows);
    auto type = dyn_cast<RankedTensorType>(op.getArgumentTypes()[i]);
    if (!range || range.size() != 2 || range[0] < 0 || range[1] <= 0 ||
        (type && type.getRank() >= 1 &&
         rowsOfLastDimension(type.getShape()) != range[1]))
      return op.emitOpError("expects argument #")
             << i << "'s " << kArgRowsAttr
             << " to be array<i64: first, count> with count equal to the "
                "argument's rows, got "
             << rows;
  }
  return success();
}

std::string hesper::circuit::argumentName(mlir::FunctionOpInterface function,
                                          unsigned i) {
  if (auto name = function.getArgAttrOfType<mlir::StringAttr>(i, kArgNameAttr))
    return name.getValue().str();
  return "arg" + std::to_string(i);
}
