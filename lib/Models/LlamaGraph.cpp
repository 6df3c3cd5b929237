//===- LlamaGraph.cpp - The decode step of a model as a Circuit graph -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// One decode step as llama.cpp computes it for LLM_ARCH_LLAMA, QWEN2 and
// QWEN3 (llm_build_llama / llm_build_qwen2 / llm_build_qwen3):
//
//   for each layer:
//     h = rms_norm(x) * attn_norm
//     q, k, v = Wq h (+ bq), Wk h (+ bk), Wv h (+ bv)
//     qwen3: q, k = per-head rms_norm(q) * q_norm, rms_norm(k) * k_norm
//     q, k = rope(q), rope(k)      (NORM pairs for llama, NEOX for qwen)
//     cache_k[pos], cache_v[pos] = k, v
//     x = x + Wo attention(q, cache_k, cache_v)     (scale 1/sqrt(head dim))
//     h = rms_norm(x) * ffn_norm
//     x = x + Wdown (silu(Wgate h) * Wup h)
//   logits = Wout (rms_norm(x) * output_norm)
//
// The graph is written primitive by primitive; hesper-fuse merges it into
// kernels (Q/K/V into one multi-matmul, residuals into matmul epilogues, ...).
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/LlamaGraph.h"

#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::models;
using hesper::exp::CmpPredicate;
using hesper::exp::ExpBuilder;

Type hesper::models::elementTypeFor(MLIRContext *context, rt::GgmlType type) {
  switch (type) {
  case rt::GgmlType::F32:
    return Float32Type::get(context);
  case rt::GgmlType::F16:
    return Float16Type::get(context);
  case rt::GgmlType::Q8_0:
    return Q8_0Type::get(context);
  case rt::GgmlType::Q4_K:
    return Q4_KType::get(context);
  case rt::GgmlType::Q6_K:
    return Q6_KType::get(context);
  default:
    return Type();
  }
}

namespace {
/// Emits the graph; holds the builder and the model's shapes.
class DecodeGraphEmitter {
public:
  DecodeGraphEmitter(GraphBuilder &g, const Model &model, int64_t ctx)
      : g(g), model(model), hp(model.hparams()), ctx(ctx) {}

  void emit() {
    x = g.external("x", {hp.dim}, g.f32());
    pos = g.external("pos", {1}, g.i32());
    freqs = g.external("rope_freqs", {hp.ropeDims / 2}, g.f32());
    Value h = x;
    for (int64_t l = 0; l < hp.layers; ++l)
      h = layer(l, h);
    Value n = g.rmsNorm(h, weight("output_norm.weight"), hp.eps);
    Value head = weight(hp.tiedHead ? "token_embd.weight" : "output.weight");
    g.output(g.matmul(n, head));
  }

private:
  /// A weight as a graph argument named after its GGUF tensor: [rows, row
  /// length] (ggml's dims reversed), in its GGUF element type.
  Value weight(const std::string &name) {
    const rt::GgufTensor &t = model.weight(name);
    SmallVector<int64_t> shape(t.dims.rbegin(), t.dims.rend());
    return g.external(name, shape,
                      elementTypeFor(g.getContext(), t.type));
  }

  Value add(Value a, Value b) {
    return g.zip(a, b, [](ExpBuilder &e, Value p, Value q) {
      return e.add(p, q);
    });
  }

  /// `t` ([n]) read as `shape` (same element count).
  Value reshape(Value t, ArrayRef<int64_t> shape) {
    return g.map(ValueRange{t}, shape, g.f32(),
                 [](ExpBuilder &, Value, ValueRange a) { return a[0]; });
  }

  /// RMSNorm of each head of `t` ([heads * headDim]) with one weight
  /// [headDim] shared by the heads (qwen3's Q/K norms).
  Value headNorm(Value t, int64_t heads, Value w) {
    Value rows = reshape(t, {heads, hp.headDim});
    return reshape(g.rmsNorm(rows, w, hp.eps), {heads * hp.headDim});
  }

