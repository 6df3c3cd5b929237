//===- FusionUtils.cpp - Shared helpers of the fusion patterns -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::circuit::fusion;

static SmallVector<int64_t> shapeOf(Value v) {
  return SmallVector<int64_t>(cast<RankedTensorType>(v.getType()).getShape());
}

std::optional<InputsInfo> fusion::getInputsInfo(Operation *op) {
  // `first` is the operand index of the first input (fixed per op: an empty
  // operand range has no index to ask for).
  auto make = [&](unsigned first, OperandRange inputs,
                  SmallVector<BodyRef, 2> bodies,
                  SmallVector<int64_t> iteration) {
    InputsInfo info;
    info.firstOperand = first;
    info.count = inputs.size();
    info.bodies = std::move(bodies);
    info.iteration = std::move(iteration);
    return info;
  };
  return llvm::TypeSwitch<Operation *, std::optional<InputsInfo>>(op)
      .Case([&](MapOp m) {
        return make(0, m.getInputs(), {{&m.getBody(), 1}},
                    shapeOf(m.getResult()));
      })
      .Case([&](GatherOp g) {
        return make(1, g.getInputs(), {{&g.getBody(), 1}},
                    shapeOf(g.getResult()));
      })
      .Case([&](ScatterOp s) {
        return make(0, s.getInputs(), {{&s.getBody(), 1}},
                    {static_cast<int64_t>(s.getGrid())});
      })
      .Case([&](ScatterMultiOp s) {
        return make(0, s.getInputs(), {{&s.getBody(), 1}},
                    {static_cast<int64_t>(s.getGrid())});
      })
      .Case([&](ReduceOp r) {
        return make(0, r.getInputs(), {{&r.getPrologue(), 1}},
                    getReductionIteration(r));
      })
      .Case([&](ReduceEpilogueOp r) {
        return make(0, r.getInputs(),
                    {{&r.getPrologue(), 1}, {&r.getEpilogue(), 2}},
                    getReductionIteration(r));
      })
      .Case([&](ReduceScatterEpilogueOp r) {
        return make(0, r.getInputs(),
                    {{&r.getPrologue(), 1}, {&r.getEpilogue(), 2}},
                    getReductionIteration(r));
      })
      .Case([&](MatmulOp m) -> std::optional<InputsInfo> {
        if (m.getEpilogue().empty())
          return std::nullopt;
        return make(2, m.getInputs(), {{&m.getEpilogue(), 2}},
                    shapeOf(m.getResult()));
      })
      .Default([](Operation *) { return std::nullopt; });
}

bool fusion::readsInputWhole(const InputsInfo &info, unsigned k,
                             Type inputType) {
  for (BodyRef body : info.bodies) {
    if (body.region->empty())
      continue;
    if (body.region->front().getArgument(body.leading + k).getType() ==
        inputType)
      return true;
  }
  return false;
}

/// ScatterMultiOp keeps operand segment sizes: [inputs, dests].
static void adjustSegments(Operation *op, int delta) {
  if (auto multi = dyn_cast<ScatterMultiOp>(op))
    multi.getProperties().operandSegmentSizes[0] += delta;
}

void fusion::insertInputs(RewriterBase &rewriter, Operation *op,
                          InputsInfo &info, unsigned pos, ValueRange values,
                          ArrayRef<bool> whole) {
  rewriter.modifyOpInPlace(op, [&] {
    op->insertOperands(info.firstOperand + pos, values);
    adjustSegments(op, static_cast<int>(values.size()));
    for (BodyRef body : info.bodies) {
      if (body.region->empty())
        continue;
      Block &block = body.region->front();
      for (auto [i, value] : llvm::enumerate(values)) {
        Type type = whole[i] ? value.getType() : elementTypeOf(value);
        block.insertArgument(body.leading + pos + i, type, value.getLoc());
      }
    }
  });
  info.count += values.size();
}

void fusion::eraseInput(RewriterBase &rewriter, Operation *op, InputsInfo &info,
                        unsigned pos) {
  rewriter.modifyOpInPlace(op, [&] {
    op->eraseOperand(info.firstOperand + pos);
    adjustSegments(op, -1);
    for (BodyRef body : info.bodies)
      if (!body.region->empty())
        body.region->front().eraseArgument(body.leading + pos);
  });
  --info.count;
}

SmallVector<Value> fusion::inlineBody(RewriterBase &rewriter, Block &block,
                                      ValueRange args) {
  IRMapping mapping;
  mapping.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator())
    rewriter.clone(op, mapping);
  SmallVector<Value> results;
  for (Value v : block.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  return results;
}

