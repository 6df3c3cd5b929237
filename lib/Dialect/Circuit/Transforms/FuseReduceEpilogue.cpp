//===- FuseReduceEpilogue.cpp - Fold a reduction and its users -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-fuse-reduce-epilogue: reduce -> (a per-row scalar map) -> a
// full-shape map that reads the per-row value becomes one reduce_epilogue.
// For RMSNorm built as reduce, map(/D), map(rsqrt(+eps)), map(x*r*w), the
// pointwise pass first merges the two scalar maps; this pass folds the rest.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITFUSEREDUCEEPILOGUEPASS
#include "Hesper/Dialect/Circuit/Transforms/Passes.h.inc"
} // namespace circuit
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

static int64_t numElements(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

/// Argument types of a new body: `leading`, then each input as the old body
/// took it (`whole` set) or as its element.
static SmallVector<Type> bodyTypes(ArrayRef<Type> leading, ValueRange inputs,
                                   ArrayRef<bool> whole) {
  SmallVector<Type> types(leading);
  for (auto [input, w] : llvm::zip(inputs, whole))
    types.push_back(w ? input.getType() : elementTypeOf(input));
  return types;
}

/// The inputs of a fused reduction: the reduction's own first, in its
/// prologue's reading mode, then the fused user's. An added input that the
/// reduction already reads the same way can share its slot (both iterate over
/// the same shape).
struct FusedInputs {
  explicit FusedInputs(ReduceOp reduce)
      : prologue(reduce.getPrologue().empty() ? nullptr
                                              : &reduce.getPrologue().front()),
        numReduce(reduce.getInputs().size()) {
    for (auto [k, v] : llvm::enumerate(reduce.getInputs()))
      append(v,
             prologue && prologue->getArgument(1 + k).getType() == v.getType());
  }

  /// Adds `v` (read whole or not) and returns its slot.
  unsigned add(Value v, bool isWhole, bool share) {
    if (share)
      for (unsigned j = 0; j < numReduce; ++j)
        if (values[j] == v && whole[j] == isWhole)
          return j;
    append(v, isWhole);
    return values.size() - 1;
  }

  /// The reduction's prologue, or null.
  Block *prologue;
  unsigned numReduce;
  SmallVector<Value> values;
  SmallVector<bool> whole;

private:
  void append(Value v, bool isWhole) {
    values.push_back(v);
    whole.push_back(isWhole);
  }
};

/// Gives the fused op the reduction's prologue (if it had one), taking the
/// added inputs as unused arguments.
static void buildPrologue(PatternRewriter &rewriter, Location loc, Region &dest,
                          const FusedInputs &inputs) {
  if (!inputs.prologue)
    return;
  SmallVector<Type> types =
      bodyTypes({rewriter.getI32Type()}, inputs.values, inputs.whole);
  Block *block = rewriter.createBlock(&dest, {}, types,
                                      SmallVector<Location>(types.size(), loc));
  SmallVector<Value> args{block->getArgument(0)};
  for (unsigned k = 0; k < inputs.numReduce; ++k)
    args.push_back(block->getArgument(1 + k));
  YieldOp::create(rewriter, loc,
                  inlineBody(rewriter, *inputs.prologue, args).front());
}

/// Creates the fused op's epilogue block: lane, accumulator, then the
/// inputs.
static Block *createEpilogue(PatternRewriter &rewriter, Location loc,
                             Region &dest, const FusedInputs &inputs) {
  SmallVector<Type> types =
      bodyTypes({rewriter.getI32Type(), rewriter.getF32Type()}, inputs.values,
                inputs.whole);
  return rewriter.createBlock(&dest, {}, types,
                              SmallVector<Location>(types.size(), loc));
}

namespace {

struct FuseReduceIntoMap : OpRewritePattern<MapOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MapOp map,
                                PatternRewriter &rewriter) const override {
    Block &mapBody = map.getBody().front();
    // Candidates for the per-row input: a reduce result read directly, or a
    // scalar map of exactly one reduce result. The first legal one is fused.
    struct Candidate {
      unsigned index;
      ReduceOp reduce;
      MapOp scalar;
    };
    SmallVector<Candidate> candidates;
    for (auto [k, input] : llvm::enumerate(map.getInputs())) {
      if (mapBody.getArgument(1 + k).getType() != elementTypeOf(input))
        continue; // Read whole: not a per-row value.
      if (auto r = input.getDefiningOp<ReduceOp>()) {
        candidates.push_back({static_cast<unsigned>(k), r, nullptr});
        continue;
      }
      auto m = input.getDefiningOp<MapOp>();
      if (!m)
        continue;
      SmallVector<ReduceOp> reduces;
      for (Value in : m.getInputs())
        if (auto r = in.getDefiningOp<ReduceOp>())
          reduces.push_back(r);
      if (reduces.size() == 1)
        candidates.push_back({static_cast<unsigned>(k), reduces[0], m});
    }
    if (candidates.empty())
      return rewriter.notifyMatchFailure(
          map, "reads no reduction result, directly or through a per-row "
               "map");

    // Legality of one candidate; returns the reason it fails, or "".
    auto whyIllegal = [&](Candidate c) -> std::string {
      Value reduced = c.reduce.getResult();
      Operation *reduceUser =
          c.scalar ? c.scalar.getOperation() : map.getOperation();
      if (!reduced.hasOneUse() || !hasOnlyUser(reduced, reduceUser))
        return "the reduction result has other uses";
      if (c.scalar && (!c.scalar.getResult().hasOneUse() ||
                       !hasOnlyUser(c.scalar.getResult(), map)))
        return "the per-row map's result has other uses";
      SmallVector<int64_t> iteration = getReductionIteration(c.reduce);
      if (map.getType().getShape() != ArrayRef<int64_t>(iteration))
        return "does not iterate over the reduction's input shape";
      if (c.scalar) {
        if (c.scalar.getType() != c.reduce.getType())
          return "the per-row map does not have the reduction's shape";
        Block &scalarBody = c.scalar.getBody().front();
        for (auto [k, in] : llvm::enumerate(c.scalar.getInputs())) {
          bool whole = scalarBody.getArgument(1 + k).getType() == in.getType();
          if (in == reduced) {
            if (whole)
              return "the per-row map reads the reduction whole";
            continue;
          }
          if (numElements(in) != 1 && !whole)
            return "the per-row map reads a per-row input other than the "
                   "reduction";
        }
      }
      if (hasInPlaceWriteBetween(c.reduce, map, c.reduce.getInputs()) ||
          (c.scalar &&
           hasInPlaceWriteBetween(c.scalar, map, c.scalar.getInputs())))
        return "a buffer the fused ops read is written in place in between";
      return "";
    };
    std::optional<Candidate> chosen;
    std::string reason;
    for (Candidate c : candidates) {
      reason = whyIllegal(c);
      if (reason.empty()) {
        chosen = c;
        break;
      }
    }
    if (!chosen)
      return rewriter.notifyMatchFailure(map, reason);
    ReduceOp reduce = chosen->reduce;
    MapOp scalar = chosen->scalar;
    unsigned index = chosen->index;
    Value reduced = reduce.getResult();
    SmallVector<int64_t> iteration = getReductionIteration(reduce);

    // Inputs of the fused op: the reduction's, the scalar map's others, the
    // map's others (sharing a reduction slot where they can), each with its
    // reading mode.
    FusedInputs inputs(reduce);
    SmallVector<unsigned> scalarSlot;
    if (scalar) {
      Block &scalarBody = scalar.getBody().front();
      for (auto [k, v] : llvm::enumerate(scalar.getInputs()))
        scalarSlot.push_back(
            v == reduced
                ? 0
                : inputs.add(
                      v, scalarBody.getArgument(1 + k).getType() == v.getType(),
                      /*share=*/false));
    }
    SmallVector<unsigned> mapSlot(map.getInputs().size(), 0);
    for (auto [k, v] : llvm::enumerate(map.getInputs()))
      if (k != index)
        mapSlot[k] =
            inputs.add(v, mapBody.getArgument(1 + k).getType() == v.getType(),
                       /*share=*/true);

    rewriter.setInsertionPoint(map);
    Location loc = map.getLoc();
    auto fused =
        ReduceEpilogueOp::create(rewriter, loc, map.getType(), reduce.getKind(),
                                 inputs.values, reduce.getOverAttr());
    buildPrologue(rewriter, loc, fused.getPrologue(), inputs);

    // Epilogue: the per-row value from the accumulator, then the map.
    Block *block = createEpilogue(rewriter, loc, fused.getEpilogue(), inputs);
    Value lane = block->getArgument(0);
    Value perRow = block->getArgument(1);
    if (scalar) {
      // The scalar map's lane is the row: lane div D.
      int64_t rowLength = iteration.back();
      Value row = rowLength == 1 ? lane
                                 : exp::DivByConstOp::create(rewriter, loc,
                                                             lane, rowLength)
                                       .getResult();
      SmallVector<Value> args{row};
      for (auto [k, in] : llvm::enumerate(scalar.getInputs()))
        args.push_back(in == reduced ? perRow
                                     : block->getArgument(2 + scalarSlot[k]));
      perRow = inlineBody(rewriter, scalar.getBody().front(), args).front();
    }
    SmallVector<Value> args{lane};
    for (unsigned k = 0; k < map.getInputs().size(); ++k)
      args.push_back(k == index ? perRow : block->getArgument(2 + mapSlot[k]));
    Value result = inlineBody(rewriter, mapBody, args).front();
    YieldOp::create(rewriter, loc, result);

    rewriter.replaceOp(map, fused.getResult());
    if (scalar)
      rewriter.eraseOp(scalar);
    rewriter.eraseOp(reduce);
    return success();
  }
};

