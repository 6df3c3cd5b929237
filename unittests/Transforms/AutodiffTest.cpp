//===- AutodiffTest.cpp - circuit-autodiff against finite differences ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Every vector-Jacobian rule of circuit-autodiff is checked against central
// finite differences of the forward graph, both evaluated by the reference
// interpreter in double precision (checkGradients: step 1e-5, an element
// passes when |analytic - numeric| <= 1e-6·(1 + |numeric|)), on random
// inputs. Deliberately wrong rules must fail the same check, and graphs
// that cannot be differentiated must be refused with a message.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Dialect/Circuit/Transforms/Autodiff.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Interpreter/GradientCheck.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <random>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;
using hesper::exp::CmpPredicate;
using hesper::exp::ExpBuilder;

namespace {

class AutodiffTest : public ::testing::Test {
protected:
  AutodiffTest() { context.loadDialect<CircuitDialect, exp::ExpDialect>(); }

  static GraphOp graphOf(ModuleOp module) {
    return *module.getOps<GraphOp>().begin();
  }

  HostTensor random(ArrayRef<int64_t> shape, double lo, double hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<float> values(n);
    for (float &v : values)
      v = dist(rng);
    return HostTensor::fromFloats(&context, shape, values);
  }

  /// Differentiates the module's graph with respect to `wrt` and checks
  /// the gradient against finite differences at `inputs`.
  GradientCheckReport check(ModuleOp module, ArrayRef<HostTensor> inputs,
                            ArrayRef<unsigned> wrt,
                            const std::function<void(GraphOp)> &mutate = {}) {
    GraphOp forward = graphOf(module);
    auto grad = differentiate(forward, wrt);
    EXPECT_TRUE(succeeded(grad));
    if (failed(grad))
      return {};
    if (mutate)
      mutate(*grad);
    auto report = checkGradients(forward, *grad, wrt, inputs);
    EXPECT_TRUE(succeeded(report));
    return succeeded(report) ? *report : GradientCheckReport{};
  }

  /// The message of the first error `differentiate` reports, or "".
  std::string refusal(ModuleOp module, ArrayRef<unsigned> wrt) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      if (message.empty())
        message = d.str();
      return success();
    });
    EXPECT_TRUE(failed(differentiate(graphOf(module), wrt)));
    return message;
  }

  MLIRContext context;
  std::mt19937 rng{12345};
};

#define EXPECT_GRADIENTS_MATCH(report)                                         \
  do {                                                                         \
    GradientCheckReport r_ = (report);                                         \
    EXPECT_TRUE(r_.passed()) << r_.describe();                                 \
    EXPECT_GT(r_.checked, 0);                                                  \
  } while (0)

using BinaryFn = std::function<Value(ExpBuilder &, Value, Value)>;

struct ExpRule {
  const char *name;
  BinaryFn fn;
};