void fusion::ensurePrologue(RewriterBase &rewriter, Operation *op,
                            InputsInfo &info) {
  Region &prologue = *info.bodies.front().region;
  if (!prologue.empty())
    return;
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<Type> types{rewriter.getI32Type()};
  SmallVector<Location> locs{op->getLoc()};
  for (unsigned k = 0; k < info.count; ++k) {
    Value input = op->getOperand(info.firstOperand + k);
    types.push_back(elementTypeOf(input));
    locs.push_back(input.getLoc());
  }
  Block *block = rewriter.createBlock(&prologue, {}, types, locs);
  Value first = block->getArgument(1);
  if (!first.getType().isF32())
    first = exp::ConvertOp::create(rewriter, op->getLoc(),
                                   rewriter.getF32Type(), first);
  YieldOp::create(rewriter, op->getLoc(), first);
}

/// The graph argument a value's buffer starts from, or null.
unsigned fusion::countKernelBuffers(ArrayRef<Operation *> ops) {
  llvm::SmallPtrSet<Operation *, 4> set(ops.begin(), ops.end());
  llvm::SetVector<Value> buffers;
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (isa<RankedTensorType>(operand.getType()))
        buffers.insert(operand);
    // Results written in place share their destination's buffer.
    bool inPlace = isInPlaceWriter(op);
    if (!inPlace)
      for (Value result : op->getResults())
        buffers.insert(result);
  }
  unsigned count = 0;
  for (Value v : buffers) {
    Operation *def = v.getDefiningOp();
    bool internal = def && set.contains(def) && !v.use_empty() &&
                    llvm::all_of(v.getUsers(), [&](Operation *user) {
                      return set.contains(user);
                    });
    count += !internal;
  }
  return count;
}

static Value graphArgumentRoot(Value v) {
  Value root = getWrittenBufferRoot(v);
  auto arg = dyn_cast<BlockArgument>(root);
  if (!arg || !isa<GraphOp>(arg.getOwner()->getParentOp()))
    return nullptr;
  return root;
}

/// Calls `fn` on each op strictly between `from` and `to`.
static bool anyBetween(Operation *from, Operation *to,
                       function_ref<bool(Operation *)> fn) {
  if (from->getBlock() != to->getBlock())
    return true; // Be conservative across blocks.
  if (!from->isBeforeInBlock(to))
    std::swap(from, to);
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (fn(op))
      return true;
  return false;
}

bool fusion::hasInPlaceWriteBetween(Operation *from, Operation *to,
                                    ValueRange reads) {
  SmallVector<Value> roots;
  for (Value v : reads)
    if (Value root = graphArgumentRoot(v))
      roots.push_back(root);
  if (roots.empty())
    return false;
  return anyBetween(from, to, [&](Operation *op) {
    if (!isInPlaceWriter(op))
      return false;
    // A writer's results are new versions of the buffers it writes.
    for (Value result : op->getResults())
      if (llvm::is_contained(roots, graphArgumentRoot(result)))
        return true;
    return false;
  });
}

bool fusion::hasBufferAccessBetween(Operation *from, Operation *to,
                                    Value root) {
  return anyBetween(from, to, [&](Operation *op) {
    bool touches = false;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (graphArgumentRoot(operand) == root)
          touches = true;
    });
    return touches;
  });
}

bool fusion::writesBufferRead(Operation *writer, ValueRange reads) {
  if (!isInPlaceWriter(writer))
    return false;
  SmallVector<Value> roots;
  for (Value result : writer->getResults())
    if (Value root = graphArgumentRoot(result))
      roots.push_back(root);
  for (Value v : reads)
    if (Value root = graphArgumentRoot(v))
      if (llvm::is_contained(roots, root))
        return true;
  return false;
}

Operation *fusion::firstUserUpTo(Operation *earlier, Operation *later) {
  for (Operation *op = earlier->getNextNode(); op;
       op = op == later ? nullptr : op->getNextNode())
    for (Value operand : op->getOperands())
      if (operand.getDefiningOp() == earlier)
        return op;
  return nullptr;
}

bool fusion::hasOnlyUser(Value value, Operation *user) {
  if (value.use_empty())
    return false;
  for (Operation *u : value.getUsers())
    if (u != user)
      return false;
  return !isa<OutputOp>(user);
}

LogicalResult fusion::runFusionPatterns(GraphOp graph,
                                        void (*populate)(RewritePatternSet &),
                                        Pass::Statistic &fused) {
  RewritePatternSet patterns(graph.getContext());
  populate(patterns);
  int64_t before = countDispatches(graph);
  if (failed(applyPatternsGreedily(graph, std::move(patterns))))
    return failure();
  fused += before - countDispatches(graph);
  return success();
}
