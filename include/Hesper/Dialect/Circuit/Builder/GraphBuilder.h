//===- GraphBuilder.h - C++ API for building Circuit graphs ----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// GraphBuilder builds a `circuit.graph` the way a model author thinks of it:
// register external buffers, then apply primitives whose per-lane bodies are
// C++ lambdas over an ExpBuilder. Composite builders (rms_norm, layer_norm,
// softmax, rope) emit the primitives they are made of; the fusion passes
// merge them later.
//
//   GraphBuilder g(&context, "rmsnorm");
//   Value x = g.external("x", {256}, g.f32());
//   Value w = g.external("w", {256}, g.f32());
//   g.output(g.rmsNorm(x, w, 1e-6));
//   OwningOpRef<ModuleOp> module = g.finish();
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_BUILDER_GRAPHBUILDER_H
#define HESPER_DIALECT_CIRCUIT_BUILDER_GRAPHBUILDER_H

#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"
#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Dialect/Exp/Utils/ExpBuilder.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <utility>

namespace hesper {
namespace circuit {

/// Pairing of rotary embeddings: NeoX rotates element d with d + head_dim/2;
/// the original (GPT-J, "normal") layout rotates adjacent pairs (2j, 2j+1).
enum class RopeStyle { Normal, NeoX };

class GraphBuilder {
public:
  using Value = mlir::Value;
  using ValueRange = mlir::ValueRange;

  /// Computes one element from the lane index and the inputs' elements.
  using LaneFn =
      llvm::function_ref<Value(exp::ExpBuilder &, Value lane, ValueRange)>;
  /// Computes an (address, value) pair for a scatter.
  using ScatterFn = llvm::function_ref<std::pair<Value, Value>(
      exp::ExpBuilder &, Value lane, ValueRange)>;
  /// Computes N (address, value) pairs, flattened, for a scatter_multi.
  using MultiScatterFn = llvm::function_ref<llvm::SmallVector<Value>(
      exp::ExpBuilder &, Value lane, ValueRange)>;
  /// Computes one element from the lane, a reduced (or accumulated) f32 and
  /// the inputs' elements.
  using EpilogueFn = llvm::function_ref<Value(exp::ExpBuilder &, Value lane,
                                              Value acc, ValueRange)>;

  /// Starts an empty graph named `name` inside a new module. The context must
  /// have the circuit and exp dialects loaded (the constructor loads them).
  GraphBuilder(mlir::MLIRContext *context, llvm::StringRef name);
  ~GraphBuilder();

  mlir::MLIRContext *getContext() const { return context; }
  mlir::Type f32() const;
  mlir::Type f16() const;
  mlir::Type i32() const;
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                                    mlir::Type element) const;

  //===--------------------------------------------------------------------===//
  // Graph structure
  //===--------------------------------------------------------------------===//

  /// Registers an external buffer: a new graph argument, named in its
  /// `circuit.name` argument attribute, with its role in `circuit.role`
  /// (ArgRoles.h; left out for ArgRole::Input).
  Value external(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                 mlir::Type element, ArgRole role = ArgRole::Input);
  /// An i32 external of role `role` (tokens, targets) whose elements index
  /// something of `bound` entries (`circuit.bound`).
  Value externalIndices(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                        ArgRole role, int64_t bound);
  /// An external buffer of role `weight` that binds tensor `tensor` of the
  /// model file (`circuit.tensor`), or, with `firstRow`, the shape[0] rows
  /// of it from that row on (`circuit.rows`).
  Value externalWeight(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                       mlir::Type element, llvm::StringRef tensor,
                       std::optional<int64_t> firstRow = std::nullopt);
  /// A fresh zero-filled buffer.
  Value zeros(llvm::ArrayRef<int64_t> shape, mlir::Type element);
  /// Sets the graph results (may be called once).
  void output(ValueRange results);
  /// Verifies the graph and hands over the module; returns null (after
  /// emitting diagnostics) if verification fails.
  mlir::OwningOpRef<mlir::ModuleOp> finish();
  /// The graph under construction.
  GraphOp getGraph() const { return graph; }
  /// The builder that appends to the graph's body (to clone ops into it).
  mlir::OpBuilder &getOpBuilder() { return builder; }

  //===--------------------------------------------------------------------===//
  // Primitives
  //===--------------------------------------------------------------------===//

