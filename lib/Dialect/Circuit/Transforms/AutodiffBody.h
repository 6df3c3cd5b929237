//===- AutodiffBody.h - Reverse mode through a per-lane body ----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Dialect/Circuit/Transforms (circuit-autodiff).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_CIRCUIT_TRANSFORMS_AUTODIFFBODY_H
#define HESPER_LIB_CIRCUIT_TRANSFORMS_AUTODIFFBODY_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Dialect/Exp/Utils/ExpBuilder.h"

#include "mlir/IR/IRMapping.h"

namespace hesper::circuit::autodiff {

/// Copies the ops of `src` (a body ending in circuit.yield) to the builder's
/// insertion point with its arguments bound to `args`; returns the values
/// it yields. `mapping` keeps the copy of every value of `src`.
llvm::SmallVector<mlir::Value> cloneBody(exp::ExpBuilder &e, mlir::Block &src,
                                         mlir::ValueRange args,
                                         mlir::IRMapping &mapping);

/// The first value a lane body (arguments: the lane, then `args`) yields,
/// copied at the builder's insertion point.
mlir::Value cloneLaneBody(exp::ExpBuilder &e, mlir::Block &src,
                          mlir::Value lane, mlir::ValueRange args);

/// Reverse mode through a body copied by cloneBody: given the cotangents
/// `seeds` of its yielded values (null for none), emits the derivative of
/// each op and returns the cotangent of every argument of `src` (null where
/// it is zero). Fails on a float op on the gradient path without a rule.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
backpropBody(exp::ExpBuilder &e, mlir::Block &src,
             const mlir::IRMapping &mapping, llvm::ArrayRef<mlir::Value> seeds);

} // namespace hesper::circuit::autodiff

#endif // HESPER_LIB_CIRCUIT_TRANSFORMS_AUTODIFFBODY_H
