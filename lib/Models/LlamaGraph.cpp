//===- LlamaGraph.cpp - The decode step of a model as a Circuit graph -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// One decode step as llama.cpp computes it for LLM_ARCH_LLAMA, QWEN2, PHI3,
// QWEN3, GEMMA, GEMMA2 and GEMMA3 (src/models/*.cpp):
//
//   x = token_embd[token]            (gemma: times sqrt(dim))
//   for each layer:
//     h = rms_norm(x) * attn_norm
//     q, k, v = Wq h (+ bq), Wk h (+ bk), Wv h (+ bv)
//     qwen3: q, k = per-head rms_norm(q) * q_norm, rms_norm(k) * k_norm
//     q, k = rope(q), rope(k)      (NORM pairs for llama, NEOX for qwen)
//     cache_k[pos], cache_v[pos] = k, v
//     x = x + Wo attention(q, cache_k, cache_v)     (scale 1/sqrt(head dim))
//     h = rms_norm(x) * ffn_norm
//     x = x + Wdown (silu(Wgate h) * Wup h)
//     (mixture of experts, qwen3moe and llama with experts: p =
//     softmax(Wrouter h), the k most probable experts e_s (ties to the lower
//     index), w_s = p[e_s] / sum p[e_s], x = x + sum_s w_s Wdown[e_s]
//     (silu(Wgate[e_s] h) * Wup[e_s] h), as llama.cpp's build_moe_ffn)
//   logits = Wout (rms_norm(x) * output_norm)
//
// bitnet (BitNet b1.58) normalizes the attention output before Wo and the
// FFN's activation before Wdown (attn_sub_norm, ffn_sub_norm), gates with
// relu(gate)² (bitnet.hidden_activation "relu2", which Microsoft's 2B-4T
// model needs and later llama.cpp versions read; SiLU without the key), and
// reads ternary weights (an i2_s tensor with the scale stored after its
// blocks); a projection's optional `.scale` tensor multiplies the matmul's
// result in its epilogue.
//
// The Gemma versions change: GeGLU (gelu_tanh(Wgate h) * Wup h) for the
// FFN; gemma3's per-head Q/K norms as qwen3's; gemma2/3 normalize the
// attention and FFN outputs before their residual adds (post_attention_norm,
// post_ffw_norm); their sliding-window layers attend to the last W
// positions only and rotate with their own RoPE base (`rope_freqs_swa`);
// gemma2 soft-caps the attention scores and the logits (c·tanh(s/c)).
// phi3 is llama's layer with NEOX pairs, Q/K/V and gate/up read from fused
// tensors (row ranges of attn_qkv and ffn_up) and LongRoPE frequencies
// (rope_freqs from rope_factors_long or _short, cos and sin scaled by
// rope.scaling.attn_factor).
// gemma4 adds per-layer shapes, layers that attend over an earlier layer's
// KV cache, V normalized without a weight, per-layer embeddings and layer
// output scales (docs/Gemma4-notes.md). Its MoE layers (those with a
// router) add experts beside the dense FFN: the router reads
// rms_norm(x) / sqrt(dim) * router_scale, the experts (GeGLU, gate and up
// possibly one merged tensor) pre_ffw_norm_2(x), each expert's output is
// scaled by ffn_down_exps.scale, and the FFN's result is post_ffw_norm(
// post_ffw_norm_1(dense) + post_ffw_norm_2(experts)).
//
// The graph is written primitive by primitive; hesper-fuse merges it into
// kernels (Q/K/V into one multi-matmul, residuals into matmul epilogues, ...).
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/LlamaGraph.h"
#include "Hesper/Models/Session.h"

#include <cmath>
#include <map>
#include <optional>

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
  case rt::GgmlType::BF16:
    return BFloat16Type::get(context);
  case rt::GgmlType::Q8_0:
    return Q8_0Type::get(context);
  case rt::GgmlType::Q4_0:
    return Q4_0Type::get(context);
  case rt::GgmlType::Q4_1:
    return Q4_1Type::get(context);
  case rt::GgmlType::Q5_0:
    return Q5_0Type::get(context);
  case rt::GgmlType::Q5_1:
    return Q5_1Type::get(context);
  case rt::GgmlType::IQ4_NL:
    return IQ4_NLType::get(context);
  case rt::GgmlType::IQ4_XS:
    return IQ4_XSType::get(context);
  case rt::GgmlType::Q2_K:
    return Q2_KType::get(context);
  case rt::GgmlType::Q3_K:
    return Q3_KType::get(context);
  case rt::GgmlType::Q4_K:
    return Q4_KType::get(context);
  case rt::GgmlType::Q5_K:
    return Q5_KType::get(context);
  case rt::GgmlType::Q6_K:
    return Q6_KType::get(context);
  case rt::GgmlType::TQ1_0:
    return TQ1_0Type::get(context);
  case rt::GgmlType::TQ2_0:
    return TQ2_0Type::get(context);
  case rt::GgmlType::I2_S:
    return I2_SType::get(context);
  default:
    return Type();
  }
}

namespace {
/// Emits the graph; holds the builder and the model's shapes.
class DecodeGraphEmitter {
public:
  DecodeGraphEmitter(GraphBuilder &g, const Model &model, int64_t ctx,
                     int64_t rows, bool lastRowOnly, GraphOptions options = {})
      : g(g), model(model), hp(model.hparams()), ctx(ctx), rows(rows),
        lastRowOnly(lastRowOnly), cacheTypes(options.caches),
        quantizedActivations(options.quantizedActivations) {}

  /// A batch step (continuous batching): `sequences` KV-cache sequences of
  /// `seqLen` positions each, plus one scratch sequence for padding rows;
  /// each of the `rows` tokens has its own global position (`pos` holds one
  /// per row). Every row's logits come out: picking rows before the final
  /// norm and the LM head would run those on a different tile shape than
  /// a step without the pick, and change the last bits of a row's logits
  /// with the step it lands in.
  void setBatch(int64_t seqLen, int64_t sequences) {
    this->seqLen = seqLen;
    ctx = seqLen * (sequences + 1);
    lastRowOnly = false;
  }

