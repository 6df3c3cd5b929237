//===- LlamaLayer.h - A Llama-style decoder layer as a Circuit graph -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// One decode step of a Llama layer (RMSNorm, Q/K/V projections, RoPE on Q
// and K, the K/V cache writes at a dynamic position, attention over the
// cache, the output projection with the residual, RMSNorm, gate/up,
// SiLU(gate)·up, the down projection with the residual) from a handful of
// sizes: the same graph a `llama` model file of those sizes gives, built by
// the model's own emitter (LlamaLayer.cpp says how).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_LLAMALAYER_H
#define HESPER_MODELS_LLAMALAYER_H

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"

namespace hesper {
namespace models {

struct LlamaLayerConfig {
  int64_t dim = 64;        ///< Model width.
  int64_t heads = 4;       ///< Query heads.
  int64_t kvHeads = 2;     ///< Key/value heads (grouped-query attention).
  int64_t ffnDim = 128;    ///< Feed-forward width.
  int64_t maxSeq = 16;     ///< Cache length.
  double ropeBase = 10000; ///< RoPE frequency base.
  double eps = 1e-5;       ///< RMSNorm epsilon.
  /// Weight element type (f32, f16 or a block format); null means f32.
  mlir::Type weightType;

  int64_t headDim() const { return dim / heads; }
};

/// Builds the layer into `g`: arguments `x` [dim], `pos` [1] i32, the RoPE
/// frequencies, the weights (named as in a GGUF file, blk.0.attn_q.weight
/// ...) and the caches cache_k.0/cache_v.0 [maxSeq*kvHeads*headDim]
/// (written in place); the result is the layer's output [dim]. Sizes a
/// model file could not have (a width that is not a multiple of the heads,
/// rows that are not whole blocks of the weight type) are an error on the
/// graph.
mlir::LogicalResult buildLlamaDecodeLayer(circuit::GraphBuilder &g,
                                          const LlamaLayerConfig &config);

} // namespace models
} // namespace hesper

#endif // HESPER_MODELS_LLAMALAYER_H
