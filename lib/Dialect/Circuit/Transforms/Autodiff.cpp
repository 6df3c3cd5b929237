//===- Autodiff.cpp - Reverse-mode differentiation of Circuit graphs ------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The gradient graph is built in three steps:
//  1. the forward graph is copied into a new graph, with the fused forms
//     split back into their parts (a matmul epilogue becomes a map over the
//     product, a reduce_epilogue a reduce and a map), so that only a few
//     primitives need rules;
//  2. every forward value that depends on a differentiated argument
//     ("active") and that a result depends on ("needed") gets an adjoint,
//     accumulated over its uses by a map that adds;
//  3. the primitives are visited in reverse order and each one's
//     vector-Jacobian product is emitted from the same primitives.
// Inside a per-lane body, derivatives come from the exp ops themselves
// (backpropBody, AutodiffBody.cpp): the backward kernel re-evaluates the
// lane's forward body, then walks it backwards. This file holds the rules
// of the graph's primitives.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Transforms/Autodiff.h"

#include "AutodiffBody.h"
#include "LaneAddresses.h"

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"
#include "Hesper/Dialect/Exp/Utils/ExpBuilder.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using hesper::exp::CmpPredicate;
using hesper::exp::ExpBuilder;
using namespace hesper::circuit::autodiff;
namespace ex = hesper::exp;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static bool isF32Tensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isF32();
}

static int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Graph-level rules
//===----------------------------------------------------------------------===//

namespace {

class Differentiator {
public:
  Differentiator(GraphOp forward, StringRef name)
      : forward(forward), g(forward.getContext(), name) {}

  FailureOr<GraphOp> run(ArrayRef<unsigned> wrt);

private:
  // Step 1: the forward graph, copied and unfused.
  LogicalResult copyForward();
  LogicalResult copyOp(Operation &op);
  // Step 2 and 3.
  void analyze(ArrayRef<Value> wrtValues, ArrayRef<Value> results);
  LogicalResult differentiateOp(Operation *op);
  /// The seeds of a body's yielded values in a backward lane, from the
  /// values the lane's forward body yields and the `extra` map inputs.
  using SeedFn = llvm::function_ref<SmallVector<Value>(
      ExpBuilder &, ArrayRef<Value> yields, ValueRange extra)>;
  /// The rule map, reduce prologues and scatter share: for each active
  /// input k of `inputs` (the arguments of `body` after the lane, read
  /// whole where `whole` says), a map over `iteration` whose lane
  /// re-evaluates `body`, seeds it with `seeds` and walks it backwards;
  /// `extra` are further map inputs after `inputs` (read whole where
  /// `extraWhole` says). The result is summed onto the input's shape.
  /// `bodyName` names the body in the error for an input read whole.
  LogicalResult bodyInputsRule(Operation *op, StringRef bodyName, Block &body,
                               ValueRange inputs, ArrayRef<bool> whole,
                               ArrayRef<int64_t> iteration, ValueRange extra,
                               ArrayRef<bool> extraWhole, SeedFn seeds);
  LogicalResult mapRule(MapOp op, Value dy);
  LogicalResult reduceRule(ReduceOp op, Value dy);
  LogicalResult matmulRule(MatmulOp op, Value dy);
  LogicalResult gatherRule(GatherOp op, Value dy);
  LogicalResult scatterRule(ScatterOp op, Value dy);
  LogicalResult scatterAddRule(ScatterAddOp op, Value dy);

  /// Adds `contribution` to the adjoint of `of` (same shape).
  void accumulate(Value of, Value contribution);
  /// `v` (any shape) as a tensor of `shape` with as many elements.
  Value reshape(Value v, ArrayRef<int64_t> shape);
  /// Sums `full`, a cotangent over `iteration`, back onto `shape`, which
  /// the primitive broadcast over `iteration` (NumPy rules).
  Value unbroadcast(Value full, ArrayRef<int64_t> iteration,
                    ArrayRef<int64_t> shape);
  /// The flat index that lane `lane` of `iteration` reads in an input of
  /// `shape` under the broadcast rule.
  static Value broadcastIndex(ExpBuilder &e, Value lane,
                              ArrayRef<int64_t> iteration,
                              ArrayRef<int64_t> shape);
  /// Whether body argument `k` of a region takes its input whole.
  static SmallVector<bool> wholeInputs(Region &body, ValueRange inputs,
                                       unsigned leading);