  void emit() {
    // The tokens' embedding rows, gathered (and dequantized) from the
    // table in its GGUF format.
    // [rows, 1] broadcasts over the row's lanes: each lane sees its token.
    SmallVector<int64_t> tokenShape{1};
    if (rows > 1)
      tokenShape = {rows, 1};
    Value tokens = g.externalIndices("tokens", tokenShape,
                                     circuit::ArgRole::Tokens, hp.vocab);
    x = lookupRows("token_embd.weight", tokens);
    const bool isF32 =
        cast<RankedTensorType>(x.getType()).getElementType().isF32();
    if (!isF32 || hp.embedScale != 1) {
      const double scale = hp.embedScale;
      x = g.map(ValueRange{x}, vec(hp.dim), g.f32(),
                [&](ExpBuilder &e, Value, ValueRange a) {
                  Value v = isF32 ? a[0] : e.toF32(a[0]);
                  return scale == 1 ? v : e.mul(v, e.f32(scale));
                });
    }
    positionArguments();
    if (hp.perLayerDim > 0)
      perLayerInputs = buildPerLayerInputs(tokens, x);
    Value h = x;
    for (int64_t l = 0; l < hp.layers; ++l)
      h = layer(l, h);
    if (rows > 1 && lastRowOnly) {
      // Generation needs the logits of the chunk's last token only (row
      // `last`): the final norm and the LM head run on that row alone.
      Value last =
          g.external("last", {1}, g.i32(), circuit::ArgRole::LastRow);
      const int64_t dim = hp.dim;
      h = g.gather(h, ValueRange{last}, {dim},
                   [&](ExpBuilder &e, Value lane, ValueRange a) {
                     return e.add(e.mul(a[0], e.i32(dim)), lane);
                   });
    }
    Value n = g.rmsNorm(h, weight("output_norm.weight"), hp.eps);
    Value head = weight(hp.tiedHead ? "token_embd.weight" : "output.weight");
    Value logits = g.matmul(activationsFor(n, head), head);
    if (hp.finalSoftcap > 0)
      logits = softcap(logits, hp.finalSoftcap);
    g.output(logits);
  }

  /// Layer `l` alone: its input `x` [dim] (or [rows, dim]) is an argument
  /// and its output the result.
  LogicalResult emitLayer(int64_t l) {
    if (hp.perLayerDim > 0 || hp.layer(l).kvSource != l)
      return g.getGraph().emitError("layer ")
             << l << " reads per-layer inputs or another layer's KV cache: "
             << "it is not a graph on its own";
    x = g.external("x", vec(hp.dim), g.f32());
    positionArguments();
    g.output(layer(l, x));
    return success();
  }

private:
  /// The position and the RoPE frequencies, as arguments.
  void positionArguments() {
    // A batch step: one global position per row.
    pos = g.external("pos", {seqLen > 0 ? rows : 1}, g.i32(),
                     circuit::ArgRole::Position);
    freqs = g.external("rope_freqs", {hp.ropeDims / 2}, g.f32(),
                       circuit::ArgRole::RopeFreqs);
    if (hp.swaHasOwnRope())
      freqsSwa = g.external("rope_freqs_swa", {hp.ropeDimsSwa / 2}, g.f32(),
                            circuit::ArgRole::RopeFreqsSwa);
  }

  /// The shape of `n` values per token: [n] for one token, [rows, n] for a
  /// chunk.
  SmallVector<int64_t> vec(int64_t n) const {
    if (rows == 1)
      return {n};
    return {rows, n};
  }

  /// A weight as a graph argument named after its GGUF tensor: [rows, row
  /// length] (ggml's dims reversed), in its GGUF element type. A weight
  /// that is part of a fused tensor (phi3's attn_qkv, ffn_up) is that
  /// tensor's row range, read in place.
  Value weight(const std::string &name) {
    auto it = weights.find(name);
    if (it != weights.end())
      return it->second;
    Model::WeightRows at = model.weightRows(name);
    const rt::GgufTensor &t = model.weight(at.tensor);
    SmallVector<int64_t> shape(t.dims.rbegin(), t.dims.rend());
    std::optional<int64_t> firstRow;
    if (at.firstRow >= 0) {
      shape[0] = at.rows;
      firstRow = at.firstRow;
    }
    Value v = g.externalWeight(name, shape,
                               elementTypeFor(g.getContext(), t.type),
                               at.tensor, firstRow);
    weights[name] = v;
    return v;
  }

