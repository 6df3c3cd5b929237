//===- Model.cpp - A transformer model loaded from a GGUF file ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Reads the hyperparameters of a model the way llama.cpp does (its loaders
// for llama, qwen2, qwen3, qwen3moe, gemma, gemma2, gemma3, gemma4, bitnet
// and phi3) and checks that every tensor the decode graph will bind exists
// with the shape and a type the kernels read, so that problems in a file surface at load time as
// one line, never later inside the compiler or a kernel.
//
// This file holds the loader's common part and the Model methods; the Gemma,
// Gemma 4 and BitNet branches of the loader are in ModelArchitectures.cpp.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Model.h"

#include "ModelLoader.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <cstring>

using namespace hesper;
using namespace hesper::models;
using namespace hesper::models::loader;
using rt::GgmlType;
using rt::Status;

std::optional<CacheType>
hesper::models::cacheTypeByName(const std::string &name) {
  if (name == "f32")
    return CacheType::F32;
  if (name == "f16")
    return CacheType::F16;
  if (name == "q8_0")
    return CacheType::Q8_0;
  return std::nullopt;
}

std::string hesper::models::parseCacheTypes(const std::string &k,
                                            const std::string &v,
                                            CacheTypes &out) {
  for (auto [flag, name, type] :
       {std::tuple<const char *, const std::string &, CacheType &>{
            "-ctk/--cache-type-k", k, out.k},
        {"-ctv/--cache-type-v", v, out.v}}) {
    std::optional<CacheType> t = cacheTypeByName(name);
    if (!t)
      return std::string(flag) + ": cache type '" + name +
             "' is not supported (supported: f32, f16, q8_0)";
    type = *t;
  }
  return "";
}

int64_t LlamaHParams::parameterCount() const {
  int64_t perLayer = 2 * dim + dim * qDim() + 2 * dim * kvDim() +
                     qDim() * dim +
                     (experts ? experts * (3 * dim * expertFfn + dim)
                              : 3 * dim * ffn);
  if (qkvBias)
    perLayer += qDim() + 2 * kvDim();
  if (qkNorm)
    perLayer += 2 * headDim;
  if (postNorms)
    perLayer += 2 * dim;
  if (subNorms)
    perLayer += dim + ffn;
  if (!layerShapes.empty() && arch == "gemma4") {
    // Per-layer shapes: count each layer's own.
    int64_t total = vocab * dim * (tiedHead ? 1 : 2) + dim;
    for (const LayerShape &l : layerShapes) {
      total += 4 * dim + 2 * l.qDim() * dim + 3 * dim * l.ffn + l.headDim;
      // Router (and its input scale), three norms, experts and their
      // output scales.
      if (l.moe)
        total += dim * experts + 4 * dim +
                 experts * (3 * dim * expertFfn + 1);
      if (l.kvSource == &l - layerShapes.data())
        total += (l.hasV ? 2 : 1) * dim * l.kvDim() + l.headDim;
    }
    if (perLayerDim > 0)
      total += perLayerDim * layers * (vocab + dim) + perLayerDim +
               layers * (2 * dim * perLayerDim + dim);
    return total;
  }
  return layers * perLayer + vocab * dim * (tiedHead ? 1 : 2) + dim;
}

/// Weight types the matmul kernels read directly.
static bool isKernelWeightType(GgmlType t) {
  return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 ||
         t == GgmlType::Q8_0 || t == GgmlType::Q4_0 ||
         t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1 ||
         t == GgmlType::Q2_K || t == GgmlType::Q3_K ||
         t == GgmlType::IQ4_NL || t == GgmlType::IQ4_XS ||
         t == GgmlType::Q4_K ||
         t == GgmlType::Q5_K || t == GgmlType::Q6_K || t == GgmlType::TQ1_0 ||
         t == GgmlType::TQ2_0 || t == GgmlType::I2_S;
}

static std::string shapeString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