  bool isActive(Value v) const { return active.contains(v); }

  GraphOp forward;
  GraphBuilder g;
  IRMapping primal;               // forward value -> copy
  SmallVector<Operation *> order; // copied primitives, in order
  llvm::DenseSet<Value> active, needed;
  llvm::DenseMap<Value, Value> adjoint;
};

} // namespace

SmallVector<bool> Differentiator::wholeInputs(Region &body, ValueRange inputs,
                                              unsigned leading) {
  SmallVector<bool> whole;
  for (auto [k, input] : llvm::enumerate(inputs))
    whole.push_back(!body.empty() &&
                    body.front().getArgument(leading + k).getType() ==
                        input.getType());
  return whole;
}

LogicalResult Differentiator::copyOp(Operation &op) {
  OpBuilder &b = g.getOpBuilder();
  auto lookup = [&](ValueRange values) {
    SmallVector<Value> out;
    for (Value v : values)
      out.push_back(primal.lookup(v));
    return out;
  };

  if (auto matmul = dyn_cast<MatmulOp>(op);
      matmul && !matmul.getEpilogue().empty()) {
    // matmul + epilogue -> matmul, then a map of the epilogue over the
    // accumulator and the extra inputs.
    Value product = g.matmul(primal.lookup(matmul.getX()),
                             primal.lookup(matmul.getWeight()));
    order.push_back(product.getDefiningOp());
    SmallVector<Value> inputs{product};
    llvm::append_range(inputs, lookup(matmul.getInputs()));
    SmallVector<bool> whole{false};
    llvm::append_range(
        whole, wholeInputs(matmul.getEpilogue(), matmul.getInputs(), 2));
    Block &body = matmul.getEpilogue().front();
    Value result = g.map(inputs, whole, matmul.getType().getShape(), g.f32(),
                         [&](ExpBuilder &e, Value lane, ValueRange args) {
                           return cloneLaneBody(e, body, lane, args);
                         });
    order.push_back(result.getDefiningOp());
    primal.map(matmul.getResult(), result);
    return success();
  }

  if (auto fused = dyn_cast<ReduceEpilogueOp>(op)) {
    if (fused.getOver())
      return op.emitOpError("circuit-autodiff: a reduction with an explicit "
                            "iteration shape (`over`) is not differentiated");
    if (isQuantized(fused.getType().getElementType()))
      return op.emitOpError("circuit-autodiff: a quantized result is not "
                            "differentiated");
    // reduce_epilogue -> reduce (with its prologue), then a map of the
    // epilogue over the inputs and the row's reduced value.
    SmallVector<Value> inputs = lookup(fused.getInputs());
    Value reduced;
    if (fused.getPrologue().empty()) {
      reduced = g.reduce(fused.getKind(), inputs[0]);
    } else {
      Block &prologue = fused.getPrologue().front();
      reduced = g.reduce(fused.getKind(), inputs,
                         wholeInputs(fused.getPrologue(), fused.getInputs(), 1),
                         [&](ExpBuilder &e, Value lane, ValueRange args) {
                           return cloneLaneBody(e, prologue, lane, args);
                         });
    }
    order.push_back(reduced.getDefiningOp());
    SmallVector<Value> mapInputs(inputs);
    mapInputs.push_back(reduced);
    SmallVector<bool> whole =
        wholeInputs(fused.getEpilogue(), fused.getInputs(), 2);
    whole.push_back(false);
    Block &epilogue = fused.getEpilogue().front();
    Value result = g.map(mapInputs, whole, fused.getType().getShape(),
                         fused.getType().getElementType(),
                         [&](ExpBuilder &e, Value lane, ValueRange args) {
                           IRMapping m;
                           SmallVector<Value> bodyArgs{lane, args.back()};
                           llvm::append_range(bodyArgs, args.drop_back());
                           return cloneBody(e, epilogue, bodyArgs, m)[0];
                         });
    order.push_back(result.getDefiningOp());
    primal.map(fused.getResult(), result);
    return success();
  }

  Operation *copy = b.clone(op, primal);
  order.push_back(copy);
  return success();
}