  /// A tensor of `shape` x `element` computed per lane from `inputs`.
  Value map(ValueRange inputs, llvm::ArrayRef<int64_t> shape,
            mlir::Type element, LaneFn body);
  /// As above, with `whole[k]` set for inputs the body takes whole (as
  /// tensors, read with circuit.extract) instead of element by element.
  Value map(ValueRange inputs, llvm::ArrayRef<bool> whole,
            llvm::ArrayRef<int64_t> shape, mlir::Type element, LaneFn body);
  /// Pointwise over one tensor; the result has its shape and element type.
  Value map(Value x, llvm::function_ref<Value(exp::ExpBuilder &, Value)> fn);
  /// Pointwise over two tensors (the second may broadcast); the result has
  /// the first's shape and element type.
  Value zip(Value a, Value b,
            llvm::function_ref<Value(exp::ExpBuilder &, Value, Value)> fn);
  /// Elements of `source` at addresses computed per lane.
  Value gather(Value source, ValueRange inputs, llvm::ArrayRef<int64_t> shape,
               LaneFn address);
  /// As above, with `whole[k]` set for inputs the body reads whole.
  Value gather(Value source, ValueRange inputs, llvm::ArrayRef<bool> whole,
               llvm::ArrayRef<int64_t> shape, LaneFn address);
  /// Rows `indices[s]` of the [R, D] `table`: a [S, D] gather (an
  /// embedding lookup) whose body circuit-autodiff recognizes, transposing
  /// it into a scatter_add. An index outside [0, R) reads a zero row.
  Value gatherRows(Value table, Value indices);
  /// Writes per-lane (address, value) pairs into `dest`.
  Value scatter(Value dest, int64_t grid, ValueRange inputs, ScatterFn body);
  /// The [rows, D] sums of the [S, D] `source` rows into rows `indices[s]`
  /// (circuit.scatter_add).
  Value scatterAdd(Value source, Value indices, int64_t rows);
  /// Writes per-lane pairs into several destinations from one grid.
  llvm::SmallVector<Value> scatterMulti(ValueRange dests, int64_t grid,
                                        ValueRange inputs,
                                        MultiScatterFn body);
  /// As above, with `whole[k]` set for inputs the body takes whole (read
  /// with extract at computed indices).
  llvm::SmallVector<Value> scatterMulti(ValueRange dests, int64_t grid,
                                        ValueRange inputs,
                                        llvm::ArrayRef<bool> whole,
                                        MultiScatterFn body);
  /// Copies `src` (flattened) into `dest` starting at element `offset`.
  Value writeSlice(Value dest, Value src, int64_t offset);
  /// Reduces the last axis of `x`; the result is [rows..., 1] f32.
  Value reduce(ReduceKind kind, Value x);
  /// Reduces the per-lane values `prologue` computes from `inputs`.
  Value reduce(ReduceKind kind, ValueRange inputs, LaneFn prologue);
  /// As above, with `whole[k]` set for inputs the prologue reads whole.
  Value reduce(ReduceKind kind, ValueRange inputs, llvm::ArrayRef<bool> whole,
               LaneFn prologue);
  /// Reduces over an explicit iteration shape `over` (the result is
  /// [over[0..n-1], 1]); the prologue computes each value, typically from
  /// whole inputs read at computed indices.
  Value reduceOver(ReduceKind kind, llvm::ArrayRef<int64_t> over,
                   ValueRange inputs, llvm::ArrayRef<bool> whole,
                   LaneFn prologue);
  /// Reads element `index` (an i32) of a whole-tensor body argument.
  static Value extract(exp::ExpBuilder &e, Value tensor, Value index);
  /// Reduces each row of inputs[0], then computes every element of the row.
  Value reduceEpilogue(ReduceKind kind, ValueRange inputs, mlir::Type element,
                       EpilogueFn epilogue);
  /// x · wᵀ for a [N, K] weight.
  Value matmul(Value x, Value weight);
  /// x · wᵀ with an epilogue over the accumulator and `extra` inputs.
  Value matmul(Value x, Value weight, ValueRange extra, EpilogueFn epilogue);
  /// The experts' products x_row · W[ids[r]]ᵀ for each row r of `ids`
  /// ([S] or [T, S] i32) with [E, N, K] `weight`; `x` has one row per token
  /// or one per slot (circuit.expert_matmul). The result is ids' shape
  /// plus [N].
  Value expertMatmul(Value x, Value ids, Value weight);
  /// Quantizes to a block format (q8_1 or q8_0).
  Value quantize(Value x, mlir::Type quantElement);
  /// Stores the rows of `values` ([rows, D]) as rows pos[0] + r (or
  /// pos[r]) of `dest` in its element type (circuit.write_rows); returns
  /// the updated `dest`.
  Value writeRows(Value values, Value pos, Value dest);