  /// The activations a matmul with weight `w` reads: x, or x quantized to
  /// q8_1 with quantizedActivations, for weights whose integer kernels pay
  /// on the CPU target and rows circuit.quantize's lowering takes (it
  /// stages a row in 32 KiB of workgroup memory: up to 7168 values): q8_0
  /// and q4_0 (in a prompt chunk with K a multiple of 64: the CPU target's
  /// integer register tile; per-row integer products do not beat the f32
  /// kernels that decode each weight block once for several rows), and
  /// q4_k with K a multiple of 256 (its integer tile), and q6_k with K a
  /// multiple of 256 in one-token steps (demo file: decode 1068 -> 1202
  /// tok/s; a prompt chunk is faster in f32, whose kernel decodes a block
  /// once for a tile of weight rows by x rows: pp64 3150 against 2270;
  /// q5_k's integer kernels lose in both), and q2_k and the ternary i2_s
  /// and tq2_0 where the CPU target's integer tile takes them, weight rows
  /// a multiple of 16 (decode and prefill 1.4-2x on BitNet files; the
  /// per-row integer kernels, a word at a time, lose to the f32 vector
  /// kernels: a tq2_0 FFN of 1792 took decode from 1353 to 955 tok/s on
  /// them). Each
  /// x is quantized once, so the matmuls that read it still fuse (Q/K/V
  /// into a multi_matmul, gate and up into a gated_matmul); the
  /// quantization fuses into the RMSNorm before it where there is one.
  Value activationsFor(Value x, Value w) {
    constexpr int64_t kMaxQuantizedRow = 7168;
    auto wType = cast<RankedTensorType>(w.getType());
    int64_t k = wType.getShape().back();
    Type element = wType.getElementType();
    bool integerKernel = (isa<Q8_0Type, Q4_0Type>(element) &&
                          (rows == 1 || k % 64 == 0)) ||
                         (isa<Q4_KType>(element) && k % 256 == 0) ||
                         (isa<Q2_KType, I2_SType, TQ2_0Type>(element) &&
                          wType.getDimSize(0) % 16 == 0) ||
                         (isa<Q6_KType>(element) && rows == 1 &&
                          k % 256 == 0);
    if (!quantizedActivations || !integerKernel || k % 32 != 0 ||
        k > kMaxQuantizedRow)
      return x;
    Value &q = quantized[x];
    if (!q)
      q = g.quantize(x, Q8_1Type::get(g.getContext()));
    return q;
  }

  /// x · Wᵀ for the projection `base` (its GGUF name without ".weight"),
  /// times its "<base>.scale" tensor when the file has one. (An i2_s
  /// tensor's own scale is part of the tensor, read by the kernel.)
  Value project(Value x, const std::string &base) {
    Value w = weight(base + ".weight");
    x = activationsFor(x, w);
    SmallVector<Value> scales;
    if (model.file().tensor(base + ".scale"))
      scales.push_back(weight(base + ".scale"));
    if (scales.empty())
      return g.matmul(x, w);
    return g.matmul(x, w, scales,
                    [](ExpBuilder &e, Value, Value acc, ValueRange in) {
                      for (Value scale : in)
                        acc = e.mul(acc, scale);
                      return acc;
                    });
  }

  Value add(Value a, Value b) {
    return g.zip(a, b, [](ExpBuilder &e, Value p, Value q) {
      return e.add(p, q);
    });
  }

  /// The rows of lookup table `name` for the step's tokens ([rows, width],
  /// the table's element type, f32 for a quantized one). A table past the
  /// gather's 32-bit indices is bound as row ranges (arguments "<name>@<k>"
  /// whose circuit.rows say which rows): each
  /// range's gather reads zeros for tokens outside it (an index past its
  /// end), and the ranges' rows are added.
  Value lookupRows(const std::string &name, Value tokens) {
    const rt::GgufTensor &t = model.weight(name);
    const int64_t width = t.dims[0];
    Model::TableChunks c = model.lookupChunks(name);
    auto gatherRange = [&](Value table, int64_t first, int64_t count) {
      return g.gather(table, ValueRange{tokens}, vec(width),
                      [&](ExpBuilder &e, Value lane, ValueRange a) {
                        Value column =
                            rows == 1 ? lane : e.remConst(lane, width);
                        if (c.chunks == 1)
                          return e.add(e.mul(a[0], e.i32(width)), column);
                        Value row = e.sub(a[0], e.i32(first));
                        Value inside = e.cmp(
                            CmpPredicate::ult, row, e.i32(count));
                        return e.select(
                            inside, e.add(e.mul(row, e.i32(width)), column),
                            e.i32(count * width));
                      });
    };
    if (c.chunks == 1)
      return gatherRange(weight(name), 0, c.rows);
    Type element = elementTypeFor(g.getContext(), t.type);
    SmallVector<Value> parts;
    for (int64_t k = 0; k < c.chunks; ++k) {
      const int64_t first = k * c.rowsPerChunk;
      const int64_t count = std::min(c.rowsPerChunk, c.rows - first);
      std::string argName = name + "@" + std::to_string(k);
      Value range =
          g.externalWeight(argName, {count, width}, element, name, first);
      parts.push_back(gatherRange(range, first, count));
    }
    const bool f32 =
        cast<RankedTensorType>(parts[0].getType()).getElementType().isF32();
    return g.map(ValueRange(parts), vec(width), g.f32(),
                 [&](ExpBuilder &e, Value, ValueRange a) {
                   Value sum = f32 ? a[0] : e.toF32(a[0]);
                   for (Value v : a.drop_front())
                     sum = e.add(sum, f32 ? v : e.toF32(v));
                   return sum;
                 });
  }

  /// gemma4's per-layer inputs of the chunk's tokens, [rows, P * layers]:
  /// (per_layer_token_embd[token] · sqrt(P) + rmsnorm_P(per_layer_model_proj
  /// · x / sqrt(dim)) · per_layer_proj_norm) / sqrt(2), the norm over each
  /// layer's P values.
  Value buildPerLayerInputs(Value tokens, Value x) {
    const int64_t pl = hp.perLayerDim, all = pl * hp.layers;
    Value rowsOfTable = lookupRows("per_layer_token_embd.weight", tokens);
    Value projected = g.matmul(x, weight("per_layer_model_proj.weight"));
    // llama.cpp's float constants: 1/sqrtf(dim), sqrtf(P), 1/sqrtf(2).
    const double toProj = double(1.0f / std::sqrt(float(hp.dim)));
    Value scaled = g.map(ValueRange{projected}, {rows * hp.layers, pl},
                         g.f32(), [&](ExpBuilder &e, Value, ValueRange a) {
                           return e.mul(a[0], e.f32(toProj));
                         });
    Value normed =
        g.rmsNorm(scaled, weight("per_layer_proj_norm.weight"), hp.eps);
    const double tokScale = double(std::sqrt(float(pl)));
    const double half = double(1.0f / std::sqrt(2.0f));
    const bool f32Table =
        cast<RankedTensorType>(rowsOfTable.getType()).getElementType().isF32();
    return g.map(ValueRange{normed, rowsOfTable}, {true, false}, vec(all),
                 g.f32(), [&](ExpBuilder &e, Value lane, ValueRange a) {
                   Value tok = f32Table ? a[1] : e.toF32(a[1]);
                   Value sum = e.add(GraphBuilder::extract(e, a[0], lane),
                                     e.mul(tok, e.f32(tokScale)));
                   return e.mul(sum, e.f32(half));
                 });
  }

