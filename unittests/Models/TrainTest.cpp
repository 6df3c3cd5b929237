//===- TrainTest.cpp - The training graphs --------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The optimizer graph against a hand computation of Adam and AdamW, the
// clipping and the schedule; and the gradient of the whole training loss
// (embedding, RoPE, causal attention, SwiGLU, RMSNorm, cross-entropy)
// against finite differences in double precision.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Transforms/Autodiff.h"
#include "Hesper/Interpreter/GradientCheck.h"
#include "Hesper/Models/TrainGraph.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;
using namespace hesper::train;

namespace {

class TrainTest : public ::testing::Test {
protected:
  TrainTest() { context.loadDialect<CircuitDialect, exp::ExpDialect>(); }

  /// A step graph over `n` weights: w, g, m, v, step -> (norm, lr), with
  /// w, m and v updated in place.
  OwningOpRef<ModuleOp> optimizerGraph(int64_t n, const OptimizerConfig &o) {
    GraphBuilder g(&context, "opt");
    Value w = g.external("w", {n}, g.f32());
    Value grad = g.external("g", {n}, g.f32());
    Value m = g.external("m", {n}, g.f32());
    Value v = g.external("v", {n}, g.f32());
    Value step = g.external("step", {1}, g.f32());
    SmallVector<Value> outputs;
    appendOptimizer(g, {w}, {grad}, {m}, {v}, step, o, outputs);
    g.output(outputs);
    return g.finish();
  }

  /// The tiny model the loss tests train: 8 tokens, width 8, one layer of
  /// two heads, sequences of 4.
  static ModelShape tinyShape() {
    ModelShape s;
    s.vocab = 8;
    s.dim = 8;
    s.layers = 1;
    s.heads = 2;
    s.ffn = 8;
    s.seq = 4;
    return s;
  }

  /// Its parameters in parameters() order, drawn from `seed`: the norm
  /// weights around 1, the matrices around 0.
  std::vector<HostTensor> randomParameters(const ModelShape &s, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0, 0.5f);
    std::vector<HostTensor> out;
    for (const Parameter &p : parameters(s)) {
      std::vector<float> values(p.numElements());
      for (float &v : values)
        v = p.shape.size() == 1 ? 1.0f + normal(rng) : normal(rng);
      out.push_back(HostTensor::fromFloats(&context, p.shape, values));
    }
    return out;
  }

  HostTensor floats(std::vector<float> values) {
    return HostTensor::fromFloats(&context, {(int64_t)values.size()}, values);
  }

  MLIRContext context;
};

GraphOp graphOf(ModuleOp module) { return *module.getOps<GraphOp>().begin(); }

TEST_F(TrainTest, AdamMatchesAHandComputation) {
  // Constant learning rate 0.1 (warmup 1, min-lr = lr), no clipping.
  OptimizerConfig o;
  o.lr = o.minLr = 0.1;
  o.warmup = 1;
  o.clipNorm = 0;
  auto module = optimizerGraph(3, o);
  ASSERT_TRUE(module);
  std::vector<HostTensor> args{floats({1.0f, -2.0f, 0.5f}), floats({0, 0, 0}),
                               floats({0, 0, 0}), floats({0, 0, 0}),
                               floats({0})};
  // Three steps with these gradients; the weights after each, worked out by
  // hand from m = β1·m + (1-β1)·g, v = β2·v + (1-β2)·g², w -= lr·m̂/(√v̂+ε)
  // with β1 = 0.9, β2 = 0.999, ε = 1e-8.
  std::vector<std::vector<float>> grads{
      {0.5f, -1.0f, 2.0f}, {-0.25f, 0.75f, 0.1f}, {0.125f, 0.5f, -3.0f}};
  std::vector<std::vector<double>> expected{
      {0.900000002, -1.900000001, 0.400000001},
      {0.873366299, -1.891067500, 0.329359963},
      {0.839323385, -1.908398959, 0.352213787}};
  for (int t = 0; t < 3; ++t) {
    args[1] = floats(grads[t]);
    args[4] = floats({static_cast<float>(t)});
    auto results = runGraph(graphOf(*module), args);
    ASSERT_TRUE(succeeded(results));
    EXPECT_FLOAT_EQ((*results)[1].getFloat(0), 0.1f); // lr
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(args[0].getFloat(i), expected[t][i], 2e-6)
          << "step " << t << ", weight " << i;
  }
  // The first moment after three steps: 0.9·(0.9·0.1·g1 + 0.1·g2) + 0.1·g3.
  EXPECT_NEAR(args[2].getFloat(0), 0.9 * (0.9 * 0.05 - 0.025) + 0.0125, 1e-7);
}

