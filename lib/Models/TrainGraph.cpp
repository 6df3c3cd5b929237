//===- TrainGraph.cpp - Graphs of a training step -------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The forward pass is written once, from primitives that circuit-autodiff
// has rules for; its gradient is derived, never written by hand. Choices
// made for the sake of the backward pass:
// - the token embedding is a row gather by token id
//   (GraphBuilder::gatherRows), whose gradient is a scatter_add of dY's rows
//   into the rows of the tokens: seq × dim additions in a fixed order, and
//   a row no token reads gets a zero gradient even if it holds a NaN;
// - attention is GraphBuilder::causalSelfAttention: per head, slice
//   gathers (each reads an element at most once, so their gradient is a
//   scatter), Q·Kᵀ and P·V matmuls, a masked softmax, and scatters that put
//   the heads side by side;
// - RoPE reads its partner element through a permutation gather.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/TrainGraph.h"

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Dialect/Circuit/Transforms/Autodiff.h"

#include "mlir/IR/IRMapping.h"

#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::train;
using hesper::circuit::GraphBuilder;
using hesper::circuit::GraphOp;
using hesper::circuit::ReduceKind;
using hesper::exp::CmpPredicate;
using hesper::exp::ExpBuilder;

int64_t Parameter::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<Parameter> hesper::train::parameters(const ModelShape &s) {
  std::vector<Parameter> out;
  out.push_back({"token_embd.weight", {s.vocab, s.dim}});
  for (int64_t l = 0; l < s.layers; ++l) {
    std::string b = "blk." + std::to_string(l) + ".";
    out.push_back({b + "attn_norm.weight", {s.dim}});
    out.push_back({b + "attn_q.weight", {s.dim, s.dim}});
    out.push_back({b + "attn_k.weight", {s.dim, s.dim}});
    out.push_back({b + "attn_v.weight", {s.dim, s.dim}});
    out.push_back({b + "attn_output.weight", {s.dim, s.dim}});
    out.push_back({b + "ffn_norm.weight", {s.dim}});
    out.push_back({b + "ffn_gate.weight", {s.ffn, s.dim}});
    out.push_back({b + "ffn_up.weight", {s.ffn, s.dim}});
    out.push_back({b + "ffn_down.weight", {s.dim, s.ffn}});
  }
  out.push_back({"output_norm.weight", {s.dim}});
  out.push_back({"output.weight", {s.vocab, s.dim}});
  return out;
}

std::string hesper::train::checkShape(const ModelShape &s) {
  if (s.vocab < 2 || s.dim < 2 || s.layers < 1 || s.heads < 1 || s.ffn < 1 ||
      s.seq < 2)
    return "every size must be positive (vocabulary and sequence at least 2)";
  if (s.dim % s.heads != 0)
    return "the width " + std::to_string(s.dim) +
           " is not a multiple of the head count " + std::to_string(s.heads);
  if (s.headDim() % 2 != 0)
    return "the head size " + std::to_string(s.headDim()) +
           " must be even for RoPE";
  // Lane indices are i32: the largest iteration is seq x vocab x dim for
  // the embedding's gradient.
  if (s.seq * s.vocab > (int64_t(1) << 30) / std::max<int64_t>(s.dim, 1))
    return "the model is too large for 32-bit lane indices";
  return "";
}

double hesper::train::learningRate(const OptimizerConfig &o, int64_t step) {
  double t = static_cast<double>(step);
  if (step < o.warmup)
    return o.lr * (t + 1) / static_cast<double>(o.warmup);
  double span =
      static_cast<double>(std::max<int64_t>(1, o.totalSteps - o.warmup));
  double progress = std::min(1.0, (t - o.warmup) / span);
  return o.minLr + 0.5 * (o.lr - o.minLr) * (1 + std::cos(M_PI * progress));
}

namespace {

/// Builds the forward pass of ModelShape into a GraphBuilder.
class ForwardBuilder {
public:
  ForwardBuilder(GraphBuilder &g, const ModelShape &s) : g(g), s(s) {}

