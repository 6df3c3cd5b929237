//===- OpVerification.h - Checks the Circuit ops share ------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Dialect/Circuit/IR: the pieces of the op verifiers that more
// than one op uses (bodies, broadcasts, write destinations, block-quantized
// shapes), apart from the verifiers themselves in CircuitOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_DIALECT_CIRCUIT_IR_OPVERIFICATION_H
#define HESPER_LIB_DIALECT_CIRCUIT_IR_OPVERIFICATION_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace hesper::circuit::detail {

using namespace mlir;

/// Whether `v` is an argument of a circuit.graph.
bool isGraphArgument(Value v);
/// Lane indices are i32: a grid must fit.
LogicalResult verifyLaneCount(Operation *op, int64_t lanes);
/// Element type a per-lane body sees for a tensor.
Type elementOf(Value tensor);
ArrayRef<int64_t> shapeOf(Value tensor);

/// A body of an op and the number of block arguments before its inputs'.
using Body = std::pair<Region *, unsigned>;

/// True when the bodies take input `k` as a whole tensor (read with
/// circuit.extract) rather than element by element.
bool readsWhole(ArrayRef<Body> bodies, unsigned k, Type inputType);
/// Checks that every input read lane by lane can be read beside an
/// iteration over `iteration`.
LogicalResult verifyBroadcasts(Operation *op, ValueRange inputs,
                               ArrayRef<int64_t> iteration,
                               ArrayRef<Body> bodies, unsigned firstIndex = 0);
/// Checks a per-lane body: its block takes `leading` followed by one scalar
/// of each input's element type (or the input whole), and its
/// `circuit.yield` yields `yields`.
LogicalResult verifyBody(Operation *op, Region &region, StringRef name,
                         ArrayRef<Type> leading, ValueRange inputs,
                         ArrayRef<Type> yields);
/// A write destination is a fresh buffer, a graph argument or an earlier
/// write into one, written once per version and not read after the write.
LogicalResult verifyDestination(Operation *op, Value dest);
/// Declares the write of an in-place update of a graph argument.
void addInPlaceWriteEffect(
    OpOperand &dest,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects);
/// A block-quantized tensor's last dimension is a whole number of blocks.
LogicalResult verifyQuantizedShape(Operation *op, Type type, StringRef what);

} // namespace hesper::circuit::detail

#endif // HESPER_LIB_DIALECT_CIRCUIT_IR_OPVERIFICATION_H
