//===- TrainGraph.h - Graphs of a training step --------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The Circuit graphs that train a decoder-only transformer of the `llama`
// architecture on byte sequences:
//
//   @loss(params..., tokens, targets) -> loss           (the forward pass)
//   @loss_grad(...)                                     (circuit-autodiff)
//   @logits(params..., tokens) -> logits [seq, vocab]
//   @train_step(params..., m..., v..., tokens, targets, step)
//       -> (loss, gradient norm, learning rate)
//
// @train_step is the whole step as one graph, so one recorded command list:
// the forward pass, the gradients circuit-autodiff derives from it, global
// gradient-norm clipping, the learning-rate schedule (linear warmup, then
// cosine decay) and AdamW, which updates the parameters and both moment
// estimates in place.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_TRAINGRAPH_H
#define HESPER_MODELS_TRAINGRAPH_H

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hesper {
namespace train {

/// The model: llama's layer (RMSNorm, rotary attention with adjacent-pair
/// rotation, SwiGLU feed-forward), one sequence of `seq` tokens per step.
struct ModelShape {
  int64_t vocab = 256;
  int64_t dim = 256;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t ffn = 1024;
  int64_t seq = 128;
  double eps = 1e-5;
  double ropeBase = 10000.0;
  int64_t headDim() const { return dim / heads; }
};

/// AdamW (bias-corrected, ε outside the square root; weightDecay 0 is
/// Adam), clipping by global gradient norm (clipNorm 0: off), and a
/// learning rate that rises linearly over `warmup` steps to `lr`, then
/// follows a cosine down to `minLr` at `totalSteps`.
struct OptimizerConfig {
  double lr = 1e-3;
  double minLr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  double clipNorm = 1.0;
  int64_t warmup = 100;
  int64_t totalSteps = 1000;
};

/// One parameter tensor: its GGUF name and row-major shape ([out, in] for
/// a matrix, as GGUF stores it).
struct Parameter {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numElements() const;
};

/// The parameters in the order the graphs take them.
std::vector<Parameter> parameters(const ModelShape &shape);

/// A shape the graphs can be built for, or a message saying why not.
std::string checkShape(const ModelShape &shape);

/// The module with the four graphs above; null after a diagnostic.
mlir::OwningOpRef<mlir::ModuleOp>
buildTrainingModule(mlir::MLIRContext *context, const ModelShape &shape,
                    const OptimizerConfig &optimizer);

/// Appends the optimizer to a step graph: the global norm of `grads`, the
/// clipping factor, the learning rate and bias corrections of `step` (an
/// f32 [1] tensor holding the 0-based step), and one scatter_multi per
/// weight that updates it and its moments `m` and `v` in place. Appends the
/// gradient norm and the learning rate (f32 [1] each) to `outputs`.
void appendOptimizer(circuit::GraphBuilder &g, llvm::ArrayRef<mlir::Value> weights,
                     llvm::ArrayRef<mlir::Value> grads,
                     llvm::ArrayRef<mlir::Value> m,
                     llvm::ArrayRef<mlir::Value> v, mlir::Value step,
                     const OptimizerConfig &optimizer,
                     llvm::SmallVectorImpl<mlir::Value> &outputs);

/// The learning rate of (0-based) step `step`, as @train_step computes it.
double learningRate(const OptimizerConfig &optimizer, int64_t step);

} // namespace train
} // namespace hesper

#endif // HESPER_MODELS_TRAINGRAPH_H
