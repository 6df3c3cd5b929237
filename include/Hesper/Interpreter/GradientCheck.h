//===- GradientCheck.h - Gradients against finite differences ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Checks a gradient graph (circuit-autodiff's output) against central finite
// differences of its forward graph, both evaluated by the reference
// interpreter in double precision (Options::wide). The scalar checked is
// L = Σ_r <u_r, f_r(x)> for random cotangents u_r of the forward results,
// so one run of the gradient graph gives the whole vector-Jacobian product
// and every element of every differentiated argument is perturbed in turn.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_INTERPRETER_GRADIENTCHECK_H
#define HESPER_INTERPRETER_GRADIENTCHECK_H

#include "Hesper/Interpreter/Interpreter.h"

#include <string>

namespace hesper {
namespace interp {

struct GradientCheckOptions {
  /// Central-difference step h: (L(x + h) - L(x - h)) / 2h. Its error is
  /// O(h²) plus rounding of O(ε/h), about 1e-10 in double for h = 1e-5.
  double step = 1e-5;
  /// An element passes when |analytic - numeric| <= tolerance·(1 + |numeric|).
  double tolerance = 1e-6;
  /// Seed of the random cotangents (uniform in [-1, 1]).
  uint64_t seed = 1;
};

struct GradientCheckReport {
  /// Elements compared, and the largest error relative to 1 + |numeric|.
  int64_t checked = 0;
  double maxError = 0;
  /// The worst element: argument index, flat index, both values.
  unsigned argument = 0;
  int64_t index = 0;
  double analytic = 0, numeric = 0;
  bool passed() const { return checked > 0 && !failedWithin; }
  bool failedWithin = false;
  /// "argument #a[i]: analytic A, numeric N (error E)" for the worst one.
  std::string describe() const;
};

/// Compares `gradient` (signature as circuit::differentiate builds it) with
/// finite differences of `forward` at `inputs` (one per forward argument)
/// for the arguments `wrt`. Fails, with a diagnostic, if either graph
/// cannot be evaluated or the signatures do not match.
mlir::FailureOr<GradientCheckReport>
checkGradients(circuit::GraphOp forward, circuit::GraphOp gradient,
               llvm::ArrayRef<unsigned> wrt,
               llvm::ArrayRef<HostTensor> inputs,
               const GradientCheckOptions &options = {});

} // namespace interp
} // namespace hesper

#endif // HESPER_INTERPRETER_GRADIENTCHECK_H