rt::Result<TokenizerVocab>
hesper::models::readTokenizerVocab(const rt::GgufFile &file) {
  TokenizerVocab v;
  auto model = file.getString("tokenizer.ggml.model");
  if (!model)
    return v; // no tokenizer
  v.model = *model;
  auto fail = [&](const std::string &what) {
    return Status::error(file.path() + ": " + what);
  };
  auto stringArray = [&](const char *key, std::vector<std::string> &out,
                         bool required) -> Status {
    const rt::GgufValue *value = file.find(key);
    if (!value)
      return required ? fail(std::string("missing metadata key '") + key + "'")
                      : Status();
    if (value->type != rt::GgufType::Array ||
        value->elementType != rt::GgufType::String)
      return fail(std::string("metadata key '") + key +
                  "' is not an array of strings");
    out.reserve(value->array.size());
    for (const rt::GgufValue &e : value->array)
      out.push_back(e.str);
    return Status();
  };
  if (Status s = stringArray("tokenizer.ggml.tokens", v.tokens, true); !s)
    return s;
  if (Status s = stringArray("tokenizer.ggml.merges", v.merges, false); !s)
    return s;
  if (const rt::GgufValue *scores = file.find("tokenizer.ggml.scores")) {
    if (scores->type != rt::GgufType::Array ||
        (!scores->array.empty() && !scores->array[0].isFloat()))
      return fail("metadata key 'tokenizer.ggml.scores' is not an array of "
                  "floats");
    for (const rt::GgufValue &e : scores->array)
      v.scores.push_back(static_cast<float>(e.asNumber().value_or(0)));
  }
  if (const rt::GgufValue *types = file.find("tokenizer.ggml.token_type")) {
    if (types->type != rt::GgufType::Array ||
        (!types->array.empty() && !types->array[0].isInteger()))
      return fail("metadata key 'tokenizer.ggml.token_type' is not an array "
                  "of integers");
    for (const rt::GgufValue &e : types->array)
      v.types.push_back(static_cast<int32_t>(e.i));
  }
  if (auto pre = file.getString("tokenizer.ggml.pre"))
    v.pre = *pre;
  auto id = [&](const char *key, int32_t &out) {
    if (auto value = file.getInt(key))
      out = static_cast<int32_t>(*value);
  };
  id("tokenizer.ggml.bos_token_id", v.bos);
  id("tokenizer.ggml.eos_token_id", v.eos);
  id("tokenizer.ggml.unknown_token_id", v.unk);
  id("tokenizer.ggml.padding_token_id", v.pad);
  // llama.cpp's defaults: SentencePiece adds BOS, byte-level BPE does not
  // unless the file says so.
  v.addBos = v.model == "llama";
  if (auto b = file.getBool("tokenizer.ggml.add_bos_token"))
    v.addBos = *b;
  if (auto b = file.getBool("tokenizer.ggml.add_eos_token"))
    v.addEos = *b;
  if (auto b = file.getBool("tokenizer.ggml.add_space_prefix"))
    v.addSpacePrefix = *b;
  return v;
}

//===----------------------------------------------------------------------===//
// Loader
//===----------------------------------------------------------------------===//

Status Loader::integer(const std::string &key, int64_t &out, int64_t fallback) {
  std::string full = hp.arch + "." + key;
  const rt::GgufValue *value = file.find(full);
  if (!value) {
    if (fallback <= 0)
      return fail("missing metadata key '" + full + "'");
    out = fallback;
    return Status();
  }
  if (!value->isInteger())
    return fail("metadata key '" + full + "' is not an integer");
  if (value->i <= 0 || value->i > (int64_t(1) << 31))
    return fail("metadata key '" + full + "' has the value " +
                std::to_string(value->i) + ", expected 1 to 2^31");
  out = value->i;
  return Status();
}

Status Loader::real(const std::string &key, double &out) {
  std::string full = hp.arch + "." + key;
  const rt::GgufValue *value = file.find(full);
  if (!value)
    return Status(); // keep the default
  std::optional<double> number = value->asNumber();
  if (!number || !std::isfinite(*number) || *number <= 0)
    return fail("metadata key '" + full + "' is not a positive number");
  out = *number;
  return Status();
}

Status Loader::lookupTable(const std::string &name) {
  const rt::GgufTensor *t = file.tensor(name);
  if (t->type == GgmlType::I2_S)
    return fail("tensor '" + name +
                "' is i2_s, which the embedding lookup does not read");
  // Larger tables are bound as row ranges; a row must fit in one.
  if (t->dims[0] > hp.maxLookupValues)
    return fail("tensor '" + name + "' has rows of " +
                std::to_string(t->dims[0]) +
                " values, more than the embedding lookup's 32-bit "
                "indices reach (" + std::to_string(hp.maxLookupValues) +
                ")");
  return Status();
}