  /// Logits [seq, vocab] of `tokens` (i32 [seq]).
  Value logits(ArrayRef<Value> params, Value tokens);

private:
  Value add(Value a, Value b) {
    return g.zip(a, b,
                 [](ExpBuilder &e, Value x, Value y) { return e.add(x, y); });
  }
  Value embed(Value table, Value tokens);
  Value rope(Value x);

  GraphBuilder &g;
  const ModelShape &s;
};

} // namespace

Value ForwardBuilder::embed(Value table, Value tokens) {
  return g.gatherRows(table, tokens);
}

Value ForwardBuilder::rope(Value x) {
  // Adjacent pairs (2j, 2j+1) of each head rotate by t·base^(-2j/headDim)
  // at position t, as llama.cpp's llama graph does.
  const int64_t hd = s.headDim();
  Value partner = g.gather(
      x, {}, {s.seq, s.dim}, [&](ExpBuilder &e, Value lane, ValueRange) {
        return exp::XorOp::create(e.builder(), e.location(), lane, e.i32(1));
      });
  const double logBase = std::log(s.ropeBase);
  return g.map(ValueRange{x, partner}, {s.seq, s.dim}, g.f32(),
               [&](ExpBuilder &e, Value lane, ValueRange args) {
                 Value t = e.toF32(e.divConst(lane, s.dim));
                 Value d = e.remConst(lane, hd);
                 Value j = e.toF32(e.divConst(d, 2));
                 Value invFreq = e.exp(
                     e.mul(j, e.f32(-2.0 * logBase / static_cast<double>(hd))));
                 Value theta = e.mul(t, invFreq);
                 Value c = e.cos(theta), sn = e.sin(theta);
                 Value first =
                     e.cmp(CmpPredicate::eq, e.remConst(d, 2), e.i32(0));
                 Value xc = e.mul(args[0], c), xs = e.mul(args[1], sn);
                 return e.select(first, e.sub(xc, xs), e.add(xc, xs));
               });
}

Value ForwardBuilder::logits(ArrayRef<Value> params, Value tokens) {
  size_t next = 0;
  auto param = [&] { return params[next++]; };
  Value x = embed(param(), tokens);
  for (int64_t l = 0; l < s.layers; ++l) {
    Value attnNorm = param(), wq = param(), wk = param(), wv = param(),
          wo = param(), ffnNorm = param(), wg = param(), wu = param(),
          wd = param();
    Value h = g.rmsNorm(x, attnNorm, s.eps);
    Value q = rope(g.matmul(h, wq));
    Value k = rope(g.matmul(h, wk));
    Value v = g.matmul(h, wv);
    x = add(x, g.matmul(g.causalSelfAttention(q, k, v, s.heads), wo));
    Value h2 = g.rmsNorm(x, ffnNorm, s.eps);
    Value act = g.zip(g.matmul(h2, wg), g.matmul(h2, wu),
                      [](ExpBuilder &e, Value gate, Value up) {
                        return e.mul(e.silu(gate), up);
                      });
    x = add(x, g.matmul(act, wd));
  }
  Value outNorm = param(), outW = param();
  return g.matmul(g.rmsNorm(x, outNorm, s.eps), outW);
}

/// Registers the parameters as externals of `g`, in order.
static SmallVector<Value> externals(GraphBuilder &g, ArrayRef<Parameter> params,
                                    StringRef prefix = "") {
  SmallVector<Value> out;
  for (const Parameter &p : params)
    out.push_back(g.external((prefix + p.name).str(), p.shape, g.f32()));
  return out;
}

static int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