/// reduce (a single row) -> scatter that reads the reduced value: one
/// reduce_scatter_epilogue (acceptance case 5: normalize, then write into a
/// slice of a buffer).
struct FuseReduceIntoScatter : OpRewritePattern<ScatterOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScatterOp scatter,
                                PatternRewriter &rewriter) const override {
    Block &body = scatter.getBody().front();
    ReduceOp reduce;
    unsigned index = 0;
    for (auto [k, input] : llvm::enumerate(scatter.getInputs()))
      if (auto r = input.getDefiningOp<ReduceOp>();
          r && body.getArgument(1 + k).getType() == elementTypeOf(input)) {
        reduce = r;
        index = k;
        break;
      }
    if (!reduce)
      return rewriter.notifyMatchFailure(scatter, "reads no reduction result");
    if (!reduce.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(scatter,
                                         "the reduction result has other uses");
    SmallVector<int64_t> iteration = getReductionIteration(reduce);
    if (numElements(reduce.getResult()) != 1 ||
        iteration !=
            SmallVector<int64_t>{static_cast<int64_t>(scatter.getGrid())})
      return rewriter.notifyMatchFailure(
          scatter, "the scatter's grid is not the reduction's single row");
    if (hasInPlaceWriteBetween(reduce, scatter, reduce.getInputs()) ||
        writesBufferRead(scatter, reduce.getInputs()))
      return rewriter.notifyMatchFailure(
          scatter, "a buffer the reduction reads is written in place by or "
                   "before the scatter");

    FusedInputs inputs(reduce);
    SmallVector<unsigned> slot(scatter.getInputs().size(), 0);
    for (auto [k, v] : llvm::enumerate(scatter.getInputs()))
      if (k != index)
        slot[k] =
            inputs.add(v, body.getArgument(1 + k).getType() == v.getType(),
                       /*share=*/true);

    rewriter.setInsertionPoint(scatter);
    Location loc = scatter.getLoc();
    auto fused = ReduceScatterEpilogueOp::create(
        rewriter, loc, scatter.getType(), reduce.getKind(), inputs.values,
        scatter.getDest(), reduce.getOverAttr());
    buildPrologue(rewriter, loc, fused.getPrologue(), inputs);
    Block *block = createEpilogue(rewriter, loc, fused.getEpilogue(), inputs);
    SmallVector<Value> args{block->getArgument(0)};
    for (unsigned k = 0; k < scatter.getInputs().size(); ++k)
      args.push_back(k == index ? block->getArgument(1)
                                : block->getArgument(2 + slot[k]));
    YieldOp::create(rewriter, loc, inlineBody(rewriter, body, args));
    rewriter.replaceOp(scatter, fused.getResult());
    rewriter.eraseOp(reduce);
    return success();
  }
};

struct CircuitFuseReduceEpiloguePass
    : circuit::impl::CircuitFuseReduceEpiloguePassBase<
          CircuitFuseReduceEpiloguePass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(getOperation(),
                                 populateFuseReduceEpiloguePatterns, numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateFuseReduceEpiloguePatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseReduceIntoMap, FuseReduceIntoScatter>(patterns.getContext());
}