Status Loader::expect(const std::string &name, std::vector<int64_t> dims) {
  const rt::GgufTensor *t = file.tensor(name);
  if (!t)
    return fail("missing tensor '" + name + "'");
  if (t->dims != dims)
    return fail("tensor '" + name + "' has shape " + shapeString(t->dims) +
                ", expected " + shapeString(dims));
  if (dims.size() == 1 && t->type != GgmlType::F32)
    return fail("tensor '" + name + "' has type " +
                rt::ggmlTypeName(t->type) + ", expected f32");
  if (dims.size() >= 2 && !isKernelWeightType(t->type))
    return fail("tensor '" + name + "' has type " +
                rt::ggmlTypeName(t->type) +
                ", which the matmul kernels do not read yet (supported: "
                "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, "
                "iq4_xs, q2_k, q3_k, q4_k, q5_k, q6_k, tq1_0, tq2_0, i2_s)");
  // The k-quant kernels read whole super-blocks per row.
  if (dims.size() >= 2 && dims[0] % rt::ggmlBlockSize(t->type) != 0)
    return fail("tensor '" + name + "' rows of " + std::to_string(dims[0]) +
                " elements are not whole " + rt::ggmlTypeName(t->type) +
                " blocks");
  return Status();
}

Status Loader::run() {
  auto arch = file.getString("general.architecture");
  if (!arch)
    return fail("missing metadata key 'general.architecture'");
  hp.arch = *arch;
  if (hp.arch == "llama") {
    hp.ropeType = RopeType::Norm;
  } else if (hp.arch == "qwen2") {
    hp.ropeType = RopeType::NeoX;
    hp.qkvBias = true;
  } else if (hp.arch == "qwen3" || hp.arch == "qwen3moe") {
    hp.ropeType = RopeType::NeoX;
    hp.qkNorm = true;
  } else if (hp.arch == "bitnet") {
    hp.ropeType = RopeType::NeoX;
    hp.subNorms = true;
    if (Status s = bitnetActivation(); !s)
      return s;
  } else if (hp.arch == "phi3") {
    // Phi-3, Phi-3.5 and Phi-4-mini: llama's layer with fused projection
    // tensors (Model::weightRows) and LongRoPE factors. llama.cpp reads but
    // disables the sliding window its files may state (Phi SWA "currently
    // disabled"), so every layer here attends over the whole cache too.
    hp.ropeType = RopeType::NeoX;
    hp.fusedGateUp = true;
    hp.fusedQkv = file.tensor("blk.0.attn_qkv.weight") != nullptr;
  } else if (isGemma() || hp.arch == "gemma4") {
    hp.ropeType = RopeType::NeoX;
    hp.ffnActivation = FfnActivation::GeluTanh;
    hp.postNorms = hp.arch != "gemma";
    hp.qkNorm = hp.arch == "gemma3" || hp.arch == "gemma4";
  } else {
    return fail("unsupported architecture '" + hp.arch +
                "' (supported: llama, qwen2, qwen3, qwen3moe, gemma, "
                "gemma2, gemma3, gemma4, bitnet, phi3)");
  }

  Status s;
  // gemma4 may give head counts and FFN widths per layer.
  std::vector<int64_t> headsPerLayer, kvHeadsPerLayer, ffnPerLayer;
  if (!(s = integer("embedding_length", hp.dim, 0)) ||
      !(s = integer("block_count", hp.layers, 0)) ||
      !(s = perLayer("feed_forward_length", hp.ffn, 0, ffnPerLayer)) ||
      !(s = perLayer("attention.head_count", hp.heads, 0, headsPerLayer)) ||
      !(s = perLayer("attention.head_count_kv", hp.kvHeads, hp.heads,
                     kvHeadsPerLayer)) ||
      !(s = integer("context_length", hp.contextLength, 2048)))
    return s;
  if (hp.arch != "gemma4" &&
      (headsPerLayer.size() || kvHeadsPerLayer.size() || ffnPerLayer.size()))
    return fail("per-layer head counts or FFN widths are supported for "
                "gemma4 only");
  // As llama.cpp: without head_count_kv, every layer's is its head count.
  if (kvHeadsPerLayer.empty() && !headsPerLayer.empty() &&
      !file.find(hp.arch + ".attention.head_count_kv"))
    kvHeadsPerLayer = headsPerLayer;
  if (hp.dim % hp.heads != 0 &&
      !file.find(hp.arch + ".attention.key_length"))
    return fail("embedding_length " + std::to_string(hp.dim) +
                " is not a multiple of head_count " +
                std::to_string(hp.heads));
  if (!(s = integer("attention.key_length", hp.headDim,
                    hp.dim / hp.heads)))
    return s;
  int64_t valueLength = 0;
  if (!(s = integer("attention.value_length", valueLength, hp.headDim)))
    return s;
  if (valueLength != hp.headDim)
    return fail("attention.value_length " + std::to_string(valueLength) +
                " differs from key_length " + std::to_string(hp.headDim) +
                " (not supported)");
  if (hp.heads % hp.kvHeads != 0)
    return fail("head_count " + std::to_string(hp.heads) +
                " is not a multiple of head_count_kv " +
                std::to_string(hp.kvHeads));
  if (hp.headDim % 2 != 0)
    return fail("head dimension " + std::to_string(hp.headDim) +
                " is odd");
  if (!(s = integer("rope.dimension_count", hp.ropeDims, hp.headDim)))
    return s;
  if (hp.ropeDims > hp.headDim || hp.ropeDims % 2 != 0)
    return fail("rope.dimension_count " + std::to_string(hp.ropeDims) +
                " must be even and at most the head dimension " +
                std::to_string(hp.headDim));
  if (!(s = real("attention.layer_norm_rms_epsilon", hp.eps)) ||
      !(s = real("rope.freq_base", hp.ropeBase)))
    return s;
  std::string scaling =
      file.getString(hp.arch + ".rope.scaling.type").value_or("none");
  if (scaling == "linear") {
    if (!(s = real("rope.scaling.factor", hp.ropeScale)))
      return s;
  } else if (scaling != "none") {
    return fail("rope.scaling.type '" + scaling +
                "' is not supported (supported: none, linear)");
  }
  // Older files state linear scaling only as a factor.
  if (scaling == "none" && file.find(hp.arch + ".rope.scale_linear"))
    if (!(s = real("rope.scale_linear", hp.ropeScale)))
      return s;
  // Read for every architecture, as llama.cpp does (phi3's LongRoPE files
  // carry both).
  if (!(s = real("rope.scaling.attn_factor", hp.ropeAttnFactor)) ||
      !(s = integer("rope.scaling.original_context_length",
                    hp.ropeOrigContext, hp.contextLength)))
    return s;

  if (!(s = experts()))
    return s;
  hp.attnScale = 1.0 / std::sqrt(double(hp.headDim));
  hp.ropeDimsSwa = hp.ropeDims;
  if (isGemma() && !(s = gemma()))
    return s;
  // Every layer's shape; gemma4 then changes its own.
  hp.layerShapes.clear();
  for (int64_t l = 0; l < hp.layers; ++l) {
    LayerShape shape;
    shape.heads = headsPerLayer.empty() ? hp.heads : headsPerLayer[l];
    shape.kvHeads = kvHeadsPerLayer.empty() ? hp.kvHeads : kvHeadsPerLayer[l];
    shape.headDim = hp.headDim;
    shape.ropeDims = hp.ropeDims;
    shape.ffn = ffnPerLayer.empty() ? hp.ffn : ffnPerLayer[l];
    shape.slidingWindow = hp.isSwa(l);
    shape.kvSource = l;
    hp.layerShapes.push_back(shape);
  }
  if (hp.arch == "gemma4" && !(s = gemma4()))
    return s;

  const rt::GgufTensor *embd = file.tensor("token_embd.weight");
  if (!embd)
    return fail("missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != hp.dim)
    return fail("tensor 'token_embd.weight' has shape " +
                shapeString(embd->dims) + ", expected [" +
                std::to_string(hp.dim) + ", vocabulary]");
  hp.vocab = embd->dims[1];
  // gemma and gemma2's head is the embedding table (llama.cpp ignores
  // any output.weight); gemma3 reads output.weight when there is one.
  hp.tiedHead = hp.arch == "gemma" || hp.arch == "gemma2" ||
                hp.arch == "bitnet" ||
                file.tensor("output.weight") == nullptr;
  if (hp.arch == "gemma4")
    return gemma4Tensors();
  // The table is read in place by the embedding gather (and, tied, by
  // the LM head).
  if (!(s = expect("token_embd.weight", {hp.dim, hp.vocab})) ||
      !(s = lookupTable("token_embd.weight")))
    return s;
  if (!hp.tiedHead && !(s = expect("output.weight", {hp.dim, hp.vocab})))
    return s;
  if (!(s = expect("output_norm.weight", {hp.dim})))
    return s;
  // llama.cpp passes rope_freqs to the llama and qwen graphs only.
  const bool takesFreqFactors = hp.arch == "llama" || hp.arch == "qwen2" ||
                                hp.arch == "qwen3" || hp.arch == "qwen3moe";
  if (takesFreqFactors && file.tensor("rope_freqs.weight")) {
    hp.ropeFreqFactors = true;
    if (!(s = expect("rope_freqs.weight", {hp.ropeDims / 2})))
      return s;
  }
  // phi3's LongRoPE factors: each optional, as llama.cpp loads them.
  if (hp.arch == "phi3")
    for (const char *name :
         {"rope_factors_long.weight", "rope_factors_short.weight"})
      if (file.tensor(name)) {
        hp.longRope = true;
        if (!(s = expect(name, {hp.ropeDims / 2})))
          return s;
      }
  // llama.cpp loads Q/K/V biases for llama when present, and requires
  // them for qwen2.
  if (file.tensor("blk.0.attn_q.bias"))
    hp.qkvBias = true;

  for (int64_t l = 0; l < hp.layers; ++l) {
    std::string b = "blk." + std::to_string(l) + ".";
    if (!(s = expect(b + "attn_norm.weight", {hp.dim})) ||
        !(s = expect(b + "attn_output.weight", {hp.qDim(), hp.dim})) ||
        !(s = expect(b + "ffn_norm.weight", {hp.dim})))
      return s;
    if (hp.fusedQkv
            ? !(s = expect(b + "attn_qkv.weight",
                           {hp.dim, hp.qDim() + 2 * hp.kvDim()}))
            : (!(s = expect(b + "attn_q.weight", {hp.dim, hp.qDim()})) ||
               !(s = expect(b + "attn_k.weight", {hp.dim, hp.kvDim()})) ||
               !(s = expect(b + "attn_v.weight", {hp.dim, hp.kvDim()}))))
      return s;
    if (hp.experts) {
      const int64_t e = hp.experts, f = hp.expertFfn;
      if (!(s = expect(b + "ffn_gate_inp.weight", {hp.dim, e})) ||
          !(s = expect(b + "ffn_gate_exps.weight", {hp.dim, f, e})) ||
          !(s = expect(b + "ffn_up_exps.weight", {hp.dim, f, e})) ||
          !(s = expect(b + "ffn_down_exps.weight", {f, hp.dim, e})))
        return s;
    } else {
      if (hp.fusedGateUp
              ? !(s = expect(b + "ffn_up.weight", {hp.dim, 2 * hp.ffn}))
              : (!(s = expect(b + "ffn_gate.weight", {hp.dim, hp.ffn})) ||
                 !(s = expect(b + "ffn_up.weight", {hp.dim, hp.ffn}))))
        return s;
      if (!(s = expect(b + "ffn_down.weight", {hp.ffn, hp.dim})))
        return s;
    }
    if (hp.qkvBias &&
        (!(s = expect(b + "attn_q.bias", {hp.qDim()})) ||
         !(s = expect(b + "attn_k.bias", {hp.kvDim()})) ||
         !(s = expect(b + "attn_v.bias", {hp.kvDim()}))))
      return s;
    if (hp.qkNorm &&
        (!(s = expect(b + "attn_q_norm.weight", {hp.headDim})) ||
         !(s = expect(b + "attn_k_norm.weight", {hp.headDim}))))
      return s;
    if (hp.postNorms &&
        (!(s = expect(b + "post_attention_norm.weight", {hp.dim})) ||
         !(s = expect(b + "post_ffw_norm.weight", {hp.dim}))))
      return s;
    if (hp.subNorms &&
        (!(s = expect(b + "attn_sub_norm.weight", {hp.dim})) ||
         !(s = expect(b + "ffn_sub_norm.weight", {hp.ffn}))))
      return s;
    // Optional per-projection scales (BitNet): one f32 each.
    for (const char *proj : {"attn_q", "attn_k", "attn_v", "attn_output",
                             "ffn_gate", "ffn_up", "ffn_down"})
      if (file.tensor(b + proj + ".scale") &&
          !(s = expect(b + proj + ".scale", {1})))
        return s;
  }
  return Status();
}

Status Loader::experts() {
  // gemma4's branch refuses its mixture-of-experts variant itself.
  if (hp.arch == "gemma4")
    return Status();
  Status s;
  if (!(s = count("expert_count", hp.experts, 0)) ||
      !(s = count("expert_used_count", hp.expertsUsed, 0)))
    return s;
  if (hp.arch == "qwen3moe" && (hp.experts == 0 || hp.expertsUsed == 0))
    return fail("qwen3moe needs expert_count and expert_used_count above 0");
  if (hp.experts == 0)
    return Status();
  // llama.cpp's llama loader reads experts too (Mixtral-style files); the
  // other architectures here have none (gemma4's are refused by its own
  // branch).
  if (hp.arch != "llama" && hp.arch != "qwen3moe")
    return fail("mixture-of-experts layers (expert_count " +
                std::to_string(hp.experts) + ") are not supported for " +
                hp.arch + " (supported: llama, qwen3moe)");
  if (!(s = expertCounts()))
    return s;
  // qwen3moe's width defaults as llama.cpp's does; llama's experts are
  // feed_forward_length wide.
  if (!(s = integer("expert_feed_forward_length", hp.expertFfn,
                    hp.arch == "qwen3moe" ? hp.ffn / hp.expertsUsed
                                          : hp.ffn)))
    return s;
  if (file.find(hp.arch + ".expert_weights_scale"))
    if (!(s = real("expert_weights_scale", hp.expertWeightsScale)))
      return s;
  return Status();
}

Status Loader::expertCounts() {
  if (hp.expertsUsed < 1 || hp.expertsUsed > hp.experts)
    return fail("expert_used_count " + std::to_string(hp.expertsUsed) +
                " must be from 1 to expert_count " +
                std::to_string(hp.experts));
  if (hp.experts > 1024)
    return fail("expert_count " + std::to_string(hp.experts) +
                " is above the 1024 experts the router supports");
  return Status();
}

Status Loader::perLayer(const std::string &key, int64_t &out, int64_t fallback,
                        std::vector<int64_t> &perLayerValues) {
  std::string full = hp.arch + "." + key;
  const rt::GgufValue *value = file.find(full);
  if (!value || value->type != rt::GgufType::Array)
    return integer(key, out, fallback);
  if (int64_t(value->array.size()) != hp.layers)
    return fail("metadata key '" + full + "' has " +
                std::to_string(value->array.size()) +
                " entries, expected one per layer (" +
                std::to_string(hp.layers) + ")");
  for (const rt::GgufValue &v : value->array) {
    if (!v.isInteger() || v.i <= 0 || v.i > (int64_t(1) << 31))
      return fail("metadata key '" + full +
                  "' has an entry that is not an integer from 1 to 2^31");
    perLayerValues.push_back(v.i);
  }
  out = perLayerValues.front();
  return Status();
}

Status Loader::count(const std::string &key, int64_t &out, int64_t fallback) {
  std::string full = hp.arch + "." + key;
  const rt::GgufValue *value = file.find(full);
  out = fallback;
  if (!value)
    return Status();
  if (!value->isInteger() || value->i < 0 || value->i > (int64_t(1) << 31))
    return fail("metadata key '" + full +
                "' is not an integer from 0 to 2^31");
  out = value->i;
  return Status();
}

Status Loader::softcap(const std::string &key, double &out) {
  std::string full = hp.arch + "." + key;
  const rt::GgufValue *value = file.find(full);
  if (!value)
    return Status();
  std::optional<double> number = value->asNumber();
  if (!number || !std::isfinite(*number) || *number < 0)
    return fail("metadata key '" + full +
                "' is not a non-negative number");
  out = *number;
  return Status();
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

rt::Result<std::unique_ptr<Model>> Model::load(const std::string &path) {
  auto file = rt::GgufFile::open(path);
  if (!file)
    return file.status();
  std::unique_ptr<Model> model(new Model());
  model->gguf = std::move(*file);
  return finishLoad(std::move(model), path);
}

rt::Result<std::unique_ptr<Model>>
Model::loadImage(std::vector<uint8_t> image, const std::string &what) {
  std::unique_ptr<Model> model(new Model());
  model->image = std::move(image);
  auto file =
      rt::GgufFile::parse(model->image.data(), model->image.size(), what);
  if (!file)
    return file.status();
  model->gguf = std::move(*file);
  return finishLoad(std::move(model), what);
}

/// Files older than llama.cpp's merged expert tensors store each expert's
/// matrix on its own, `blk.L.ffn_{gate,up,down}.E.weight`. Where the E
/// matrices of one layer and projection have one type and shape and lie one
/// after another in the file, they are added as the view
/// `blk.L.ffn_*_exps.weight` of all of them ([K, N, E], read in place like
/// any tensor); otherwise the file is refused (experts are read where they
/// are, never copied).
static Status viewPerExpertTensors(rt::GgufFile &file) {
  // "blk.L.<projection>" -> the tensors of experts 0, 1, ...
  std::map<std::string, std::map<int64_t, const rt::GgufTensor *>> groups;
  for (const rt::GgufTensor &t : file.tensors()) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(t.name).split(parts, '.');
    int64_t expert = 0;
    if (parts.size() != 5 || parts[0] != "blk" || parts[4] != "weight" ||
        !llvm::is_contained({"ffn_gate", "ffn_up", "ffn_down"}, parts[2]) ||
        parts[3].getAsInteger(10, expert))
      continue;
    groups["blk." + parts[1].str() + "." + parts[2].str()][expert] = &t;
  }
  for (const auto &[stem, experts] : groups) {
    const std::string merged = stem + "_exps.weight";
    if (file.tensor(merged))
      continue;
    const rt::GgufTensor &first = *experts.begin()->second;
    int64_t e = 0;
    for (const auto &[index, t] : experts) {
      if (index != e)
        return Status::error(file.path() + ": tensor '" + stem + "." +
                             std::to_string(e) + ".weight' is missing (" +
                             std::to_string(experts.size()) +
                             " per-expert tensors of " + stem + ")");
      if (t->type != first.type || t->dims != first.dims ||
          t->data != first.data + uint64_t(e) * first.bytes)
        return Status::error(
            file.path() + ": the per-expert tensors " + stem +
            ".N.weight do not share one type and shape or are not stored one "
            "after another, and the experts are read in place (expert " +
            std::to_string(e) + ")");
      ++e;
    }
    rt::GgufTensor view = first;
    view.name = merged;
    view.dims.push_back(e);
    view.numElements = first.numElements * e;
    view.bytes = first.bytes * uint64_t(e);
    file.addView(std::move(view));
  }
  return Status();
}

rt::Result<std::unique_ptr<Model>>
Model::finishLoad(std::unique_ptr<Model> model, const std::string &path) {
  if (const char *limit = std::getenv("HESPER_MAX_LOOKUP_VALUES")) {
    char *end = nullptr;
    long long v = std::strtoll(limit, &end, 10);
    if (end == limit || *end || v < 1 ||
        v > std::numeric_limits<int32_t>::max())
      return Status::error("HESPER_MAX_LOOKUP_VALUES='" + std::string(limit) +
                           "' is not a number from 1 to 2^31 - 1");
    model->hp.maxLookupValues = v;
  }
  if (Status s = viewPerExpertTensors(*model->gguf); !s)
    return s;
  if (Status s = Loader(*model->gguf, model->hp).run(); !s)
    return s;

  auto vocab = readTokenizerVocab(*model->gguf);
  if (!vocab)
    return vocab.status();
  if (!vocab->model.empty()) {
    if (static_cast<int64_t>(vocab->tokens.size()) != model->hp.vocab)
      return Status::error(path + ": the tokenizer has " +
                           std::to_string(vocab->tokens.size()) +
                           " tokens, token_embd.weight " +
                           std::to_string(model->hp.vocab) + " rows");
    std::string error;
    model->tok = Tokenizer::create(std::move(*vocab), error);
    if (!model->tok)
      return Status::error(path + ": tokenizer: " + error);
  }
  return model;
}

uint64_t Model::weightBytes() const {
  uint64_t total = 0;
  for (const rt::GgufTensor &t : gguf->tensors())
    total += t.bytes;
  return total;
}

const rt::GgufTensor &Model::weight(const std::string &name) const {
  return *gguf->tensor(name);
}

Model::TableChunks Model::lookupChunks(const std::string &name) const {
  const rt::GgufTensor &t = weight(name);
  TableChunks c;
  c.rows = t.dims.size() > 1 ? t.dims[1] : 1;
  c.rowsPerChunk = std::max<int64_t>(1, hp.maxLookupValues / t.dims[0]);
  c.chunks = (c.rows + c.rowsPerChunk - 1) / c.rowsPerChunk;
  if (c.chunks <= 1)
    c.rowsPerChunk = c.rows;
  return c;
}

rt::Status Model::tensorBytes(const std::string &name, int64_t firstRow,
                              int64_t rowCount, const uint8_t *&data,
                              uint64_t &bytes) const {
  const rt::GgufTensor *t = gguf->tensor(name);
  if (!t)
    return rt::Status::error("the model file has no tensor '" + name + "'");
  if (firstRow < 0) {
    data = t->data;
    bytes = t->bytes;
    return rt::Status();
  }
  // Rows of the last dimension: [E, N, K] has E * N of them.
  int64_t rows = 1;
  for (size_t d = 1; d < t->dims.size(); ++d)
    rows *= t->dims[d];
  if (rowCount <= 0 || firstRow + rowCount > rows)
    return rt::Status::error("rows " + std::to_string(firstRow) + ".." +
                             std::to_string(firstRow + rowCount - 1) +
                             " are outside tensor '" + name + "' (" +
                             std::to_string(rows) + " rows)");
  const uint64_t rowBytes = t->bytes / uint64_t(rows);
  data = t->data + uint64_t(firstRow) * rowBytes;
  bytes = uint64_t(rowCount) * rowBytes;
  return rt::Status();
}

std::vector<float> Model::ropeFrequencies(bool slidingWindowLayers,
                                          int64_t contextSize) const {
  const int64_t dims = slidingWindowLayers ? hp.ropeDimsSwa : hp.ropeDims;
  int64_t pairs = dims / 2;
  std::vector<float> factors(pairs, 1.0f);
  const char *factorTensor = nullptr;
  if (hp.ropeFreqFactors)
    factorTensor = "rope_freqs.weight";
  else if (hp.longRope)
    factorTensor = contextSize > hp.ropeOrigContext
                       ? "rope_factors_long.weight"
                       : "rope_factors_short.weight";
  if (factorTensor && !slidingWindowLayers && gguf->tensor(factorTensor))
    std::memcpy(factors.data(), weight(factorTensor).data,
                pairs * sizeof(float));
  const double base = slidingWindowLayers ? hp.ropeBaseSwa : hp.ropeBase;
  const double scale = slidingWindowLayers ? hp.ropeScaleSwa : hp.ropeScale;
  std::vector<float> freqs(pairs);
  for (int64_t i = 0; i < pairs; ++i)
    freqs[i] = static_cast<float>(
        std::pow(base, -2.0 * static_cast<double>(i) /
                           static_cast<double>(dims)) /
        scale / factors[i]);
  return freqs;
}

Model::WeightRows Model::weightRows(const std::string &name) const {
  WeightRows at{name, -1, 0};
  // "blk.<layer>.<projection>.weight"
  const std::string suffix = ".weight";
  const size_t dot = name.find('.', 4);
  if (name.rfind("blk.", 0) != 0 || dot == std::string::npos ||
      name.size() < dot + 1 + suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return at;
  const std::string layer = name.substr(0, dot + 1);
  const std::string what =
      name.substr(dot + 1, name.size() - suffix.size() - dot - 1);
  const int64_t q = hp.qDim(), kv = hp.kvDim();
  if (hp.fusedQkv && (what == "attn_q" || what == "attn_k" || what == "attn_v"))
    at = {layer + "attn_qkv.weight",
          what == "attn_q" ? 0 : what == "attn_k" ? q : q + kv,
          what == "attn_q" ? q : kv};
  else if (hp.fusedGateUp && (what == "ffn_gate" || what == "ffn_up"))
    at = {layer + "ffn_up.weight", what == "ffn_gate" ? 0 : hp.ffn, hp.ffn};
  return at;
}
