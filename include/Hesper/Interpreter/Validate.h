//===- Validate.h - Translation validation with the interpreter -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Translation validation: a transformed graph (fused, say) must compute what
// its source computes. Both run in the reference interpreter on the same
// seeded random inputs; every result and every argument written in place is
// compared element by element.
//
// Tolerance: |got - want| <= atol + rtol * |want| with atol = rtol = 1e-4 by
// default. Fusion reorders no arithmetic inside a body, but it can change
// f16 rounding points and, through whole-graph canonicalization, fold
// constants; quantized tensors are compared after dequantization.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_INTERPRETER_VALIDATE_H
#define HESPER_INTERPRETER_VALIDATE_H

#include "Hesper/Interpreter/Interpreter.h"

#include <string>

namespace hesper {
namespace interp {

/// A tensor of `type` filled from `seed`: floats uniform in [-2, 2), i32 in
/// [0, 16), q8_0/q8_1 quantized from such floats, k-quants as random blocks
/// with small scales.
HostTensor randomTensor(mlir::RankedTensorType type, uint64_t seed);

struct ValidationOptions {
  double atol = 1e-4;
  double rtol = 1e-4;
  /// Number of input sets (seeds seed, seed+1, ...).
  unsigned trials = 3;
  uint64_t seed = 1;
  Options interpreter;
};

struct ValidationReport {
  bool matches = true;
  /// Largest |got - want| over all compared elements.
  double maxError = 0.0;
  /// Number of elements compared.
  int64_t compared = 0;
  /// The first mismatch, in words (empty when all match).
  std::string firstMismatch;
};

/// Runs `source` and `transformed` (same signature) on the same inputs and
/// compares them. Fails (with a diagnostic) if either cannot be evaluated.
mlir::FailureOr<ValidationReport>
validateTransform(circuit::GraphOp source, circuit::GraphOp transformed,
                  const ValidationOptions &options = {});

} // namespace interp
} // namespace hesper

#endif // HESPER_INTERPRETER_VALIDATE_H