void hesper::train::appendOptimizer(GraphBuilder &g, ArrayRef<Value> weights,
                                    ArrayRef<Value> grads, ArrayRef<Value> m,
                                    ArrayRef<Value> v, Value step,
                                    const OptimizerConfig &o,
                                    SmallVectorImpl<Value> &outputs) {
  // Global norm: Σ over tensors of Σ g², each tensor read flat.
  SmallVector<Value> sums;
  for (Value grad : grads) {
    Value flat =
        g.map(ValueRange{grad}, {elementsOf(grad)}, g.f32(),
              [](ExpBuilder &, Value, ValueRange args) { return args[0]; });
    sums.push_back(g.reduce(ReduceKind::sum_sq, flat));
  }
  // Added in groups, so that no kernel binds more buffers than a device
  // allows (the fusion passes keep to the same limit).
  constexpr size_t kGroup = 16;
  Value total;
  for (size_t first = 0; first < sums.size(); first += kGroup) {
    SmallVector<Value> group;
    if (total)
      group.push_back(total);
    for (size_t i = first; i < std::min(sums.size(), first + kGroup); ++i)
      group.push_back(sums[i]);
    total =
        g.map(group, {1}, g.f32(), [](ExpBuilder &e, Value, ValueRange args) {
          Value sum = args[0];
          for (Value a : args.drop_front())
            sum = e.add(sum, a);
          return sum;
        });
  }
  Value norm = g.map(total, [](ExpBuilder &e, Value t) { return e.sqrt(t); });
  Value clip = g.map(norm, [&](ExpBuilder &e, Value n) {
    if (o.clipNorm <= 0)
      return e.f32(1.0);
    return e.min(e.f32(1.0), e.div(e.f32(o.clipNorm), e.add(n, e.f32(1e-6))));
  });
  // Schedule and bias corrections of step t (0-based).
  Value lr = g.map(step, [&](ExpBuilder &e, Value t) {
    Value warm = e.mul(e.f32(o.lr / static_cast<double>(o.warmup)),
                       e.add(t, e.f32(1.0)));
    double span =
        static_cast<double>(std::max<int64_t>(1, o.totalSteps - o.warmup));
    Value progress =
        e.min(e.f32(1.0), e.div(e.sub(t, e.f32(static_cast<double>(o.warmup))),
                                e.f32(span)));
    Value cosine =
        e.add(e.f32(o.minLr),
              e.mul(e.f32(0.5 * (o.lr - o.minLr)),
                    e.add(e.f32(1.0), e.cos(e.mul(progress, e.f32(M_PI))))));
    Value warming =
        e.cmp(CmpPredicate::lt, t, e.f32(static_cast<double>(o.warmup)));
    return e.select(warming, warm, cosine);
  });
  auto correction = [&](double beta) {
    return g.map(step, [&, beta](ExpBuilder &e, Value t) {
      return e.sub(e.f32(1.0), e.pow(e.f32(beta), e.add(t, e.f32(1.0))));
    });
  };
  Value c1 = correction(o.beta1), c2 = correction(o.beta2);

  for (size_t i = 0; i < weights.size(); ++i) {
    g.scatterMulti(
        ValueRange{weights[i], m[i], v[i]}, elementsOf(weights[i]),
        ValueRange{weights[i], grads[i], m[i], v[i], clip, lr, c1, c2},
        [&](ExpBuilder &e, Value lane, ValueRange a) {
          Value w = a[0], grad = e.mul(a[1], a[4]);
          Value m1 = e.add(e.mul(e.f32(o.beta1), a[2]),
                           e.mul(e.f32(1.0 - o.beta1), grad));
          Value v1 = e.add(e.mul(e.f32(o.beta2), a[3]),
                           e.mul(e.f32(1.0 - o.beta2), e.mul(grad, grad)));
          Value mHat = e.div(m1, a[6]), vHat = e.div(v1, a[7]);
          Value update = e.div(mHat, e.add(e.sqrt(vHat), e.f32(o.eps)));
          if (o.weightDecay != 0)
            update = e.add(update, e.mul(e.f32(o.weightDecay), w));
          Value w1 = e.sub(w, e.mul(a[5], update));
          return SmallVector<Value>{lane, w1, lane, m1, lane, v1};
        });
  }
  outputs.append({norm, lr});
}

