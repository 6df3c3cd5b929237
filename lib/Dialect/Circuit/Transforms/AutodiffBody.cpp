//===- AutodiffBody.cpp - Reverse mode through a per-lane body ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The Exp-level half of circuit-autodiff: copying a lane body into a new
// kernel, and the derivative of every exp op on a gradient path, emitted
// backwards through the copy. Autodiff.cpp holds the graph-level rules.
//
//===----------------------------------------------------------------------===//

#include "AutodiffBody.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using hesper::exp::CmpPredicate;
using hesper::exp::ExpBuilder;
namespace ex = hesper::exp;
namespace autodiff = hesper::circuit::autodiff;

//===----------------------------------------------------------------------===//
// Per-lane bodies
//===----------------------------------------------------------------------===//

/// Copies the ops of `src` (a body ending in circuit.yield) to the builder's
/// insertion point with its arguments bound to `args`; returns the values
/// it yields. `mapping` keeps the copy of every value of `src`.
SmallVector<Value> autodiff::cloneBody(ExpBuilder &e, Block &src,
                                      ValueRange args, IRMapping &mapping) {
  for (auto [arg, value] : llvm::zip(src.getArguments(), args))
    mapping.map(arg, value);
  for (Operation &op : src.without_terminator())
    e.builder().clone(op, mapping);
  SmallVector<Value> yields;
  for (Value v : src.getTerminator()->getOperands())
    yields.push_back(mapping.lookup(v));
  return yields;
}

/// The first value a lane body (arguments: the lane, then `args`) yields,
/// copied at the builder's insertion point.
Value autodiff::cloneLaneBody(ExpBuilder &e, Block &src, Value lane,
                             ValueRange args) {
  IRMapping mapping;
  SmallVector<Value> bodyArgs{lane};
  llvm::append_range(bodyArgs, args);
  return cloneBody(e, src, bodyArgs, mapping)[0];
}