  /// c·tanh(t/c), elementwise.
  Value softcap(Value t, double c) {
    return g.map(ValueRange{t}, cast<RankedTensorType>(t.getType()).getShape(),
                 g.f32(), [&](ExpBuilder &e, Value, ValueRange a) {
                   return e.mul(e.tanh(e.mul(a[0], e.f32(1.0 / c))),
                                e.f32(c));
                 });
  }

  /// `t` ([n]) read as `shape` (same element count).
  Value reshape(Value t, ArrayRef<int64_t> shape) {
    return g.map(ValueRange{t}, shape, g.f32(),
                 [](ExpBuilder &, Value, ValueRange a) { return a[0]; });
  }

  /// RMSNorm of each head of `t` ([heads * headDim] per token) with one
  /// weight [headDim] shared by the heads (qwen3's Q/K norms). The result
  /// stays [rows * heads, headDim]: the RoPE kernel reads it whole, by
  /// flat index, so no reshape (and no kernel) is needed after it.
  Value headNorm(Value t, int64_t heads, int64_t headDim, Value w) {
    Value perHead = reshape(t, {rows * heads, headDim});
    return g.rmsNorm(perHead, w, hp.eps);
  }

  /// The cache position of row `r` of the step (null: a one-row step):
  /// pos + r, or in a batch step (seqLen > 0) the row's entry of pos.
  /// `posArg` is pos as a map or scatter body reads it (whole in a batch
  /// step, its one element otherwise).
  Value rowPosition(ExpBuilder &e, Value posArg, Value r) {
    if (seqLen > 0)
      return GraphBuilder::extract(e, posArg, r ? r : e.i32(0));
    return r ? e.add(posArg, r) : posArg;
  }

  /// The step's rotations for frequencies `freqs` ([F]): per row r and
  /// pair p, cos and sin of local position * freqs[p] (times ggml's
  /// attn_factor) at [(r F + p) 2] and [(r F + p) 2 + 1]. Computed once
  /// per step and shared by every layer that rotates with `freqs`, so the
  /// scatter that rotates Q and K reads them instead of evaluating cos and
  /// sin for each element of every head (on the CPU target a libm call
  /// each, which also kept that loop scalar).
  Value ropeTable(Value freqs) {
    Value &table = ropeTables[freqs];
    if (table)
      return table;
    const int64_t f = cast<RankedTensorType>(freqs.getType()).getDimSize(0);
    const double mscale = hp.ropeAttnFactor;
    table = g.map(
        {pos, freqs}, {seqLen > 0, true}, {rows * f * 2}, g.f32(),
        [&](ExpBuilder &e, Value lane, ValueRange a) {
          Value rp = e.divConst(lane, 2);
          Value isSin = e.cmp(CmpPredicate::eq, e.remConst(lane, 2), e.i32(1));
          Value r = e.divConst(rp, f), p = e.remConst(rp, f);
          // In a batch step the rotation takes the row's position in its
          // sequence.
          Value position = rowPosition(e, a[0], rows > 1 ? r : Value());
          Value local = seqLen > 0 ? e.remConst(position, seqLen) : position;
          Value theta =
              e.mul(e.toF32(local), GraphBuilder::extract(e, a[1], p));
          Value value = e.select(isSin, e.sin(theta), e.cos(theta));
          return mscale != 1 ? e.mul(value, e.f32(mscale)) : value;
        });
    return table;
  }

