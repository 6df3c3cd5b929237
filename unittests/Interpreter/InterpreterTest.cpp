//===- InterpreterTest.cpp - Tests for the reference interpreter ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The acceptance cases of the original framework (values as DESIGN.md states
// them), evaluated on graphs built with the GraphBuilder API, plus the
// interpreter's own semantics: broadcasting, in-place writes, subgroups,
// block formats and determinism.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Support/Half.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;
using hesper::exp::ExpBuilder;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    context.loadDialect<CircuitDialect, exp::ExpDialect>();
  }

  /// Finishes `g`, runs it on `args` and returns the results (args are
  /// updated in place).
  std::vector<HostTensor> run(GraphBuilder &g, std::vector<HostTensor> &args,
                              Options options = {}) {
    module = g.finish();
    EXPECT_TRUE(module);
    if (!module)
      return {};
    auto graph = *module->getOps<GraphOp>().begin();
    auto results = runGraph(graph, args, options);
    EXPECT_TRUE(succeeded(results));
    return succeeded(results) ? *results : std::vector<HostTensor>{};
  }

  HostTensor floats(ArrayRef<int64_t> shape,
                    llvm::function_ref<float(int64_t)> fn) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i)
      v[i] = fn(i);
    return HostTensor::fromFloats(&context, shape, v);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

// Acceptance case 1: x*2, +1, square on x[i] = i.
TEST_F(InterpreterTest, PointwiseChain) {
  GraphBuilder g(&context, "chain");
  Value x = g.external("x", {128}, g.f32());
  Value a = g.map(x, [](ExpBuilder &e, Value v) { return e.mul(v, e.f32(2)); });
  Value b = g.map(a, [](ExpBuilder &e, Value v) { return e.add(v, e.f32(1)); });
  g.output(g.map(b, [](ExpBuilder &e, Value v) { return e.mul(v, v); }));
  std::vector<HostTensor> args{floats({128}, [](int64_t i) { return i; })};
  auto out = run(g, args);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < 128; ++i)
    ASSERT_EQ(out[0].getFloat(i), float((2 * i + 1) * (2 * i + 1))) << i;
}

// Acceptance case 2: a [1] input is read at 0.
TEST_F(InterpreterTest, BroadcastScalar) {
  GraphBuilder g(&context, "bcast");
  Value x = g.external("x", {64}, g.f32());
  Value s = g.external("s", {1}, g.f32());
  Value y = g.zip(x, s, [](ExpBuilder &e, Value a, Value b) {
    return e.mul(a, b);
  });
  g.output(g.map(y, [](ExpBuilder &e, Value v) { return e.mul(v, e.f32(1)); }));
  std::vector<HostTensor> args{floats({64}, [](int64_t i) { return i; }),
                               floats({1}, [](int64_t) { return 3.5f; })};
  auto out = run(g, args);
  for (int64_t i = 0; i < 64; ++i)
    ASSERT_EQ(out[0].getFloat(i), 3.5f * i);
}

// Row statistics ([rows, 1]) broadcast down their row, [D] weights across
// rows.
TEST_F(InterpreterTest, RowAndColumnBroadcasts) {
  GraphBuilder g(&context, "rows");
  Value x = g.external("x", {3, 4}, g.f32());
  Value r = g.external("r", {3, 1}, g.f32());
  Value c = g.external("c", {4}, g.f32());
  g.output(g.map(ValueRange{x, r, c}, {3, 4}, g.f32(),
                 [](ExpBuilder &e, Value, ValueRange a) {
                   return e.add(e.mul(a[0], a[1]), a[2]);
                 }));
  std::vector<HostTensor> args{floats({3, 4}, [](int64_t i) { return i; }),
                               floats({3, 1}, [](int64_t i) { return 10 * i; }),
                               floats({4}, [](int64_t i) { return 0.5f * i; })};
  auto out = run(g, args);
  for (int64_t row = 0; row < 3; ++row)
    for (int64_t col = 0; col < 4; ++col)
      ASSERT_EQ(out[0].getFloat(row * 4 + col),
                float(row * 4 + col) * (10 * row) + 0.5f * col);
}

// Acceptance case 3: a map written into a slice of a larger buffer.
TEST_F(InterpreterTest, WriteSliceAtOffset) {
  GraphBuilder g(&context, "slice");
  Value x = g.external("x", {128}, g.f32());
  Value dst = g.external("dst", {256}, g.f32());
  Value y = g.map(x, [](ExpBuilder &e, Value v) { return e.add(v, e.f32(1)); });
  g.writeSlice(dst, y, 128);
  std::vector<HostTensor> args{floats({128}, [](int64_t i) { return i; }),
                               floats({256}, [](int64_t) { return -7.0f; })};
  run(g, args);
  for (int64_t i = 0; i < 256; ++i)
    ASSERT_EQ(args[1].getFloat(i), i < 128 ? -7.0f : float(i - 128 + 1)) << i;
}

