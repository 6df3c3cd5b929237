//===- PlanTest.cpp - Kernel knobs and plans ------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Knob checks against each device limit (on described devices, no driver
// needed), plan parsing errors, signatures, and applying a plan: all or
// nothing.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Target/Plan.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::tune;
using hesper::exp::ExpBuilder;

namespace {

class PlanTest : public ::testing::Test {
protected:
  PlanTest() {
    context.loadDialect<CircuitDialect, exp::ExpDialect>();
    gpu.backend = TargetBackend::Vulkan;
    gpu.name = "test GPU";
    gpu.subgroupSize = 32;
    gpu.subgroupArithmetic = true;
    gpu.maxWorkgroupSize[0] = 1024;
    gpu.maxWorkgroupInvocations = 1024;
    gpu.maxSharedMemoryBytes = 2048; // small, to reach its limit
    cpu.backend = TargetBackend::Cpu;
    cpu.name = "test CPU";
    cpu.maxWorkgroupSize[0] = 1;
    cpu.maxWorkgroupInvocations = 1;
    cpu.threads = 4;
    cpu.chip = "x86-64-v3";
  }

  /// A matmul with f32 weights of rows of 62 (which 4 does not divide) or
  /// q8_0 weights of rows of 64.
  OwningOpRef<ModuleOp> oddMatmul(bool quantized) {
    GraphBuilder g(&context, "g");
    Value x = g.external("x", {quantized ? 64 : 62}, g.f32());
    Type element = quantized ? Type(Q8_0Type::get(&context)) : g.f32();
    Value w = g.external("w", {8, quantized ? 64 : 62}, element);
    g.output({g.matmul(x, w)});
    return g.finish();
  }

  /// map(x) -> reduce -> matmul, unfused.
  OwningOpRef<ModuleOp> graph() {
    GraphBuilder g(&context, "g");
    Value x = g.external("x", {4, 64}, g.f32());
    Value w = g.external("w", {16, 64}, g.f32());
    Value t = g.map(x, [](ExpBuilder &e, Value v) { return e.tanh(v); });
    Value s = g.reduce(ReduceKind::sum, t);
    Value y = g.matmul(t, w);
    g.output({s, y});
    return g.finish();
  }

  template <typename OpT> OpT first(ModuleOp module) {
    OpT found;
    module.walk([&](OpT op) {
      if (!found)
        found = op;
    });
    return found;
  }

  DictionaryAttr knobs(std::vector<std::pair<const char *, Attribute>> kv) {
    Builder b(&context);
    SmallVector<NamedAttribute> attrs;
    for (auto [k, v] : kv)
      attrs.push_back(b.getNamedAttr(k, v));
    return b.getDictionaryAttr(attrs);
  }
  Attribute i(int64_t v) { return Builder(&context).getI64IntegerAttr(v); }
  Attribute flag(bool v) { return Builder(&context).getBoolAttr(v); }

