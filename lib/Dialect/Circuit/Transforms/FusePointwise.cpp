//===- FusePointwise.cpp - Inline maps and gathers into their users ------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// circuit-fuse-pointwise: a map (or a gather) with a single user is computed
// inside the user's body(ies), lane by lane, instead of in a kernel of its
// own. The user takes over the producer's inputs; a gather's source becomes
// a whole-tensor input read with circuit.extract.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
namespace circuit {
#define GEN_PASS_DEF_CIRCUITFUSEPOINTWISEPASS
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

/// Finds which input of `user` (described by `info`) is `value`; fails if the
/// value is used in another role (a destination, a gather source, a matmul
/// operand).
static std::optional<unsigned> findInput(Operation *user,
                                         const InputsInfo &info, Value value) {
  std::optional<unsigned> found;
  for (OpOperand &use : value.getUses()) {
    unsigned n = use.getOperandNumber();
    if (n < info.firstOperand || n >= info.firstOperand + info.count)
      return std::nullopt;
    found = n - info.firstOperand;
  }
  return found;
}

/// Checks that the user reads the producer lane for lane, so that running
/// the producer's body at the user's lane computes the element the user
/// reads, and that the producer's own lane-wise inputs are read at the same
/// element when they become the user's inputs.
static LogicalResult checkLaneForLane(PatternRewriter &rewriter,
                                      Operation *producer, Region &body,
                                      ValueRange producerInputs,
                                      const InputsInfo &info,
                                      bool &readsAtZero) {
  auto producerType = cast<RankedTensorType>(producer->getResult(0).getType());
  int64_t n = producerType.getNumElements();
  int64_t iterationSize = 1;
  for (int64_t d : info.iteration)
    iterationSize *= d;
  Block &block = body.front();
  auto elementwiseInputs = [&](auto predicate) {
    for (auto [j, input] : llvm::enumerate(producerInputs)) {
      bool whole = block.getArgument(1 + j).getType() == input.getType();
      if (!whole && !predicate(input))
        return false;
    }
    return true;
  };
  // A single element read by every lane: legal when it depends on single
  // elements only.
  readsAtZero = n == 1 && iterationSize != 1;
  if (readsAtZero) {
    if (!elementwiseInputs([](Value in) { return numElements(in) == 1; }))
      return rewriter.notifyMatchFailure(
          producer, "a broadcast single element computed from a larger "
                    "input would be recomputed at other indices");
    return success();
  }
  if (n != iterationSize)
    return rewriter.notifyMatchFailure(
        producer, "the user reads it through a broadcast, not lane for lane");
  bool sameShape = producerType.getShape() == ArrayRef<int64_t>(info.iteration);
  if (!sameShape && !elementwiseInputs([&](Value in) {
        return numElements(in) == 1 || numElements(in) == n;
      }))
    return rewriter.notifyMatchFailure(
        producer, "its inputs broadcast over a shape the user does not "
                  "iterate over");
  return success();
}

/// A reduction's first input sets its iteration shape unless the reduction
/// states it (`over`). When the producer replacing that input cannot set the
/// same shape (it has no such element-wise first input), the fused reduction
/// states its iteration shape explicitly.
static bool needsExplicitIteration(Operation *user, unsigned k,
                                   ValueRange newInputs, ArrayRef<bool> whole,
                                   const InputsInfo &info) {
  if (k != 0 || !isa<ReduceOp, ReduceEpilogueOp, ReduceScatterEpilogueOp>(user))
    return false;
  if (user->hasAttr("over"))
    return false;
  return newInputs.empty() || whole.front() ||
         cast<RankedTensorType>(newInputs.front().getType()).getShape() !=
             ArrayRef<int64_t>(info.iteration);
}

static void stateIteration(PatternRewriter &rewriter, Operation *user,
                           const InputsInfo &info) {
  rewriter.modifyOpInPlace(user, [&] {
    user->setAttr("over", rewriter.getDenseI64ArrayAttr(info.iteration));
  });
}

/// Shared rewrite: makes `producerInputs` inputs of `user` right after
/// input `k`, computes `compute(bodyBuilder, lane, args)` at the start of each
/// body in place of input `k`'s argument, and drops input `k`.
static void inlineIntoUser(
    PatternRewriter &rewriter, Operation *user, InputsInfo &info, unsigned k,
    ValueRange producerInputs, ArrayRef<bool> whole, bool readsAtZero,
    function_ref<Value(Location, Value lane, ValueRange args)> compute) {
  if (isa<ReduceOp, ReduceEpilogueOp, ReduceScatterEpilogueOp>(user))
    ensurePrologue(rewriter, user, info);
  insertInputs(rewriter, user, info, k + 1, producerInputs, whole);
  for (BodyRef body : info.bodies) {
    if (body.region->empty())
      continue;
    Block &block = body.region->front();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&block);
    Location loc = user->getLoc();
    Value lane = block.getArgument(0);
    if (readsAtZero)
      lane =
          exp::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(0));
    SmallVector<Value> args;
    for (unsigned j = 0; j < producerInputs.size(); ++j)
      args.push_back(block.getArgument(body.leading + k + 1 + j));
    Value replacement = compute(loc, lane, args);
    rewriter.replaceAllUsesWith(block.getArgument(body.leading + k),
                                replacement);
  }
  eraseInput(rewriter, user, info, k);
}