// Acceptance case 4: RMSNorm, D = 256.
TEST_F(InterpreterTest, RmsNorm) {
  GraphBuilder g(&context, "rmsnorm");
  Value x = g.external("x", {256}, g.f32());
  Value w = g.external("w", {256}, g.f32());
  g.output(g.rmsNorm(x, w, 1e-6));
  auto xf = [](int64_t i) { return 0.017f * i - 2.0f; };
  auto wf = [](int64_t i) { return 0.5f + 0.01f * i; };
  std::vector<HostTensor> args{floats({256}, xf), floats({256}, wf)};
  auto out = run(g, args);
  double ss = 0;
  for (int i = 0; i < 256; ++i)
    ss += double(xf(i)) * xf(i);
  double scale = 1.0 / std::sqrt(ss / 256 + 1e-6);
  for (int i = 0; i < 256; ++i)
    ASSERT_NEAR(out[0].getFloat(i), xf(i) * scale * wf(i), 1e-4) << i;
}

// Acceptance case 5: reduce, then scatter (x / sum) * 100 at lane + 64.
TEST_F(InterpreterTest, ReduceScatterEpilogue) {
  GraphBuilder g(&context, "rse");
  Value x = g.external("x", {64}, g.f32());
  Value dst = g.external("dst", {256}, g.f32());
  // Built as the fused op directly: reduce_scatter_epilogue.
  OpBuilder b(&context);
  b.setInsertionPointToEnd(&g.getGraph().getBody().front());
  auto op = ReduceScatterEpilogueOp::create(b, b.getUnknownLoc(), dst.getType(),
                                            ReduceKind::sum, ValueRange{x},
                                            dst, DenseI64ArrayAttr());
  Block *body = b.createBlock(&op.getEpilogue(), {},
                              {b.getI32Type(), b.getF32Type(), b.getF32Type()},
                              SmallVector<Location>(3, b.getUnknownLoc()));
  ExpBuilder e(b, b.getUnknownLoc());
  Value addr = e.add(body->getArgument(0), e.i32(64));
  Value val = e.mul(e.div(body->getArgument(2), body->getArgument(1)),
                    e.f32(100));
  YieldOp::create(b, b.getUnknownLoc(), ValueRange{addr, val});
  b.setInsertionPointToEnd(&g.getGraph().getBody().front());
  std::vector<HostTensor> args{floats({64}, [](int64_t i) { return i + 1; }),
                               floats({256}, [](int64_t) { return 0.0f; })};
  run(g, args);
  for (int64_t i = 0; i < 256; ++i) {
    float want = (i >= 64 && i < 128) ? float(i - 63) / 2080.0f * 100.0f : 0;
    ASSERT_NEAR(args[1].getFloat(i), want, 1e-5) << i;
  }
}

// Acceptance case 6: V-cache write at a dynamic position.
TEST_F(InterpreterTest, DynamicScatterIntoCache) {
  GraphBuilder g(&context, "vcache");
  Value src = g.external("src", {64}, g.f32());
  Value pos = g.external("pos", {1}, g.i32());
  Value cache = g.external("cache", {4 * 8 * 16}, g.f32());
  g.scatter(cache, 64, ValueRange{src, pos},
            [](ExpBuilder &e, Value lane, ValueRange a) {
              Value head = e.divConst(lane, 16);
              Value d = e.remConst(lane, 16);
              Value addr = e.add(e.add(e.mul(head, e.i32(128)),
                                       e.mul(a[1], e.i32(16))),
                                 d);
              return std::make_pair(addr, a[0]);
            });
  std::vector<HostTensor> args{
      floats({64}, [](int64_t i) { return 100 + i; }),
      HostTensor::fromInts(&context, {1}, {3}),
      floats({512}, [](int64_t) { return -1.0f; })};
  run(g, args);
  int written = 0;
  for (int64_t cell = 0; cell < 512; ++cell) {
    int64_t head = cell / 128, t = (cell % 128) / 16, d = cell % 16;
    if (t == 3) {
      ++written;
      ASSERT_EQ(args[2].getFloat(cell), 100.0f + head * 16 + d) << cell;
    } else {
      ASSERT_EQ(args[2].getFloat(cell), -1.0f) << cell;
    }
  }
  EXPECT_EQ(written, 64);
}

