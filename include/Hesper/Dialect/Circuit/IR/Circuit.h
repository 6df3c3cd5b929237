//===- Circuit.h - Circuit dialect ----------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The circuit dialect: shape-typed graphs of tensor primitives whose
// per-lane bodies are exp expressions.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_IR_CIRCUIT_H
#define HESPER_DIALECT_CIRCUIT_IR_CIRCUIT_H

#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Hesper/Dialect/Circuit/IR/CircuitDialect.h.inc"
#include "Hesper/Dialect/Circuit/IR/CircuitEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Hesper/Dialect/Circuit/IR/CircuitTypes.h.inc"

#define GET_OP_CLASSES
#include "Hesper/Dialect/Circuit/IR/CircuitOps.h.inc"

namespace hesper {
namespace circuit {

/// Block size (values per block) of a quantized element type, or 0 for a
/// plain element type. bf16 is a block of one value: it is a storage
/// format like the quantized ones (read by matmuls and gathers only).
int64_t getQuantBlockSize(mlir::Type elementType);

/// Bytes of one block of a quantized element type, or 0 for a plain type.
int64_t getQuantBlockBytes(mlir::Type elementType);

/// True for the block-stored formats (q8_0, q4_0, q4_1, q5_0, q5_1,
/// iq4_nl, iq4_xs, q4_k, q5_k, q6_k, i2_s, tq1_0, tq2_0, q8_1, and bf16).
inline bool isQuantized(mlir::Type elementType) {
  return getQuantBlockSize(elementType) != 0;
}

/// Bytes a tensor of this type occupies in a buffer.
int64_t getStorageBytes(mlir::RankedTensorType type);

/// True when an input of shape `input` can be read beside an iteration over
/// `iteration`: either it has as many elements (read at the flat lane index),
/// or it broadcasts NumPy-style (trailing dimensions aligned, each equal to
/// the iteration's or 1; a size-1 dimension is read at index 0).
bool isBroadcastCompatible(llvm::ArrayRef<int64_t> input,
                           llvm::ArrayRef<int64_t> iteration);

/// For a value written in place, follows the chain of in-place writes back to
/// the buffer it started from: a graph argument or a `circuit.zeros`.
mlir::Value getWrittenBufferRoot(mlir::Value dest);

/// True when `op` writes into one of its operands in place (scatter,
/// scatter_multi, reduce_scatter_epilogue).
bool isInPlaceWriter(mlir::Operation *op);

/// The shape a reduction (reduce, reduce_epilogue, reduce_scatter_epilogue)
/// iterates over: its `over` attribute, else its first input's shape.
llvm::SmallVector<int64_t> getReductionIteration(mlir::Operation *op);

/// Ops that become one kernel each when lowered (every circuit op except
/// graph, output, yield and zeros).
bool isDispatchOp(mlir::Operation *op);

/// Why a lane of `map`'s GPU kernel cannot take `width` consecutive
/// elements (the `vector_width` knob: one vector load per input and one
/// vector store), or "" when it can: every input has the result's shape
/// and is read an element per lane, the element types are integers or
/// floats of 8 to 32 bits, the body has no subgroup operations (a lane
/// would stand for several) and `width` (1, 2 or 4) divides the elements.
std::string mapVectorObstacle(mlir::Operation *map, int64_t width);

/// The discardable attribute of a dispatch op holding its kernel's knobs
/// (a dictionary: lanes, rows, subgroup_reduce), set from a tuning plan
/// and read by convert-circuit-to-shaderm (docs/Tuning.md).
inline constexpr llvm::StringLiteral kKnobsAttrName = "circuit.knobs";

} // namespace circuit
} // namespace hesper

#endif // HESPER_DIALECT_CIRCUIT_IR_CIRCUIT_H
