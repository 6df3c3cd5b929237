//===- LlamaLayer.cpp - A Llama decoder layer as a Circuit graph ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The layer is not written here: the config becomes a one-layer `llama`
// GGUF image in memory (its weights zero-filled in their types: graphs bind
// their own values), the model loads from it as from any file, and the
// model's own emitter (LlamaGraph.cpp, buildLayerGraph) writes the layer.
// Examples and workloads therefore fuse and run exactly what a model does.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/LlamaLayer.h"

#include "Hesper/Models/LlamaGraph.h"
#include "Hesper/Models/Model.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::models;

/// The GGUF type whose Circuit element type is `type`.
static std::optional<rt::GgmlType> ggmlTypeOf(MLIRContext *context, Type type) {
  using rt::GgmlType;
  for (GgmlType t :
       {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
        GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
        GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K,
        GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
        GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::I2_S})
    if (elementTypeFor(context, t) == type)
      return t;
  return std::nullopt;
}

LogicalResult hesper::models::buildLlamaDecodeLayer(circuit::GraphBuilder &g,
                                                    const LlamaLayerConfig &c) {
  auto fail = [&](const std::string &message) {
    return g.getGraph().emitError("llama layer: ") << message;
  };
  MLIRContext *context = g.getContext();
  std::optional<rt::GgmlType> weightType =
      ggmlTypeOf(context, c.weightType ? c.weightType : g.f32());
  if (!weightType)
    return fail("no GGUF type holds weights of this element type");

  rt::GgufWriter w;
  w.addString("general.architecture", "llama");
  w.addU32("llama.context_length", static_cast<uint32_t>(c.maxSeq));
  w.addU32("llama.embedding_length", static_cast<uint32_t>(c.dim));
  w.addU32("llama.block_count", 1);
  w.addU32("llama.feed_forward_length", static_cast<uint32_t>(c.ffnDim));
  w.addU32("llama.attention.head_count", static_cast<uint32_t>(c.heads));
  w.addU32("llama.attention.head_count_kv", static_cast<uint32_t>(c.kvHeads));
  w.addF32("llama.rope.freq_base", static_cast<float>(c.ropeBase));
  w.addF32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(c.eps));
  // ggml dims: the row length first.
  auto add = [&](const std::string &name, std::vector<int64_t> dims,
                 rt::GgmlType type) -> rt::Status {
    std::optional<int64_t> size = rt::ggmlTensorBytes(type, dims);
    if (!size)
      return rt::Status::error("a row of " + std::to_string(dims[0]) +
                               " values is not a whole number of " +
                               rt::ggmlTypeName(type) + " blocks");
    return w.addRawTensor(name, dims, type, std::vector<uint8_t>(*size));
  };
  const int64_t kvDim = c.kvHeads * (c.dim / std::max<int64_t>(c.heads, 1));
  const int64_t vocab = 32; // the table the file needs; the layer reads none
  using rt::GgmlType;
  std::vector<std::tuple<std::string, std::vector<int64_t>, GgmlType>> tensors =
      {
          {"token_embd.weight", {c.dim, vocab}, GgmlType::F32},
          {"output_norm.weight", {c.dim}, GgmlType::F32},
          {"blk.0.attn_norm.weight", {c.dim}, GgmlType::F32},
          {"blk.0.attn_q.weight", {c.dim, c.dim}, *weightType},
          {"blk.0.attn_k.weight", {c.dim, kvDim}, *weightType},
          {"blk.0.attn_v.weight", {c.dim, kvDim}, *weightType},
          {"blk.0.attn_output.weight", {c.dim, c.dim}, *weightType},
          {"blk.0.ffn_norm.weight", {c.dim}, GgmlType::F32},
          {"blk.0.ffn_gate.weight", {c.dim, c.ffnDim}, *weightType},
          {"blk.0.ffn_up.weight", {c.dim, c.ffnDim}, *weightType},
          {"blk.0.ffn_down.weight", {c.ffnDim, c.dim}, *weightType},
      };
  for (auto &[name, dims, type] : tensors)
    if (rt::Status s = add(name, dims, type); !s)
      return fail(s.message());
  auto model = Model::loadImage(w.image(), "the llama layer's model");
  if (!model)
    return fail(model.status().message());
  return buildLayerGraph(g, **model, c.maxSeq, 0);
}