LogicalResult Differentiator::copyForward() {
  Block &body = forward.getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    std::string argName = argumentName(forward, i);
    RankedTensorType type = tensorOf(arg);
    primal.map(arg,
               g.external(argName, type.getShape(), type.getElementType()));
  }
  for (Operation &op : body.without_terminator())
    if (failed(copyOp(op)))
      return failure();
  return success();
}

void Differentiator::analyze(ArrayRef<Value> wrtValues,
                             ArrayRef<Value> results) {
  active.insert(wrtValues.begin(), wrtValues.end());
  for (Operation *op : order) {
    if (!llvm::any_of(op->getOperands(), [&](Value v) { return isActive(v); }))
      continue;
    for (Value r : op->getResults())
      if (isa<FloatType>(tensorOf(r).getElementType()) ||
          isQuantized(tensorOf(r).getElementType()))
        active.insert(r);
  }
  needed.insert(results.begin(), results.end());
  for (Operation *op : llvm::reverse(order))
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return needed.contains(v); }))
      needed.insert(op->operand_begin(), op->operand_end());
}

void Differentiator::accumulate(Value of, Value contribution) {
  if (!isActive(of))
    return;
  Value &slot = adjoint[of];
  if (!slot) {
    slot = contribution;
    return;
  }
  slot = g.zip(slot, contribution,
               [](ExpBuilder &e, Value a, Value b) { return e.add(a, b); });
}

Value Differentiator::reshape(Value v, ArrayRef<int64_t> shape) {
  if (tensorOf(v).getShape() == shape)
    return v;
  return g.map(ValueRange{v}, shape, tensorOf(v).getElementType(),
               [](ExpBuilder &, Value, ValueRange args) { return args[0]; });
}

Value Differentiator::broadcastIndex(ExpBuilder &e, Value lane,
                                     ArrayRef<int64_t> iteration,
                                     ArrayRef<int64_t> shape) {
  if (numElements(shape) == numElements(iteration) ||
      shape.size() > iteration.size())
    return lane;
  Value index = e.i32(0);
  Value rest = lane;
  int64_t stride = 1;
  size_t offset = iteration.size() - shape.size();
  for (size_t k = iteration.size(); k-- > 0;) {
    Value coord = e.remConst(rest, iteration[k]);
    rest = e.divConst(rest, iteration[k]);
    if (k >= offset && shape[k - offset] != 1) {
      index = e.add(index, e.mul(coord, e.i32(stride)));
      stride *= shape[k - offset];
    }
  }
  return index;
}

