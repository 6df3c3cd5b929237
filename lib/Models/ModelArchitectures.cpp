//===- ModelArchitectures.cpp - Gemma and BitNet loader branches ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What the loader reads and checks for the Gemma (gemma, gemma2, gemma3),
// Gemma 4 and BitNet architectures beyond the common llama-style layout, as
// llama.cpp's loaders for them do.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Model.h"

#include "ModelLoader.h"

#include <cmath>
#include <string>

using namespace hesper;
using namespace hesper::models;
using namespace hesper::models::loader;
using rt::Status;

Status Loader::gemma() {
  Status s;
  // llama.cpp scales by sqrtf(n_embd), a float.
  hp.embedScale = double(std::sqrt(float(hp.dim)));
  const bool is27B = (hp.arch == "gemma2" && hp.layers == 46) ||
                     (hp.arch == "gemma3" && hp.layers == 62);
  if (is27B)
    hp.attnScale = 1.0 / std::sqrt(double(hp.dim / hp.heads));
  if (hp.arch == "gemma")
    return Status();

  int64_t period = hp.arch == "gemma2" ? 2 : 6;
  if (!(s = count("attention.sliding_window", hp.slidingWindow,
                  hp.arch == "gemma2" ? 4096 : 0)))
    return s;
  // Layer l slides when l % period < period - 1 (llama.cpp's
  // set_swa_pattern); the pattern may also be given per layer.
  hp.swaLayers.assign(hp.layers, false);
  std::string patternKey = hp.arch + ".attention.sliding_window_pattern";
  const rt::GgufValue *pattern = file.find(patternKey);
  if (pattern && pattern->type == rt::GgufType::Array) {
    if (int64_t(pattern->array.size()) != hp.layers)
      return fail("metadata key '" + patternKey + "' has " +
                  std::to_string(pattern->array.size()) +
                  " entries, expected one per layer (" +
                  std::to_string(hp.layers) + ")");
    for (int64_t l = 0; l < hp.layers; ++l)
      hp.swaLayers[l] = pattern->array[l].i != 0;
  } else {
    if (!(s = count("attention.sliding_window_pattern", period, period)))
      return s;
    for (int64_t l = 0; l < hp.layers; ++l)
      hp.swaLayers[l] = period == 0 || l % period < period - 1;
  }

  if (hp.arch == "gemma2") {
    hp.attnSoftcap = 50.0;
    hp.finalSoftcap = 30.0;
    if (!(s = real("attn_logit_softcapping", hp.attnSoftcap)) ||
        !(s = softcap("final_logit_softcapping", hp.finalSoftcap)))
      return s;
    hp.ropeBaseSwa = hp.ropeBase;
    hp.ropeScaleSwa = hp.ropeScale;
  } else {
    // gemma3's local layers rotate with base 10000 and no scaling; its
    // logits are soft-capped only when the file says so.
    hp.ropeBaseSwa = 10000.0;
    hp.ropeScaleSwa = 1.0;
    if (!(s = softcap("final_logit_softcapping", hp.finalSoftcap)))
      return s;
  }
  return real("rope.freq_base_swa", hp.ropeBaseSwa);
}