TEST_F(TrainTest, AdamWDecaysTheWeights) {
  OptimizerConfig o;
  o.lr = o.minLr = 0.1;
  o.warmup = 1;
  o.clipNorm = 0;
  o.weightDecay = 0.5;
  auto module = optimizerGraph(2, o);
  ASSERT_TRUE(module);
  std::vector<HostTensor> args{floats({1.0f, -2.0f}), floats({0.5f, 0.0f}),
                               floats({0, 0}), floats({0, 0}), floats({0})};
  ASSERT_TRUE(succeeded(runGraph(graphOf(*module), args)));
  // w - lr·(sign(g) + wd·w); a zero gradient leaves only the decay.
  EXPECT_NEAR(args[0].getFloat(0), 1.0 - 0.1 * (1.0 + 0.5 * 1.0), 1e-6);
  EXPECT_NEAR(args[0].getFloat(1), -2.0 - 0.1 * (0.5 * -2.0), 1e-6);
}

TEST_F(TrainTest, ClippingScalesByTheGlobalNorm) {
  OptimizerConfig o;
  o.clipNorm = 1.0;
  auto module = optimizerGraph(2, o);
  ASSERT_TRUE(module);
  std::vector<HostTensor> args{floats({0, 0}), floats({3.0f, 4.0f}),
                               floats({0, 0}), floats({0, 0}), floats({0})};
  auto results = runGraph(graphOf(*module), args);
  ASSERT_TRUE(succeeded(results));
  EXPECT_FLOAT_EQ((*results)[0].getFloat(0), 5.0f); // the norm, unclipped
  // m = (1 - β1)·g·(1/5).
  EXPECT_NEAR(args[2].getFloat(0), 0.1 * 3.0 / 5.0, 1e-7);
  EXPECT_NEAR(args[2].getFloat(1), 0.1 * 4.0 / 5.0, 1e-7);
  // Under the threshold nothing is scaled.
  args[1] = floats({0.3f, 0.4f});
  args[2] = floats({0, 0});
  ASSERT_TRUE(succeeded(runGraph(graphOf(*module), args)));
  EXPECT_NEAR(args[2].getFloat(0), 0.1 * 0.3, 1e-7);
}

TEST_F(TrainTest, ScheduleWarmsUpThenFollowsACosine) {
  OptimizerConfig o;
  o.lr = 1e-3;
  o.minLr = 1e-4;
  o.warmup = 10;
  o.totalSteps = 100;
  auto module = optimizerGraph(1, o);
  ASSERT_TRUE(module);
  for (int64_t step : {0, 4, 9, 10, 37, 55, 99, 150}) {
    std::vector<HostTensor> args{floats({0}), floats({0}), floats({0}),
                                 floats({0}), floats({(float)step})};
    auto results = runGraph(graphOf(*module), args);
    ASSERT_TRUE(succeeded(results));
    EXPECT_NEAR((*results)[1].getFloat(0), learningRate(o, step), 1e-9)
        << "step " << step;
  }
  EXPECT_DOUBLE_EQ(learningRate(o, 0), 1e-4);  // lr·1/10
  EXPECT_DOUBLE_EQ(learningRate(o, 10), 1e-3); // the peak
  EXPECT_NEAR(learningRate(o, 55), 5.5e-4, 1e-12); // halfway down
  EXPECT_DOUBLE_EQ(learningRate(o, 100), 1e-4);
}