  /// RoPE of Q and K and the K/V cache writes, as one scatter_multi over
  /// the lanes of Q: lane l of token r (at position pos + r) writes
  /// rope(q)[l] into a fresh buffer and, for l < kvDim, rope(k)[l] and v[l]
  /// into cache row pos + r (other lanes aim past the caches, which a
  /// scatter skips; so do rows past the cache). A q8_0 cache is written in
  /// whole blocks: the scatter stages its rows in f32 ([rows, kvDim]) and
  /// circuit.write_rows quantizes them into the cache. The first ropeDims
  /// dimensions of each head rotate by position * rope_freqs[pair]; the rest
  /// pass through. `biases` (qwen2's, optional: {bq, bk, bv}) are added to
  /// q, k and v as they are read. Returns {q rotated, K cache, V cache}.
  SmallVector<Value> ropeAndCache(Value q, Value k, Value v, Value kCache,
                                  Value vCache, ArrayRef<Value> biases,
                                  Value freqs, const LayerShape &shape) {
    const int64_t hd = shape.headDim, nRot = shape.ropeDims, half = nRot / 2;
    const int64_t tablePairs =
        cast<RankedTensorType>(freqs.getType()).getDimSize(0);
    const int64_t qDim = shape.qDim(), kvDim = shape.kvDim();
    const int64_t cacheElems = ctx * kvDim;
    const bool neox = hp.ropeType == RopeType::NeoX;
    Value qRot = g.zeros(vec(qDim), g.f32());
    // A layer that shares another's cache (gemma4) rotates q alone.
    const bool writesCache = bool(kCache);
    if (!writesCache)
      k = v = q;
    SmallVector<Value> inputs{q, k, v, pos, ropeTable(freqs)};
    SmallVector<bool> whole{true, true, true, seqLen > 0, true};
    for (Value bias : biases) {
      inputs.push_back(bias);
      whole.push_back(true);
    }
    const bool biased = !biases.empty();
    const bool kStaged = writesCache && cacheTypes.k == CacheType::Q8_0;
    const bool vStaged = writesCache && cacheTypes.v == CacheType::Q8_0;
    SmallVector<Value> destinations{qRot};
    if (writesCache)
      destinations.append(
          {kStaged ? g.zeros({rows, kvDim}, g.f32()) : kCache,
           vStaged ? g.zeros({rows, kvDim}, g.f32()) : vCache});
    SmallVector<Value> written = g.scatterMulti(
        destinations, rows * qDim, inputs, whole,
        [&](ExpBuilder &e, Value lane, ValueRange a) {
          // The token of this lane, its cache position (in a batch step
          // the row's global one) and its lane in the row.
          Value r, l = lane;
          if (rows > 1) {
            r = e.divConst(lane, qDim);
            l = e.remConst(lane, qDim);
          }
          Value position = rowPosition(e, a[3], r);
          // Element `i` (flat) of q, k or v (`which`), its bias added.
          auto element = [&](int which, Value i, int64_t width) {
            Value value = GraphBuilder::extract(e, a[which], i);
            if (!biased)
              return value;
            Value at = rows > 1 ? e.remConst(i, width) : i;
            return e.add(value, GraphBuilder::extract(e, a[5 + which], at));
          };
          // Rotates element `i` (a flat index) of q or k (`which`, rows of
          // `width`).
          auto rotate = [&](int which, Value i, int64_t width) {
            Value d = e.remConst(i, hd);
            Value rowStart = e.sub(i, d);
            Value rotated = e.cmp(CmpPredicate::lt, d, e.i32(nRot));
            Value other, pair, first;
            if (neox) {
              Value lower = e.cmp(CmpPredicate::lt, d, e.i32(half));
              other = e.select(lower, e.add(d, e.i32(half)),
                               e.sub(d, e.i32(half)));
              pair = e.remConst(d, half);
              first = lower;
            } else {
              other =
                  exp::XorOp::create(e.builder(), e.location(), d, e.i32(1));
              pair = e.divConst(d, 2);
              first = e.cmp(CmpPredicate::eq, e.remConst(d, 2), e.i32(0));
            }
            Value self = element(which, i, width);
            Value partner = element(
                which, e.add(rowStart, e.select(rotated, other, d)), width);
            // This row's cos and sin of the pair (ropeTable); past nRot
            // cos 1 and sin 0: the value passes through.
            Value at = e.select(rotated, pair, e.i32(0));
            if (rows > 1)
              at = e.add(e.mul(r, e.i32(tablePairs)), at);
            at = e.mul(at, e.i32(2));
            Value c = e.select(rotated, GraphBuilder::extract(e, a[4], at),
                               e.f32(1.0));
            Value sn = e.select(
                rotated, GraphBuilder::extract(e, a[4], e.add(at, e.i32(1))),
                e.f32(0.0));
            // First of a pair: x cos - x' sin; second: x cos + x' sin.
            Value xc = e.mul(self, c), ps = e.mul(partner, sn);
            return e.select(first, e.sub(xc, ps), e.add(xc, ps));
          };
          if (!writesCache)
            return SmallVector<Value>{lane, rotate(0, lane, qDim)};
          Value kvLane = kvDim == qDim ? l : e.min(l, e.i32(kvDim - 1));
          if (rows > 1)
            kvLane = e.add(e.mul(r, e.i32(kvDim)), kvLane);
          Value inCache = e.cmp(CmpPredicate::lt, l, e.i32(kvDim));
          Value at =
              e.select(inCache, e.add(e.mul(position, e.i32(kvDim)), l),
                       e.i32(cacheElems));
          // A staged row's element: the token's row of [rows, kvDim].
          Value stagedAt = e.select(inCache, kvLane, e.i32(rows * kvDim));
          // The cache writes round to the caches' types.
          auto stored = [&](Value v, CacheType type) {
            return type == CacheType::F16 ? e.convert(v, g.f16()) : v;
          };
          return SmallVector<Value>{
              lane, rotate(0, lane, qDim), kStaged ? stagedAt : at,
              stored(rotate(1, kvLane, kvDim), cacheTypes.k),
              vStaged ? stagedAt : at,
              stored(element(2, kvLane, kvDim), cacheTypes.v)};
        });
    if (kStaged)
      written[1] = g.writeRows(written[1], pos, kCache);
    if (vStaged)
      written[2] = g.writeRows(written[2], pos, vCache);
    return written;
  }