/// One map per exp op (or small combination), both inputs in [0.5, 1.5].
static std::vector<ExpRule> expRules() {
  return {
      {"add", [](ExpBuilder &e, Value a, Value b) { return e.add(a, b); }},
      {"sub", [](ExpBuilder &e, Value a, Value b) { return e.sub(a, b); }},
      {"mul", [](ExpBuilder &e, Value a, Value b) { return e.mul(a, b); }},
      {"div", [](ExpBuilder &e, Value a, Value b) { return e.div(a, b); }},
      {"neg", [](ExpBuilder &e, Value a, Value b) { return e.neg(e.mul(a, b)); }},
      {"abs", [](ExpBuilder &e, Value a, Value b) { return e.abs(e.sub(a, b)); }},
      {"min", [](ExpBuilder &e, Value a, Value b) { return e.min(a, b); }},
      {"max", [](ExpBuilder &e, Value a, Value b) { return e.max(a, b); }},
      {"exp", [](ExpBuilder &e, Value a, Value b) { return e.exp(e.mul(a, b)); }},
      {"log", [](ExpBuilder &e, Value a, Value b) { return e.log(e.add(a, b)); }},
      {"sqrt", [](ExpBuilder &e, Value a, Value b) { return e.sqrt(e.mul(a, b)); }},
      {"rsqrt", [](ExpBuilder &e, Value a, Value b) { return e.rsqrt(e.add(a, b)); }},
      {"tanh", [](ExpBuilder &e, Value a, Value b) { return e.tanh(e.sub(a, b)); }},
      {"sin", [](ExpBuilder &e, Value a, Value b) { return e.sin(e.mul(a, b)); }},
      {"cos", [](ExpBuilder &e, Value a, Value b) { return e.cos(e.mul(a, b)); }},
      {"sigmoid",
       [](ExpBuilder &e, Value a, Value b) {
         return exp::SigmoidOp::create(e.builder(), e.location(), e.sub(a, b));
       }},
      {"silu", [](ExpBuilder &e, Value a, Value b) { return e.silu(e.sub(a, b)); }},
      {"gelu", [](ExpBuilder &e, Value a, Value b) { return e.gelu(e.sub(a, b)); }},
      {"pow", [](ExpBuilder &e, Value a, Value b) { return e.pow(a, b); }},
      {"pow_const",
       [](ExpBuilder &e, Value a, Value b) { return e.pow(e.mul(a, b), e.f32(1.5)); }},
      {"fma", [](ExpBuilder &e, Value a, Value b) { return e.fma(a, b, e.mul(a, a)); }},
      {"clamp",
       [](ExpBuilder &e, Value a, Value b) {
         return e.clamp(e.mul(a, b), e.f32(0.6), e.f32(1.4));
       }},
      {"clamp_bounds",
       [](ExpBuilder &e, Value a, Value b) {
         // lo < hi always; x lands below, inside and above.
         Value lo = e.mul(a, e.f32(0.8));
         return e.clamp(e.mul(b, e.f32(1.2)), lo, e.add(lo, e.f32(0.5)));
       }},
      {"select",
       [](ExpBuilder &e, Value a, Value b) {
         Value less = e.cmp(CmpPredicate::lt, a, b);
         return e.select(less, e.mul(a, a), e.mul(b, e.f32(3.0)));
       }},
      {"convert_roundtrip",
       [](ExpBuilder &e, Value a, Value b) {
         // f32 -> f32 conversions pass the cotangent through.
         return e.convert(e.mul(a, b), e.builder().getF32Type());
       }},
      {"floor_is_flat",
       [](ExpBuilder &e, Value a, Value b) {
         return e.add(exp::FloorOp::create(e.builder(), e.location(),
                                           e.mul(a, e.f32(10.0))),
                      b);
       }},
  };
}

