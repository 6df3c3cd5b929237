//===- FusionUtils.h - Shared helpers of the fusion patterns ----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What every fusion pattern needs: where an op's per-lane inputs are and
// which bodies read them, editing those inputs, inlining one body into
// another, and the hazard checks on buffers written in place.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_DIALECT_CIRCUIT_TRANSFORMS_FUSIONUTILS_H
#define HESPER_LIB_DIALECT_CIRCUIT_TRANSFORMS_FUSIONUTILS_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <optional>

namespace hesper {
namespace circuit {
namespace fusion {

/// A body of a primitive and the number of block arguments before the ones
/// that carry its inputs.
struct BodyRef {
  mlir::Region *region;
  unsigned leading;
};

/// Where an op's per-lane inputs are and who reads them.
struct InputsInfo {
  /// Operand index of the first input.
  unsigned firstOperand = 0;
  /// Number of inputs.
  unsigned count = 0;
  /// The bodies that receive the inputs as block arguments.
  llvm::SmallVector<BodyRef, 2> bodies;
  /// The shape the inputs are read over, lane by lane.
  llvm::SmallVector<int64_t> iteration;
};

/// The most buffers (tensor operands and fresh results) one fused kernel
/// may bind. Fusion never merges ops whose kernel would bind more: Vulkan
/// devices limit the storage buffers of a shader stage
/// (maxPerStageDescriptorStorageBuffers, 32 on lavapipe, 31 or fewer on
/// some GPUs). An op built with more (by hand) is still lowered, and the
/// runtime refuses it on a device that cannot bind it.
constexpr unsigned kMaxKernelBuffers = 24;

/// The buffers a kernel computing all of `ops` would bind: their distinct
/// tensor operands and the results they do not write in place, less the
/// values only these ops use (which fusion keeps in registers).
unsigned countKernelBuffers(llvm::ArrayRef<mlir::Operation *> ops);

/// Inputs of map, gather (its extra inputs), scatter, scatter_multi, reduce,
/// reduce_epilogue, reduce_scatter_epilogue and matmul (its epilogue
/// inputs); nullopt for other ops.
std::optional<InputsInfo> getInputsInfo(mlir::Operation *op);

/// True when some body of `info` takes input `k` whole (as its tensor
/// type), to read it at computed indices.
bool readsInputWhole(const InputsInfo &info, unsigned k, mlir::Type inputType);

/// Inserts `values` as inputs at position `pos`: operands (operand segments
/// updated) and, in every body, block arguments of the element type, or of
/// the tensor type where `whole[i]` is set.
void insertInputs(mlir::RewriterBase &rewriter, mlir::Operation *op,
                  InputsInfo &info, unsigned pos, mlir::ValueRange values,
                  llvm::ArrayRef<bool> whole);

/// Removes input `pos` (operand and block arguments, which must be unused).
void eraseInput(mlir::RewriterBase &rewriter, mlir::Operation *op,
                InputsInfo &info, unsigned pos);

/// Clones the ops of `block` but its terminator at the rewriter's insertion
/// point, with the block arguments replaced by `args`; returns the values
/// the terminator yields.
llvm::SmallVector<mlir::Value> inlineBody(mlir::RewriterBase &rewriter,
                                          mlir::Block &block,
                                          mlir::ValueRange args);

/// Gives a reduction without a prologue the identity prologue (the first
/// input's element, widened to f32), so that fused inputs have a body to be
/// computed in.
void ensurePrologue(mlir::RewriterBase &rewriter, mlir::Operation *op,
                    InputsInfo &info);

/// True when an op strictly between `from` and `to` (in one block, `from`
/// first) writes in place into a graph argument that one of `reads` is
/// rooted at: moving the reads from `from` to `to` would see the write.
bool hasInPlaceWriteBetween(mlir::Operation *from, mlir::Operation *to,
                            mlir::ValueRange reads);

/// True when an op strictly between `from` and `to` uses a value whose
/// buffer is `root` (a graph argument): moving an in-place write to `root`
/// across it would change what it reads or overwrite what it wrote.
bool hasBufferAccessBetween(mlir::Operation *from, mlir::Operation *to,
                            mlir::Value root);

/// True when `writer` writes in place into a graph argument that one of
/// `reads` is rooted at: fused into one kernel, the reads would race with
/// the writes.
bool writesBufferRead(mlir::Operation *writer, mlir::ValueRange reads);

/// The first op after `earlier` and up to `later` (in one block) that uses
/// one of `earlier`'s results as an operand, or null: merging `earlier` into
/// `later`'s position is impossible if there is one.
mlir::Operation *firstUserUpTo(mlir::Operation *earlier,
                               mlir::Operation *later);

/// The nearest op before `op` in its block that `get` describes (a non-empty
/// optional) and `legal` accepts as a merge partner for `op`.
template <typename PartsT, typename GetFn, typename LegalFn>
std::optional<PartsT> findEarlierPartner(mlir::Operation *op, GetFn get,
                                         LegalFn legal) {
  for (mlir::Operation *prev = op->getPrevNode(); prev;
       prev = prev->getPrevNode()) {
    std::optional<PartsT> candidate = get(prev);
    if (candidate && legal(*candidate))
      return candidate;
  }
  return std::nullopt;
}

/// True when `value` is used only by `user`, and not by circuit.output.
bool hasOnlyUser(mlir::Value value, mlir::Operation *user);

/// Applies the patterns `populate` adds to `graph` to a fixed point and adds
/// the number of primitives fused away to `fused`: the body of every fusion
/// pass.
mlir::LogicalResult
runFusionPatterns(GraphOp graph, void (*populate)(mlir::RewritePatternSet &),
                  mlir::Pass::Statistic &fused);

/// The per-lane element type a body sees for a tensor.
inline mlir::Type elementTypeOf(mlir::Value tensor) {
  return llvm::cast<mlir::RankedTensorType>(tensor.getType()).getElementType();
}

} // namespace fusion
} // namespace circuit
} // namespace hesper

#endif // HESPER_LIB_DIALECT_CIRCUIT_TRANSFORMS_FUSIONUTILS_H
