//===- Model.h - A transformer model loaded from a GGUF file ----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A Model is a mapped GGUF file plus what the rest of the library reads from
// it: the hyperparameters of a Llama-family architecture (llama, qwen2,
// qwen3, qwen3moe, gemma, gemma2, gemma3, gemma4 (dense), bitnet, phi3, as
// llama.cpp defines them; llama files with experts too) and the tokenizer.
// The weights stay in the mapping in their GGUF formats; a Session uploads
// them to a device.
//
//   auto model = models::Model::load("model.gguf");
//   if (!model) { print(model.status().message()); return 1; }
//   std::vector<int32_t> ids = (*model)->tokenizer()->encode("Hello");
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_MODEL_H
#define HESPER_MODELS_MODEL_H

#include "Hesper/Models/Tokenizer.h"
#include "hesper/runtime/Gguf.h"

namespace hesper::models {

/// How RoPE pairs the dimensions of a head (llama.cpp's rope types): NORM
/// rotates adjacent pairs (2i, 2i+1), NEOX rotates (i, i + n_rot/2).
enum class RopeType { Norm, NeoX };

/// The activation of the gated FFN: SwiGLU (silu(gate) * up), Gemma's
/// GeGLU with the tanh form of GELU (gelu(gate) * up), and BitNet's ReLU²
/// (relu(gate)² * up) or ReLU.
enum class FfnActivation { SiLU, GeluTanh, ReluSquared, Relu };

/// How a session stores its KV cache (llama.cpp's -ctk / -ctv): attention
/// reads it in that type, and the cache writes round (f16) or quantize
/// (q8_0, in blocks of 32 values along each position's row) to it.
enum class CacheType { F32, F16, Q8_0 };
/// "f32", "f16" or "q8_0"; nullopt for another name.
std::optional<CacheType> cacheTypeByName(const std::string &name);
/// The types of the K and the V cache.
struct CacheTypes {
  CacheType k = CacheType::F32, v = CacheType::F32;
};
/// Reads the types named by -ctk and -ctv (`k`, `v`) into `out`; "" or an
/// error naming the flag and the supported types.
std::string parseCacheTypes(const std::string &k, const std::string &v,
                            CacheTypes &out);

/// What a model's graphs are built with besides its file: the KV cache
/// types and whether projections quantize their activations.
struct GraphOptions {
  GraphOptions(CacheTypes caches = {}) : caches(caches) {}
  CacheTypes caches;
  /// Projections with q8_0, q4_0, q4_k (q6_k in one-token steps), i2_s or
  /// tq2_0 weights quantize x to q8_1 first
  /// and multiply bytes in integers (llama.cpp's CPU and MMVQ kernels do
  /// the same); off: x stays f32 and the weights are decoded to f32.
  bool quantizedActivations = false;
};

/// The shape of one layer. gemma4 varies it from layer to layer; the other
/// architectures repeat the model's.
struct LayerShape {
  int64_t heads = 0, kvHeads = 0, headDim = 0, ropeDims = 0, ffn = 0;
  bool slidingWindow = false; ///< attends through the window (SWA layer)
  /// The layer whose KV cache this one attends over: itself, or (gemma4's
  /// shared-KV layers) an earlier layer of the same kind.
  int64_t kvSource = 0;
  bool hasV = true;      ///< attn_v exists (gemma4 without it: V is Wk h)
  bool outScale = false; ///< gemma4's layer_output_scale
  /// gemma4's mixture-of-experts layer (blk.N.ffn_gate_inp exists): the
  /// experts run beside the dense FFN, each with its own post-norm.
  bool moe = false;
  /// Its experts' gate and up matrices are one tensor,
  /// blk.N.ffn_gate_up_exps ([E, 2F, D]: each expert's gate rows, then
  /// its up rows), not ffn_gate_exps and ffn_up_exps.
  bool mergedGateUp = false;
  int64_t qDim() const { return heads * headDim; }
  int64_t kvDim() const { return kvHeads * headDim; }
};

/// The hyperparameters of a Llama-family decoder, read from
/// `{arch}.*` metadata and checked against the tensors' shapes.
struct LlamaHParams {
  std::string arch;           ///< general.architecture
  int64_t dim = 0;            ///< embedding_length
  int64_t layers = 0;         ///< block_count
  int64_t heads = 0;          ///< attention.head_count
  int64_t kvHeads = 0;        ///< attention.head_count_kv (default: heads)
  int64_t headDim = 0;        ///< attention.key_length (default: dim/heads)
  int64_t ffn = 0;            ///< feed_forward_length
  int64_t vocab = 0;          ///< rows of token_embd.weight
  int64_t contextLength = 0;  ///< context_length (training context)
  int64_t ropeDims = 0;       ///< rope.dimension_count (default: headDim)
  double eps = 1e-5;          ///< attention.layer_norm_rms_epsilon
  double ropeBase = 10000;    ///< rope.freq_base
  double ropeScale = 1;       ///< linear rope.scaling.factor (1: none)
  RopeType ropeType = RopeType::Norm;
  bool qkvBias = false;       ///< qwen2: attn_{q,k,v}.bias
  bool qkNorm = false;        ///< qwen3: attn_{q,k}_norm.weight per head
  bool tiedHead = false;      ///< no output.weight: the head is token_embd
  bool ropeFreqFactors = false; ///< a rope_freqs.weight tensor divides theta