TEST_F(AutodiffTest, EveryExpOpRuleMatchesFiniteDifferences) {
  for (const ExpRule &rule : expRules()) {
    SCOPED_TRACE(rule.name);
    GraphBuilder g(&context, "f");
    Value a = g.external("a", {16}, g.f32());
    Value b = g.external("b", {16}, g.f32());
    g.output(g.map(ValueRange{a, b}, {16}, g.f32(),
                   [&](ExpBuilder &e, Value, ValueRange args) {
                     return rule.fn(e, args[0], args[1]);
                   }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(
        check(*module, {random({16}, 0.5, 1.5), random({16}, 0.5, 1.5)},
              {0, 1}));
  }
}

TEST_F(AutodiffTest, BroadcastInputsSumTheirCotangents) {
  // y[r, d] = tanh(x[r, d]·w[d] + s[r]·c): w, s and c are broadcast, so
  // their gradients sum over the lanes that read them.
  GraphBuilder g(&context, "f");
  Value x = g.external("x", {4, 8}, g.f32());
  Value w = g.external("w", {8}, g.f32());
  Value s = g.external("s", {4, 1}, g.f32());
  Value c = g.external("c", {1}, g.f32());
  g.output(g.map(ValueRange{x, w, s, c}, {4, 8}, g.f32(),
                 [&](ExpBuilder &e, Value, ValueRange args) {
                   return e.tanh(e.add(e.mul(args[0], args[1]),
                                       e.mul(args[2], args[3])));
                 }));
  auto module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_GRADIENTS_MATCH(check(*module,
                               {random({4, 8}, -1, 1), random({8}, -1, 1),
                                random({4, 1}, -1, 1), random({1}, -1, 1)},
                               {0, 1, 2, 3}));
}

TEST_F(AutodiffTest, Reductions) {
  for (ReduceKind kind :
       {ReduceKind::sum, ReduceKind::sum_sq, ReduceKind::max}) {
    SCOPED_TRACE(stringifyReduceKind(kind).str());
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {3, 8}, g.f32());
    g.output(g.reduce(kind, x));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(check(*module, {random({3, 8}, -1, 1)}, {0}));
  }
  // A prologue combining two inputs, one broadcast: Σ_d a[r, d]·exp(b[d]).
  GraphBuilder g(&context, "f");
  Value a = g.external("a", {3, 8}, g.f32());
  Value b = g.external("b", {8}, g.f32());
  g.output(g.reduce(ReduceKind::sum_sq, ValueRange{a, b},
                    [&](ExpBuilder &e, Value, ValueRange args) {
                      return e.mul(args[0], e.exp(args[1]));
                    }));
  auto module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_GRADIENTS_MATCH(
      check(*module, {random({3, 8}, -1, 1), random({8}, -1, 1)}, {0, 1}));
}

TEST_F(AutodiffTest, Matmuls) {
  {
    SCOPED_TRACE("matvec");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {8}, g.f32());
    Value w = g.external("w", {6, 8}, g.f32());
    g.output(g.matmul(x, w));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(
        check(*module, {random({8}, -1, 1), random({6, 8}, -1, 1)}, {0, 1}));
  }
  {
    SCOPED_TRACE("matrix product with a bias and GELU epilogue");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {3, 8}, g.f32());
    Value w = g.external("w", {5, 8}, g.f32());
    Value b = g.external("b", {5}, g.f32());
    g.output(g.matmul(x, w, ValueRange{b},
                      [&](ExpBuilder &e, Value, Value acc, ValueRange args) {
                        return e.gelu(e.add(acc, args[0]));
                      }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(check(*module,
                                 {random({3, 8}, -1, 1), random({5, 8}, -1, 1),
                                  random({5}, -1, 1)},
                                 {0, 1, 2}));
  }
}

TEST_F(AutodiffTest, Gathers) {
  {
    SCOPED_TRACE("a permutation (transposed through a scatter)");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {12}, g.f32());
    Value r = g.gather(x, {}, {12}, [&](ExpBuilder &e, Value lane, ValueRange) {
      return e.sub(e.i32(11), lane);
    });
    g.output(g.zip(r, x, [](ExpBuilder &e, Value a, Value b) {
      return e.mul(a, e.exp(b));
    }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(check(*module, {random({12}, -1, 1)}, {0}));
  }
  {
    SCOPED_TRACE("every element read twice, some out of range");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {6}, g.f32());
    g.output(g.map(g.gather(x, {}, {14},
                            [&](ExpBuilder &e, Value lane, ValueRange) {
                              return e.divConst(lane, 2);
                            }),
                   [](ExpBuilder &e, Value v) { return e.mul(v, v); }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(check(*module, {random({6}, -1, 1)}, {0}));
  }
  {
    SCOPED_TRACE("an embedding lookup with repeated tokens");
    // Row tokens[lane / 4] of the table, column lane % 4.
    GraphBuilder k(&context, "f");
    Value t3 = k.external("table", {5, 4}, k.f32());
    Value tok3 = k.external("tokens", {6}, k.i32());
    Value tokPerLane = k.gather(tok3, {}, {6, 4},
                                [&](ExpBuilder &e, Value lane, ValueRange) {
                                  return e.divConst(lane, 4);
                                });
    Value emb = k.gather(t3, ValueRange{tokPerLane}, {6, 4},
                         [&](ExpBuilder &e, Value lane, ValueRange args) {
                           return e.add(e.mul(args[0], e.i32(4)),
                                        e.remConst(lane, 4));
                         });
    k.output(k.map(emb, [](ExpBuilder &e, Value v) { return e.tanh(v); }));
    auto module = k.finish();
    ASSERT_TRUE(module);
    HostTensor ids = HostTensor::fromInts(&context, {6}, {3, 1, 3, 0, 4, 3});
    EXPECT_GRADIENTS_MATCH(
        check(*module, {random({5, 4}, -1, 1), ids}, {0}));
  }
}

TEST_F(AutodiffTest, RowGathersAndScatterAdds) {
  {
    SCOPED_TRACE("gatherRows, tokens repeated and out of range");
    GraphBuilder g(&context, "f");
    Value table = g.external("table", {5, 4}, g.f32());
    Value tokens = g.external("tokens", {7}, g.i32());
    g.output(g.map(g.gatherRows(table, tokens),
                   [](ExpBuilder &e, Value v) { return e.tanh(v); }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    // Its transpose is one scatter_add, no reduction over table × lanes.
    auto grad = differentiate(graphOf(*module), {0});
    ASSERT_TRUE(succeeded(grad));
    int adds = 0, reductions = 0;
    grad->walk([&](Operation *op) {
      adds += isa<ScatterAddOp>(op);
      reductions += isa<ReduceOp>(op);
    });
    EXPECT_EQ(adds, 1);
    EXPECT_EQ(reductions, 0);
    (*grad)->erase();
    HostTensor ids =
        HostTensor::fromInts(&context, {7}, {3, 1, 3, 0, -1, 3, 9});
    EXPECT_GRADIENTS_MATCH(
        check(*module, {random({5, 4}, -1, 1), ids}, {0}));
  }
  {
    SCOPED_TRACE("scatter_add, transposed into gatherRows");
    GraphBuilder g(&context, "f");
    Value rows = g.external("rows", {6, 3}, g.f32());
    Value tokens = g.external("tokens", {6}, g.i32());
    Value sums = g.scatterAdd(rows, tokens, 4);
    g.output(g.map(sums, [](ExpBuilder &e, Value v) { return e.sin(v); }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    HostTensor ids = HostTensor::fromInts(&context, {6}, {2, 2, 0, 3, 2, 7});
    EXPECT_GRADIENTS_MATCH(
        check(*module, {random({6, 3}, -1, 1), ids}, {0}));
  }
}

TEST_F(AutodiffTest, ScattersIntoFreshBuffers) {
  // Two slices written into one buffer, then read back whole by a
  // reduction: both sources and the untouched cells carry gradients.
  GraphBuilder g(&context, "f");
  Value a = g.external("a", {4}, g.f32());
  Value b = g.external("b", {3}, g.f32());
  Value buf = g.writeSlice(g.zeros({10}, g.f32()), a, 1);
  buf = g.writeSlice(buf, b, 6);
  Value squared =
      g.map(buf, [](ExpBuilder &e, Value v) { return e.sin(e.add(v, v)); });
  g.output(squared);
  auto module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_GRADIENTS_MATCH(
      check(*module, {random({4}, -1, 1), random({3}, -1, 1)}, {0, 1}));
}

TEST_F(AutodiffTest, Composites) {
  {
    SCOPED_TRACE("softmax");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {3, 8}, g.f32());
    g.output(g.softmax(x));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(check(*module, {random({3, 8}, -2, 2)}, {0}));
  }
  {
    SCOPED_TRACE("rms_norm");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {3, 16}, g.f32());
    Value w = g.external("w", {16}, g.f32());
    g.output(g.rmsNorm(x, w, 1e-5));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(
        check(*module, {random({3, 16}, -2, 2), random({16}, 0.5, 1.5)},
              {0, 1}));
  }
  {
    SCOPED_TRACE("layer_norm");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {3, 16}, g.f32());
    Value w = g.external("w", {16}, g.f32());
    Value b = g.external("b", {16}, g.f32());
    g.output(g.layerNorm(x, w, b, 1e-5));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(check(*module,
                                 {random({3, 16}, -2, 2),
                                  random({16}, 0.5, 1.5), random({16}, -1, 1)},
                                 {0, 1, 2}));
  }
  {
    SCOPED_TRACE("rope (NeoX)");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {2, 8}, g.f32());
    Value pos = g.external("pos", {1}, g.i32());
    g.output(g.rope(x, pos, 8, 10000.0, RopeStyle::NeoX));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_GRADIENTS_MATCH(check(
        *module,
        {random({2, 8}, -1, 1), HostTensor::fromInts(&context, {1}, {3})},
        {0}));
  }
}

TEST_F(AutodiffTest, CrossEntropyWithLogSoftmax) {
  GraphBuilder g(&context, "f");
  Value logits = g.external("logits", {4, 7}, g.f32());
  Value targets = g.external("targets", {4}, g.i32());
  g.output(g.crossEntropy(logits, targets));
  auto module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_GRADIENTS_MATCH(
      check(*module,
            {random({4, 7}, -3, 3),
             HostTensor::fromInts(&context, {4}, {6, 0, 2, 2})},
            {0}));
}

TEST_F(AutodiffTest, FusedGraphsAreSplitAndDifferentiated) {
  // hesper-fuse turns RMSNorm into a reduce_epilogue and the matmul + bias
  // + SiLU into a matmul epilogue; the gradient of the fused graph matches.
  GraphBuilder g(&context, "f");
  Value x = g.external("x", {2, 16}, g.f32());
  Value w = g.external("w", {16}, g.f32());
  Value m = g.external("m", {8, 16}, g.f32());
  Value b = g.external("b", {8}, g.f32());
  Value normed = g.rmsNorm(x, w, 1e-5);
  g.output(g.map(ValueRange{g.matmul(normed, m), b}, {2, 8}, g.f32(),
                 [](ExpBuilder &e, Value, ValueRange args) {
                   return e.silu(e.add(args[0], args[1]));
                 }));
  auto module = g.finish();
  ASSERT_TRUE(module);
  PassManager pm(&context);
  buildHesperFusePipeline(pm);
  ASSERT_TRUE(succeeded(pm.run(*module)));
  GraphOp fused = graphOf(*module);
  EXPECT_FALSE(fused.getBody().getOps<ReduceEpilogueOp>().empty());
  EXPECT_EQ(countDispatches(fused), 2);
  EXPECT_GRADIENTS_MATCH(check(*module,
                               {random({2, 16}, -2, 2), random({16}, 0.5, 1.5),
                                random({8, 16}, -1, 1), random({8}, -1, 1)},
                               {0, 1, 2, 3}));
}

TEST_F(AutodiffTest, CausalAttention) {
  GraphBuilder g(&context, "f");
  Value q = g.external("q", {4, 8}, g.f32());
  Value k = g.external("k", {4, 8}, g.f32());
  Value v = g.external("v", {4, 8}, g.f32());
  // Two heads of 4 over 4 positions (GraphBuilder::causalSelfAttention).
  g.output(g.causalSelfAttention(q, k, v, 2));
  auto module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_GRADIENTS_MATCH(check(*module,
                               {random({4, 8}, -1, 1), random({4, 8}, -1, 1),
                                random({4, 8}, -1, 1)},
                               {0, 1, 2}));
}

//===----------------------------------------------------------------------===//
// The check fails when a rule is wrong
//===----------------------------------------------------------------------===//

TEST_F(AutodiffTest, WrongRulesAreCaught) {
  {
    SCOPED_TRACE("d sin = sin instead of cos");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {8}, g.f32());
    g.output(g.map(x, [](ExpBuilder &e, Value v) { return e.sin(v); }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    int replaced = 0;
    GradientCheckReport report =
        check(*module, {random({8}, -1, 1)}, {0}, [&](GraphOp grad) {
          grad.walk([&](exp::CosOp cos) {
            OpBuilder b(cos);
            cos.replaceAllUsesWith(
                exp::SinOp::create(b, cos.getLoc(), cos.getOperand())
                    .getResult());
            cos.erase();
            ++replaced;
          });
        });
    EXPECT_EQ(replaced, 1);
    EXPECT_FALSE(report.passed()) << report.describe();
  }
  {
    SCOPED_TRACE("d Σx² = 3x instead of 2x");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {8}, g.f32());
    g.output(g.reduce(ReduceKind::sum_sq, x));
    auto module = g.finish();
    ASSERT_TRUE(module);
    int replaced = 0;
    GradientCheckReport report =
        check(*module, {random({8}, -1, 1)}, {0}, [&](GraphOp grad) {
          grad.walk([&](exp::ConstantOp c) {
            auto f = dyn_cast<FloatAttr>(c.getValue());
            if (f && f.getValueAsDouble() == 2.0) {
              c.setValueAttr(FloatAttr::get(f.getType(), 3.0));
              ++replaced;
            }
          });
        });
    EXPECT_EQ(replaced, 1);
    EXPECT_FALSE(report.passed()) << report.describe();
  }
  {
    SCOPED_TRACE("a transposed gradient not transposed back");
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {3, 4}, g.f32());
    Value w = g.external("w", {4, 4}, g.f32());
    g.output(g.matmul(x, w));
    auto module = g.finish();
    ASSERT_TRUE(module);
    // Swapping the last gather's operand order is not expressible; instead
    // offset every gather address by one (a shifted transpose).
    int changed = 0;
    GradientCheckReport report = check(
        *module, {random({3, 4}, -1, 1), random({4, 4}, -1, 1)}, {0, 1},
        [&](GraphOp grad) {
          grad.walk([&](GatherOp gather) {
            Operation *yield = gather.getBody().front().getTerminator();
            OpBuilder b(yield);
            Value addr = yield->getOperand(0);
            Value one = exp::ConstantOp::create(b, yield->getLoc(),
                                                b.getI32IntegerAttr(1));
            yield->setOperand(
                0, exp::XorOp::create(b, yield->getLoc(), addr, one));
            ++changed;
          });
        });
    EXPECT_GT(changed, 0);
    EXPECT_FALSE(report.passed()) << report.describe();
  }
}

//===----------------------------------------------------------------------===//
// What cannot be differentiated is refused
//===----------------------------------------------------------------------===//

TEST_F(AutodiffTest, RefusesWhatItCannotDifferentiate) {
  {
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {32}, g.f32());
    Value w = g.external("w", {4, 32}, Q8_0Type::get(&context));
    g.output(g.matmul(g.quantize(x, Q8_1Type::get(&context)), w));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_NE(refusal(*module, {0}).find("circuit-autodiff"),
              std::string::npos);
  }
  {
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {8}, g.f32());
    Value cache = g.external("cache", {16}, g.f32());
    g.output(g.writeSlice(cache, x, 4));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_NE(refusal(*module, {0}).find("in-place write into a graph"),
              std::string::npos);
  }
  {
    GraphBuilder g(&context, "f");
    Value x = g.external("x", {8}, g.f32());
    g.output(g.map(ValueRange{x}, {true}, {8}, g.f32(),
                   [](ExpBuilder &e, Value lane, ValueRange args) {
                     return GraphBuilder::extract(e, args[0],
                                                  e.sub(e.i32(7), lane));
                   }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_NE(refusal(*module, {0}).find("reads whole"), std::string::npos);
  }
  {
    GraphBuilder g(&context, "f");
    Value ids = g.external("ids", {8}, g.i32());
    g.output(g.map(ids, [](ExpBuilder &e, Value v) { return v; }));
    auto module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_NE(refusal(*module, {0}).find("f32 only"), std::string::npos);
  }
}

//===----------------------------------------------------------------------===//
// Reference values (HLX and KernelForgeML documents)
//===----------------------------------------------------------------------===//

TEST_F(AutodiffTest, ReferenceValues) {
  GraphBuilder g(&context, "f");
  Value a = g.external("a", {2, 2}, g.f32());
  Value b = g.external("bt", {2, 2}, g.f32());
  Value x = g.external("x", {3}, g.f32());
  Value one = g.external("one", {1}, g.f32());
  Value noisy = g.external("noisy", {1, 64}, g.f32());
  Value ones = g.external("ones", {64}, g.f32());
  Value zero = g.external("zero", {64}, g.f32());
  g.output({g.matmul(a, b),
            g.map(one, [](ExpBuilder &e, Value v) { return e.gelu(v); }),
            g.softmax(x), g.layerNorm(noisy, ones, zero, 1e-5)});
  auto module = g.finish();
  ASSERT_TRUE(module);
  std::vector<float> noise(64);
  std::normal_distribution<float> gauss(0, 1);
  for (float &v : noise)
    v = 1000.0f + gauss(rng);
  std::vector<HostTensor> args{
      HostTensor::fromFloats(&context, {2, 2}, {1, 2, 3, 4}),
      // [[5,6],[7,8]] as the transposed weight x·wᵀ expects.
      HostTensor::fromFloats(&context, {2, 2}, {5, 7, 6, 8}),
      HostTensor::fromFloats(&context, {3}, {1, 2, 3}),
      HostTensor::fromFloats(&context, {1}, {1}),
      HostTensor::fromFloats(&context, {1, 64}, noise),
      HostTensor::fromFloats(&context, {64}, std::vector<float>(64, 1.0f)),
      HostTensor::fromFloats(&context, {64}, std::vector<float>(64, 0.0f))};
  auto results = runGraph(graphOf(*module), args);
  ASSERT_TRUE(succeeded(results));
  EXPECT_EQ((*results)[0].toFloats(), (std::vector<float>{19, 22, 43, 50}));
  EXPECT_NEAR((*results)[1].getFloat(0), 0.8413, 2e-4);
  std::vector<float> softmax = (*results)[2].toFloats();
  EXPECT_NEAR(softmax[0], 0.0900, 1e-4);
  EXPECT_NEAR(softmax[1], 0.2447, 1e-4);
  EXPECT_NEAR(softmax[2], 0.6652, 1e-4);
  // Two-pass LayerNorm keeps the noise: the same normalization computed in
  // double on the host, within 1e-3 (E[x²] - μ² in f32 would lose it all).
  double mean = 0, var = 0;
  for (float v : noise)
    mean += v;
  mean /= 64;
  for (float v : noise)
    var += (v - mean) * (v - mean);
  var /= 64;
  std::vector<float> normed = (*results)[3].toFloats();
  for (int i = 0; i < 64; ++i)
    EXPECT_NEAR(normed[i], (noise[i] - mean) / std::sqrt(var + 1e-5), 1e-3)
        << i;
}

} // namespace