namespace {

/// Where a producer's only user reads it: the user, its inputs, and which
/// input the producer is.
struct UserSlot {
  Operation *user;
  InputsInfo info;
  unsigned k;
};

/// Finds the input slot of the single user of `producer`'s result, if the
/// user reads it element by element as a per-lane input.
FailureOr<UserSlot> findUserSlot(PatternRewriter &rewriter,
                                 Operation *producer) {
  Value result = producer->getResult(0);
  if (!result.hasOneUse())
    return rewriter.notifyMatchFailure(producer, "has no use or more than one");
  Operation *user = *result.getUsers().begin();
  if (isa<OutputOp>(user))
    return rewriter.notifyMatchFailure(producer, "is a graph result");
  std::optional<InputsInfo> info = getInputsInfo(user);
  if (!info)
    return rewriter.notifyMatchFailure(producer,
                                       "its user has no per-lane inputs");
  std::optional<unsigned> k = findInput(user, *info, result);
  if (!k)
    return rewriter.notifyMatchFailure(
        producer, "its user reads it in another role than a per-lane input");
  if (readsInputWhole(*info, *k, result.getType()))
    return rewriter.notifyMatchFailure(
        producer, "its user reads it whole, at computed indices");
  return UserSlot{user, *info, *k};
}

/// Which of a producer's inputs its body takes whole.
SmallVector<bool> wholeFlags(Block &body, ValueRange inputs) {
  SmallVector<bool> whole;
  for (auto [j, input] : llvm::enumerate(inputs))
    whole.push_back(body.getArgument(1 + j).getType() == input.getType());
  return whole;
}

/// The rewrite both patterns share: `producer` (whose body reads its
/// lane-wise `inputs`) is computed inside its only user, which takes over
/// `reads` (read whole where `whole` says); `compute` builds the producer's
/// value in each of the user's bodies.
LogicalResult fuseIntoUser(
    PatternRewriter &rewriter, Operation *producer, Block &body,
    ValueRange inputs, ValueRange reads, ArrayRef<bool> whole,
    function_ref<Value(Location, Value lane, ValueRange args)> compute) {
  FailureOr<UserSlot> slot = findUserSlot(rewriter, producer);
  if (failed(slot))
    return failure();
  bool readsAtZero = false;
  if (failed(checkLaneForLane(rewriter, producer, *body.getParent(), inputs,
                              slot->info, readsAtZero)))
    return failure();
  if (hasInPlaceWriteBetween(producer, slot->user, reads))
    return rewriter.notifyMatchFailure(
        producer, "a buffer it reads is written in place before its user "
                  "runs");
  if (countKernelBuffers({producer, slot->user}) > kMaxKernelBuffers)
    return rewriter.notifyMatchFailure(
        producer, "the fused kernel would bind more buffers than a kernel "
                  "may");
  if (writesBufferRead(slot->user, reads))
    return rewriter.notifyMatchFailure(
        producer, "its user writes in place a buffer it reads: fused, the "
                  "reads would race with the writes");
  if (needsExplicitIteration(slot->user, slot->k, reads, whole, slot->info))
    stateIteration(rewriter, slot->user, slot->info);
  inlineIntoUser(rewriter, slot->user, slot->info, slot->k, reads, whole,
                 readsAtZero, compute);
  rewriter.eraseOp(producer);
  return success();
}

/// map -> user: the map's body runs inside the user's.
struct FuseMapIntoUser : OpRewritePattern<MapOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MapOp producer,
                                PatternRewriter &rewriter) const override {
    Block &body = producer.getBody().front();
    return fuseIntoUser(rewriter, producer, body, producer.getInputs(),
                        producer.getInputs(),
                        wholeFlags(body, producer.getInputs()),
                        [&](Location, Value lane, ValueRange args) {
                          SmallVector<Value> all{lane};
                          all.append(args.begin(), args.end());
                          return inlineBody(rewriter, body, all).front();
                        });
  }
};

/// gather -> user: the address computation runs inside the user's body, and
/// the source becomes a whole input read with circuit.extract.
struct FuseGatherIntoUser : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GatherOp producer,
                                PatternRewriter &rewriter) const override {
    // A quantized source cannot be read whole by circuit.extract: the
    // gather stays the kernel that decodes it.
    if (isQuantized(elementTypeOf(producer.getSource())))
      return rewriter.notifyMatchFailure(producer,
                                         "reads a quantized source");
    Block &body = producer.getBody().front();
    SmallVector<Value> reads{producer.getSource()};
    reads.append(producer.getInputs().begin(), producer.getInputs().end());
    SmallVector<bool> whole{true};
    whole.append(wholeFlags(body, producer.getInputs()));
    return fuseIntoUser(
        rewriter, producer, body, producer.getInputs(), reads, whole,
        [&](Location loc, Value lane, ValueRange args) {
          SmallVector<Value> all{lane};
          all.append(args.begin() + 1, args.end());
          Value addr = inlineBody(rewriter, body, all).front();
          return ExtractOp::create(rewriter, loc, args[0], addr).getResult();
        });
  }
};

struct CircuitFusePointwisePass
    : circuit::impl::CircuitFusePointwisePassBase<CircuitFusePointwisePass> {
  void runOnOperation() override {
    if (failed(runFusionPatterns(getOperation(), populateFusePointwisePatterns,
                                 numFused)))
      signalPassFailure();
  }
};

} // namespace

void hesper::circuit::populateFusePointwisePatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseMapIntoUser, FuseGatherIntoUser>(patterns.getContext());
}
