//===- LlamaGraph.h - The decode step of a model as a Circuit graph -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Emits one decode step of a Llama-family model (llama, qwen2, qwen3, phi3,
// the Gemma versions gemma to gemma4, and bitnet) as a Circuit graph, from
// the hyperparameters and tensor types of its GGUF file.
// The graph's arguments are buffers the session binds by their declared
// role (circuit.role, Dialect/Circuit/IR/ArgRoles.h), never by their names:
//
//   tokens            [1] i32 (role tokens, circuit.bound = vocabulary)
//                                   the token ids of the step
//   pos               [1] i32 (position) the position being written
//   rope_freqs        [rope/2] f32 (rope_freqs) per-pair RoPE frequency
//                                   (Model::ropeFrequencies)
//   rope_freqs_swa    [rope/2] f32 (rope_freqs_swa) those of the sliding-
//                                   window layers, when they differ (gemma3)
//   <GGUF tensor name> (weight, circuit.tensor = the name) the weights, in
//                                   their GGUF element types ([rows, row
//                                   length], never dequantized); a lookup
//                                   table past 32-bit indices as row ranges
//                                   "<name>@<k>" with circuit.rows
//   cache_k.L, cache_v.L [ctx * kvHeads * headDim] f32 or f16 (cache, the
//                                   session's CacheTypes) KV cache of
//                                   layer L, written in place at row `pos`
//                                   (none for gemma4's layers that share
//                                   another layer's cache)
//   last              [1] i32 (last_row) in a chunk that computes one row's
//                                   logits, that row
//
// and its one result is the logits [vocab] of the token.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_LLAMAGRAPH_H
#define HESPER_MODELS_LLAMAGRAPH_H

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Models/Model.h"

namespace hesper::models {

/// The Circuit element type of a GGUF tensor type, or null for a type the
/// kernels do not read.
mlir::Type elementTypeFor(mlir::MLIRContext *context, rt::GgmlType type);

/// Builds the step of `model` for `tokens` consecutive tokens with a KV
/// cache of `contextSize` positions into `g` (the graph is named by the
/// caller). One token is the decode step; more is a prompt chunk: `x` is
/// then [tokens, dim], `pos` the position of the first token, every matmul
/// is GEMM-shaped ([tokens, K] activations), attention is causal inside the
/// chunk, and the result is the logits of every token, [tokens, vocab];
/// with `lastRowOnly`, an argument `last` ([1] i32) picks the one token
/// whose logits ([vocab]) the chunk computes.
void buildDecodeGraph(circuit::GraphBuilder &g, const Model &model,
                      int64_t contextSize, int64_t tokens = 1,
                      bool lastRowOnly = false, GraphOptions options = {});

/// The decode step of layer `layer` of `model` alone, emitted as the
/// model's graph emits it: arguments `x` ([dim] f32, the layer's input),
/// `pos`, the RoPE frequencies, the layer's weights and its KV cache; the
/// result is the layer's output [dim]. A layer that needs more of the model
/// (gemma4's per-layer inputs, a cache shared with another layer) is an
/// error.
mlir::LogicalResult buildLayerGraph(circuit::GraphBuilder &g,
                                    const Model &model, int64_t contextSize,
                                    int64_t layer = 0);

/// The module a session compiles: graph @decode (one token) and, when
/// `batch` > 1, graph @prefill (a prompt chunk of `batch` tokens, with the
/// logits of every token when `allLogits`, else of its last). Null after
/// diagnostics when a graph does not verify.
/// A batch step for continuous batching: `rows` tokens, each of one of
/// `sequences` KV-cache sequences of `seqLen` positions (the caches hold one
/// more, a scratch sequence for padding rows), at its own global position
/// (argument "pos", one per row: sequence * seqLen + position); the logits
/// of every row.
void buildBatchGraph(circuit::GraphBuilder &g, const Model &model,
                     int64_t seqLen, int64_t sequences, int64_t rows,
                     GraphOptions options = {});
/// A module of batch graphs, one per row count, named batchGraphName(rows).
mlir::OwningOpRef<mlir::ModuleOp>
buildBatchModule(mlir::MLIRContext *context, const Model &model,
                 int64_t seqLen, int64_t sequences,
                 llvm::ArrayRef<int64_t> rowCounts, GraphOptions options = {});
std::string batchGraphName(int64_t rows);

/// The graphs of a single-sequence session: "decode" (one token) and, when
/// `batch` > 1, "prefill" (prompt chunks of `batch` tokens) and one graph
/// per row count of tailChunkRows(batch) (Session.h), named
/// tailChunkGraphName(rows): the smaller chunks that take a prompt's tail.
mlir::OwningOpRef<mlir::ModuleOp>
buildModelModule(mlir::MLIRContext *context, const Model &model,
                 int64_t contextSize, int64_t batch, bool allLogits = true,
                 GraphOptions options = {});
std::string tailChunkGraphName(int64_t rows);

} // namespace hesper::models

#endif // HESPER_MODELS_LLAMAGRAPH_H