Status Loader::gemma4() {
  Status s;
  hp.embedScale = double(std::sqrt(float(hp.dim)));
  hp.attnScale = 1.0; // the Q/K norms take the place of 1/sqrt(d)
  hp.vNorm = true;
  // The mixture-of-experts variant (llama.cpp's gemma4 graph: a layer with
  // ffn_gate_inp runs experts beside its dense FFN).
  if (!(s = count("expert_count", hp.experts, 0)) ||
      !(s = count("expert_used_count", hp.expertsUsed, 0)))
    return s;
  if (hp.experts > 0) {
    if (!(s = expertCounts()) ||
        !(s = integer("expert_feed_forward_length", hp.expertFfn, 0)))
      return s;
    if (hp.expertFfn <= 0)
      return fail("gemma4 with experts needs expert_feed_forward_length");
  }
  if (hp.ropeScale != 1)
    return fail("gemma4 with rope.scaling is not supported");
  if (!(s = integer("attention.sliding_window", hp.slidingWindow, 0)))
    return s;
  std::string patternKey = hp.arch + ".attention.sliding_window_pattern";
  const rt::GgufValue *pattern = file.find(patternKey);
  if (!pattern)
    return fail("missing metadata key '" + patternKey + "'");
  hp.swaLayers.assign(hp.layers, false);
  if (pattern->type == rt::GgufType::Array) {
    if (int64_t(pattern->array.size()) != hp.layers)
      return fail("metadata key '" + patternKey + "' has " +
                  std::to_string(pattern->array.size()) +
                  " entries, expected one per layer (" +
                  std::to_string(hp.layers) + ")");
    for (int64_t l = 0; l < hp.layers; ++l) {
      if (!isFlag(pattern->array[l]))
        return fail("metadata key '" + patternKey +
                    "' has an entry that is not a bool");
      hp.swaLayers[l] = pattern->array[l].i != 0;
    }
  } else if (isFlag(*pattern)) {
    hp.swaLayers.assign(hp.layers, pattern->i != 0);
  } else {
    return fail("metadata key '" + patternKey +
                "' is neither a bool nor an array of bools");
  }
  int64_t headDimSwa = 0, valueSwa = 0;
  if (!(s = integer("attention.key_length_swa", headDimSwa, hp.headDim)) ||
      !(s = integer("attention.value_length_swa", valueSwa, headDimSwa)) ||
      !(s = integer("rope.dimension_count_swa", hp.ropeDimsSwa,
                    hp.ropeDims)))
    return s;
  if (valueSwa != headDimSwa)
    return fail("attention.value_length_swa differs from key_length_swa "
                "(not supported)");
  if (headDimSwa % 2 || hp.ropeDimsSwa % 2 || hp.ropeDimsSwa > headDimSwa)
    return fail("rope.dimension_count_swa " +
                std::to_string(hp.ropeDimsSwa) +
                " must be even and at most key_length_swa " +
                std::to_string(headDimSwa));
  hp.ropeBaseSwa = 10000.0; // llama.cpp's default for gemma4
  if (!(s = real("rope.freq_base_swa", hp.ropeBaseSwa)))
    return s;
  hp.ropeScaleSwa = 1;
  int64_t shared = 0;
  if (!(s = count("attention.shared_kv_layers", shared, 0)) ||
      !(s = count("embedding_length_per_layer_input", hp.perLayerDim, 0)))
    return s;
  if (shared >= hp.layers)
    return fail("attention.shared_kv_layers " + std::to_string(shared) +
                " leaves no layer with a KV cache of its own");
  hp.finalSoftcap = 30.0; // llama.cpp's default; 0 in the file: none
  if (!(s = softcap("final_logit_softcapping", hp.finalSoftcap)))
    return s;

  const int64_t ownKv = hp.layers - shared;
  for (int64_t l = 0; l < hp.layers; ++l) {
    LayerShape &shape = hp.layerShapes[l];
    shape.slidingWindow = hp.swaLayers[l];
    shape.headDim = shape.slidingWindow ? headDimSwa : hp.headDim;
    shape.ropeDims = shape.slidingWindow ? hp.ropeDimsSwa : hp.ropeDims;
    if (shape.heads % shape.kvHeads)
      return fail("layer " + std::to_string(l) + ": head_count " +
                  std::to_string(shape.heads) +
                  " is not a multiple of head_count_kv " +
                  std::to_string(shape.kvHeads));
    // A shared layer reads the cache of the last own layer of its kind
    // (llama.cpp: n_kv_from_start - 2 for sliding-window layers, - 1
    // for the others).
    shape.kvSource = l;
    if (l >= ownKv) {
      int64_t source = ownKv - (shape.slidingWindow ? 2 : 1);
      if (source < 0 || hp.swaLayers[source] != shape.slidingWindow ||
          hp.layerShapes[source].kvHeads != shape.kvHeads)
        return fail("layer " + std::to_string(l) +
                    " shares the KV cache of layer " +
                    std::to_string(source) +
                    ", which is not a layer of its kind");
      shape.kvSource = source;
    }
    std::string b = "blk." + std::to_string(l) + ".";
    shape.hasV = file.tensor(b + "attn_v.weight") != nullptr;
    shape.outScale = file.tensor(b + "layer_output_scale.weight") != nullptr;
    shape.moe = file.tensor(b + "ffn_gate_inp.weight") != nullptr;
    shape.mergedGateUp =
        file.tensor(b + "ffn_gate_up_exps.weight") != nullptr;
    if (shape.moe && hp.experts == 0)
      return fail("layer " + std::to_string(l) +
                  " has a router (ffn_gate_inp) but the file gives no "
                  "expert_count");
  }
  return Status();
}