  MLIRContext context;
  TargetDevice gpu, cpu;
};

TEST_F(PlanTest, LegalKnobs) {
  auto module = graph();
  ASSERT_TRUE(module);
  EXPECT_EQ(checkKnobs(first<MapOp>(*module), knobs({{"lanes", i(64)}}), gpu),
            "");
  EXPECT_EQ(checkKnobs(first<ReduceOp>(*module),
                       knobs({{"lanes", i(128)},
                              {"subgroup_reduce", flag(true)}}),
                       gpu),
            "");
  EXPECT_EQ(checkKnobs(first<MatmulOp>(*module),
                       knobs({{"lanes", i(32)}, {"rows", i(4)}}), gpu),
            "");
  EXPECT_EQ(checkKnobs(first<MatmulOp>(*module), knobs({{"rows", i(16)}}),
                       cpu),
            "");
  EXPECT_EQ(checkKnobs(first<ReduceOp>(*module), knobs({{"unroll", i(4)}}),
                       cpu),
            "");
  // Unrolling is legal on GPU targets too, for reductions and matmuls.
  EXPECT_EQ(checkKnobs(first<ReduceOp>(*module), knobs({{"unroll", i(2)}}),
                       gpu),
            "");
  EXPECT_EQ(checkKnobs(first<MatmulOp>(*module),
                       knobs({{"unroll", i(4)}, {"cols", i(8)},
                              {"vector_width", i(2)}}),
                       gpu),
            "");
  // GPU: a map's lanes take 4 elements each.
  EXPECT_EQ(checkKnobs(first<MapOp>(*module), knobs({{"vector_width", i(4)}}),
                       gpu),
            "");
  // CPU: the vectorizers' width, the threads, on any kernel.
  EXPECT_EQ(checkKnobs(first<MapOp>(*module),
                       knobs({{"vector_width", i(8)}, {"threads", i(4)}}),
                       cpu),
            "");
}

TEST_F(PlanTest, EachLimitIsNamed) {
  auto module = graph();
  ASSERT_TRUE(module);
  Operation *map = first<MapOp>(*module), *reduce = first<ReduceOp>(*module),
            *matmul = first<MatmulOp>(*module);
  struct Case {
    Operation *op;
    DictionaryAttr knobs;
    const TargetDevice *device;
    const char *message;
  } cases[] = {
      {map, knobs({{"lanes", i(48)}}), &gpu, "lanes = 48 is not a power of two"},
      {map, knobs({{"lanes", i(2048)}}), &gpu,
       "lanes = 2048 exceeds the device's workgroup limit of 1024 invocations"},
      {reduce, knobs({{"lanes", i(1024)}}), &gpu,
       "lanes = 1024 needs 4096 bytes of shared memory; the device has 2048"},
      {map, knobs({{"lanes", i(64)}}), &cpu,
       "lanes = 64: the CPU target runs one lane per workgroup (lanes = 1)"},
      {map, knobs({{"rows", i(4)}}), &gpu,
       "knob 'rows' applies to matmuls only, not to circuit.map"},
      {matmul, knobs({{"rows", i(33)}}), &gpu, "rows = 33 is outside 1..32"},
      {map, knobs({{"subgroup_reduce", flag(true)}}), &gpu,
       "knob 'subgroup_reduce' applies to reductions and matmuls only, not "
       "to circuit.map"},
      {reduce, knobs({{"subgroup_reduce", flag(true)}}), &cpu,
       "subgroup_reduce = true: the device has no subgroup arithmetic in "
       "compute shaders"},
      {reduce, knobs({{"lanes", i(16)}, {"subgroup_reduce", flag(true)}}),
       &gpu,
       "subgroup_reduce = true with lanes = 16: not a whole number of the "
       "device's subgroups of 32"},
      {map, knobs({{"tiles", i(4)}}), &gpu,
       "unknown knob 'tiles' (known: lanes, rows, cols, subgroup_reduce, "
       "unroll, vector_width, block_words, gemm_rows, threads)"},
      {matmul, knobs({{"gemm_rows", i(96)}}), &gpu,
       "gemm_rows = 96 must be 64 or 128"},
      {map, knobs({{"gemm_rows", i(128)}}), &gpu,
       "knob 'gemm_rows' applies to matmul, multi_matmul and gated_matmul "
       "only, not to circuit.map"},
      {matmul, knobs({{"gemm_rows", i(128)}}), &cpu,
       "knob 'gemm_rows' applies to GPU targets only (the CPU target has "
       "no tiled GEMM)"},
      {reduce, knobs({{"unroll", i(3)}}), &cpu,
       "unroll = 3 must be 1, 2, 4 or 8"},
      {map, knobs({{"unroll", i(2)}}), &gpu,
       "knob 'unroll' applies to reductions and matmuls only, not to "
       "circuit.map"},
      {reduce, knobs({{"cols", i(2)}}), &gpu,
       "knob 'cols' applies to matmuls only, not to circuit.reduce"},
      {matmul, knobs({{"cols", i(9)}}), &cpu, "cols = 9 is outside 1..8"},
      {map, knobs({{"threads", i(2)}}), &gpu,
       "knob 'threads' applies to the CPU target only"},
      {map, knobs({{"threads", i(5)}}), &cpu,
       "threads = 5 is outside 1..4 (the device's threads)"},
      {map, knobs({{"vector_width", i(16)}}), &cpu,
       "vector_width = 16 exceeds the widest vector of the device's ISA (8 "
       "f32 elements)"},
      {map, knobs({{"vector_width", i(2)}}), &cpu,
       "vector_width = 2 must be 4, 8 or 16 f32 elements on the CPU target"},
      // A map takes 1, 2 or 4 elements a lane on GPU targets (256 here).
      {map, knobs({{"vector_width", i(3)}}), &gpu,
       "knob 'vector_width' on this map: vector_width = 3 must be 1, 2 or "
       "4"},
      {reduce, knobs({{"vector_width", i(2)}}), &gpu,
       "knob 'vector_width' applies to matmuls and maps only on GPU "
       "targets, not to circuit.reduce"},
      {matmul, knobs({{"vector_width", i(8)}}), &gpu,
       "vector_width = 8 must be 1, 2 or 4"},
      {map, knobs({{"lanes", flag(true)}}), &gpu,
       "knob 'lanes' takes an integer"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(checkKnobs(c.op, c.knobs, *c.device), c.message);
}

TEST_F(PlanTest, VectorWidthNeedsPlainRowsItDivides) {
  auto plain = oddMatmul(false), blocks = oddMatmul(true);
  ASSERT_TRUE(plain && blocks);
  Operation *p = first<MatmulOp>(*plain), *q = first<MatmulOp>(*blocks);
  EXPECT_EQ(checkKnobs(p, knobs({{"vector_width", i(4)}}), gpu),
            "vector_width = 4 does not divide the row length 62");
  EXPECT_EQ(checkKnobs(p, knobs({{"vector_width", i(2)}}), gpu), "");
  EXPECT_EQ(checkKnobs(q, knobs({{"vector_width", i(2)}}), gpu),
            "knob 'vector_width' applies to f32 and f16 weights only on GPU "
            "targets (block formats are read by the word)");
  // On the CPU target it is the vectorizers' width, for any weights.
  EXPECT_EQ(checkKnobs(q, knobs({{"vector_width", i(4)}}), cpu), "");
}

TEST_F(PlanTest, BlockWordsSplitQ8_0BlocksOnGPUs) {
  auto plain = oddMatmul(false), blocks = oddMatmul(true);
  ASSERT_TRUE(plain && blocks);
  Operation *p = first<MatmulOp>(*plain), *q = first<MatmulOp>(*blocks);
  for (int64_t words : {1, 2, 4, 8})
    EXPECT_EQ(checkKnobs(q, knobs({{"block_words", i(words)}}), gpu), "")
        << words;
  EXPECT_EQ(checkKnobs(q, knobs({{"block_words", i(16)}}), gpu),
            "block_words = 16 must be a power of two up to 8 (the words of "
            "the weights' blocks)");
  EXPECT_EQ(checkKnobs(q, knobs({{"block_words", i(3)}}), gpu),
            "block_words = 3 must be a power of two up to 8 (the words of "
            "the weights' blocks)");
  EXPECT_EQ(checkKnobs(p, knobs({{"block_words", i(2)}}), gpu),
            "knob 'block_words' applies to matmuls of q8_0, q4_0, iq4_nl, "
            "q4_k and q5_k weights only, not to circuit.matmul");
  EXPECT_EQ(checkKnobs(q, knobs({{"block_words", i(2)}}), cpu),
            "knob 'block_words' applies to GPU targets only (the CPU target's "
            "lane takes whole blocks)");
}

TEST_F(PlanTest, SignaturesTellKernelsApart) {
  auto module = graph();
  ASSERT_TRUE(module);
  std::string map = kernelSignature(first<MapOp>(*module));
  EXPECT_EQ(map.rfind("circuit.map (tensor<4x64xf32>) -> tensor<4x64xf32> #",
                      0),
            0u)
      << map;
  // The knobs are not part of the signature; the body is.
  first<MapOp>(*module)->setAttr(kKnobsAttrName, knobs({{"lanes", i(64)}}));
  EXPECT_EQ(kernelSignature(first<MapOp>(*module)), map);
  GraphBuilder g(&context, "other");
  Value x = g.external("x", {4, 64}, g.f32());
  g.output(g.map(x, [](ExpBuilder &e, Value v) { return e.exp(v); }));
  auto other = g.finish();
  EXPECT_NE(kernelSignature(first<MapOp>(*other)), map);
}

TEST_F(PlanTest, ParseErrors) {
  std::string error;
  EXPECT_TRUE(failed(parsePlan("{", &context, error)));
  EXPECT_EQ(error.rfind("not JSON", 0), 0u) << error;
  EXPECT_TRUE(failed(parsePlan("{\"kernels\": []}", &context, error)));
  EXPECT_EQ(error, "not a plan: expects an object with \"hesper_plan\": 1");
  EXPECT_TRUE(failed(
      parsePlan("{\"hesper_plan\": 1, \"kernels\": []}", &context, error)));
  EXPECT_EQ(error, "the plan names no \"device\"");
  EXPECT_TRUE(failed(parsePlan(
      "{\"hesper_plan\": 1, \"device\": \"d\", \"kernels\": [{\"knobs\": {}}]}",
      &context, error)));
  EXPECT_EQ(error, "kernels[0]: expects {\"signature\": ..., \"knobs\": {...}}");
  EXPECT_TRUE(failed(parsePlan("{\"hesper_plan\": 1, \"device\": \"d\", "
                               "\"kernels\": [{\"signature\": \"s\", "
                               "\"knobs\": {\"lanes\": \"many\"}}]}",
                               &context, error)));
  EXPECT_EQ(error, "kernels[0]: knob 'lanes' must be an integer or a boolean");
}

TEST_F(PlanTest, ApplyIsAllOrNothing) {
  auto module = graph();
  ASSERT_TRUE(module);
  Plan plan = planOf(*module, gpu);
  ASSERT_EQ(plan.entries.size(), 3u);
  // Round trip through JSON.
  std::string error;
  auto parsed = parsePlan(printPlan(plan), &context, error);
  ASSERT_TRUE(succeeded(parsed)) << error;
  EXPECT_EQ(parsed->entries.size(), 3u);
  EXPECT_EQ(parsed->entries[1].signature, plan.entries[1].signature);

  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  // A legal knob on the map, an illegal one on the matmul: nothing is set.
  plan.entries[0].knobs = knobs({{"lanes", i(64)}});
  plan.entries[2].knobs = knobs({{"rows", i(99)}});
  EXPECT_TRUE(failed(applyPlan(*module, plan, gpu)));
  EXPECT_NE(message.find("rows = 99 is outside 1..32"), std::string::npos)
      << message;
  EXPECT_FALSE(first<MapOp>(*module)->hasAttr(kKnobsAttrName));
  // Another device's plan.
  plan.entries[2].knobs = knobs({{"rows", i(2)}});
  EXPECT_TRUE(failed(applyPlan(*module, plan, cpu)));
  EXPECT_EQ(message, "plan for device 'test GPU', but this device is 'test CPU'");
  // Legal: set.
  EXPECT_TRUE(succeeded(applyPlan(*module, plan, gpu)));
  EXPECT_EQ(first<MapOp>(*module)->getAttr(kKnobsAttrName),
            knobs({{"lanes", i(64)}}));
  EXPECT_EQ(first<MatmulOp>(*module)->getAttr(kKnobsAttrName),
            knobs({{"rows", i(2)}}));
  // Two entries for one kernel.
  plan.entries.push_back(plan.entries[0]);
  EXPECT_TRUE(failed(applyPlan(*module, plan, gpu)));
  EXPECT_EQ(message.rfind("plan: two entries for kernel", 0), 0u) << message;
}

} // namespace