Value Differentiator::unbroadcast(Value full, ArrayRef<int64_t> iteration,
                                  ArrayRef<int64_t> shape) {
  int64_t total = numElements(iteration), kept = numElements(shape);
  if (kept == total)
    return reshape(full, shape);
  // Each element of `shape` sums the `total / kept` lanes that read it, in
  // lane order: a reduction over [kept, count] whose prologue finds the
  // lane of the c-th reader of element t.
  int64_t count = total / kept;
  SmallVector<int64_t> padded(iteration.size() - shape.size(), 1);
  llvm::append_range(padded, shape);
  SmallVector<int64_t> iterStride(iteration.size());
  for (int64_t k = iteration.size() - 1, s = 1; k >= 0; --k) {
    iterStride[k] = s;
    s *= iteration[k];
  }
  Value summed =
      g.reduceOver(ReduceKind::sum, {kept, count}, ValueRange{full}, {true},
                   [&](ExpBuilder &e, Value lane, ValueRange args) {
                     Value t = e.divConst(lane, count);
                     Value c = e.remConst(lane, count);
                     Value index = e.i32(0);
                     for (int64_t k = iteration.size() - 1; k >= 0; --k) {
                       bool broadcast = padded[k] == 1 && iteration[k] != 1;
                       Value &from = broadcast ? c : t;
                       Value coord = e.remConst(from, iteration[k]);
                       from = e.divConst(from, iteration[k]);
                       index = e.add(index, e.mul(coord, e.i32(iterStride[k])));
                     }
                     return GraphBuilder::extract(e, args[0], index);
                   });
  return reshape(summed, shape);
}

LogicalResult
Differentiator::bodyInputsRule(Operation *op, StringRef bodyName, Block &body,
                               ValueRange inputs, ArrayRef<bool> whole,
                               ArrayRef<int64_t> iteration, ValueRange extra,
                               ArrayRef<bool> extraWhole, SeedFn seeds) {
  SmallVector<Value> mapInputs(inputs);
  llvm::append_range(mapInputs, extra);
  SmallVector<bool> mapWhole(whole);
  llvm::append_range(mapWhole, extraWhole);
  const size_t numInputs = inputs.size();
  for (auto [k, input] : llvm::enumerate(inputs)) {
    if (!isActive(input))
      continue;
    if (whole[k])
      return op->emitOpError("circuit-autodiff: cannot differentiate input #")
             << k << ", which the " << bodyName
             << " reads whole (circuit.extract)";
    LogicalResult status = success();
    Value full =
        g.map(mapInputs, mapWhole, iteration, g.f32(),
              [&](ExpBuilder &e, Value lane, ValueRange args) -> Value {
                IRMapping m;
                SmallVector<Value> bodyArgs{lane};
                llvm::append_range(bodyArgs, args.take_front(numInputs));
                SmallVector<Value> yields = cloneBody(e, body, bodyArgs, m);
                auto adj = backpropBody(
                    e, body, m, seeds(e, yields, args.drop_front(numInputs)));
                if (failed(adj)) {
                  status = failure();
                  return e.f32(0);
                }
                Value d = (*adj)[k + 1];
                return d ? d : e.f32(0);
              });
    if (failed(status))
      return failure();
    accumulate(input, unbroadcast(full, iteration, tensorOf(input).getShape()));
  }
  return success();
}

LogicalResult Differentiator::mapRule(MapOp op, Value dy) {
  return bodyInputsRule(op, "body", op.getBody().front(), op.getInputs(),
                        wholeInputs(op.getBody(), op.getInputs(), 1),
                        op.getType().getShape(), dy, {false},
                        [](ExpBuilder &, ArrayRef<Value>, ValueRange extra) {
                          return SmallVector<Value>{extra[0]};
                        });
}