// Acceptance case 7's ingredient: RoPE (NeoX, with frequency factors)
// against a direct evaluation of the formula.
TEST_F(InterpreterTest, RopeNeoXMatchesTheFormula) {
  const int heads = 4, hd = 16, pos = 5;
  const double base = 1e6;
  GraphBuilder g(&context, "rope");
  Value k = g.external("k", {heads, hd}, g.f32());
  Value p = g.external("pos", {1}, g.i32());
  Value ff = g.external("ff", {hd / 2}, g.f32());
  g.output(g.rope(k, p, hd, base, RopeStyle::NeoX, ff));
  auto kf = [](int64_t i) { return 0.137f * i - 2.0f; };
  auto fff = [](int64_t i) { return 1.0f + 0.1f * i; };
  std::vector<HostTensor> args{floats({heads, hd}, kf),
                               HostTensor::fromInts(&context, {1}, {pos}),
                               floats({hd / 2}, fff)};
  auto out = run(g, args);
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd / 2; ++j) {
      double theta = pos * std::pow(base, -2.0 * j / hd) / fff(j);
      double a = kf(h * hd + j), b = kf(h * hd + j + hd / 2);
      ASSERT_NEAR(out[0].getFloat(h * hd + j),
                  a * std::cos(theta) - b * std::sin(theta), 1e-4);
      ASSERT_NEAR(out[0].getFloat(h * hd + j + hd / 2),
                  b * std::cos(theta) + a * std::sin(theta), 1e-4);
    }
}

// Acceptance case 8: division by constants is exact.
TEST_F(InterpreterTest, DivisionByConstants) {
  for (int64_t d : {1, 2, 3, 7, 32, 100, 256, 4096}) {
    GraphBuilder g(&context, "div");
    Value x = g.external("x", {1024}, g.i32());
    g.output(g.map(x, [&](ExpBuilder &e, Value v) { return e.divConst(v, d); }));
    std::vector<int32_t> iota(1024);
    for (int i = 0; i < 1024; ++i)
      iota[i] = i;
    std::vector<HostTensor> args{HostTensor::fromInts(&context, {1024}, iota)};
    auto out = run(g, args);
    for (int i = 0; i < 1024; ++i)
      ASSERT_EQ(out[0].getInt(i), i / d) << i << " / " << d;
  }
}

// Acceptance case 9: warp sum and warp dot product.
TEST_F(InterpreterTest, SubgroupReductions) {
  GraphBuilder g(&context, "warp");
  Value x = g.external("x", {32}, g.f32());
  Value sum = g.map(x, [](ExpBuilder &e, Value v) {
    return exp::SubgroupReduceOp::create(e.builder(), e.location(),
                                         exp::ReduceKind::sum, v)
        .getResult();
  });
  Value dot = g.map(ValueRange{}, {32}, g.f32(),
                    [](ExpBuilder &e, Value lane, ValueRange) {
                      Value i = e.toF32(lane);
                      Value p = e.mul(i, e.add(i, e.f32(1)));
                      return exp::SubgroupReduceOp::create(
                                 e.builder(), e.location(),
                                 exp::ReduceKind::sum, p)
                          .getResult();
                    });
  g.output({sum, dot});
  std::vector<HostTensor> args{floats({32}, [](int64_t i) { return i + 1; })};
  auto out = run(g, args);
  for (int i = 0; i < 32; ++i) {
    ASSERT_EQ(out[0].getFloat(i), 528.0f);
    ASSERT_EQ(out[1].getFloat(i), 10912.0f);
  }
  // With lavapipe's subgroup of 8, each group of 8 sums its own lanes.
  std::vector<HostTensor> args8{floats({32}, [](int64_t i) { return i + 1; })};
  Options eight;
  eight.subgroupSize = 8;
  auto graph = *module->getOps<GraphOp>().begin();
  auto out8 = runGraph(graph, args8, eight);
  ASSERT_TRUE(succeeded(out8));
  for (int i = 0; i < 32; ++i) {
    int group = i / 8;
    float want = 0;
    for (int k = 0; k < 8; ++k)
      want += group * 8 + k + 1;
    ASSERT_EQ((*out8)[0].getFloat(i), want);
  }
}