  // The Gemma family (defaults: the Llama behaviour).
  double embedScale = 1;      ///< multiplies the embedding rows (gemma: √dim)
  double attnScale = 0;       ///< multiplies q·k (set by the loader)
  double attnSoftcap = 0;     ///< gemma2: scores -> c·tanh(s/c) (0: none)
  double finalSoftcap = 0;    ///< gemma2: logits -> c·tanh(l/c) (0: none)
  FfnActivation ffnActivation = FfnActivation::SiLU;
  bool postNorms = false;     ///< gemma2/3: post_attention_norm, post_ffw_norm
  int64_t slidingWindow = 0;  ///< positions a sliding-window layer sees
  std::vector<bool> swaLayers; ///< which layers use the window (per layer)
  double ropeBaseSwa = 10000; ///< rope base of the sliding-window layers
  double ropeScaleSwa = 1;    ///< their linear rope scaling factor

  // BitNet b1.58.
  bool subNorms = false;      ///< attn_sub_norm before Wo, ffn_sub_norm before
                              ///< Wdown

  // gemma4.
  int64_t ropeDimsSwa = 0;    ///< rope.dimension_count_swa (default ropeDims)
  int64_t perLayerDim = 0;    ///< embedding_length_per_layer_input (0: none)
  bool vNorm = false;         ///< V is RMS-normalized per head, no weight

  // Mixture of experts (qwen3moe; llama with expert_count: Mixtral-style;
  // gemma4's MoE layers, LayerShape::moe).
  /// expert_count: each layer's FFN is `experts` gated FFNs of width
  /// `expertFfn` (blk.N.ffn_{gate,up,down}_exps), of which a router
  /// (blk.N.ffn_gate_inp) chooses `expertsUsed` per token by softmax and
  /// top-k, their outputs weighted by the chosen probabilities renormalized
  /// to sum 1 (times expertWeightsScale when the file gives one). 0: dense.
  int64_t experts = 0;
  int64_t expertsUsed = 0;     ///< expert_used_count
  int64_t expertFfn = 0;       ///< expert_feed_forward_length
  double expertWeightsScale = 0; ///< expert_weights_scale (0: none)

  // phi3 (Phi-3, Phi-3.5, Phi-4-mini).
  bool fusedQkv = false;    ///< blk.N.attn_qkv.weight holds the Q, K, V rows
  bool fusedGateUp = false; ///< blk.N.ffn_up.weight holds gate rows, then up
  /// LongRoPE: rope_factors_long.weight / rope_factors_short.weight divide
  /// theta, the long ones when a sequence's context exceeds ropeOrigContext.
  bool longRope = false;
  int64_t ropeOrigContext = 0; ///< rope.scaling.original_context_length
  /// rope.scaling.attn_factor: multiplies the cos and sin of the rotated
  /// dimensions of q and k (ggml_rope_ext's attn_factor; 1: none).
  double ropeAttnFactor = 1;
  /// Every layer's shape (filled by the loader for every architecture).
  std::vector<LayerShape> layerShapes;
  /// The most values one lookup-table argument may hold: the gather's
  /// element index is 32-bit, so larger tables (gemma4 E2B/E4B's
  /// per_layer_token_embd) are bound as row ranges "<name>@<k>". 2^31 - 1
  /// unless the environment variable HESPER_MAX_LOOKUP_VALUES lowers it
  /// (tests split small tables that way).
  int64_t maxLookupValues = 2147483647;
  const LayerShape &layer(int64_t l) const { return layerShapes[l]; }

  /// Whether layer `l` attends through a sliding window.
  bool isSwa(int64_t l) const {
    return slidingWindow > 0 && l < int64_t(swaLayers.size()) && swaLayers[l];
  }
  /// Whether the sliding-window layers rotate with frequencies of their own
  /// (then the graph reads them from `rope_freqs_swa`).
  bool swaHasOwnRope() const {
    return slidingWindow > 0 &&
           (ropeBaseSwa != ropeBase || ropeScaleSwa != ropeScale ||
            ropeFreqFactors || ropeDimsSwa != ropeDims);
  }