LogicalResult Differentiator::reduceRule(ReduceOp op, Value dy) {
  if (op.getOver())
    return op.emitOpError("circuit-autodiff: a reduction with an explicit "
                          "iteration shape (`over`) is not differentiated");
  SmallVector<Value> inputs(op.getInputs());
  ArrayRef<int64_t> shape = tensorOf(inputs[0]).getShape();
  ReduceKind kind = op.getKind();
  Value reduced = op.getResult();
  // The cotangent of one reduced value v, given the row's result r and
  // cotangent dr.
  auto valueCotangent = [&](ExpBuilder &e, Value v, Value r, Value dr) {
    switch (kind) {
    case ReduceKind::sum:
      return dr;
    case ReduceKind::sum_sq:
      return e.mul(dr, e.mul(e.f32(2.0), v));
    case ReduceKind::max:
      // Every lane equal to the maximum receives it.
      return e.select(e.cmp(CmpPredicate::eq, v, r), dr, e.f32(0));
    }
    llvm_unreachable("unknown reduction");
  };

  if (op.getPrologue().empty()) {
    Value x = inputs[0];
    if (!isActive(x))
      return success();
    Value full = g.map(ValueRange{x, reduced, dy}, shape, g.f32(),
                       [&](ExpBuilder &e, Value, ValueRange args) {
                         return valueCotangent(e, args[0], args[1], args[2]);
                       });
    accumulate(x, full);
    return success();
  }

  return bodyInputsRule(
      op, "prologue", op.getPrologue().front(), inputs,
      wholeInputs(op.getPrologue(), op.getInputs(), 1), shape,
      ValueRange{reduced, dy}, {false, false},
      [&](ExpBuilder &e, ArrayRef<Value> yields, ValueRange extra) {
        return SmallVector<Value>{
            valueCotangent(e, yields[0], extra[0], extra[1])};
      });
}

LogicalResult Differentiator::matmulRule(MatmulOp op, Value dy) {
  Value x = op.getX(), w = op.getWeight();
  RankedTensorType xType = tensorOf(x);
  if (isActive(x) && !xType.getElementType().isF32())
    return op.emitOpError("circuit-autodiff: activations of type ")
           << xType << " are not differentiated (f32 only)";
  if (isActive(w) && !isF32Tensor(w))
    return op.emitOpError("circuit-autodiff: weights of type ")
           << w.getType() << " are not differentiated (f32 only)";
  int64_t n = tensorOf(w).getDimSize(0);
  int64_t k = tensorOf(w).getDimSize(1);
  if (isActive(x)) {
    // dX = dY · W: a matmul with the transposed weight [K, N].
    accumulate(x, g.matmul(dy, g.transpose(w)));
  }
  if (isActive(w)) {
    if (xType.getRank() == 1) {
      // dW = dyᵀ·x, an outer product.
      Value column = reshape(dy, {n, 1});
      accumulate(w, g.map(ValueRange{column, x}, {n, k}, g.f32(),
                          [](ExpBuilder &e, Value, ValueRange args) {
                            return e.mul(args[0], args[1]);
                          }));
    } else {
      // dW[n, k] = Σ_m dY[m, n]·X[m, k] = dYᵀ · (Xᵀ)ᵀ.
      accumulate(w, g.matmul(g.transpose(dy), g.transpose(x)));
    }
  }
  return success();
}

