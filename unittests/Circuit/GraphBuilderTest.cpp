//===- GraphBuilderTest.cpp - Tests for the Circuit builder API ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using hesper::exp::ExpBuilder;

namespace {

class GraphBuilderTest : public ::testing::Test {
protected:
  GraphBuilderTest() {
    context.loadDialect<CircuitDialect, exp::ExpDialect>();
  }

  /// Counts ops of type OpT directly in the graph body.
  template <typename OpT>
  static int count(ModuleOp module) {
    int n = 0;
    module.walk([&](OpT) { ++n; });
    return n;
  }

  static int countDispatches(ModuleOp module) {
    int n = 0;
    module.walk([&](Operation *op) { n += isDispatchOp(op); });
    return n;
  }

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  MLIRContext context;
};

TEST_F(GraphBuilderTest, ExternalsBecomeNamedGraphArguments) {
  GraphBuilder g(&context, "args");
  Value x = g.external("x", {4, 8}, g.f32());
  Value w = g.external("w", {16, 256}, Q4_KType::get(&context));
  EXPECT_EQ(typeOf(x), g.tensorType({4, 8}, g.f32()));
  EXPECT_TRUE(isa<Q4_KType>(typeOf(w).getElementType()));
  g.output(x);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  GraphOp graph = *module->getOps<GraphOp>().begin();
  EXPECT_EQ(graph.getSymName(), "args");
  ASSERT_EQ(graph.getNumArguments(), 2u);
  EXPECT_EQ(graph.getArgAttrOfType<StringAttr>(1, "circuit.name").getValue(),
            "w");
  EXPECT_EQ(graph.getResultTypes().size(), 1u);
}

TEST_F(GraphBuilderTest, MapBuildsOneBodyWithLaneAndElements) {
  GraphBuilder g(&context, "map");
  Value x = g.external("x", {128}, g.f32());
  Value s = g.external("s", {1}, g.f32());
  Value y = g.map(ValueRange{x, s}, {128}, g.f32(),
                  [](ExpBuilder &e, Value lane, ValueRange args) {
                    return e.add(e.mul(args[0], args[1]), e.toF32(lane));
                  });
  g.output(y);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  auto map = cast<MapOp>(y.getDefiningOp());
  Block &body = map.getBody().front();
  ASSERT_EQ(body.getNumArguments(), 3u);
  EXPECT_TRUE(body.getArgument(0).getType().isInteger(32));
  EXPECT_TRUE(body.getArgument(1).getType().isF32());
  EXPECT_EQ(count<exp::MulOp>(*module), 1);
  EXPECT_EQ(count<exp::ConvertOp>(*module), 1);
  EXPECT_EQ(countDispatches(*module), 1);
}

TEST_F(GraphBuilderTest, PointwiseChainIsThreeMaps) {
  // Acceptance case 1 before fusion: x*2, +1, square.
  GraphBuilder g(&context, "chain");
  Value x = g.external("x", {128}, g.f32());
  Value a = g.map(x, [](ExpBuilder &e, Value v) { return e.mul(v, e.f32(2)); });
  Value b = g.map(a, [](ExpBuilder &e, Value v) { return e.add(v, e.f32(1)); });
  Value c = g.map(b, [](ExpBuilder &e, Value v) { return e.mul(v, v); });
  g.output(c);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(count<MapOp>(*module), 3);
  EXPECT_EQ(typeOf(c), g.tensorType({128}, g.f32()));
}

TEST_F(GraphBuilderTest, ZipBroadcastsASingleElement) {
  GraphBuilder g(&context, "zip");
  Value x = g.external("x", {64}, g.f32());
  Value s = g.external("s", {1}, g.f32());
  Value y = g.zip(x, s, [](ExpBuilder &e, Value a, Value b) {
    return e.mul(a, b);
  });
  g.output(y);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(typeOf(y).getShape(), ArrayRef<int64_t>({64}));
}

TEST_F(GraphBuilderTest, WriteSliceIsAScatterAtAnOffset) {
  GraphBuilder g(&context, "slice");
  Value x = g.external("x", {128}, g.f32());
  Value dst = g.external("dst", {256}, g.f32());
  Value r = g.writeSlice(dst, x, 128);
  g.output(r);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  auto scatter = cast<ScatterOp>(r.getDefiningOp());
  EXPECT_EQ(scatter.getGrid(), 128);
  EXPECT_EQ(scatter.getDest(), dst);
  EXPECT_EQ(typeOf(r), typeOf(dst));
  // The address is lane + 128.
  auto yield = cast<YieldOp>(scatter.getBody().front().getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<exp::AddOp>();
  ASSERT_TRUE(add);
  auto c = add.getRhs().getDefiningOp<exp::ConstantOp>();
  ASSERT_TRUE(c);
  EXPECT_EQ(cast<IntegerAttr>(c.getValue()).getInt(), 128);
}

TEST_F(GraphBuilderTest, ScatterIntoZerosAndScatterMulti) {
  GraphBuilder g(&context, "scatters");
  Value k = g.external("k", {64}, g.f32());
  Value kc = g.external("kc", {512}, g.f32());
  Value vc = g.external("vc", {512}, g.f32());
  Value fresh = g.zeros({64}, g.f32());
  Value copy = g.scatter(fresh, 64, k, [](ExpBuilder &, Value lane,
                                           ValueRange args) {
    return std::make_pair(lane, args[0]);
  });
  SmallVector<Value> both = g.scatterMulti(
      ValueRange{kc, vc}, 64, k,
      [](ExpBuilder &e, Value lane, ValueRange args) {
        Value at = e.add(lane, e.i32(64));
        return SmallVector<Value>{at, args[0], at, args[0]};
      });
  g.output(copy);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(typeOf(both[1]), typeOf(vc));
  EXPECT_EQ(count<ZerosOp>(*module), 1);
  EXPECT_EQ(count<ScatterMultiOp>(*module), 1);
}

TEST_F(GraphBuilderTest, ScatterTakesAnyNumberOfInputs) {
  GraphBuilder g(&context, "inputs");
  Value a = g.external("a", {4}, g.f32());
  Value pos = g.external("pos", {1}, g.i32());
  Value none = g.scatter(g.zeros({16}, g.f32()), 4, {},
                         [](ExpBuilder &e, Value lane, ValueRange) {
                           return std::make_pair(lane, e.f32(1));
                         });
  Value two = g.scatter(none, 4, ValueRange{a, pos},
                        [](ExpBuilder &e, Value lane, ValueRange args) {
                          return std::make_pair(e.add(lane, args[1]),
                                                args[0]);
                        });
  g.output(two);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(typeOf(none), g.tensorType({16}, g.f32()));
  EXPECT_EQ(typeOf(two), g.tensorType({16}, g.f32()));
  EXPECT_EQ(count<ScatterOp>(*module), 2);
}

TEST_F(GraphBuilderTest, ReduceKeepsTheReducedAxis) {
  GraphBuilder g(&context, "reduce");
  Value x = g.external("x", {4, 256}, g.f32());
  Value y = g.external("y", {4, 256}, g.f32());
  Value s = g.reduce(ReduceKind::sum_sq, x);
  Value dot = g.reduce(ReduceKind::sum, ValueRange{x, y},
                       [](ExpBuilder &e, Value, ValueRange args) {
                         return e.mul(args[0], args[1]);
                       });
  g.output({s, dot});
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(typeOf(s), g.tensorType({4, 1}, g.f32()));
  EXPECT_TRUE(cast<ReduceOp>(s.getDefiningOp()).getPrologue().empty());
  EXPECT_FALSE(cast<ReduceOp>(dot.getDefiningOp()).getPrologue().empty());
}

TEST_F(GraphBuilderTest, ReduceEpilogueSeesTheReducedValue) {
  GraphBuilder g(&context, "re");
  Value x = g.external("x", {256}, g.f32());
  Value y = g.reduceEpilogue(ReduceKind::max, x, g.f32(),
                             [](ExpBuilder &e, Value, Value m, ValueRange a) {
                               return e.sub(a[0], m);
                             });
  g.output(y);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  auto op = cast<ReduceEpilogueOp>(y.getDefiningOp());
  EXPECT_EQ(op.getKind(), ReduceKind::max);
  EXPECT_EQ(op.getEpilogue().front().getNumArguments(), 3u);
}

TEST_F(GraphBuilderTest, MatmulShapesAndEpilogue) {
  GraphBuilder g(&context, "mm");
  Value x = g.external("x", {256}, g.f32());
  Value xb = g.external("xb", {3, 256}, g.f32());
  Value w = g.external("w", {64, 256}, Q8_0Type::get(&context));
  Value bias = g.external("b", {64}, g.f32());
  Value y = g.matmul(x, w);
  Value z = g.matmul(xb, w, bias,
                     [](ExpBuilder &e, Value, Value acc, ValueRange args) {
                       return e.gelu(e.add(acc, args[0]));
                     });
  g.output({y, z});
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(typeOf(y), g.tensorType({64}, g.f32()));
  EXPECT_EQ(typeOf(z), g.tensorType({3, 64}, g.f32()));
  EXPECT_EQ(count<exp::GeluOp>(*module), 1);
}

TEST_F(GraphBuilderTest, QuantizeToQ8_1) {
  GraphBuilder g(&context, "q");
  Value x = g.external("x", {256}, g.f32());
  Value q = g.quantize(x, Q8_1Type::get(&context));
  g.output(q);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_TRUE(isa<Q8_1Type>(typeOf(q).getElementType()));
}

TEST_F(GraphBuilderTest, RmsNormIsFourPrimitives) {
  GraphBuilder g(&context, "rmsnorm");
  Value x = g.external("x", {2, 256}, g.f32());
  Value w = g.external("w", {256}, g.f32());
  Value y = g.rmsNorm(x, w, 1e-6);
  g.output(y);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(count<ReduceOp>(*module), 1);
  EXPECT_EQ(count<MapOp>(*module), 3);
  EXPECT_EQ(count<exp::RsqrtOp>(*module), 1);
  EXPECT_EQ(typeOf(y), typeOf(x));
}

TEST_F(GraphBuilderTest, LayerNormIsTwoPass) {
  GraphBuilder g(&context, "layernorm");
  Value x = g.external("x", {64}, g.f32());
  Value w = g.external("w", {64}, g.f32());
  Value b = g.external("b", {64}, g.f32());
  Value y = g.layerNorm(x, w, b, 1e-5);
  g.output(y);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  // A sum for the mean, then a sum of squares of the centered values.
  SmallVector<ReduceKind> kinds;
  module->walk([&](ReduceOp r) { kinds.push_back(r.getKind()); });
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0], ReduceKind::sum);
  EXPECT_EQ(kinds[1], ReduceKind::sum_sq);
  SmallVector<ReduceOp> reduces;
  module->walk([&](ReduceOp r) { reduces.push_back(r); });
  EXPECT_TRUE(reduces[1].getInputs()[0].getDefiningOp<MapOp>())
      << "the variance must reduce the centered values";
}