  /// Rotates the first ropeDims dimensions of each head of `t` ([heads *
  /// headDim]) by pos * rope_freqs[pair]; the rest pass through.
  Value rope(Value t, int64_t heads) {
    const int64_t hd = hp.headDim, nRot = hp.ropeDims, half = nRot / 2;
    const bool neox = hp.ropeType == RopeType::NeoX;
    SmallVector<int64_t> shape{heads * hd};
    // Lane of the other element of the pair (itself past nRot).
    Value partner = g.gather(t, {}, shape, [&](ExpBuilder &e, Value lane,
                                               ValueRange) {
      Value d = e.remConst(lane, hd);
      Value rowStart = e.sub(lane, d);
      Value rotated = e.cmp(CmpPredicate::lt, d, e.i32(nRot));
      Value other;
      if (neox) {
        Value lower = e.cmp(CmpPredicate::lt, d, e.i32(half));
        other = e.select(lower, e.add(d, e.i32(half)), e.sub(d, e.i32(half)));
      } else {
        other = exp::XorOp::create(e.builder(), e.location(), d, e.i32(1));
      }
      return e.add(rowStart, e.select(rotated, other, d));
    });
    // Frequency of each lane's pair; past nRot the address is out of range
    // and the gather reads 0 (theta 0: the value passes through exactly).
    Value freq = g.gather(freqs, {}, shape, [&](ExpBuilder &e, Value lane,
                                                ValueRange) {
      Value d = e.remConst(lane, hd);
      Value pair = neox ? e.remConst(d, half) : e.divConst(d, 2);
      Value rotated = e.cmp(CmpPredicate::lt, d, e.i32(nRot));
      return e.select(rotated, pair, e.i32(half));
    });
    return g.map(
        ValueRange{t, partner, pos, freq}, shape, g.f32(),
        [&](ExpBuilder &e, Value lane, ValueRange a) {
          Value theta = e.mul(e.toF32(a[2]), a[3]);
          Value c = e.cos(theta), s = e.sin(theta);
          Value d = e.remConst(lane, hd);
          Value first =
              neox ? e.cmp(CmpPredicate::lt, d, e.i32(half))
                   : e.cmp(CmpPredicate::eq, e.remConst(d, 2), e.i32(0));
          // First of a pair: x cos - x' sin; second: x cos + x' sin.
          Value xc = e.mul(a[0], c), ps = e.mul(a[1], s);
          return e.select(first, e.sub(xc, ps), e.add(xc, ps));
        });
  }

  /// Writes `row` ([kvDim]) into row `pos` of `cache`, in place.
  Value writeRow(Value cache, Value row) {
    const int64_t kvDim = hp.kvDim();
    return g.scatter(cache, kvDim, ValueRange{row, pos},
                     [&](ExpBuilder &e, Value lane, ValueRange a) {
                       Value at = e.add(e.mul(a[1], e.i32(kvDim)), lane);
                       return std::make_pair(at, a[0]);
                     });
  }

  Value layer(int64_t l, Value x) {
    const std::string b = "blk." + std::to_string(l) + ".";
    Value h = g.rmsNorm(x, weight(b + "attn_norm.weight"), hp.eps);
    Value q = g.matmul(h, weight(b + "attn_q.weight"));
    Value k = g.matmul(h, weight(b + "attn_k.weight"));
    Value v = g.matmul(h, weight(b + "attn_v.weight"));
    if (hp.qkvBias) {
      q = add(q, weight(b + "attn_q.bias"));
      k = add(k, weight(b + "attn_k.bias"));
      v = add(v, weight(b + "attn_v.bias"));
    }
    if (hp.qkNorm) {
      q = headNorm(q, hp.heads, weight(b + "attn_q_norm.weight"));
      k = headNorm(k, hp.kvHeads, weight(b + "attn_k_norm.weight"));
    }
    q = rope(q, hp.heads);
    k = rope(k, hp.kvHeads);
    const int64_t cacheElems = ctx * hp.kvDim();
    Value kCache = g.external("cache_k." + std::to_string(l), {cacheElems},
                              g.f32());
    Value vCache = g.external("cache_v." + std::to_string(l), {cacheElems},
                              g.f32());
    kCache = writeRow(kCache, k);
    vCache = writeRow(vCache, v);
    Value attn = g.decodeAttention(q, kCache, vCache, pos, hp.heads,
                                   hp.kvHeads, hp.headDim,
                                   1.0 / std::sqrt(double(hp.headDim)));
    x = add(x, g.matmul(attn, weight(b + "attn_output.weight")));

    Value n = g.rmsNorm(x, weight(b + "ffn_norm.weight"), hp.eps);
    Value gate = g.matmul(n, weight(b + "ffn_gate.weight"));
    Value up = g.matmul(n, weight(b + "ffn_up.weight"));
    Value act = g.zip(gate, up, [](ExpBuilder &e, Value a, Value c) {
      return e.mul(e.silu(a), c);
    });
    return add(x, g.matmul(act, weight(b + "ffn_down.weight")));
  }

  GraphBuilder &g;
  const Model &model;
  const LlamaHParams &hp;
  int64_t ctx;
  Value x, pos, freqs;
};
} // namespace

void hesper::models::buildDecodeGraph(GraphBuilder &g, const Model &model,
                                      int64_t contextSize) {
  DecodeGraphEmitter(g, model, contextSize).emit();
}
