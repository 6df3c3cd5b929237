//===- ExampleGraphs.cpp - Small graphs with known answers ----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/ExampleGraphs.h"

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Models/LlamaLayer.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::models;

/// The position RoPE's example rotates to.
static constexpr int32_t kPos = 7;

OwningOpRef<ModuleOp> models::buildExampleGraph(MLIRContext &context,
                                                ExampleGraph example,
                                                const ExampleShape &shape) {
  int64_t dim = shape.dim;
  SmallVector<int64_t> dims;
  if (shape.rows > 1)
    dims.push_back(shape.rows);
  dims.push_back(dim);
  GraphBuilder g(&context, "main");
  if (example == ExampleGraph::LlamaLayer) {
    LlamaLayerConfig config;
    config.dim = dim;
    config.ffnDim = 2 * dim;
    if (failed(buildLlamaDecodeLayer(g, config)))
      return nullptr;
    return g.finish();
  }
  Value x = g.external("x", dims, g.f32());
  switch (example) {
  case ExampleGraph::LlamaLayer:
    break;
  case ExampleGraph::RmsNorm: {
    Value w = g.external("w", {dim}, g.f32());
    g.output(g.rmsNorm(x, w, 1e-6));
    break;
  }
  case ExampleGraph::Softmax:
    g.output(g.softmax(x));
    break;
  case ExampleGraph::LayerNorm: {
    Value w = g.external("w", {dim}, g.f32());
    Value b = g.external("b", {dim}, g.f32());
    g.output(g.layerNorm(x, w, b, 1e-5));
    break;
  }
  case ExampleGraph::Rope: {
    Value pos = g.external("pos", {1}, g.i32());
    g.output(g.rope(x, pos, dim, 1e6, RopeStyle::NeoX));
    break;
  }
  }
  return g.finish();
}

double models::exampleInput(StringRef name, int64_t i,
                            const ExampleShape &shape) {
  int64_t dim = shape.dim;
  if (name == "pos")
    return kPos;
  if (name == "w")
    return 1.0f + float(i % dim) / dim;
  if (name == "b")
    return 0.01f * float(i % dim);
  return 2.0f * std::sin(0.37f * i + 0.1f);
}

std::vector<double> models::exampleReference(ExampleGraph example,
                                             const ExampleShape &shape) {
  if (example == ExampleGraph::LlamaLayer)
    return {};
  int64_t d = shape.dim, n = shape.rows * shape.dim;
  auto x = [&](int64_t i) { return exampleInput("x", i, shape); };
  auto w = [&](int64_t i) { return exampleInput("w", i, shape); };
  auto b = [&](int64_t i) { return exampleInput("b", i, shape); };
  std::vector<double> out(n);
  for (int64_t r = 0; r < shape.rows; ++r) {
    const int64_t base = r * d;
    double sum = 0, sumSq = 0, max = -INFINITY;
    for (int64_t i = 0; i < d; ++i) {
      double v = x(base + i);
      sum += v;
      sumSq += v * v;
      max = std::max(max, v);
    }
    double mean = sum / d, var = 0, expSum = 0;
    for (int64_t i = 0; i < d; ++i) {
      double c = x(base + i) - mean;
      var += c * c;
      expSum += std::exp(x(base + i) - max);
    }
    var /= d;
    for (int64_t i = 0; i < d; ++i) {
      double v = x(base + i);
      switch (example) {
      case ExampleGraph::RmsNorm:
        out[base + i] = v / std::sqrt(sumSq / d + 1e-6) * w(i);
        break;
      case ExampleGraph::Softmax:
        out[base + i] = std::exp(v - max) / expSum;
        break;
      case ExampleGraph::LayerNorm:
        out[base + i] = (v - mean) / std::sqrt(var + 1e-5) * w(i) + b(i);
        break;
      case ExampleGraph::LlamaLayer:
        break;
      case ExampleGraph::Rope: {
        int64_t half = d / 2, j = i % half;
        double theta = kPos * std::pow(1e6, -2.0 * j / d);
        double other = x(base + (i < half ? i + half : i - half));
        out[base + i] = i < half ? v * std::cos(theta) - other * std::sin(theta)
                                 : v * std::cos(theta) + other * std::sin(theta);
        break;
      }
      }
    }
  }
  return out;
}