TEST_F(TrainTest, LossGradientMatchesFiniteDifferences) {
  // The whole training loss of a tiny model: every parameter's gradient
  // against central differences in double precision.
  ModelShape s = tinyShape();
  OptimizerConfig o;
  OwningOpRef<ModuleOp> module = buildTrainingModule(&context, s, o);
  ASSERT_TRUE(module);
  auto loss = module->lookupSymbol<GraphOp>("loss");
  auto grad = module->lookupSymbol<GraphOp>("loss_grad");
  ASSERT_TRUE(loss && grad);
  EXPECT_TRUE(module->lookupSymbol<GraphOp>("train_step"));
  EXPECT_TRUE(module->lookupSymbol<GraphOp>("logits"));

  std::vector<HostTensor> inputs = randomParameters(s, 7);
  SmallVector<unsigned> wrt;
  for (unsigned i = 0; i < inputs.size(); ++i)
    wrt.push_back(i);
  inputs.push_back(HostTensor::fromInts(&context, {4}, {1, 5, 5, 2}));
  inputs.push_back(HostTensor::fromInts(&context, {4}, {5, 5, 2, 7}));
  auto report = checkGradients(loss, grad, wrt, inputs);
  ASSERT_TRUE(succeeded(report));
  EXPECT_TRUE(report->passed()) << report->describe();
  EXPECT_EQ(report->checked, 8 * 8 * 2 + 8 * 2 + 4 * 8 * 8 + 3 * 8 * 8 + 8);
}

TEST_F(TrainTest, ANaNInAnUnusedEmbeddingRowStaysThere) {
  // The embedding is a row gather: a row no token reads is never touched,
  // so a NaN there leaves the loss and every gradient finite (a one-hot
  // matmul multiplied it by zero, and 0·NaN is NaN), and its own gradient
  // is zero.
  ModelShape s = tinyShape();
  OptimizerConfig o;
  OwningOpRef<ModuleOp> module = buildTrainingModule(&context, s, o);
  ASSERT_TRUE(module);
  auto grad = module->lookupSymbol<GraphOp>("loss_grad");
  ASSERT_TRUE(grad);
  std::vector<HostTensor> args = randomParameters(s, 11);
  ASSERT_EQ(parameters(s)[0].name, "token_embd.weight");
  args[0].setFloat(6 * s.dim + 3, std::numeric_limits<float>::quiet_NaN());
  // Tokens 1, 5, 5, 2: row 6 is not read.
  args.push_back(HostTensor::fromInts(&context, {4}, {1, 5, 5, 2}));
  args.push_back(HostTensor::fromInts(&context, {4}, {5, 5, 2, 7}));
  args.push_back(HostTensor::fromFloats(&context, {1}, {1.0f})); // dL
  auto results = runGraph(grad, args);
  ASSERT_TRUE(succeeded(results));
  // The loss, then one gradient per parameter, the table's first.
  ASSERT_EQ(results->size(), parameters(s).size() + 1);
  for (auto [i, r] : llvm::enumerate(*results))
    for (float v : r.toFloats())
      ASSERT_TRUE(std::isfinite(v)) << "result #" << i;
  std::vector<float> dTable = (*results)[1].toFloats();
  for (int64_t d = 0; d < s.dim; ++d) {
    EXPECT_EQ(dTable[6 * s.dim + d], 0.0f);
    EXPECT_EQ(dTable[0 * s.dim + d], 0.0f);
  }
  // Row 5 (read twice) gets a gradient.
  float row5 = 0;
  for (int64_t d = 0; d < s.dim; ++d)
    row5 += std::fabs(dTable[5 * s.dim + d]);
  EXPECT_GT(row5, 0.0f);
}

} // namespace