// Acceptance case 10's reference: Q8_1 blocks follow d = amax/127,
// q = round(v/d).
TEST_F(InterpreterTest, QuantizeToQ8_1) {
  GraphBuilder g(&context, "q");
  Value x = g.external("x", {64}, g.f32());
  g.output(g.quantize(x, Q8_1Type::get(&context)));
  auto xf = [](int64_t i) { return std::sin(0.3f * i) * (i < 32 ? 1.0f : 5.0f); };
  std::vector<HostTensor> args{floats({64}, xf)};
  auto out = run(g, args);
  const std::vector<uint8_t> &bytes = out[0].bytes();
  ASSERT_EQ(bytes.size(), 2u * 36u);
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(xf(b * 32 + i)));
    float d = amax / 127.0f;
    const uint8_t *block = bytes.data() + b * 36;
    uint16_t dBits = block[0] | (block[1] << 8);
    EXPECT_EQ(dBits, floatToHalfBits(d));
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      int q = static_cast<int8_t>(block[4 + i]);
      ASSERT_EQ(q, int(std::round(xf(b * 32 + i) / d))) << b << ":" << i;
      sum += q;
    }
    uint16_t sBits = block[2] | (block[3] << 8);
    EXPECT_EQ(sBits, floatToHalfBits(d * sum));
  }
  // Dequantized, every value is within half a step of the input.
  std::vector<float> back = out[0].toFloats();
  for (int i = 0; i < 64; ++i)
    ASSERT_NEAR(back[i], xf(i), (i < 32 ? 1.0f : 5.0f) / 127.0f);
}

// Acceptance case 11: matmul + epilogue equals matmul, then a map.
TEST_F(InterpreterTest, MatmulEpilogueEqualsMatmulThenMap) {
  auto wf = [](int64_t i) { return 1.0f + (i % 16) / 16.0f; };
  auto xf = [](int64_t i) { return 1.0f + ((i * 7) % 16) / 16.0f; };
  auto bf = [](int64_t i) { return 0.25f * i; };
  auto build = [&](GraphBuilder &g, bool fused) {
    Value x = g.external("x", {2, 64}, g.f32());
    Value w = g.external("w", {8, 64}, g.f32());
    Value bias = g.external("b", {8}, g.f32());
    auto epi = [](ExpBuilder &e, Value, Value acc, ValueRange a) {
      return e.add(e.gelu(e.mul(acc, e.f32(0.01))), a[0]);
    };
    if (fused) {
      g.output(g.matmul(x, w, bias, epi));
    } else {
      Value y = g.matmul(x, w);
      g.output(g.map(ValueRange{y, bias}, {2, 8}, g.f32(),
                     [&](ExpBuilder &e, Value lane, ValueRange a) {
                       return epi(e, lane, a[0], a.drop_front());
                     }));
    }
  };
  std::vector<float> results[2];
  for (bool fused : {false, true}) {
    GraphBuilder g(&context, "mm");
    build(g, fused);
    std::vector<HostTensor> args{floats({2, 64}, xf), floats({8, 64}, wf),
                                 floats({8}, bf)};
    auto out = run(g, args);
    results[fused] = out[0].toFloats();
  }
  ASSERT_EQ(results[0].size(), 16u);
  for (int i = 0; i < 16; ++i)
    ASSERT_EQ(results[0][i], results[1][i]) << i;
}

// HLX: [[1,2],[3,4]] · [[5,6],[7,8]] = [[19,22],[43,50]], with the weight
// stored [N, K] (the transpose of the right operand).
TEST_F(InterpreterTest, TwoByTwoGemm) {
  GraphBuilder g(&context, "gemm");
  Value a = g.external("a", {2, 2}, g.f32());
  Value bt = g.external("bt", {2, 2}, g.f32());
  g.output(g.matmul(a, bt));
  std::vector<HostTensor> args{
      HostTensor::fromFloats(&context, {2, 2}, {1, 2, 3, 4}),
      HostTensor::fromFloats(&context, {2, 2}, {5, 7, 6, 8})};
  auto out = run(g, args);
  EXPECT_EQ(out[0].toFloats(), (std::vector<float>{19, 22, 43, 50}));
}

// HLX: GELU(1) = 0.8413 (tanh form: 0.84119) and softmax([1,2,3]).
TEST_F(InterpreterTest, GeluAndSoftmaxValues) {
  GraphBuilder g(&context, "vals");
  Value x = g.external("x", {3}, g.f32());
  g.output({g.map(x, [](ExpBuilder &e, Value v) { return e.gelu(v); }),
            g.softmax(x)});
  std::vector<HostTensor> args{HostTensor::fromFloats(&context, {3}, {1, 2, 3})};
  auto out = run(g, args);
  EXPECT_NEAR(out[0].getFloat(0), 0.8413f, 2e-4);
  EXPECT_NEAR(out[1].getFloat(0), 0.0900f, 1e-4);
  EXPECT_NEAR(out[1].getFloat(1), 0.2447f, 1e-4);
  EXPECT_NEAR(out[1].getFloat(2), 0.6652f, 1e-4);
}