/// Reverse mode through a body copied by cloneBody: given the cotangents
/// `seeds` of its yielded values (null for none), emits the derivative of
/// each op and returns the cotangent of every argument of `src` (null where
/// it is zero). Fails on a float op on the gradient path without a rule.
FailureOr<SmallVector<Value>>
autodiff::backpropBody(ExpBuilder &e, Block &src, const IRMapping &mapping,
                       ArrayRef<Value> seeds) {
  llvm::DenseMap<Value, Value> adjoint;
  // Cotangents reach float values not computed from constants alone.
  auto accumulate = [&](Value of, Value contribution) {
    if (!isa<FloatType>(of.getType()) || of.getDefiningOp<ex::ConstantOp>())
      return;
    Value &slot = adjoint[of];
    slot = slot ? e.add(slot, contribution) : contribution;
  };
  Operation *yield = src.getTerminator();
  for (auto [value, seed] : llvm::zip(yield->getOperands(), seeds))
    if (seed)
      accumulate(value, seed);

  for (Operation &op : llvm::reverse(src.without_terminator())) {
    if (op.getNumResults() != 1)
      continue;
    auto found = adjoint.find(op.getResult(0));
    if (found == adjoint.end())
      continue;
    Value g = found->second;
    Type type = g.getType();
    auto p = [&](unsigned k) { return mapping.lookup(op.getOperand(k)); };
    Value y = mapping.lookup(op.getResult(0));
    auto c = [&](double v) { return e.constant(type, v); };
    auto zero = [&] { return c(0.0); };
    auto in = [&](unsigned k, Value v) { accumulate(op.getOperand(k), v); };

    LogicalResult status =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](ex::AddOp) {
              in(0, g);
              in(1, g);
              return success();
            })
            .Case([&](ex::SubOp) {
              in(0, g);
              in(1, e.neg(g));
              return success();
            })
            .Case([&](ex::MulOp) {
              in(0, e.mul(g, p(1)));
              in(1, e.mul(g, p(0)));
              return success();
            })
            .Case([&](ex::DivOp) {
              // d(a/b) = da/b - db·(a/b)/b.
              in(0, e.div(g, p(1)));
              in(1, e.neg(e.div(e.mul(g, y), p(1))));
              return success();
            })
            .Case([&](ex::NegOp) {
              in(0, e.neg(g));
              return success();
            })
            .Case([&](ex::AbsOp) {
              Value negative = e.cmp(CmpPredicate::lt, p(0), zero());
              in(0, e.select(negative, e.neg(g), g));
              return success();
            })
            .Case([&](ex::MinOp) {
              // Ties go to the first operand.
              Value first = e.cmp(CmpPredicate::le, p(0), p(1));
              in(0, e.select(first, g, zero()));
              in(1, e.select(first, zero(), g));
              return success();
            })
            .Case([&](ex::MaxOp) {
              Value first = e.cmp(CmpPredicate::ge, p(0), p(1));
              in(0, e.select(first, g, zero()));
              in(1, e.select(first, zero(), g));
              return success();
            })
            .Case([&](ex::ExpOp) {
              in(0, e.mul(g, y));
              return success();
            })
            .Case([&](ex::LogOp) {
              in(0, e.div(g, p(0)));
              return success();
            })
            .Case([&](ex::SqrtOp) {
              in(0, e.div(e.mul(g, c(0.5)), y));
              return success();
            })
            .Case([&](ex::RsqrtOp) {
              // d(x^-1/2) = -1/2 x^-3/2 = -1/2 y^3.
              in(0, e.mul(e.mul(g, c(-0.5)), e.mul(y, e.mul(y, y))));
              return success();
            })
            .Case([&](ex::TanhOp) {
              in(0, e.mul(g, e.sub(c(1.0), e.mul(y, y))));
              return success();
            })
            .Case([&](ex::SinOp) {
              in(0, e.mul(g, e.cos(p(0))));
              return success();
            })
            .Case([&](ex::CosOp) {
              in(0, e.neg(e.mul(g, e.sin(p(0)))));
              return success();
            })
            .Case([&](ex::SigmoidOp) {
              in(0, e.mul(g, e.mul(y, e.sub(c(1.0), y))));
              return success();
            })
            .Case([&](ex::SiluOp) {
              // silu = x·s with s = sigmoid(x): s·(1 + x·(1 - s)).
              Value s = ex::SigmoidOp::create(e.builder(), e.location(), p(0));
              Value d =
                  e.mul(s, e.add(c(1.0), e.mul(p(0), e.sub(c(1.0), s))));
              in(0, e.mul(g, d));
              return success();
            })
            .Case([&](ex::GeluOp) {
              // gelu = x/2·(1 + t), t = tanh(k·(x + a·x³)):
              // 1/2·(1 + t) + x/2·(1 - t²)·k·(1 + 3a·x²).
              const double k = 0.7978845608028654, a = 0.044715;
              Value x = p(0);
              Value x2 = e.mul(x, x);
              Value t = e.tanh(
                  e.mul(c(k), e.add(x, e.mul(c(a), e.mul(x2, x)))));
              Value left = e.mul(c(0.5), e.add(c(1.0), t));
              Value inner =
                  e.mul(c(k), e.add(c(1.0), e.mul(c(3.0 * a), x2)));
              Value right = e.mul(e.mul(c(0.5), x),
                                  e.mul(e.sub(c(1.0), e.mul(t, t)), inner));
              in(0, e.mul(g, e.add(left, right)));
              return success();
            })
            .Case([&](ex::PowOp) {
              in(0, e.mul(g, e.mul(p(1), e.pow(p(0), e.sub(p(1), c(1.0))))));
              if (!op.getOperand(1).getDefiningOp<ex::ConstantOp>())
                in(1, e.mul(g, e.mul(y, e.log(p(0)))));
              return success();
            })
            .Case([&](ex::FmaOp) {
              in(0, e.mul(g, p(1)));
              in(1, e.mul(g, p(0)));
              in(2, g);
              return success();
            })
            .Case([&](ex::ClampOp) {
              Value low = e.cmp(CmpPredicate::lt, p(0), p(1));
              Value high = e.cmp(CmpPredicate::gt, p(0), p(2));
              in(0, e.select(low, zero(), e.select(high, zero(), g)));
              in(1, e.select(low, g, zero()));
              in(2, e.select(low, zero(), e.select(high, g, zero())));
              return success();
            })
            .Case([&](ex::SelectOp) {
              in(1, e.select(p(0), g, zero()));
              in(2, e.select(p(0), zero(), g));
              return success();
            })
            .Case([&](ex::ConvertOp) {
              Type from = op.getOperand(0).getType();
              if (isa<FloatType>(from))
                in(0, from == type ? g : e.convert(g, from));
              return success();
            })
            // Piecewise constant: zero derivative almost everywhere.
            .Case<ex::FloorOp, ex::RoundOp>([&](Operation *) {
              return success();
            })
            .Case([&](ExtractOp) {
              return op.emitOpError(
                  "circuit-autodiff: cannot differentiate an input read "
                  "whole (circuit.extract); read it element by element or "
                  "through a circuit.gather");
            })
            .Default([&](Operation *) {
              return op.emitOpError(
                  "circuit-autodiff: no derivative rule for this op");
            });
    if (failed(status))
      return failure();
  }

  SmallVector<Value> result;
  for (BlockArgument arg : src.getArguments())
    result.push_back(adjoint.lookup(arg));
  return result;
}