  Value layer(int64_t l, Value x) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const LayerShape &shape = hp.layer(l);
    const bool ownsCache = shape.kvSource == l;
    Value h = g.rmsNorm(x, weight(b + "attn_norm.weight"), hp.eps);
    Value q = project(h, b + "attn_q");
    Value k, v;
    if (ownsCache) {
      k = project(h, b + "attn_k");
      // gemma4 without attn_v uses K's projection (before K's norm) as V.
      v = shape.hasV ? project(h, b + "attn_v") : k;
    }
    // Biases go into the RoPE kernel, except where a head norm comes
    // between (then they are added before it).
    SmallVector<Value> biases;
    if (hp.qkvBias) {
      biases = {weight(b + "attn_q.bias"), weight(b + "attn_k.bias"),
                weight(b + "attn_v.bias")};
      if (hp.qkNorm) {
        q = add(q, biases[0]);
        k = add(k, biases[1]);
        v = add(v, biases[2]);
        biases.clear();
      }
    }
    if (hp.qkNorm) {
      q = headNorm(q, shape.heads, shape.headDim,
                   weight(b + "attn_q_norm.weight"));
      if (ownsCache)
        k = headNorm(k, shape.kvHeads, shape.headDim,
                     weight(b + "attn_k_norm.weight"));
    }
    // gemma4 normalizes V per head too, without a weight.
    if (ownsCache && hp.vNorm)
      v = headNorm(v, shape.kvHeads, shape.headDim, Value());
    Value kCache, vCache;
    if (ownsCache) {
      const int64_t cacheElems = ctx * shape.kvDim();
      kCache = g.external("cache_k." + std::to_string(l), {cacheElems},
                          cacheElement(cacheTypes.k), circuit::ArgRole::Cache);
      vCache = g.external("cache_v." + std::to_string(l), {cacheElems},
                          cacheElement(cacheTypes.v), circuit::ArgRole::Cache);
    }
    const bool swa = shape.slidingWindow;
    SmallVector<Value> written =
        ropeAndCache(q, k, v, kCache, vCache, biases,
                     swa && freqsSwa ? freqsSwa : freqs, shape);
    q = written[0];
    if (ownsCache) {
      caches[l] = {written[1], written[2]};
    }
    auto [kRead, vRead] = caches[shape.kvSource];
    Value attn = g.decodeAttention(q, kRead, vRead, pos, shape.heads,
                                   shape.kvHeads, shape.headDim, hp.attnScale,
                                   hp.attnSoftcap,
                                   swa ? hp.slidingWindow : 0, seqLen);
    if (hp.subNorms)
      attn = g.rmsNorm(attn, weight(b + "attn_sub_norm.weight"), hp.eps);
    Value attnOut = project(attn, b + "attn_output");
    if (hp.postNorms)
      attnOut =
          g.rmsNorm(attnOut, weight(b + "post_attention_norm.weight"), hp.eps);
    x = add(x, attnOut);

    Value n = g.rmsNorm(x, weight(b + "ffn_norm.weight"), hp.eps);
    // qwen3moe's and Mixtral's experts take the dense FFN's place.
    if (hp.experts && hp.arch != "gemma4")
      return add(x, experts(project(n, b + "ffn_gate_inp"), n, b, false));
    Value gate = project(n, b + "ffn_gate");
    Value up = project(n, b + "ffn_up");
    Value act = g.zip(gate, up, [&](ExpBuilder &e, Value a, Value c) {
      return e.mul(activate(e, a), c);
    });
    if (hp.subNorms)
      act = g.rmsNorm(act, weight(b + "ffn_sub_norm.weight"), hp.eps);
    Value ffnOut = project(act, b + "ffn_down");
    // gemma4's MoE layers run the experts beside the dense FFN, on the
    // same residual, and add the two after a post-norm each.
    if (shape.moe) {
      Value mlp =
          g.rmsNorm(ffnOut, weight(b + "post_ffw_norm_1.weight"), hp.eps);
      Value moe = g.rmsNorm(gemma4Experts(x, b, shape),
                            weight(b + "post_ffw_norm_2.weight"), hp.eps);
      ffnOut = add(mlp, moe);
    }
    if (hp.postNorms)
      ffnOut = g.rmsNorm(ffnOut, weight(b + "post_ffw_norm.weight"), hp.eps);
    x = add(x, ffnOut);

    // gemma4's per-layer embedding: gelu(inp_gate · x) times this layer's
    // slice of the per-layer inputs, projected back, normalized, added.
    if (perLayerInputs) {
      const int64_t pl = hp.perLayerDim, all = pl * hp.layers;
      Value gate = project(x, b + "inp_gate");
      Value gated = g.map(
          ValueRange{gate, perLayerInputs}, {false, true}, vec(pl), g.f32(),
          [&](ExpBuilder &e, Value lane, ValueRange a) {
            Value r = rows > 1 ? e.divConst(lane, pl) : e.i32(0);
            Value c = rows > 1 ? e.remConst(lane, pl) : lane;
            Value at = e.add(e.mul(r, e.i32(all)), e.add(e.i32(l * pl), c));
            return e.mul(e.gelu(a[0]), GraphBuilder::extract(e, a[1], at));
          });
      Value back = project(gated, b + "proj");
      x = add(x, g.rmsNorm(back, weight(b + "post_norm.weight"), hp.eps));
    }
    if (shape.outScale) {
      Value scale = weight(b + "layer_output_scale.weight");
      x = g.map(ValueRange{x, scale}, vec(hp.dim), g.f32(),
                [](ExpBuilder &e, Value, ValueRange a) {
                  return e.mul(a[0], a[1]);
                });
    }
    return x;
  }

  /// The gated FFN's activation of the gate product `a`.
  Value activate(ExpBuilder &e, Value a) {
    switch (hp.ffnActivation) {
    case FfnActivation::SiLU:
      return e.silu(a);
    case FfnActivation::GeluTanh:
      return e.gelu(a);
    case FfnActivation::ReluSquared: {
      Value r = e.max(a, e.f32(0.0));
      return e.mul(r, r);
    }
    case FfnActivation::Relu:
      break;
    }
    return e.max(a, e.f32(0.0));
  }

  /// gemma4's experts on the residual `x` (llama.cpp's gemma4 graph): the
  /// router reads rms_norm(x) (no weight) / sqrt(dim) times
  /// ffn_gate_inp.scale, the experts pre_ffw_norm_2(x).
  Value gemma4Experts(Value x, const std::string &b, const LayerShape &shape) {
    const int64_t dim = hp.dim;
    const float invRoot = 1.0f / std::sqrt(float(dim));
    Value scaled = g.map(
        ValueRange{g.rmsNorm(x, Value(), hp.eps),
                   weight(b + "ffn_gate_inp.scale")},
        vec(dim), g.f32(), [&](ExpBuilder &e, Value, ValueRange a) {
          return e.mul(e.mul(a[0], e.f32(invRoot)), a[1]);
        });
    Value logits = g.matmul(scaled, weight(b + "ffn_gate_inp.weight"));
    Value xe = g.rmsNorm(x, weight(b + "pre_ffw_norm_2.weight"), hp.eps);
    return experts(logits, xe, b, shape.mergedGateUp);
  }