// LayerNorm is two-pass: inputs 1000 + small noise keep their precision
// (E[x²] - mean² would cancel to garbage in f32).
TEST_F(InterpreterTest, LayerNormTwoPassKeepsPrecision) {
  GraphBuilder g(&context, "ln");
  Value x = g.external("x", {256}, g.f32());
  Value w = g.external("w", {256}, g.f32());
  Value b = g.external("b", {256}, g.f32());
  g.output(g.layerNorm(x, w, b, 1e-5));
  auto xf = [](int64_t i) { return 1000.0f + 0.01f * ((i * 37) % 17 - 8); };
  std::vector<HostTensor> args{floats({256}, xf),
                               floats({256}, [](int64_t) { return 1.0f; }),
                               floats({256}, [](int64_t) { return 0.0f; })};
  auto out = run(g, args);
  double mean = 0, var = 0;
  for (int i = 0; i < 256; ++i)
    mean += xf(i);
  mean /= 256;
  for (int i = 0; i < 256; ++i)
    var += (xf(i) - mean) * (xf(i) - mean);
  var /= 256;
  for (int i = 0; i < 256; ++i)
    ASSERT_NEAR(out[0].getFloat(i), (xf(i) - mean) / std::sqrt(var + 1e-5),
                2e-2)
        << i;
}

TEST_F(InterpreterTest, GatherReadsZeroOutOfRange) {
  GraphBuilder g(&context, "gather");
  Value x = g.external("x", {8}, g.f32());
  g.output(g.gather(x, {}, {8}, [](ExpBuilder &e, Value lane, ValueRange) {
    return e.sub(e.i32(9), lane); // 9, 8 are out of range.
  }));
  std::vector<HostTensor> args{floats({8}, [](int64_t i) { return i + 1; })};
  auto out = run(g, args);
  EXPECT_EQ(out[0].toFloats(),
            (std::vector<float>{0, 0, 8, 7, 6, 5, 4, 3}));
}

TEST_F(InterpreterTest, DecodesQ8_0AndQ4_KBlocks) {
  // q8_0: d = 0.5, q = -16 .. 15.
  HostTensor q8(RankedTensorType::get({1, 32}, Q8_0Type::get(&context)));
  uint16_t half = floatToHalfBits(0.5f);
  q8.bytes()[0] = half & 0xff;
  q8.bytes()[1] = half >> 8;
  for (int i = 0; i < 32; ++i)
    q8.bytes()[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 16));
  std::vector<float> v = q8.toFloats();
  for (int i = 0; i < 32; ++i)
    ASSERT_EQ(v[i], 0.5f * (i - 16));

  // q4_k: d = 1, dmin = 0.25, every sub-block scale 2 and min 1 (6-bit
  // fields of the first four packed directly, of the last four in the high
  // bits); nibble l%16 everywhere.
  HostTensor q4(RankedTensorType::get({1, 256}, Q4_KType::get(&context)));
  std::vector<uint8_t> &bytes = q4.bytes();
  uint16_t one = floatToHalfBits(1.0f), quarter = floatToHalfBits(0.25f);
  bytes[0] = one & 0xff;
  bytes[1] = one >> 8;
  bytes[2] = quarter & 0xff;
  bytes[3] = quarter >> 8;
  uint8_t *scales = bytes.data() + 4;
  for (int j = 0; j < 4; ++j) {
    scales[j] = 2;      // scale of sub-block j
    scales[j + 4] = 1;  // min of sub-block j
  }
  for (int j = 8; j < 12; ++j)
    scales[j] = 2 | (1 << 4); // scale and min of sub-blocks 4..7
  for (int l = 0; l < 128; ++l)
    bytes[16 + l] = static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4));
  v = q4.toFloats();
  ASSERT_EQ(v.size(), 256u);
  for (int i = 0; i < 256; ++i) {
    int chunk = i / 64, within = i % 64, l = chunk * 32 + within % 32;
    int nibble = within < 32 ? (l % 16) : (15 - l % 16);
    ASSERT_EQ(v[i], 2.0f * nibble - 0.25f) << i;
  }
}

