//===- OpVerification.cpp - Checks the Circuit ops share ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "OpVerification.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

namespace hesper::circuit::detail {

bool isGraphArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && isa<GraphOp>(arg.getOwner()->getParentOp());
}

/// Lane indices are i32: a grid must fit.
LogicalResult verifyLaneCount(Operation *op, int64_t lanes) {
  if (lanes > std::numeric_limits<int32_t>::max())
    return op->emitOpError("expects at most 2^31-1 lanes, got ") << lanes;
  return success();
}

/// Element type a per-lane body sees for a tensor.
Type elementOf(Value tensor) {
  return cast<RankedTensorType>(tensor.getType()).getElementType();
}

ArrayRef<int64_t> shapeOf(Value tensor) {
  return cast<RankedTensorType>(tensor.getType()).getShape();
}

/// True when the bodies take input `k` as a whole tensor (read with
/// circuit.extract) rather than element by element: every non-empty body
/// gives it the tensor type, and at least one body exists.
bool readsWhole(ArrayRef<Body> bodies, unsigned k, Type inputType) {
  bool any = false;
  for (auto [region, leading] : bodies) {
    if (region->empty())
      continue;
    Block &block = region->front();
    if (block.getNumArguments() <= leading + k ||
        block.getArgument(leading + k).getType() != inputType)
      return false;
    any = true;
  }
  return any;
}

/// Checks that every input read lane by lane can be read beside an
/// iteration over `iteration`.
LogicalResult verifyBroadcasts(Operation *op, ValueRange inputs,
                               ArrayRef<int64_t> iteration,
                               ArrayRef<Body> bodies, unsigned firstIndex) {
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (readsWhole(bodies, i + firstIndex, input.getType()))
      continue;
    if (!isBroadcastCompatible(shapeOf(input), iteration)) {
      auto diag = op->emitOpError("expects input #")
                  << (i + firstIndex) << " of shape [";
      llvm::interleaveComma(shapeOf(input), diag);
      diag << "] to broadcast over the iteration shape [";
      llvm::interleaveComma(iteration, diag);
      return diag << "] (same size, or trailing dimensions equal or 1)";
    }
  }
  return success();
}

/// Checks a per-lane body: its block takes `leading` followed by one scalar of
/// each input's element type, and its `circuit.yield` yields `yields`.
LogicalResult verifyBody(Operation *op, Region &region, StringRef name,
                         ArrayRef<Type> leading, ValueRange inputs,
                         ArrayRef<Type> yields) {
  if (region.empty())
    return op->emitOpError("expects a non-empty ") << name << " region";
  Block &block = region.front();
  SmallVector<Type> expected(leading);
  for (Value input : inputs)
    expected.push_back(elementOf(input));
  if (block.getNumArguments() != expected.size())
    return op->emitOpError("expects the ")
           << name << " region to take " << expected.size()
           << " arguments, got " << block.getNumArguments();
  for (auto [i, arg, type] : llvm::enumerate(block.getArguments(), expected)) {
    // An input may also be taken whole, as its tensor type.
    bool isWholeInput = i >= leading.size() &&
                        arg.getType() == inputs[i - leading.size()].getType();
    if (arg.getType() != type && !isWholeInput)
      return op->emitOpError("expects ")
             << name << " argument #" << i << " of type " << type << ", got "
             << arg.getType();
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return op->emitOpError("expects the ")
           << name << " region to end in 'circuit.yield'";
  TypeRange got = yield.getValues().getTypes();
  if (got.size() != yields.size())
    return yield.emitOpError("expects ")
           << yields.size() << " yielded values in the " << name
           << " region, got " << got.size();
  for (auto [i, want, have] : llvm::enumerate(yields, got))
    if (want != have)
      return yield.emitOpError("expects yielded value #")
             << i << " of type " << want << ", got " << have;
  return success();
}

/// A write destination is a fresh buffer (`circuit.zeros`), a graph argument
/// (updated in place), or the result of an earlier write into one of those;
/// each version of a buffer is written at most once, so an in-place update
/// never forks.
LogicalResult verifyDestination(Operation *op, Value dest) {
  Value root = getWrittenBufferRoot(dest);
  if (!isGraphArgument(root) && !root.getDefiningOp<ZerosOp>()) {
    auto diag = op->emitOpError("expects a destination that is a graph "
                                "argument, a 'circuit.zeros' or an earlier "
                                "write into one, got ");
    if (Operation *def = root.getDefiningOp())
      diag << "a result of '" << def->getName() << "'";
    else
      diag << "a block argument outside a graph";
    return diag;
  }
  unsigned writers = 0;
  for (OpOperand &use : dest.getUses()) {
    Operation *user = use.getOwner();
    if (auto s = dyn_cast<ScatterOp>(user))
      writers += &use == &s.getDestMutable();
    else if (auto s = dyn_cast<ReduceScatterEpilogueOp>(user))
      writers += &use == &s.getDestMutable();
    else if (auto s = dyn_cast<WriteRowsOp>(user))
      writers += &use == &s.getDestMutable();
    else if (auto s = dyn_cast<ScatterMultiOp>(user))
      writers += use.getOperandNumber() >= s.getDests().getBeginOperandIndex();
  }
  if (writers > 1)
    return op->emitOpError("expects each buffer version to be written once, "
                           "got ")
           << writers << " writes into the same value";
  // Every backend updates one buffer in place, so a read of this version
  // placed after the write would see the written values, not the SSA value
  // it names. Such a graph is refused; it must read the write's result (or
  // read before the write).
  Block *block = op->getBlock();
  for (OpOperand &use : dest.getUses()) {
    Operation *reader = block->findAncestorOpInBlock(*use.getOwner());
    if (!reader || reader == op || !op->isBeforeInBlock(reader))
      continue;
    InFlightDiagnostic diag =
        reader->emitOpError("reads operand #")
        << use.getOperandNumber() << " after '" << op->getName()
        << "' wrote over it in place; read that write's result instead, or "
           "read before the write";
    diag.attachNote(op->getLoc()) << "the in-place write";
    return diag;
  }
  return success();
}

/// In-place writes into a graph argument are observable effects: the scatter
/// must survive even when nothing in the graph reads its result.
void addInPlaceWriteEffect(
    OpOperand &dest,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (isGraphArgument(getWrittenBufferRoot(dest.get())))
    effects.emplace_back(MemoryEffects::Write::get(), &dest,
                         SideEffects::DefaultResource::get());
}

LogicalResult verifyQuantizedShape(Operation *op, Type type, StringRef what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return success();
  int64_t block = getQuantBlockSize(tensor.getElementType());
  if (!block)
    return success();
  if (tensor.getRank() == 0 || tensor.getShape().back() % block != 0)
    return op->emitOpError("expects the last dimension of ")
           << what << " " << tensor << " to be a multiple of the block size "
           << block;
  return success();
}

} // namespace hesper::circuit::detail
