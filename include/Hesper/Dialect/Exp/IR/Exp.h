//===- Exp.h - Exp dialect ------------------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The exp dialect: typed per-lane expressions over builtin scalar and vector
// types.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_EXP_IR_EXP_H
#define HESPER_DIALECT_EXP_IR_EXP_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Hesper/Dialect/Exp/IR/ExpDialect.h.inc"
#include "Hesper/Dialect/Exp/IR/ExpEnums.h.inc"

namespace hesper {
namespace exp {

/// Returns `i1` for a scalar type and `vector<...xi1>` of the same shape for a
/// vector type.
mlir::Type getI1SameShape(mlir::Type type);

/// Returns the element type of a vector, or the type itself for a scalar.
mlir::Type getElementTypeOrSelf(mlir::Type type);

/// `exp.cmp`'s predicate on two integers of one width (the folder's rule,
/// shared with the static analyses that evaluate integer bodies).
bool evaluateIntCmp(CmpPredicate pred, const llvm::APInt &a,
                    const llvm::APInt &b);

} // namespace exp
} // namespace hesper

#define GET_OP_CLASSES
#include "Hesper/Dialect/Exp/IR/ExpOps.h.inc"

#endif // HESPER_DIALECT_EXP_IR_EXP_H