Status Loader::gemma4Tensors() {
  Status s;
  if (!(s = expect("token_embd.weight", {hp.dim, hp.vocab})) ||
      !(s = lookupTable("token_embd.weight")) ||
      (!hp.tiedHead && !(s = expect("output.weight", {hp.dim, hp.vocab}))) ||
      !(s = expect("output_norm.weight", {hp.dim})))
    return s;
  bool anyGlobal = false;
  for (const LayerShape &shape : hp.layerShapes)
    anyGlobal |= !shape.slidingWindow;
  hp.ropeFreqFactors = file.tensor("rope_freqs.weight") != nullptr;
  if ((anyGlobal || hp.ropeFreqFactors) &&
      !(s = expect("rope_freqs.weight", {hp.headDim / 2})))
    return s;
  const int64_t pl = hp.perLayerDim, all = hp.perLayerDim * hp.layers;
  if (pl > 0 &&
      (!(s = expect("per_layer_token_embd.weight", {all, hp.vocab})) ||
       !(s = lookupTable("per_layer_token_embd.weight")) ||
       !(s = expect("per_layer_model_proj.weight", {hp.dim, all})) ||
       !(s = expect("per_layer_proj_norm.weight", {pl}))))
    return s;
  for (int64_t l = 0; l < hp.layers; ++l) {
    const LayerShape &shape = hp.layerShapes[l];
    std::string b = "blk." + std::to_string(l) + ".";
    if (!(s = expect(b + "attn_norm.weight", {hp.dim})) ||
        !(s = expect(b + "attn_q.weight", {hp.dim, shape.qDim()})) ||
        !(s = expect(b + "attn_q_norm.weight", {shape.headDim})) ||
        !(s = expect(b + "attn_output.weight", {shape.qDim(), hp.dim})) ||
        !(s = expect(b + "post_attention_norm.weight", {hp.dim})) ||
        !(s = expect(b + "ffn_norm.weight", {hp.dim})) ||
        !(s = expect(b + "ffn_gate.weight", {hp.dim, shape.ffn})) ||
        !(s = expect(b + "ffn_up.weight", {hp.dim, shape.ffn})) ||
        !(s = expect(b + "ffn_down.weight", {shape.ffn, hp.dim})) ||
        !(s = expect(b + "post_ffw_norm.weight", {hp.dim})))
      return s;
    if (shape.moe) {
      const int64_t e = hp.experts, f = hp.expertFfn, d = hp.dim;
      if (!(s = expect(b + "ffn_gate_inp.weight", {d, e})) ||
          !(s = expect(b + "ffn_gate_inp.scale", {d})) ||
          !(s = expect(b + "pre_ffw_norm_2.weight", {d})) ||
          !(s = expect(b + "post_ffw_norm_1.weight", {d})) ||
          !(s = expect(b + "post_ffw_norm_2.weight", {d})) ||
          !(s = expect(b + "ffn_down_exps.weight", {f, d, e})))
        return s;
      if (shape.mergedGateUp
              ? !(s = expect(b + "ffn_gate_up_exps.weight", {d, 2 * f, e}))
              : (!(s = expect(b + "ffn_gate_exps.weight", {d, f, e})) ||
                 !(s = expect(b + "ffn_up_exps.weight", {d, f, e}))))
        return s;
      if (file.tensor(b + "ffn_down_exps.scale") &&
          !(s = expect(b + "ffn_down_exps.scale", {e})))
        return s;
    }
    if (shape.kvSource == l &&
        (!(s = expect(b + "attn_k.weight", {hp.dim, shape.kvDim()})) ||
         !(s = expect(b + "attn_k_norm.weight", {shape.headDim})) ||
         (shape.hasV &&
          !(s = expect(b + "attn_v.weight", {hp.dim, shape.kvDim()})))))
      return s;
    if (shape.outScale &&
        !(s = expect(b + "layer_output_scale.weight", {1})))
      return s;
    if (pl > 0 && (!(s = expect(b + "inp_gate.weight", {hp.dim, pl})) ||
                   !(s = expect(b + "proj.weight", {pl, hp.dim})) ||
                   !(s = expect(b + "post_norm.weight", {hp.dim}))))
      return s;
  }
  return Status();
}

Status Loader::bitnetActivation() {
  std::string key = hp.arch + ".hidden_activation";
  const rt::GgufValue *value = file.find(key);
  if (!value)
    return Status();
  if (value->type != rt::GgufType::String)
    return fail("metadata key '" + key + "' is not a string");
  const std::string &act = value->str;
  if (act == "silu" || act == "swish" || act == "swiglu")
    hp.ffnActivation = FfnActivation::SiLU;
  else if (act == "relu2")
    hp.ffnActivation = FfnActivation::ReluSquared;
  else if (act == "relu" || act == "reglu")
    hp.ffnActivation = FfnActivation::Relu;
  else
    return fail("metadata key '" + key + "' names the activation '" + act +
                "' (supported: silu, swish, swiglu, relu2, relu, reglu)");
  return Status();
}
