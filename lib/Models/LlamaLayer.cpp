//===- LlamaLayer.cpp - A Llama-style decoder layer as a Circuit graph ---===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/LlamaLayer.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::models;
using hesper::exp::ExpBuilder;

void hesper::models::buildLlamaDecodeLayer(GraphBuilder &g,
                                           const LlamaLayerConfig &c) {
  Type f32 = g.f32();
  Type wt = c.weightType ? c.weightType : f32;
  const int64_t hd = c.headDim(), kvDim = c.kvHeads * hd;

  Value x = g.external("x", {c.dim}, f32);
  Value pos = g.external("pos", {1}, g.i32());
  Value attnNorm = g.external("attn_norm", {c.dim}, f32);
  Value wq = g.external("wq", {c.dim, c.dim}, wt);
  Value wk = g.external("wk", {kvDim, c.dim}, wt);
  Value wv = g.external("wv", {kvDim, c.dim}, wt);
  Value wo = g.external("wo", {c.dim, c.dim}, wt);
  Value ffnNorm = g.external("ffn_norm", {c.dim}, f32);
  Value wGate = g.external("w_gate", {c.ffnDim, c.dim}, wt);
  Value wUp = g.external("w_up", {c.ffnDim, c.dim}, wt);
  Value wDown = g.external("w_down", {c.dim, c.ffnDim}, wt);
  Value kCache = g.external("k_cache", {c.maxSeq * kvDim}, f32);
  Value vCache = g.external("v_cache", {c.maxSeq * kvDim}, f32);

  // Attention block.
  Value h = g.rmsNorm(x, attnNorm, c.eps);
  Value q = g.matmul(h, wq);
  Value k = g.matmul(h, wk);
  Value v = g.matmul(h, wv);
  Value qRot = g.rope(q, pos, hd, c.ropeBase, c.ropeStyle);
  Value kRot = g.rope(k, pos, hd, c.ropeBase, c.ropeStyle);
  // Cache writes at row `pos`.
  auto writeRow = [&](Value cache, Value row) {
    return g.scatter(cache, kvDim, ValueRange{row, pos},
                     [&](ExpBuilder &e, Value lane, ValueRange a) {
                       Value at = e.add(e.mul(a[1], e.i32(kvDim)), lane);
                       return std::make_pair(at, a[0]);
                     });
  };
  Value kCache1 = writeRow(kCache, kRot);
  Value vCache1 = writeRow(vCache, v);
  Value attn = g.attention(qRot, kCache1, vCache1, pos, c.heads, c.kvHeads,
                           hd, c.maxSeq);
  Value h1 = g.matmul(attn, wo);
  Value x1 = g.zip(x, h1, [](ExpBuilder &e, Value a, Value b) {
    return e.add(a, b);
  });

  // Feed-forward block.
  Value n2 = g.rmsNorm(x1, ffnNorm, c.eps);
  Value gate = g.matmul(n2, wGate);
  Value up = g.matmul(n2, wUp);
  Value act = g.zip(gate, up, [](ExpBuilder &e, Value a, Value b) {
    return e.mul(e.silu(a), b);
  });
  Value down = g.matmul(act, wDown);
  Value out = g.zip(x1, down, [](ExpBuilder &e, Value a, Value b) {
    return e.add(a, b);
  });
  g.output(out);
}
