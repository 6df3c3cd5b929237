//===- Interpreter.h - Reference interpreter for Circuit graphs -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The reference interpreter evaluates a `circuit.graph` on the CPU in plain
// C++. It is the oracle of the test suite: fused graphs must match their
// unfused source, and every backend must match it.
//
// Semantics it fixes (and that backends are compared against):
// - f32 arithmetic is IEEE single precision; f16 values are rounded to half
//   after every operation; integers wrap at their bit width.
// - Lanes run in lockstep groups of `subgroupSize`; subgroup sums combine in
//   butterfly (xor) order, so every lane of a group gets the same bits.
// - Reductions, dot products and attention accumulate in double and round to
//   f32 once, so the oracle is more accurate than any f32 summation order a
//   device picks; `--check` compares within each value's checkTolerance.
// - Gathers read 0 out of range; scatters skip out-of-range addresses; if two
//   lanes write one address, the higher lane wins.
// - A scatter into a graph argument updates that argument in place.
// - Integer division or remainder by zero gives 0 (it is undefined on GPUs).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_INTERPRETER_INTERPRETER_H
#define HESPER_INTERPRETER_INTERPRETER_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hesper {
namespace interp {

/// A tensor in host memory, stored in its element format: f32 and i32 as 4
/// bytes, f16 as IEEE half bits, quantized types as their GGUF blocks.
class HostTensor {
public:
  HostTensor() = default;
  /// A zero-filled tensor of `type` (static shape). A `wide` f32 tensor
  /// holds its elements as doubles (Options::wide evaluation); for other
  /// element types `wide` is ignored.
  explicit HostTensor(mlir::RankedTensorType type, bool wide = false);

  mlir::RankedTensorType getType() const { return type; }
  mlir::Type getElementType() const { return type.getElementType(); }
  int64_t getNumElements() const { return type.getNumElements(); }

  /// Element `i` of an f32 or f16 tensor, as float.
  float getFloat(int64_t i) const;
  /// Stores `v` (rounded to half for f16) at element `i`.
  void setFloat(int64_t i, float v);
  /// Element `i` of a float tensor in double precision: exact for a wide
  /// tensor, the stored value widened otherwise.
  double getDouble(int64_t i) const;
  /// Stores `v` at element `i`, rounded to the element type unless the
  /// tensor is wide.
  void setDouble(int64_t i, double v);
  /// Whether f32 elements are held as doubles.
  bool isWide() const { return wide; }
  /// A wide copy of an f32 tensor (other tensors are copied as they are).
  HostTensor widened() const;
  /// Element `i` of an i32 tensor.
  int32_t getInt(int64_t i) const;
  void setInt(int64_t i, int32_t v);

  std::vector<uint8_t> &bytes() { return storage; }
  const std::vector<uint8_t> &bytes() const { return storage; }

  /// Tensors from values (shape `shape`, f32 or i32 elements).
  static HostTensor fromFloats(mlir::MLIRContext *context,
                               llvm::ArrayRef<int64_t> shape,
                               llvm::ArrayRef<float> values);
  static HostTensor fromInts(mlir::MLIRContext *context,
                             llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int32_t> values);
  /// All elements as floats (f32/f16 tensors; quantized ones are
  /// dequantized).
  std::vector<float> toFloats() const;

private:
  mlir::RankedTensorType type;
  std::vector<uint8_t> storage;
  bool wide = false;
};

struct Options {
  /// Lanes per subgroup for exp.subgroup_reduce and friends.
  unsigned subgroupSize = 32;
  /// Report the first out-of-range address of a gather or a scatter as an
  /// error on its op (lane, address, extent). Off, such accesses are
  /// dropped (a gather reads zero), as every backend does.
  bool checkBounds = false;
  /// Evaluate every f32 value in double precision: f32 arguments, results
  /// and intermediates are wide tensors (HostTensor::isWide), body
  /// arithmetic and library math run in double, and reductions, products
  /// and attention keep their double accumulators unrounded. f16 values are
  /// still rounded to half. For gradient checks by finite differences,
  /// whose accuracy single precision would limit; f32 arguments given
  /// narrow are widened on entry.
  bool wide = false;
};

/// Evaluates `graph` with `args` bound to its arguments, in order. Arguments
/// written in place are updated. Returns the graph's results, or failure
/// after emitting a diagnostic on the offending op.
mlir::FailureOr<std::vector<HostTensor>>
runGraph(circuit::GraphOp graph, std::vector<HostTensor> &args,
         const Options &options = {});

/// How far a device's value may be from the interpreter's under `--check`:
/// |device - interpreter| <= abs + rel * |interpreter|. NaN matches only NaN,
/// an infinity only the same infinity.
struct Tolerance {
  double abs = 0, rel = 0;
};

/// The tolerance of each value of `graph` (results and in-place versions of
/// arguments), by the ops it depends on:
/// - elementwise ops (zeros, map, gather, scatter, quantize): abs 1e-5,
///   rel 1e-4, the few ulps by which devices' exp, tanh, erf and division
///   differ from the host's;
/// - reductions, matmuls and attention: abs 1e-3, rel 1e-3, since a device
///   sums in f32 in its own order (the interpreter in double);
/// - f16 values: rel at least 2e-3, one f16 ulp after a rounding that the
///   two sides may take on different sides of a tie;
/// and a value is as loose as the loosest value it is computed from.
/// Quantized values are compared decoded, with one quantization step of
/// their block added (see compareWithinTolerance).
llvm::DenseMap<mlir::Value, Tolerance>
computeCheckTolerances(circuit::GraphOp graph);

/// What compareWithinTolerance found: the largest error, and the first
/// element out of tolerance (index -1 when there is none) with both values.
struct Comparison {
  double maxError = 0;
  int64_t mismatch = -1;
  float got = 0, want = 0;
};

/// Compares `got` with the interpreter's `want` (same type) within `tol`.
Comparison compareWithinTolerance(const HostTensor &got,
                                  const HostTensor &want, Tolerance tol);

/// Dequantizes row `row` of a quantized (or f32/f16) tensor whose last
/// dimension is `rowLength`, appending to `out`. Fails for formats the
/// interpreter cannot decode.
mlir::LogicalResult dequantizeRow(const HostTensor &tensor, int64_t row,
                                  std::vector<float> &out);

/// Quantizes `values` (a multiple of 32) into q8_0 or q8_1 blocks.
void quantizeBlocks(llvm::ArrayRef<float> values, bool withSums,
                    std::vector<uint8_t> &out);

} // namespace interp
} // namespace hesper

#endif // HESPER_INTERPRETER_INTERPRETER_H