  /// The merged gate/up experts ([E, 2F, D]) bound as two weights of 2E - 1
  /// matrices of F rows that one id selects in both: matrix 2i of the
  /// first (from row 0) is expert i's gate, matrix 2i of the second (from
  /// row F) its up. Named as the separate tensors would be.
  std::pair<Value, Value> mergedGateUp(const std::string &b) {
    const int64_t e = hp.experts, f = hp.expertFfn;
    const std::string tensor = b + "ffn_gate_up_exps.weight";
    Type element = elementTypeFor(g.getContext(), model.weight(tensor).type);
    // Each layer's experts are built once, so each half is bound once.
    auto half = [&](const std::string &name, int64_t firstRow) {
      return g.externalWeight(name, {2 * e - 1, f, hp.dim}, element, tensor,
                              firstRow);
    };
    return {half(b + "ffn_gate_exps.weight", 0),
            half(b + "ffn_up_exps.weight", f)};
  }

  /// The mixture-of-experts FFN: the router's `logits` ([E] or [rows, E])
  /// choose, per token, the experts that layer `b` applies to `n` ([dim]
  /// or [rows, dim]). The router's top-k is written with reductions: an
  /// expert's rank is the count of experts more probable than it (or as
  /// probable, at a lower index), and slot s holds the expert of rank s.
  /// Only the chosen experts' weights are read (circuit.expert_matmul).
  Value experts(Value logits, Value n, const std::string &b,
                bool mergedGateUp) {
    const int64_t e = hp.experts, k = hp.expertsUsed, dim = hp.dim;
    Value probs = g.softmax(logits);
    // rank[t, i] = #{j : p_j > p_i, or p_j == p_i and j < i}
    Value rank = g.reduceOver(
        ReduceKind::sum, {rows * e, e}, ValueRange{probs}, {true},
        [&](ExpBuilder &eb, Value lane, ValueRange a) {
          Value j = eb.remConst(lane, e);
          Value row = eb.divConst(lane, e); // t * e + i
          Value i = eb.remConst(row, e);
          Value pi = GraphBuilder::extract(eb, a[0], row);
          Value pj = GraphBuilder::extract(eb, a[0],
                                           eb.add(eb.sub(row, i), j));
          Value before = eb.select(eb.cmp(CmpPredicate::lt, j, i),
                                   eb.f32(1.0), eb.f32(0.0));
          return eb.select(eb.cmp(CmpPredicate::gt, pj, pi), eb.f32(1.0),
                           eb.select(eb.cmp(CmpPredicate::eq, pj, pi), before,
                                     eb.f32(0.0)));
        });
    // slot[t, s] = the expert whose rank is s (a sum with one term).
    Value chosen = g.reduceOver(
        ReduceKind::sum, {rows * k, e}, ValueRange{rank}, {true},
        [&](ExpBuilder &eb, Value lane, ValueRange a) {
          Value i = eb.remConst(lane, e);
          Value row = eb.divConst(lane, e); // t * k + s
          Value t = eb.divConst(row, k), s = eb.remConst(row, k);
          Value r = GraphBuilder::extract(
              eb, a[0], eb.add(eb.mul(t, eb.i32(e)), i));
          return eb.select(eb.cmp(CmpPredicate::eq, r, eb.toF32(s)),
                           eb.toF32(i), eb.f32(0.0));
        });
    Value ids = g.map(ValueRange{chosen}, vec(k), g.i32(),
                      [](ExpBuilder &eb, Value, ValueRange a) {
                        return eb.toI32(a[0]);
                      });
    // The chosen probabilities, renormalized over the slots (in slot
    // order; the sum at least 2^-14, as llama.cpp clamps it), times
    // expert_weights_scale when the file has one, and times the chosen
    // expert's ffn_down_exps.scale (gemma4) when it has those.
    const double scale = hp.expertWeightsScale;
    SmallVector<Value> routed{probs, ids};
    const bool outScales =
        model.file().tensor(b + "ffn_down_exps.scale") != nullptr;
    if (outScales)
      routed.push_back(weight(b + "ffn_down_exps.scale"));
    Value weights = g.map(
        routed, SmallVector<bool>(routed.size(), true), vec(k), g.f32(),
        [&](ExpBuilder &eb, Value lane, ValueRange a) {
          Value t = eb.divConst(lane, k);
          Value first = eb.mul(t, eb.i32(k)), base = eb.mul(t, eb.i32(e));
          auto chosenProb = [&](Value slot) {
            Value id = GraphBuilder::extract(eb, a[1], slot);
            return GraphBuilder::extract(eb, a[0], eb.add(base, id));
          };
          Value sum = chosenProb(first);
          for (int64_t s = 1; s < k; ++s)
            sum = eb.add(sum, chosenProb(eb.add(first, eb.i32(s))));
          sum = eb.max(sum, eb.f32(6.103515625e-5));
          Value w = eb.div(chosenProb(lane), sum);
          if (scale > 0)
            w = eb.mul(w, eb.f32(scale));
          if (outScales)
            w = eb.mul(w, GraphBuilder::extract(
                              eb, a[2], GraphBuilder::extract(eb, a[1], lane)));
          return w;
        });
    Value gate, up;
    if (mergedGateUp) {
      auto [gateW, upW] = this->mergedGateUp(b);
      Value twice = g.map(ValueRange{ids}, vec(k), g.i32(),
                          [](ExpBuilder &eb, Value, ValueRange a) {
                            return eb.mul(a[0], eb.i32(2));
                          });
      gate = g.expertMatmul(n, twice, gateW);
      up = g.expertMatmul(n, twice, upW);
    } else {
      gate = g.expertMatmul(n, ids, weight(b + "ffn_gate_exps.weight"));
      up = g.expertMatmul(n, ids, weight(b + "ffn_up_exps.weight"));
    }
    Value act = g.zip(gate, up, [&](ExpBuilder &eb, Value a, Value c) {
      return eb.mul(activate(eb, a), c);
    });
    Value down = g.expertMatmul(act, ids, weight(b + "ffn_down_exps.weight"));
    // The slots' outputs, weighted, added in slot order.
    return g.map(ValueRange{down, weights}, {true, true}, vec(dim), g.f32(),
                 [&](ExpBuilder &eb, Value lane, ValueRange a) {
                   Value t = eb.divConst(lane, dim), d = eb.remConst(lane, dim);
                   Value sum;
                   for (int64_t s = 0; s < k; ++s) {
                     Value slot = eb.add(eb.mul(t, eb.i32(k)), eb.i32(s));
                     Value term = eb.mul(
                         GraphBuilder::extract(eb, a[1], slot),
                         GraphBuilder::extract(
                             eb, a[0], eb.add(eb.mul(slot, eb.i32(dim)), d)));
                     sum = s == 0 ? term : eb.add(sum, term);
                   }
                   return sum;
                 });
  }

