//===- Trainer.h - Training a small transformer on a device --*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Trains the model of TrainGraph.h on a byte corpus: compiles @train_step
// and @logits for a device, keeps the parameters and the AdamW moments in
// device buffers that the step updates in place, and replays the step's
// recorded command list once per step.
//
// Determinism: the weights come from the seed, the batch of step t from
// (seed, t) alone, and every kernel sums in a fixed order, so the same seed
// and corpus give bit-identical losses and weights run after run on one
// backend (on the CPU target for any thread count), and a run resumed from
// a checkpoint continues bit for bit as if never interrupted.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_TRAINER_H
#define HESPER_MODELS_TRAINER_H

#include "Hesper/Models/TrainGraph.h"

#include "hesper/runtime/Program.h"

#include <memory>

namespace hesper {
namespace train {

struct TrainerOptions {
  ModelShape shape;
  OptimizerConfig optimizer;
  /// Seeds the initial weights and the choice of batches.
  uint64_t seed = 1;
  /// Run hesper-fuse on the graphs (off: one kernel per primitive).
  bool fuse = true;
  /// When set, the compiler writes every stage's IR here.
  std::string dumpDir;
};

struct StepResult {
  float loss = 0;
  float gradNorm = 0;
  float learningRate = 0;
};

struct TrainerStats {
  int64_t parameters = 0;         ///< trained values
  int64_t kernelsPerStep = 0;     ///< launches replayed per step
  int64_t distinctKernels = 0;    ///< compiled kernels of @train_step
  uint64_t stateBytes = 0;        ///< parameters and both moments
  uint64_t deviceBytes = 0;       ///< every buffer of @train_step
  double compileMs = 0;
};

class Trainer {
public:
  /// Compiles the graphs for `device` and uploads freshly initialized
  /// weights; `corpus` (the training text, at least seq + 2 bytes) is
  /// copied.
  static rt::Result<std::unique_ptr<Trainer>>
  create(mlir::MLIRContext *context, const TrainerOptions &options,
         rt::Device &device, std::string corpus);
  ~Trainer();

  /// The next step to run (0-based).
  int64_t step() const { return nextStep; }
  const TrainerStats &stats() const { return statistics; }
  const TrainerOptions &options() const { return opts; }

  /// Runs step step() on its batch and advances.
  rt::Status runStep(StepResult &result);
  /// The tokens and targets of step `step`'s batch.
  void batch(int64_t step, std::vector<int32_t> &tokens,
             std::vector<int32_t> &targets) const;

  /// Writes the model, the AdamW moments and the step as a GGUF file that
  /// `hesper-run` can also load as a model.
  rt::Status saveCheckpoint(const std::string &path);
  /// Restores a checkpoint written with the same shape.
  rt::Status loadCheckpoint(const std::string &path);
  /// Writes the model alone (llama architecture, byte-level tokenizer).
  rt::Status exportModel(const std::string &path);
  /// The logits [seq, vocab] of `tokens` (seq of them) under the current
  /// weights, row-major.
  rt::Status logits(const std::vector<int32_t> &tokens,
                    std::vector<float> &out);
  /// The current value of every parameter, in parameters() order.
  rt::Status readParameters(std::vector<std::vector<float>> &out);

private:
  Trainer() = default;
  rt::Status write(const std::string &path, bool withOptimizer);

  TrainerOptions opts;
  std::string corpus;
  std::vector<Parameter> params;
  int64_t nextStep = 0;
  TrainerStats statistics;
  std::unique_ptr<rt::ProgramRunner> stepRunner, logitsRunner;
  uint32_t tokensArg = 0, targetsArg = 0, stepArg = 0, logitsTokensArg = 0;
};

} // namespace train
} // namespace hesper

#endif // HESPER_MODELS_TRAINER_H
