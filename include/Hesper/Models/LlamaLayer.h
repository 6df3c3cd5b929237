//===- LlamaLayer.h - A Llama-style decoder layer as a Circuit graph -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Builds one decode step of a Llama-family transformer layer with the
// GraphBuilder API: RMSNorm, Q/K/V projections, RoPE on Q and K, the K/V
// cache writes at a dynamic position, attention over the cache, the output
// projection with the residual, RMSNorm, gate/up, SiLU(gate)·up, and the
// down projection with the residual. Model loading from GGUF fills a config
// like this one from the file's metadata.
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
  circuit::RopeStyle ropeStyle = circuit::RopeStyle::Normal;
  /// Weight element type (f32, f16 or a block format); null means f32.
  mlir::Type weightType;

  int64_t headDim() const { return dim / heads; }
};

/// Builds the layer into `g`: externals `x` [dim], `pos` [1] i32, the
/// weights, and the caches `k_cache`/`v_cache` [maxSeq*kvHeads*headDim]
/// (written in place); the graph's result is the layer output [dim].
void buildLlamaDecodeLayer(circuit::GraphBuilder &g,
                           const LlamaLayerConfig &config);

} // namespace models
} // namespace hesper

#endif // HESPER_MODELS_LLAMALAYER_H