TEST_F(GraphBuilderTest, SoftmaxIsMaxExpSumDivide) {
  GraphBuilder g(&context, "softmax");
  Value x = g.external("x", {4, 32}, g.f32());
  Value y = g.softmax(x);
  g.output(y);
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(count<ReduceOp>(*module), 2);
  EXPECT_EQ(count<MapOp>(*module), 2);
  EXPECT_EQ(count<exp::ExpOp>(*module), 1);
  EXPECT_EQ(typeOf(y), typeOf(x));
}

TEST_F(GraphBuilderTest, RopeGathersPartnersAndFactors) {
  for (RopeStyle style : {RopeStyle::NeoX, RopeStyle::Normal}) {
    GraphBuilder g(&context, "rope");
    Value k = g.external("k", {4, 16}, g.f32());
    Value pos = g.external("pos", {1}, g.i32());
    Value ff = g.external("ff", {8}, g.f32());
    Value y = g.rope(k, pos, 16, 1e6, style, ff);
    g.output(y);
    OwningOpRef<ModuleOp> module = g.finish();
    ASSERT_TRUE(module);
    EXPECT_EQ(count<GatherOp>(*module), 2);
    EXPECT_EQ(count<MapOp>(*module), 1);
    EXPECT_EQ(count<exp::CosOp>(*module), 1);
    EXPECT_EQ(count<exp::SinOp>(*module), 1);
    EXPECT_EQ(typeOf(y), typeOf(k));
  }
}