  //===--------------------------------------------------------------------===//
  // Composites (decomposed into primitives)
  //===--------------------------------------------------------------------===//

  /// x * rsqrt(mean(x²) + eps) * w over the last axis: a reduce and three
  /// maps. A null `weight` normalizes only.
  Value rmsNorm(Value x, Value weight, double eps);
  /// Two-pass layer norm ((x - mean) * rsqrt(var + eps) * w + b); the
  /// variance is the mean of squared deviations, never E[x²] - mean².
  Value layerNorm(Value x, Value weight, Value bias, double eps);
  /// Numerically stable softmax over the last axis: max, exp(x - max), sum,
  /// divide.
  Value softmax(Value x);
  /// Rotary position embedding of `x` ([heads, headDim] or flat), at the
  /// position held in the i32 tensor `pos` of shape [1]; `freqFactors`
  /// (optional, [headDim/2] f32) divides each frequency.
  Value rope(Value x, Value pos, int64_t headDim, double base, RopeStyle style,
             Value freqFactors = {});
  /// Decode-step attention of one query token: `q` is [heads*headDim]; the
  /// caches are [maxSeq, kvHeads, headDim] (flat), valid up to position
  /// `pos` (an i32 [1] tensor) inclusive; heads share KV heads in groups of
  /// heads/kvHeads. Returns [heads*headDim]. Decomposes into a reduction
  /// for the scores (reading the K cache in place), a causal mask, softmax,
  /// a reduction over the positions (reading the V cache in place), and a
  /// reshape.
  Value attention(Value q, Value kCache, Value vCache, Value pos,
                  int64_t heads, int64_t kvHeads, int64_t headDim,
                  int64_t maxSeq);

  /// The transpose of a [rows, cols] tensor (a gather; a quantized tensor
  /// is read as f32).
  Value transpose(Value x);
  /// Mean cross-entropy of `logits` [rows, vocab] against the i32
  /// `targets` [rows]: the mean over rows of logsumexp(row) - row[target],
  /// the log-softmax computed stably (the row maximum subtracted first).
  /// Returns [1].
  Value crossEntropy(Value logits, Value targets);
  /// Causal self-attention over a sequence, the training form: `q`, `k`
  /// and `v` are [seq, heads * headDim]; row t attends to rows 0..t. Built
  /// per head from slice gathers, Q·Kᵀ and P·V matmuls, a masked softmax
  /// and scatters that put the heads side by side, so circuit-autodiff
  /// differentiates it. Returns [seq, heads * headDim].
  Value causalSelfAttention(Value q, Value k, Value v, int64_t heads);

  /// The same attention as one `circuit.attention` primitive (one kernel,
  /// reading only positions 0..pos of the caches); `scale` multiplies the
  /// scores (1/sqrt(headDim) for most models); a positive `softcap`
  /// squashes the scores to softcap·tanh(s/softcap), a positive `window`
  /// limits each row to its last `window` positions (sliding-window
  /// attention). A positive `seqLen` splits the caches into sequences of
  /// that many positions and takes one global position per row in `pos`
  /// (continuous batching: rows of different sequences in one step).
  Value decodeAttention(Value q, Value kCache, Value vCache, Value pos,
                        int64_t heads, int64_t kvHeads, int64_t headDim,
                        double scale, double softcap = 0, int64_t window = 0,
                        int64_t seqLen = 0);

private:
  /// A reduce with a prologue, result `shape`, and `over` if not null.
  Value buildReduce(ReduceKind kind, llvm::ArrayRef<int64_t> shape,
                    ValueRange inputs, llvm::ArrayRef<bool> whole,
                    mlir::DenseI64ArrayAttr over, LaneFn prologue);
  /// Creates `op`'s region block with `leading` then the inputs' element
  /// types as arguments and fills it with `fill`, which returns the yielded
  /// values.
  void buildBody(mlir::Region &region, llvm::ArrayRef<mlir::Type> leading,
                 ValueRange inputs,
                 llvm::function_ref<llvm::SmallVector<Value>(
                     exp::ExpBuilder &, mlir::Block *)>
                     fill,
                 llvm::ArrayRef<bool> whole = {});

  mlir::MLIRContext *context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GraphOp graph;
  mlir::OpBuilder builder;
  mlir::Location loc;
  bool hasOutput = false;
};

} // namespace circuit
} // namespace hesper

#endif // HESPER_DIALECT_CIRCUIT_BUILDER_GRAPHBUILDER_H