TEST_F(InterpreterTest, DecodesIQ4_NL) {
  // d = 0.5; byte j holds nibble j (value j) and 15 - j (value j + 16);
  // v = d * table[q], ggml's table written out here.
  const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                         1,    13,   25,  38,  53,  69,  89,  113};
  HostTensor t(RankedTensorType::get({1, 32}, IQ4_NLType::get(&context)));
  ASSERT_EQ(t.bytes().size(), 18u);
  uint8_t *block = t.bytes().data();
  uint16_t d = floatToHalfBits(0.5f);
  block[0] = d & 0xff;
  block[1] = d >> 8;
  for (int j = 0; j < 16; ++j)
    block[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> v = t.toFloats();
  ASSERT_EQ(v.size(), 32u);
  for (int j = 0; j < 16; ++j) {
    ASSERT_EQ(v[j], 0.5f * table[j]) << j;
    ASSERT_EQ(v[j + 16], 0.5f * table[15 - j]) << j;
  }
  EXPECT_EQ(v[0], -63.5f);
  EXPECT_EQ(v[16], 56.5f);
}

TEST_F(InterpreterTest, DecodesIQ4_XS) {
  // d = 0.25; sub-block ib has ls = 30 + ib (ls - 32 from -2 to 5); quant
  // byte j of every sub-block is j | (15 - j) << 4.
  const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                         1,    13,   25,  38,  53,  69,  89,  113};
  HostTensor t(RankedTensorType::get({1, 256}, IQ4_XSType::get(&context)));
  ASSERT_EQ(t.bytes().size(), 136u);
  uint8_t *block = t.bytes().data();
  uint16_t d = floatToHalfBits(0.25f);
  block[0] = d & 0xff;
  block[1] = d >> 8;
  unsigned high = 0;
  for (int ib = 0; ib < 8; ++ib) {
    int ls = 30 + ib;
    block[4 + ib / 2] |= static_cast<uint8_t>((ls & 0xf) << (4 * (ib % 2)));
    high |= static_cast<unsigned>(ls >> 4) << (2 * ib);
    for (int j = 0; j < 16; ++j)
      block[8 + 16 * ib + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  }
  block[2] = high & 0xff;
  block[3] = high >> 8;
  std::vector<float> v = t.toFloats();
  ASSERT_EQ(v.size(), 256u);
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 16; ++j) {
      float dl = 0.25f * static_cast<float>(ib - 2);
      ASSERT_EQ(v[32 * ib + j], dl * table[j]) << ib << " " << j;
      ASSERT_EQ(v[32 * ib + 16 + j], dl * table[15 - j]) << ib << " " << j;
    }
}