TEST_F(GraphBuilderTest, CompositesAcceptHalfPrecision) {
  GraphBuilder g(&context, "half");
  Value x = g.external("x", {2, 64}, g.f16());
  Value w = g.external("w", {64}, g.f16());
  Value b = g.external("b", {64}, g.f16());
  Value pos = g.external("pos", {1}, g.i32());
  Value n = g.rmsNorm(x, w, 1e-6);
  Value l = g.layerNorm(x, w, b, 1e-5);
  Value s = g.softmax(x);
  Value r = g.rope(x, pos, 64, 1e4, RopeStyle::Normal);
  g.output({n, l, s, r});
  OwningOpRef<ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  for (Value v : {n, l, s, r})
    EXPECT_EQ(typeOf(v), typeOf(x));
}

TEST_F(GraphBuilderTest, FinishRejectsAnInvalidGraph) {
  GraphBuilder g(&context, "bad");
  Value x = g.external("x", {8}, g.f32());
  Value y = g.map(x, [](ExpBuilder &, Value v) { return v; });
  // Writing in place into an intermediate is not allowed.
  Value r = g.writeSlice(y, x, 0);
  g.output(r);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  EXPECT_FALSE(g.finish());
  EXPECT_NE(message.find("expects a destination"), std::string::npos)
      << message;
}

} // namespace
