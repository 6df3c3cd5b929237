//===- Autodiff.h - Reverse-mode differentiation of Circuit graphs -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Reverse-mode automatic differentiation as a graph-to-graph transformation.
// From a forward `circuit.graph` it builds a gradient graph that recomputes
// nothing: it contains the forward primitives, then, in reverse order, the
// vector-Jacobian product of each one, built from the same primitives (map,
// reduce, gather, matmul, scatter). The result is an ordinary graph that
// `hesper-fuse` and the lowerings treat like any other.
//
// Signature of the gradient graph of `@f(args...) -> (results...)`:
//
//   @f_grad(args..., d_results...) -> (results..., d_args[wrt]...)
//
// where `d_results` are the cotangents (seeds) of the forward results, one
// f32 tensor of each result's shape, and `d_args[k]` is the gradient with
// respect to forward argument `wrt[k]`, of that argument's shape.
//
// Forward values the backward rules need are kept (the forward primitives
// are in the same graph), never recomputed, except inside a per-lane body:
// the backward kernel of a map, reduce prologue or scatter re-evaluates the
// forward body of that lane, which is cheaper than storing its
// intermediates. See docs/Autodiff.md for the rules and their cost.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_TRANSFORMS_AUTODIFF_H
#define HESPER_DIALECT_CIRCUIT_TRANSFORMS_AUTODIFF_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

namespace hesper {
namespace circuit {

/// Builds the gradient graph of `forward` with respect to its arguments
/// `wrt` (indices, each an f32 tensor), named `name` (default
/// `<forward>_grad`), and inserts it into the module after `forward`.
/// Fails with a diagnostic on the op that cannot be differentiated (an
/// in-place write, attention, a quantized value on the gradient path, a
/// body op without a rule).
mlir::FailureOr<GraphOp> differentiate(GraphOp forward,
                                       llvm::ArrayRef<unsigned> wrt,
                                       llvm::StringRef name = {});

} // namespace circuit
} // namespace hesper

#endif // HESPER_DIALECT_CIRCUIT_TRANSFORMS_AUTODIFF_H