TEST_F(InterpreterTest, DecodesQ4_1Q5_0AndQ5_1) {
  // d = 0.5, m = -3 (q4_1, q5_1); fifth bits 0x0ff05aa5 (bit j: value j);
  // byte j of the nibbles holds j (value j) and 15 - j (value j + 16).
  // q4_1: v = d q + m; q5_0: v = d (q - 16); q5_1: v = d q + m, q with
  // its fifth bit.
  const uint32_t fifth = 0x0ff05aa5u;
  auto block = [&](Type element, bool offset, bool fifthBits) {
    HostTensor t(RankedTensorType::get({1, 32}, element));
    uint8_t *p = t.bytes().data();
    uint16_t d = floatToHalfBits(0.5f), m = floatToHalfBits(-3.0f);
    p[0] = d & 0xff;
    p[1] = d >> 8;
    size_t at = 2;
    if (offset) {
      p[2] = m & 0xff;
      p[3] = m >> 8;
      at = 4;
    }
    if (fifthBits) {
      for (int i = 0; i < 4; ++i)
        p[at + i] = static_cast<uint8_t>(fifth >> (8 * i));
      at += 4;
    }
    EXPECT_EQ(t.bytes().size(), at + 16);
    for (int j = 0; j < 16; ++j)
      p[at + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    return t.toFloats();
  };
  std::vector<float> q41 = block(Q4_1Type::get(&context), true, false);
  std::vector<float> q50 = block(Q5_0Type::get(&context), false, true);
  std::vector<float> q51 = block(Q5_1Type::get(&context), true, true);
  ASSERT_EQ(q41.size(), 32u);
  ASSERT_EQ(q50.size(), 32u);
  ASSERT_EQ(q51.size(), 32u);
  for (int j = 0; j < 32; ++j) {
    int nibble = j < 16 ? j : 31 - j;
    int q5 = nibble | int((fifth >> j) & 1) << 4;
    EXPECT_EQ(q41[j], 0.5f * nibble - 3.0f) << j;
    EXPECT_EQ(q50[j], 0.5f * (q5 - 16)) << j;
    EXPECT_EQ(q51[j], 0.5f * q5 - 3.0f) << j;
  }
  EXPECT_EQ(q50[0], 0.0f);  // q = 0 | 16
  EXPECT_EQ(q50[1], -7.5f); // q = 1
  EXPECT_EQ(q51[27], 7.0f); // q = 4 | 16: 10 - 3
}

TEST_F(InterpreterTest, DecodesQ4_0Q5_KAndBF16) {
  // q4_0: d = -0.5; byte j holds value j (low nibble j % 16) and value
  // j + 16 (high nibble 15 - j % 16); v = d * (q - 8).
  HostTensor q4(RankedTensorType::get({2, 32}, Q4_0Type::get(&context)));
  ASSERT_EQ(q4.bytes().size(), 36u);
  for (int b = 0; b < 2; ++b) {
    uint8_t *block = q4.bytes().data() + 18 * b;
    uint16_t d = floatToHalfBits(b == 0 ? -0.5f : 2.0f);
    block[0] = d & 0xff;
    block[1] = d >> 8;
    for (int j = 0; j < 16; ++j)
      block[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  }
  std::vector<float> v = q4.toFloats();
  ASSERT_EQ(v.size(), 64u);
  for (int i = 0; i < 64; ++i) {
    int j = i % 32;
    int q = j < 16 ? j : 15 - (j - 16);
    ASSERT_EQ(v[i], (i < 32 ? -0.5f : 2.0f) * (q - 8)) << i;
  }

  // q5_k: q4_k's header (d = 1, dmin = 0.5, every scale 3 and min 2), then
  // qh[32]: qh[l] = l, so value 64c + p (p < 32: low nibble, else high)
  // gets 16 when bit 2c (+1 for the high nibble) of l = p % 32 is set;
  // nibbles: low l % 16, high 15 - l % 16 of quant byte 32c + l.
  HostTensor q5(RankedTensorType::get({1, 256}, Q5_KType::get(&context)));
  std::vector<uint8_t> &bytes = q5.bytes();
  ASSERT_EQ(bytes.size(), 176u);
  uint16_t one = floatToHalfBits(1.0f), half = floatToHalfBits(0.5f);
  bytes[0] = one & 0xff;
  bytes[1] = one >> 8;
  bytes[2] = half & 0xff;
  bytes[3] = half >> 8;
  for (int j = 0; j < 4; ++j) {
    bytes[4 + j] = 3;
    bytes[8 + j] = 2;
  }
  for (int j = 12; j < 16; ++j)
    bytes[j] = 3 | (2 << 4);
  for (int l = 0; l < 32; ++l)
    bytes[16 + l] = static_cast<uint8_t>(l);
  for (int l = 0; l < 128; ++l)
    bytes[48 + l] = static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4));
  v = q5.toFloats();
  ASSERT_EQ(v.size(), 256u);
  for (int i = 0; i < 256; ++i) {
    int c = i / 64, p = i % 64, l = p % 32;
    bool high = p >= 32;
    int q = high ? 15 - l % 16 : l % 16;
    if ((l >> (2 * c + (high ? 1 : 0))) & 1)
      q += 16;
    ASSERT_EQ(v[i], 3.0f * q - 0.5f * 2.0f) << i;
  }

  // bf16: the top halves of f32 values.
  HostTensor bf(RankedTensorType::get({3}, BFloat16Type::get(&context)));
  const uint16_t bits[3] = {0x3f80, 0xc020, 0x7f80}; // 1, -2.5, infinity
  std::memcpy(bf.bytes().data(), bits, sizeof(bits));
  v = bf.toFloats();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.5f);
  EXPECT_EQ(v[2], std::numeric_limits<float>::infinity());
}

TEST_F(InterpreterTest, RunsAreBitIdentical) {
  GraphBuilder g(&context, "det");
  Value x = g.external("x", {4, 96}, g.f32());
  Value w = g.external("w", {96}, g.f32());
  g.output(g.softmax(g.rmsNorm(x, w, 1e-5)));
  std::vector<HostTensor> args{
      floats({4, 96}, [](int64_t i) { return std::sin(0.1f * i) * 3; }),
      floats({96}, [](int64_t i) { return 1.0f + 0.001f * i; })};
  auto first = run(g, args);
  auto graph = *module->getOps<GraphOp>().begin();
  for (int repeat = 0; repeat < 4; ++repeat) {
    auto again = runGraph(graph, args, {});
    ASSERT_TRUE(succeeded(again));
    ASSERT_EQ((*again)[0].bytes(), first[0].bytes());
  }
}