OwningOpRef<ModuleOp>
hesper::train::buildTrainingModule(MLIRContext *context, const ModelShape &s,
                                   const OptimizerConfig &o) {
  std::vector<Parameter> params = parameters(s);
  const unsigned numParams = params.size();

  // @loss: the forward pass.
  GraphBuilder lossBuilder(context, "loss");
  {
    SmallVector<Value> weights = externals(lossBuilder, params);
    Value tokens = lossBuilder.externalIndices(
        "tokens", {s.seq}, circuit::ArgRole::Tokens, s.vocab);
    Value targets = lossBuilder.externalIndices(
        "targets", {s.seq}, circuit::ArgRole::Targets, s.vocab);
    ForwardBuilder forward(lossBuilder, s);
    lossBuilder.output(
        lossBuilder.crossEntropy(forward.logits(weights, tokens), targets));
  }
  OwningOpRef<ModuleOp> module = lossBuilder.finish();
  if (!module)
    return nullptr;
  GraphOp loss = lossBuilder.getGraph();

  // @loss_grad: its gradient with respect to every parameter.
  SmallVector<unsigned> wrt;
  for (unsigned i = 0; i < numParams; ++i)
    wrt.push_back(i);
  FailureOr<GraphOp> grad = circuit::differentiate(loss, wrt);
  if (failed(grad))
    return nullptr;

  // @logits: the same forward pass, for evaluation and export checks.
  GraphBuilder logitsBuilder(context, "logits");
  {
    SmallVector<Value> weights = externals(logitsBuilder, params);
    Value tokens = logitsBuilder.externalIndices(
        "tokens", {s.seq}, circuit::ArgRole::Tokens, s.vocab);
    ForwardBuilder forward(logitsBuilder, s);
    logitsBuilder.output(forward.logits(weights, tokens));
  }
  OwningOpRef<ModuleOp> logitsModule = logitsBuilder.finish();
  if (!logitsModule)
    return nullptr;
  logitsBuilder.getGraph()->moveAfter(*grad);

  // @train_step: @loss_grad inlined, seeded with dL = 1, then the
  // optimizer.
  GraphBuilder stepBuilder(context, "train_step");
  SmallVector<Value> weights = externals(stepBuilder, params);
  SmallVector<Value> m = externals(stepBuilder, params, "adam.m.");
  SmallVector<Value> v = externals(stepBuilder, params, "adam.v.");
  Value tokens = stepBuilder.externalIndices("tokens", {s.seq},
                                             circuit::ArgRole::Tokens, s.vocab);
  Value targets = stepBuilder.externalIndices(
      "targets", {s.seq}, circuit::ArgRole::Targets, s.vocab);
  Value step = stepBuilder.external("step", {1}, stepBuilder.f32());
  Value seed = stepBuilder.map(
      ValueRange{}, {1}, stepBuilder.f32(),
      [](ExpBuilder &e, Value, ValueRange) { return e.f32(1.0); });
  IRMapping mapping;
  Block &gradBody = grad->getBody().front();
  for (unsigned i = 0; i < numParams; ++i)
    mapping.map(gradBody.getArgument(i), weights[i]);
  mapping.map(gradBody.getArgument(numParams), tokens);
  mapping.map(gradBody.getArgument(numParams + 1), targets);
  mapping.map(gradBody.getArgument(numParams + 2), seed);
  for (Operation &op : gradBody.without_terminator())
    stepBuilder.getOpBuilder().clone(op, mapping);
  SmallVector<Value> gradOutputs;
  for (Value r : gradBody.getTerminator()->getOperands())
    gradOutputs.push_back(mapping.lookup(r));
  SmallVector<Value> outputs{gradOutputs[0]};
  appendOptimizer(stepBuilder, weights,
                  ArrayRef<Value>(gradOutputs).drop_front(), m, v, step, o,
                  outputs);
  stepBuilder.output(outputs);
  OwningOpRef<ModuleOp> stepModule = stepBuilder.finish();
  if (!stepModule)
    return nullptr;
  stepBuilder.getGraph()->moveAfter(logitsBuilder.getGraph());
  return module;
}