  Type cacheElement(CacheType type) {
    switch (type) {
    case CacheType::F16:
      return g.f16();
    case CacheType::Q8_0:
      return Q8_0Type::get(g.getContext());
    case CacheType::F32:
      break;
    }
    return g.f32();
  }

  GraphBuilder &g;
  const Model &model;
  const LlamaHParams &hp;
  int64_t ctx;
  int64_t rows; ///< tokens per step: 1 for decode, the chunk for prefill
  bool lastRowOnly; ///< a chunk's logits for its last token only
  CacheTypes cacheTypes; ///< the KV caches' element types
  bool quantizedActivations; ///< GraphOptions::quantizedActivations
  llvm::DenseMap<Value, Value> quantized; ///< x -> x in q8_1
  int64_t seqLen = 0; ///< a batch step's positions per sequence (0: none)
  Value x, pos, freqs;
  Value freqsSwa; ///< the sliding-window layers' RoPE frequencies, if own
  /// ropeTable's tables, by their frequencies.
  llvm::DenseMap<Value, Value> ropeTables;
  /// gemma4's per-layer inputs, [rows, perLayerDim * layers] (null: none).
  Value perLayerInputs;
  /// Each owning layer's K and V cache after its write (shared layers read
  /// their source's).
  std::map<int64_t, std::pair<Value, Value>> caches;
  std::map<std::string, Value> weights; ///< one argument per GGUF tensor
};
} // namespace

void hesper::models::buildDecodeGraph(GraphBuilder &g, const Model &model,
                                      int64_t contextSize, int64_t tokens,
                                      bool lastRowOnly, GraphOptions options) {
  DecodeGraphEmitter(g, model, contextSize, tokens, lastRowOnly, options)
      .emit();
}

LogicalResult hesper::models::buildLayerGraph(GraphBuilder &g,
                                             const Model &model,
                                             int64_t contextSize,
                                             int64_t layer) {
  return DecodeGraphEmitter(g, model, contextSize, 1, false).emitLayer(layer);
}

void hesper::models::buildBatchGraph(GraphBuilder &g, const Model &model,
                                     int64_t seqLen, int64_t sequences,
                                     int64_t rows, GraphOptions options) {
  DecodeGraphEmitter emitter(g, model, seqLen, rows, false, options);
  emitter.setBatch(seqLen, sequences);
  emitter.emit();
}

/// Moves `next`'s graphs to the end of `module` (or makes `next` the module
/// when there is none yet).
static void appendGraphs(OwningOpRef<ModuleOp> &module,
                         OwningOpRef<ModuleOp> next) {
  if (!module) {
    module = std::move(next);
    return;
  }
  for (Operation &op : llvm::make_early_inc_range(*next->getBody()))
    op.moveAfter(&module->getBody()->back());
}

OwningOpRef<ModuleOp>
hesper::models::buildBatchModule(MLIRContext *context, const Model &model,
                                 int64_t seqLen, int64_t sequences,
                                 ArrayRef<int64_t> rowCounts,
                                 GraphOptions options) {
  OwningOpRef<ModuleOp> module;
  for (int64_t rows : rowCounts) {
    GraphBuilder g(context, batchGraphName(rows));
    buildBatchGraph(g, model, seqLen, sequences, rows, options);
    OwningOpRef<ModuleOp> next = g.finish();
    if (!next)
      return nullptr;
    appendGraphs(module, std::move(next));
  }
  return module;
}

std::string hesper::models::batchGraphName(int64_t rows) {
  return "batch" + std::to_string(rows);
}

std::string hesper::models::tailChunkGraphName(int64_t rows) {
  return "prefill" + std::to_string(rows);
}

OwningOpRef<ModuleOp> hesper::models::buildModelModule(
    MLIRContext *context, const Model &model, int64_t contextSize,
    int64_t batch, bool allLogits, GraphOptions options) {
  OwningOpRef<ModuleOp> module;
  {
    GraphBuilder g(context, "decode");
    buildDecodeGraph(g, model, contextSize, 1, false, options);
    module = g.finish();
  }
  if (!module || batch <= 1)
    return module;
  SmallVector<std::pair<std::string, int64_t>> chunks{{"prefill", batch}};
  for (int64_t rows : tailChunkRows(batch))
    chunks.push_back({tailChunkGraphName(rows), rows});
  for (auto &[name, rows] : chunks) {
    GraphBuilder g(context, name);
    buildDecodeGraph(g, model, contextSize, rows, !allLogits, options);
    OwningOpRef<ModuleOp> next = g.finish();
    if (!next)
      return nullptr;
    appendGraphs(module, std::move(next));
  }
  return module;
}
