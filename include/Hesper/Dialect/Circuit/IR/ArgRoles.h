//===- ArgRoles.h - What a graph argument is for ----------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A graph argument may declare its role in the `circuit.role` argument
// attribute, so that whoever binds the arguments (a model session, a
// trainer) reads what each one is instead of guessing from its name:
//
//   circuit.graph @decode(
//       %tokens: tensor<1xi32> {circuit.name = "tokens", circuit.role = "tokens"},
//       %w: tensor<512x512x!circuit.q8_0> {circuit.name = "blk.0.attn_q.weight",
//           circuit.role = "weight", circuit.tensor = "blk.0.attn_q.weight"},
//       %e: tensor<4096x512xf32> {circuit.name = "token_embd.weight@1",
//           circuit.role = "weight", circuit.tensor = "token_embd.weight",
//           circuit.rows = array<i64: 4096, 4096>}) ...
//
// A weight names its tensor in the model file (`circuit.tensor`) and, when
// it binds a row range of it, the first row and the count (`circuit.rows`,
// counted in rows of the last dimension: an [E, N, K] weight has E * N).
// Token ids and training targets may declare their bound (`circuit.bound =
// 256 : i64`: every element in [0, 256)), which whoever binds them checks:
// a graph indexes with them, and an index past the bound would read
// another row's values.
// circuit.graph's verifier checks the attributes.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_IR_ARGROLES_H
#define HESPER_DIALECT_CIRCUIT_IR_ARGROLES_H

#include "Hesper/Dialect/Circuit/IR/ArgRoleNames.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace hesper::circuit {

inline constexpr llvm::StringLiteral kArgNameAttr = "circuit.name";
inline constexpr llvm::StringLiteral kArgRoleAttr = "circuit.role";
inline constexpr llvm::StringLiteral kArgTensorAttr = "circuit.tensor";
inline constexpr llvm::StringLiteral kArgRowsAttr = "circuit.rows";
inline constexpr llvm::StringLiteral kArgBoundAttr = "circuit.bound";

/// The rows a circuit.rows range counts for a weight of `shape`: rows of its
/// last dimension (an [E, N, K] weight has E * N; a [N, K] one N).
inline int64_t rowsOfLastDimension(llvm::ArrayRef<int64_t> shape) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    rows *= shape[d];
  return shape.size() == 1 ? shape[0] : rows;
}

/// The name argument `i` of a graph (or of the schedule lowered from it) is
/// bound and reported by: its circuit.name, else "arg<i>".
std::string argumentName(mlir::FunctionOpInterface function, unsigned i);

class GraphOp;
/// Checks the role attributes of argument `i` of `graph` (circuit.graph's
/// verifier): a known role; a weight's tensor name and its rows as
/// [first, count] with count the argument's rows, only on a weight; a
/// positive bound on an i32 tokens or targets argument.
mlir::LogicalResult verifyArgRoles(GraphOp graph, unsigned i);

} // namespace hesper::circuit

#endif // HESPER_DIALECT_CIRCUIT_IR_ARGROLES_H
