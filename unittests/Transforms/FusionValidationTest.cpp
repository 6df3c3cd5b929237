//===- FusionValidationTest.cpp - Translation validation catches bugs ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The fusion pipeline is checked by translation validation: the fused graph
// must compute what the source computes, in the reference interpreter. These
// tests show both sides: hesper-fuse passes it, and deliberately wrong
// rewrites (a read moved across an in-place write, a miscompiled constant)
// fail it.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Interpreter/Validate.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;
using hesper::exp::ExpBuilder;

namespace {

class FusionValidationTest : public ::testing::Test {
protected:
  FusionValidationTest() {
    context.loadDialect<CircuitDialect, exp::ExpDialect>();
  }

  static GraphOp graphOf(ModuleOp module) {
    return *module.getOps<GraphOp>().begin();
  }

  /// Fuses a copy of `module` with hesper-fuse.
  OwningOpRef<ModuleOp> fused(ModuleOp module) {
    OwningOpRef<ModuleOp> copy = module.clone();
    PassManager pm(&context);
    buildHesperFusePipeline(pm);
    EXPECT_TRUE(succeeded(pm.run(*copy)));
    return copy;
  }

  ValidationReport validate(ModuleOp source, ModuleOp transformed) {
    auto report = validateTransform(graphOf(source), graphOf(transformed));
    EXPECT_TRUE(succeeded(report));
    return succeeded(report) ? *report : ValidationReport{};
  }

  MLIRContext context;
};

TEST_F(FusionValidationTest, HesperFusePassesOnRmsNormAndSoftmax) {
  GraphBuilder g(&context, "norm");
  Value x = g.external("x", {4, 64}, g.f32());
  Value w = g.external("w", {64}, g.f32());
  g.output(g.softmax(g.rmsNorm(x, w, 1e-6)));
  OwningOpRef<ModuleOp> source = g.finish();
  ASSERT_TRUE(source);
  OwningOpRef<ModuleOp> result = fused(*source);
  EXPECT_EQ(countDispatches(graphOf(*source)), 8);
  // RMSNorm -> 1; softmax's max/exp and sum/divide -> 1 each.
  EXPECT_EQ(countDispatches(graphOf(*result)), 3);
  ValidationReport report = validate(*source, *result);
  EXPECT_TRUE(report.matches) << report.firstMismatch;
  EXPECT_EQ(report.compared, 3 * (4 * 64 + 4 * 64 + 64));
}

/// A graph with a hazard: `copy` reads the cache, a scatter then writes the
/// cache in place, and only later is `copy` consumed.
static OwningOpRef<ModuleOp> buildHazard(MLIRContext &context) {
  GraphBuilder g(&context, "hazard");
  Value cache = g.external("cache", {16}, g.f32());
  Value x = g.external("x", {16}, g.f32());
  Value before = g.map(cache, [](ExpBuilder &e, Value v) {
    return e.mul(v, e.f32(2));
  });
  g.scatter(cache, 16, x, [](ExpBuilder &e, Value lane, ValueRange a) {
    return std::make_pair(lane, e.add(a[0], e.f32(100)));
  });
  Value after = g.map(before, [](ExpBuilder &e, Value v) {
    return e.add(v, e.f32(1));
  });
  g.output(after);
  return g.finish();
}

TEST_F(FusionValidationTest, HazardIsRespectedByHesperFuse) {
  OwningOpRef<ModuleOp> source = buildHazard(context);
  ASSERT_TRUE(source);
  OwningOpRef<ModuleOp> result = fused(*source);
  // The map that reads the cache must not move past the in-place write.
  EXPECT_EQ(countDispatches(graphOf(*result)), 3);
  ValidationReport report = validate(*source, *result);
  EXPECT_TRUE(report.matches) << report.firstMismatch;
}

TEST_F(FusionValidationTest, ReadMovedAcrossAnInPlaceWriteIsCaught) {
  OwningOpRef<ModuleOp> source = buildHazard(context);
  ASSERT_TRUE(source);
  // The rewrite the original framework would have made: sink the cache read
  // next to its consumer, past the scatter.
  OwningOpRef<ModuleOp> broken = source->clone();
  GraphOp graph = graphOf(*broken);
  SmallVector<MapOp> maps(graph.getBody().front().getOps<MapOp>());
  ASSERT_EQ(maps.size(), 2u);
  maps[0]->moveBefore(maps[1]);
  ValidationReport report = validate(*source, *broken);
  EXPECT_FALSE(report.matches);
  EXPECT_NE(report.firstMismatch.find("result #0"), std::string::npos)
      << report.firstMismatch;
}

TEST_F(FusionValidationTest, MiscompiledBodyIsCaught) {
  GraphBuilder g(&context, "chain");
  Value x = g.external("x", {64}, g.f32());
  Value a = g.map(x, [](ExpBuilder &e, Value v) { return e.mul(v, e.f32(2)); });
  g.output(g.map(a, [](ExpBuilder &e, Value v) { return e.add(v, e.f32(1)); }));
  OwningOpRef<ModuleOp> source = g.finish();
  ASSERT_TRUE(source);
  OwningOpRef<ModuleOp> result = fused(*source);
  EXPECT_EQ(countDispatches(graphOf(*result)), 1);
  EXPECT_TRUE(validate(*source, *result).matches);
  // Now break the fused body: the +1 becomes +1.001.
  bool changed = false;
  graphOf(*result).walk([&](exp::ConstantOp c) {
    auto f = dyn_cast<FloatAttr>(c.getValue());
    if (f && f.getValueAsDouble() == 1.0) {
      c.setValueAttr(FloatAttr::get(f.getType(), 1.001));
      changed = true;
    }
  });
  ASSERT_TRUE(changed);
  ValidationReport report = validate(*source, *result);
  EXPECT_FALSE(report.matches);
  EXPECT_NEAR(report.maxError, 0.001, 1e-4);
}

} // namespace