LogicalResult Differentiator::gatherRule(GatherOp op, Value dy) {
  Value source = op.getSource();
  if (!isActive(source))
    return success();
  if (!isF32Tensor(source))
    return op.emitOpError("circuit-autodiff: a source of type ")
           << source.getType() << " is not differentiated (f32 only)";
  int64_t sourceSize = tensorOf(source).getNumElements();
  ArrayRef<int64_t> shape = op.getType().getShape();
  int64_t lanes = op.getType().getNumElements();
  Block &body = op.getBody().front();

  // A row gather (an embedding lookup, GraphBuilder::gatherRows): the rows
  // of dY add into the rows they were read from, in row order.
  if (Value indices = rowGatherIndices(op)) {
    Value summed = g.scatterAdd(dy, indices, tensorOf(source).getDimSize(0));
    accumulate(source, summed);
    return success();
  }

  // A gather that reads every element at most once (a slice, a transpose,
  // a permutation such as RoPE's partner), from the lane alone (an access
  // map found statically, LaneAddresses.cpp): its transpose is a scatter of
  // dY with the same addresses into zeros.
  if (auto addresses = laneOnlyAddresses(op)) {
    std::vector<uint8_t> hits(sourceSize, 0);
    bool injective = true;
    for (int32_t a : *addresses)
      if (a >= 0 && a < sourceSize && hits[a]++)
        injective = false;
    if (injective) {
      Value scattered = g.scatter(
          g.zeros({sourceSize}, g.f32()), lanes, ValueRange{dy},
          [&](ExpBuilder &e, Value lane, ValueRange args) {
            IRMapping m;
            return std::make_pair(cloneBody(e, body, {lane}, m)[0], args[0]);
          });
      accumulate(source, reshape(scattered, tensorOf(source).getShape()));
      return success();
    }
  }

  // In general, dSource[j] = Σ over lanes i that read j of dY[i], summed in
  // lane order: a reduction over [source elements, lanes] that re-evaluates
  // each lane's address. It costs source × result element steps.
  SmallVector<Value> inputs{dy};
  llvm::append_range(inputs, op.getInputs());
  SmallVector<bool> whole(inputs.size(), true);
  SmallVector<bool> bodyWhole = wholeInputs(op.getBody(), op.getInputs(), 1);
  Value summed = g.reduceOver(
      ReduceKind::sum, {sourceSize, lanes}, inputs, whole,
      [&](ExpBuilder &e, Value lane, ValueRange args) {
        Value j = e.divConst(lane, lanes);
        Value i = e.remConst(lane, lanes);
        SmallVector<Value> bodyArgs{i};
        for (auto [k, input] : llvm::enumerate(op.getInputs())) {
          Value all = args[k + 1];
          bodyArgs.push_back(
              bodyWhole[k] ? all
                           : GraphBuilder::extract(
                                 e, all,
                                 broadcastIndex(e, i, shape,
                                                tensorOf(input).getShape())));
        }
        IRMapping m;
        Value addr = cloneBody(e, body, bodyArgs, m)[0];
        Value hit = e.cmp(CmpPredicate::eq, addr, j);
        return e.select(hit, GraphBuilder::extract(e, args[0], i), e.f32(0));
      });
  accumulate(source, reshape(summed, tensorOf(source).getShape()));
  return success();
}

LogicalResult Differentiator::scatterAddRule(ScatterAddOp op, Value dy) {
  // Row s of the source went into row indices[s]: its cotangent is that
  // row of dY (zero for an index out of range, which added nothing).
  if (isActive(op.getSource()))
    accumulate(op.getSource(), g.gatherRows(dy, op.getIndices()));
  return success();
}

LogicalResult Differentiator::scatterRule(ScatterOp op, Value dy) {
  Value dest = op.getDest();
  if (!getWrittenBufferRoot(dest).getDefiningOp<ZerosOp>())
    return op.emitOpError("circuit-autodiff: an in-place write into a graph "
                          "argument is not differentiated (scatter into "
                          "circuit.zeros, or into a scatter's result)");
  SmallVector<Value> inputs(op.getInputs());
  SmallVector<bool> whole = wholeInputs(op.getBody(), op.getInputs(), 1);
  int64_t grid = static_cast<int64_t>(op.getGrid());
  Block &body = op.getBody().front();
  RankedTensorType destType = tensorOf(dest);

  // The destination keeps dY where no lane wrote: a copy of dY with zeros
  // scattered at the written addresses.
  if (isActive(dest)) {
    if (llvm::is_contained(whole, true))
      return op.emitOpError("circuit-autodiff: a scatter whose body reads an "
                            "input whole does not pass its destination's "
                            "gradient through");
    Value copy =
        g.writeSlice(g.zeros(destType.getShape(), g.f32()), dy, /*offset=*/0);
    Value cleared = g.scatter(copy, grid, inputs,
                              [&](ExpBuilder &e, Value lane, ValueRange args) {
                                Value addr = cloneLaneBody(e, body, lane, args);
                                return std::make_pair(addr, e.f32(0));
                              });
    accumulate(dest, cleared);
  }

  // Lane i wrote its value at addr(i): its cotangent is dY[addr(i)] (lanes
  // write distinct addresses), read back with the same address.
  return bodyInputsRule(
      op, "body", body, inputs, whole, {grid}, dy, {true},
      [](ExpBuilder &e, ArrayRef<Value> yields, ValueRange extra) {
        return SmallVector<Value>{
            Value(), GraphBuilder::extract(e, extra[0], yields[0])};
      });
}

