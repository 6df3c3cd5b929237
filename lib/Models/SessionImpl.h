//===- SessionImpl.h - A session's state, shared by its two halves -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A session has two halves in two libraries. Session.cpp (HesperModelRuntime,
// no MLIR) runs compiled steps: it restores them from a program cache entry
// or from the programs the compiler just made, binds the weights, and feeds
// tokens. SessionCompile.cpp (HesperModels) builds the model's graphs and
// compiles them, or runs them in the reference interpreter. A program that
// only loads cached programs (hesper-run's front end) links the first half
// alone and never loads MLIR or LLVM's code generators.
//
// A session holds up to two kinds of compiled steps of one model: the
// decode step (one token) and the prompt chunk (batchSize tokens), or a
// multi-sequence session's batch steps. They are graphs of one module,
// lowered together, and they share every buffer but the per-step inputs:
// the weights are bound once, and the KV cache the chunk writes is the one
// the decode step reads.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_MODELS_SESSIONIMPL_H
#define HESPER_LIB_MODELS_SESSIONIMPL_H

#include "Hesper/Dialect/Circuit/IR/ArgRoleNames.h"
#include "Hesper/Models/Session.h"
#include "hesper/runtime/Program.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace hesper::models {
namespace session {

/// What a graph argument binds, from its declared role (ArgRoles.h): the
/// builder (LlamaGraph.cpp) sets them; nothing here reads argument names.
struct ArgBinding {
  circuit::ArgRole role = circuit::ArgRole::Input;
  std::string name;   ///< circuit.name: how the decode and chunk steps match
  std::string tensor; ///< a weight's tensor in the model file
  int64_t firstRow = -1, rowCount = 0; ///< a weight's row range, if any
};

/// The step's own inputs, which a chunk does not borrow from the decode
/// step.
bool isStepInput(const ArgBinding &b);

/// One compiled step: a graph of `rows` tokens.
struct Step {
  std::string name;
  int64_t rows = 1;
  std::vector<ArgBinding> argBindings;
  int tokensIndex = -1, posIndex = -1;
  int lastIndex = -1; ///< a chunk that computes its last token's logits only
  // Device path.
  std::unique_ptr<rt::ProgramRunner> runner;
  std::vector<std::string> kernelNames;
  std::vector<rt::LaunchTraffic> traffic; ///< of each launch
};

/// Finds the step's own inputs among its bindings.
void indexBindings(Step &step);

/// Runs a session's steps in the reference interpreter: the compiler's half
/// of a session without a device (SessionCompile.cpp). Steps are numbered
/// as Session::Impl::steps() lists them.
class StepInterpreter {
public:
  virtual ~StepInterpreter();
  /// Sets input `index` of step `step`.
  virtual rt::Status setInput(size_t step, int index, const void *data,
                              size_t bytes) = 0;
  /// Runs step `step`; `logits` (when given) gets its first result.
  virtual rt::Status run(size_t step, std::vector<float> *logits) = 0;
};

/// Milliseconds of the steady clock.
double nowMs();

} // namespace session

struct Session::Impl {
  using Step = session::Step;
  using Status = rt::Status;

  const Model *model = nullptr;
  rt::Device *device = nullptr;
  SessionOptions options;
  int64_t ctx = 0;
  int64_t pos = 0;
  SessionStats stats;

  /// The interpreter that runs the steps of a session without a device.
  std::unique_ptr<session::StepInterpreter> interpreter;
  /// Weights the device reads in place from the model file's mapping
  /// (declared before the steps, whose runners bind them: destroyed after).
  std::vector<std::unique_ptr<rt::Buffer>> inPlaceWeights;
  /// The step that owns the shared buffers: the decode step, or a
  /// multi-sequence session's smallest batch step.
  Step decode;
  Step chunk;
  bool hasChunk = false;
  /// Smaller prompt chunks for a prompt's tail (tailChunkRows), descending.
  std::deque<Step> tails;
  /// A multi-sequence session's larger batch steps, ascending.
  std::deque<Step> batches;
  /// A batch step's global positions, and the rows whose logits it asks.
  std::vector<int32_t> positions, wanted;

  std::vector<double> kernelTotalsNs, chunkKernelTotalsNs;
  /// The bytes each timed launch moved (LaunchTraffic), summed as the times.
  std::vector<double> kernelBytes, chunkKernelBytes;
  int64_t timedTokens = 0, timedChunks = 0;
  std::vector<int32_t> tokenIds;
  std::vector<uint8_t> scratch;

  /// Checks the options and sets the context size.
  Status prepare(const Model &model, rt::Device *device,
                 const SessionOptions &options);

  /// The steps that borrow the owner's buffers.
  std::vector<Step *> borrowers();
  /// Every step, the decode step (the owner) first.
  std::vector<Step *> steps();

  /// An argument's initial bytes: `size` bytes at `src` (a weight's in the
  /// file's mapping, the RoPE frequencies in `freqs`); none (size 0) for
  /// everything else, which starts as zeros.
  struct InitialBytes {
    std::vector<float> freqs;
    const void *src = nullptr;
    uint64_t size = 0;
  };
  Status initialBytes(const session::ArgBinding &arg, size_t bytes,
                      InitialBytes &out);
  /// Sets a device buffer of `bytes` to its initial bytes.
  Status initialize(const InitialBytes &initial, size_t bytes,
                    rt::Buffer &dst);

  /// The metadata of the steps' program cache entry (beside their
  /// programs): how each binds its arguments and the statistics a load
  /// cannot recompute.
  std::string cacheMetadata();
  /// Restores the steps from a program cache entry; an error for an entry
  /// that does not describe this session's steps.
  Status restore(const rt::ProgramSet &set);
  /// The program cache folder of this session ("" when it uses none).
  std::string cacheDir() const;
  /// The entry of this session's key in `dir`.
  std::string cacheEntryPath(const std::string &dir) const;
  /// A device session's steps from the program cache; false (after noting
  /// why in the stats) when there is no usable entry.
  bool loadFromCache(const std::string &dir, const std::string &path,
                     double start);
  /// Creates the steps' runners over `programs` (the decode step's first,
  /// then the borrowers' in order) and binds or uploads the weights.
  Status setUpRunners(const std::vector<rt::Program> &programs);

  /// Compiles the steps (SessionCompile.cpp): for the device, through the
  /// program cache; without one, for the interpreter.
  Status compile();
  /// The row counts of a multi-sequence session's batch steps.
  std::vector<int64_t> batchStepRows(int64_t n) const;
  static constexpr int64_t kBatchTileRows = 8;

  Status setInput(Step &step, int index, const void *data, size_t bytes);
  /// Runs `step` for `n` tokens from the current position; `all` gets the
  /// logits of every row (rows * vocab values).
  Status run(Step &step, const int32_t *ids, size_t n,
             std::vector<float> *all);
  Status runBatch(const std::vector<BatchRow> &rows,
                  std::vector<std::vector<float>> *logits);
  Status checkRoom(size_t n);
  Status feed(int32_t id, std::vector<float> *logits);
  Status feedMany(const std::vector<int32_t> &ids,
                  std::vector<std::vector<float>> *logits, bool allRows);
  /// The chunk step that runs the next of `left` prompt tokens (feedMany's
  /// rule), or null for a decode step.
  Step *chunkStepFor(size_t left);

private:
  size_t indexOf(const Step &step);
};

} // namespace hesper::models

#endif // HESPER_LIB_MODELS_SESSIONIMPL_H