  /// The KV cache a session gets when none is asked for: the training
  /// context, capped at 4096 positions.
  int64_t defaultContextSize() const {
    return contextLength < 4096 ? contextLength : 4096;
  }
  int64_t qDim() const { return heads * headDim; }
  int64_t kvDim() const { return kvHeads * headDim; }
  /// Parameters in the weight tensors (the tied head counted once).
  int64_t parameterCount() const;
};

class Model {
public:
  /// Maps `path`, reads the hyperparameters and the tokenizer and checks
  /// every tensor the architecture needs (present, shape, type). Errors are
  /// one line: "m.gguf: unsupported architecture 'bert' (supported: llama,
  /// qwen2, qwen3, qwen3moe, gemma, gemma2, gemma3, gemma4, bitnet, phi3)".
  static rt::Result<std::unique_ptr<Model>> load(const std::string &path);
  /// As load, from a GGUF image in memory (rt::GgufWriter::image), which
  /// the model keeps; `what` names it in errors.
  static rt::Result<std::unique_ptr<Model>>
  loadImage(std::vector<uint8_t> image, const std::string &what);

  const rt::GgufFile &file() const { return *gguf; }
  const LlamaHParams &hparams() const { return hp; }
  /// The tokenizer of the file; null when the file has no tokenizer
  /// metadata (then only token ids can be fed).
  const Tokenizer *tokenizer() const { return tok.get(); }
  /// Bytes of the weights as stored.
  uint64_t weightBytes() const;

  /// A weight tensor by GGUF name (it was checked at load time).
  const rt::GgufTensor &weight(const std::string &name) const;

  /// How the lookup table `name` (rows of ggml dims[0] values) is split
  /// into graph arguments: `chunks` row ranges of `rowsPerChunk` rows (the
  /// last may be shorter), each within hparams().maxLookupValues. One
  /// chunk: the table is bound whole. (A range's graph argument declares
  /// its rows: circuit.rows.)
  struct TableChunks {
    int64_t rows = 0, rowsPerChunk = 0, chunks = 1;
  };
  TableChunks lookupChunks(const std::string &name) const;
  /// The bytes of tensor `name` of the file, or with `firstRow` >= 0 those
  /// of its rows [firstRow, firstRow + rowCount) (rows of ggml dims[0]
  /// values); an error for a tensor the file lacks or rows outside it.
  rt::Status tensorBytes(const std::string &name, int64_t firstRow,
                         int64_t rowCount, const uint8_t *&data,
                         uint64_t &bytes) const;
  /// The RoPE frequency of each rotated pair (ropeDims/2 values): base^(-2i
  /// / ropeDims), divided by the linear scale factor and by rope_freqs when
  /// the file has them, or (LongRoPE, phi3) by rope_factors_long when
  /// `contextSize` (a sequence's positions) exceeds the original context,
  /// else by rope_factors_short, as llama.cpp chooses them. With
  /// `slidingWindowLayers`, those of the sliding-window layers (their own
  /// base and scale, no rope_freqs).
  std::vector<float> ropeFrequencies(bool slidingWindowLayers = false,
                                     int64_t contextSize = 0) const;

  /// Where the weight the graph calls `name` (a GGUF tensor name) is: in
  /// `tensor`, whole when `firstRow` < 0, else its `rows` rows from
  /// `firstRow` (rows of ggml dims[0] values). phi3's fused tensors hold
  /// several: blk.N.attn_q/k/v.weight are row ranges of attn_qkv.weight,
  /// ffn_gate and ffn_up the two halves of ffn_up.weight.
  struct WeightRows {
    std::string tensor;
    int64_t firstRow = -1, rows = 0;
  };
  WeightRows weightRows(const std::string &name) const;

private:
  Model() = default;
  /// Reads the hyperparameters and the tokenizer of the parsed `gguf`.
  static rt::Result<std::unique_ptr<Model>>
  finishLoad(std::unique_ptr<Model> model, const std::string &what);
  std::vector<uint8_t> image; ///< the bytes `gguf` reads, for loadImage
  std::unique_ptr<rt::GgufFile> gguf;
  LlamaHParams hp;
  std::unique_ptr<Tokenizer> tok;
};

/// Reads the tokenizer.ggml.* metadata; an error when it is present but
/// malformed, an empty `model` when the file has none.
rt::Result<TokenizerVocab> readTokenizerVocab(const rt::GgufFile &file);

} // namespace hesper::models

#endif // HESPER_MODELS_MODEL_H