LogicalResult Differentiator::differentiateOp(Operation *op) {
  bool relevant =
      llvm::any_of(op->getOperands(), [&](Value v) { return isActive(v); }) &&
      llvm::any_of(op->getResults(),
                   [&](Value v) { return needed.contains(v); });
  if (!relevant)
    return success();
  Value dy =
      op->getNumResults() == 1 ? adjoint.lookup(op->getResult(0)) : Value();
  if (isa<ZerosOp>(op))
    return success();
  if (!dy && op->getNumResults() == 1 &&
      isa<FloatType>(tensorOf(op->getResult(0)).getElementType()))
    return success(); // Needed only for its shape or an integer use.
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MapOp m) { return mapRule(m, dy); })
      .Case([&](ReduceOp r) { return reduceRule(r, dy); })
      .Case([&](MatmulOp m) { return matmulRule(m, dy); })
      .Case([&](GatherOp m) { return gatherRule(m, dy); })
      .Case([&](ScatterOp s) { return scatterRule(s, dy); })
      .Case([&](ScatterAddOp s) { return scatterAddRule(s, dy); })
      .Default([&](Operation *other) {
        return other->emitOpError("circuit-autodiff: no vector-Jacobian "
                                  "rule for this primitive");
      });
}

FailureOr<GraphOp> Differentiator::run(ArrayRef<unsigned> wrt) {
  Block &body = forward.getBody().front();
  for (unsigned index : wrt) {
    if (index >= body.getNumArguments())
      return forward.emitOpError("circuit-autodiff: no argument #") << index;
    if (!isF32Tensor(body.getArgument(index)))
      return forward.emitOpError("circuit-autodiff: argument #")
             << index << " of type " << body.getArgument(index).getType()
             << " cannot be differentiated (f32 only)";
  }
  if (failed(copyForward()))
    return failure();

  auto output = cast<OutputOp>(body.getTerminator());
  SmallVector<Value> results, wrtValues;
  for (Value r : output.getResults())
    results.push_back(primal.lookup(r));
  for (unsigned index : wrt)
    wrtValues.push_back(primal.lookup(body.getArgument(index)));
  analyze(wrtValues, results);

  for (auto [i, r] : llvm::enumerate(results)) {
    if (!isF32Tensor(r))
      return forward.emitOpError("circuit-autodiff: result #")
             << i << " of type " << r.getType()
             << " has no cotangent (f32 results only)";
    Value seed = g.external("d_result" + std::to_string(i),
                            tensorOf(r).getShape(), g.f32());
    accumulate(r, seed);
  }
  for (Operation *op : llvm::reverse(order))
    if (failed(differentiateOp(op)))
      return failure();

  SmallVector<Value> outputs(results);
  for (Value v : wrtValues) {
    Value d = adjoint.lookup(v);
    outputs.push_back(d ? d : g.zeros(tensorOf(v).getShape(), g.f32()));
  }
  g.output(outputs);
  OwningOpRef<ModuleOp> module = g.finish();
  if (!module)
    return forward.emitOpError(
        "circuit-autodiff: the gradient graph does not verify");
  GraphOp grad = g.getGraph();
  grad->moveAfter(forward);
  return grad;
}

FailureOr<GraphOp> hesper::circuit::differentiate(GraphOp forward,
                                                  ArrayRef<unsigned> wrt,
                                                  StringRef name) {
  std::string gradName =
      name.empty() ? (forward.getSymName() + "_grad").str() : name.str();
  if (Operation *table = SymbolTable::getNearestSymbolTable(forward))
    if (SymbolTable::lookupSymbolIn(table, gradName))
      return forward.emitOpError("circuit-autodiff: a symbol named @")
             << gradName << " already exists";
  Differentiator d(forward, gradName);
  return d.run(wrt);
}
