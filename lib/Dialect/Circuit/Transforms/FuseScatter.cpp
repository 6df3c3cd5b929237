//===- FuseScatter.cpp - Merge scatters over one grid --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-fuse-scatter: two scatters (or scatter_multis) with the same grid
// become one scatter_multi at the later one's position, so one kernel writes
// both destinations (RoPE'd K and V into their caches, say). The earlier
// writes are delayed to the later position, which is legal only if nothing in
// between reads or writes the buffers they update, or uses their results.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITFUSESCATTERPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

namespace {

/// The parts of a scatter or scatter_multi.
struct ScatterParts {
  Operation *op = nullptr;
  int64_t grid = 0;
  OperandRange inputs{nullptr, 0};
  OperandRange dests{nullptr, 0};
  Block *body = nullptr;
};

std::optional<ScatterParts> getParts(Operation *op) {
  ScatterParts parts;
  parts.op = op;
  if (auto s = dyn_cast<ScatterOp>(op)) {
    parts.grid = static_cast<int64_t>(s.getGrid());
    parts.inputs = s.getInputs();
    // The destination is the last operand.
    parts.dests = s->getOperands().drop_front(s.getInputs().size());
    parts.body = &s.getBody().front();
    return parts;
  }
  if (auto s = dyn_cast<ScatterMultiOp>(op)) {
    parts.grid = static_cast<int64_t>(s.getGrid());
    parts.inputs = s.getInputs();
    parts.dests = s.getDests();
    parts.body = &s.getBody().front();
    return parts;
  }
  return std::nullopt;
}

struct MergeScatters : RewritePattern {
  MergeScatters(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  /// Why `earlier` cannot be delayed to `later` and merged, or success.
  LogicalResult checkLegal(PatternRewriter &rewriter, const ScatterParts &a,
                           const ScatterParts &b) const {
    Operation *earlier = a.op, *later = b.op;
    if (Operation *user = firstUserUpTo(earlier, later))
      return rewriter.notifyMatchFailure(
          later, user == later
                     ? "depends on the earlier scatter"
                     : "the earlier scatter's result is used in between");
    for (Value dest : a.dests) {
      Value root = getWrittenBufferRoot(dest);
      if (isa<BlockArgument>(root) &&
          hasBufferAccessBetween(earlier, later, root))
        return rewriter.notifyMatchFailure(
            later, "an op in between reads or writes a buffer the earlier "
                   "scatter writes in place");
    }
    if (writesBufferRead(earlier, b.inputs) ||
        writesBufferRead(later, a.inputs))
      return rewriter.notifyMatchFailure(
          later, "one scatter reads a buffer the other writes in place: in "
                 "one kernel the reads would race with the writes");
    if (hasInPlaceWriteBetween(earlier, later, a.inputs))
      return rewriter.notifyMatchFailure(
          later, "a buffer the earlier scatter reads is written in place in "
                 "between");
    if (countKernelBuffers({earlier, later}) > kMaxKernelBuffers)
      return rewriter.notifyMatchFailure(
          later, "the merged kernel would bind more buffers than a kernel "
                 "may");
    return success();
  }

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    std::optional<ScatterParts> b = getParts(op);
    if (!b)
      return failure();
    // The nearest earlier scatter over the same grid that can be merged.
    std::optional<ScatterParts> a = findEarlierPartner<ScatterParts>(
        op, getParts, [&](const ScatterParts &candidate) {
          return candidate.grid == b->grid &&
                 succeeded(checkLegal(rewriter, candidate, *b));
        });
    if (!a)
      return rewriter.notifyMatchFailure(
          op, "no earlier scatter over the same grid can be merged");

    SmallVector<Value> inputs(a->inputs), dests(a->dests);
    inputs.append(b->inputs.begin(), b->inputs.end());
    dests.append(b->dests.begin(), b->dests.end());
    Location loc = op->getLoc();
    rewriter.setInsertionPoint(op);
    SmallVector<Type> resultTypes;
    for (Value d : dests)
      resultTypes.push_back(d.getType());
    auto merged = ScatterMultiOp::create(rewriter, loc, resultTypes,
                                         rewriter.getI64IntegerAttr(b->grid),
                                         inputs, dests);

    // Body: lane, A's input arguments, B's input arguments; A's pairs, then
    // B's.
    SmallVector<Type> types{rewriter.getI32Type()};
    for (Block *body : {a->body, b->body})
      for (BlockArgument arg : body->getArguments().drop_front())
        types.push_back(arg.getType());
    Block *block = rewriter.createBlock(
        &merged.getBody(), {}, types, SmallVector<Location>(types.size(), loc));
    Value lane = block->getArgument(0);
    SmallVector<Value> aArgs{lane}, bArgs{lane};
    unsigned nA = a->inputs.size();
    for (unsigned k = 0; k < nA; ++k)
      aArgs.push_back(block->getArgument(1 + k));
    for (unsigned k = 0; k < b->inputs.size(); ++k)
      bArgs.push_back(block->getArgument(1 + nA + k));
    SmallVector<Value> yields = inlineBody(rewriter, *a->body, aArgs);
    SmallVector<Value> bYields = inlineBody(rewriter, *b->body, bArgs);
    yields.append(bYields);
    YieldOp::create(rewriter, loc, yields);

    unsigned nADests = a->dests.size();
    rewriter.replaceOp(a->op, merged.getResults().take_front(nADests));
    rewriter.replaceOp(op, merged.getResults().drop_front(nADests));
    return success();
  }
};

struct CircuitFuseScatterPass
    : circuit::impl::CircuitFuseScatterPassBase<CircuitFuseScatterPass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(getOperation(), populateFuseScatterPatterns,
                                 numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateFuseScatterPatterns(RewritePatternSet &patterns) {
  patterns.add<MergeScatters>(patterns.getContext());
}