TEST_F(InterpreterTest, WrongArgumentsAreDiagnosed) {
  GraphBuilder g(&context, "args");
  Value x = g.external("x", {4}, g.f32());
  g.output(x);
  module = g.finish();
  auto graph = *module->getOps<GraphOp>().begin();
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  std::vector<HostTensor> none;
  EXPECT_TRUE(failed(runGraph(graph, none)));
  EXPECT_NE(message.find("expects 1 arguments, got 0"), std::string::npos);
  std::vector<HostTensor> wrong{floats({5}, [](int64_t) { return 0.0f; })};
  EXPECT_TRUE(failed(runGraph(graph, wrong)));
  EXPECT_NE(message.find("argument #0 has type"), std::string::npos);
}

// Sums accumulate in double: 2^24 + 1 + 1 + ... stays exact where f32
// left-to-right accumulation would drop every 1.
TEST_F(InterpreterTest, ReductionsAccumulateInDouble) {
  GraphBuilder g(&context, "sum");
  Value x = g.external("x", {1, 33}, g.f32());
  g.output(g.reduce(ReduceKind::sum, x));
  std::vector<HostTensor> args{floats(
      {1, 33}, [](int64_t i) { return i == 0 ? 16777216.0f : 1.0f; })};
  auto out = run(g, args);
  // 2^24 + 32 is representable in f32; f32 accumulation would give 2^24.
  EXPECT_EQ(out[0].getFloat(0), 16777248.0f);
}

TEST_F(InterpreterTest, CheckTolerancesFollowTheOps) {
  GraphBuilder g(&context, "tol");
  Value x = g.external("x", {4, 32}, g.f32());
  Value h = g.external("h", {4, 32}, g.f16());
  Value scaled =
      g.map(x, [](ExpBuilder &e, Value v) { return e.mul(v, e.f32(2)); });
  Value sum = g.reduce(ReduceKind::sum, scaled);
  Value after =
      g.map(sum, [](ExpBuilder &e, Value v) { return e.add(v, e.f32(1)); });
  Value half =
      g.map(h, [](ExpBuilder &e, Value v) { return e.mul(v, v); });
  g.output({scaled, after, half});
  module = g.finish();
  auto graph = *module->getOps<GraphOp>().begin();
  auto tolerances = computeCheckTolerances(graph);
  auto *output = graph.getBody().front().getTerminator();
  Tolerance elementwise = tolerances.lookup(output->getOperand(0));
  Tolerance downstream = tolerances.lookup(output->getOperand(1));
  Tolerance f16 = tolerances.lookup(output->getOperand(2));
  EXPECT_EQ(elementwise.abs, 1e-5);
  EXPECT_EQ(elementwise.rel, 1e-4);
  // A map after a reduction is as loose as the reduction.
  EXPECT_EQ(downstream.abs, 1e-3);
  EXPECT_EQ(downstream.rel, 1e-3);
  EXPECT_EQ(f16.rel, 2e-3);
}

TEST_F(InterpreterTest, CompareWithinToleranceHandlesNaNAndInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto tensor = [&](std::vector<float> v) {
    return HostTensor::fromFloats(&context, {int64_t(v.size())}, v);
  };
  Tolerance tol{1e-5, 1e-4};
  // Equal, within rel, NaN against NaN, inf against the same inf: ok.
  Comparison c = compareWithinTolerance(tensor({1, 1000.05f, nan, inf}),
                                        tensor({1, 1000, nan, inf}), tol);
  EXPECT_NEAR(c.maxError, 0.05, 1e-4);
  EXPECT_EQ(c.mismatch, -1);
  // NaN against a number, a number against NaN, -inf against inf, and a
  // value just past the tolerance: each is named by its first index, with
  // both values.
  c = compareWithinTolerance(tensor({0, nan}), tensor({0, 1}), tol);
  EXPECT_EQ(c.mismatch, 1);
  EXPECT_TRUE(std::isnan(c.got));
  EXPECT_EQ(c.want, 1.0f);
  c = compareWithinTolerance(tensor({2}), tensor({nan}), tol);
  EXPECT_EQ(c.mismatch, 0);
  c = compareWithinTolerance(tensor({0, 0, -inf}), tensor({0, 0, inf}), tol);
  EXPECT_EQ(c.mismatch, 2);
  c = compareWithinTolerance(tensor({0, 1.0003f}), tensor({0, 1}), tol);
  EXPECT_GT(c.maxError, 1e-4);
  EXPECT_EQ(c.mismatch, 1);
  EXPECT_EQ(c.got, 1.0003f);
}

} // namespace
