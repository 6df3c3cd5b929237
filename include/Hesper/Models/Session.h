//===- Session.h - A model running on a device ------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A Session compiles a model's decode step for one device (or the reference
// interpreter), uploads the weights once, and then runs one token at a time:
// the step is recorded once and replayed for every token, with only the
// token's embedding row and its position uploaded and the logits read back.
//
//   auto model = models::Model::load("model.gguf");
//   auto device = rt::openDevice(rt::Backend::Vulkan);
//   auto session = models::Session::create(**model, device->get(), {});
//   std::vector<float> logits;
//   for (int32_t id : prompt)
//     (*session)->feed(id, &logits);
//
// The library hides MLIR: a program that uses Session needs no compiler
// headers. Session::create compiles (HesperModels); Session::openCached
// only loads what an earlier create stored in the program cache, and is
// all a program linked with HesperModelRuntime alone can do: hesper-run's
// front end starts that way without loading the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_SESSION_H
#define HESPER_MODELS_SESSION_H

#include "Hesper/Models/Model.h"

#include <map>
#include <optional>

namespace hesper::models {

struct SessionOptions {
  /// Positions in the KV cache; 0 picks LlamaHParams::defaultContextSize
  /// (the training context, capped at 4096).
  int64_t contextSize = 0;
  /// Run hesper-fuse (off: one kernel per primitive, for debugging).
  bool fuse = true;
  /// When set, the compiler writes every stage's IR and the kernels here.
  std::string dumpDir;
  /// Record per-kernel device times (when the device has timestamps).
  bool timing = false;
  /// Prompt-chunk matmuls on the matrix units (CompileOptions::matrixUnits):
  /// unset, wherever they are the faster kernels (CUDA's tensor cores:
  /// CompileOptions::matrixUnitsWhereFast); false, the f32 tiles.
  std::optional<bool> matrixUnits;
  /// Tokens per prompt chunk (llama.cpp's -b): prompts run through a
  /// second program whose matmuls take this many tokens at once, with a
  /// causal mask inside the chunk. 1 runs prompts token by token; 0 takes
  /// the device's default (defaultBatchSize).
  int64_t batchSize = 0;
  /// Prompt chunks compute the logits of every token (for feedMany's
  /// allRows, e.g. --dump-logits); otherwise only of their last token,
  /// which is all generation needs. With it off, feedMany(allRows) runs
  /// the prompt token by token.
  bool allLogits = false;
  /// Independent KV-cache sequences (continuous batching, runBatch): 0 is
  /// the single-sequence session of feed/feedMany. With N > 0 the session
  /// compiles batch steps of N and N + batchSize rows instead (at least 8
  /// each when N > 1, and a one-row step; see batchRowCounts), whose rows
  /// may belong to any of the N sequences, each of contextSize positions.
  int64_t sequences = 0;
  /// No one-row batch step: every step takes x in the same row tiles, so a
  /// token's logits are bit-identical whatever else runs (on the CPU
  /// target a lone token then costs a tile's work).
  bool batchInvariant = false;
  /// Keep compiled programs in a cache folder (ProgramCache.h) and load
  /// them from it when the key matches, without compiling (device
  /// sessions; not with dumpDir). The tools turn it on; --no-cache off.
  bool programCache = false;
  /// The cache folder; empty: defaultProgramCacheDir().
  std::string programCacheDir;
  /// The KV cache's element types (-ctk / -ctv).
  CacheTypes cacheTypes;
  /// Quantize the activations of q8_0/q4_0/q4_k (q6_k in one-token steps,
  /// i2_s and tq2_0) projections to q8_1 and
  /// multiply bytes in integers (GraphOptions::quantizedActivations);
  /// unset: the device's default (defaultQuantizedActivations).
  std::optional<bool> quantizedActivations;
  /// The graph options these make.
  GraphOptions graphOptions() const {
    GraphOptions g(cacheTypes);
    g.quantizedActivations = quantizedActivations.value_or(false);
    return g;
  }
};

/// How many of `cached` (the tokens a KV cache holds, from position 0) a
/// new `prompt` can keep: their common prefix, but never the whole prompt
/// (its last token is fed again, for the logits that start generation).
size_t reusablePrefix(const std::vector<int32_t> &cached,
                      const std::vector<int32_t> &prompt);

/// One token of a batch step: sequence `sequence`, at `position` in it.
struct BatchRow {
  int32_t id = 0;
  int32_t sequence = 0;
  int64_t position = 0;
  bool logits = false; ///< compute this token's logits
};

/// What a session compiled and holds.
struct SessionStats {
  int64_t dispatchOpsUnfused = 0; ///< primitives of the decode graph
  /// Matmul inputs of the decode graph rounded to q8_1 (integer dot
  /// products): 0 unless quantized activations are on and some projection's
  /// weights take them (GraphOptions::quantizedActivations).
  int64_t quantizedInputs = 0;
  int64_t kernelsPerToken = 0;    ///< launches replayed per token
  int64_t kernelsPerChunk = 0;    ///< launches per prompt chunk (0: none)
  /// Prompt chunks run since the session was created, by the rows of
  /// their program (the full chunk's and the tail chunks').
  std::map<int64_t, int64_t> chunkRuns;
  int64_t distinctKernels = 0;    ///< compiled kernels
  uint64_t deviceBytes = 0;       ///< weights, caches and activations
  uint64_t weightBufferBytes = 0; ///< of which the weights (device path)
  uint64_t cacheBytes = 0;        ///< of which the KV caches (device path)
  /// Of the weights, those the device reads in place from the model file's
  /// mapping (the CPU target): not copied, not a second resident copy.
  uint64_t inPlaceWeightBytes = 0;
  double compileMs = 0;           ///< building, fusing and lowering
  double uploadMs = 0;            ///< weights to the device
  double warmUpMs = 0;            ///< Session::warmUp (0: not run)
  /// Where compileMs went, for traces (hesper-run --profile): "graphs"
  /// (building the model's Circuit graphs), then each pass of the target
  /// pipeline as it ran (nested passes inside their adaptor's span); on a
  /// program-cache hit one "program cache" stage. Times in microseconds
  /// of the steady clock.
  struct Stage {
    std::string name;
    double startUs = 0, durationUs = 0;
  };
  std::vector<Stage> compileStages;
  /// The program cache: "hit" (loaded), "miss" (compiled, then stored),
  /// or "" (not used).
  std::string programCache;
  std::string programCachePath; ///< the entry read or written
  /// Why an entry was not read or not written (a cut or changed entry is
  /// compiled again), or "".
  std::string programCacheWarning;
};

class Session {
public:
  /// Compiles and uploads `model` for `device`; a null device runs the
  /// reference interpreter. `model` must outlive the session.
  static rt::Result<std::unique_ptr<Session>>
  create(const Model &model, rt::Device *device,
         const SessionOptions &options = {});
  /// Opens `model` on `device` from the program cache alone: the programs
  /// an earlier create() stored under the same key (model, options, device,
  /// compiler; ProgramCache.h). Never compiles: an error when the cache is
  /// off or has no usable entry (the message says which), so that the
  /// caller can compile instead.
  static rt::Result<std::unique_ptr<Session>>
  openCached(const Model &model, rt::Device &device,
             const SessionOptions &options);
  ~Session();

  /// Runs token `id` at the current position (then advances it) and, when
  /// `logits` is given, fills it with the vocabulary's logits. A full
  /// context is an error.
  rt::Status feed(int32_t id, std::vector<float> *logits);
  /// Runs `ids` from the current position, in prompt chunks of batchSize
  /// tokens; what is left (fewer than batchSize) runs on whichever chunk
  /// program, of batchSize or of one of tailChunkRows(), pads it to the
  /// fewest rows (the larger program on a tie), one chunk at a time, and
  /// one token left over as a decode step. The split depends only on the
  /// number of tokens, so the same prompt gives the same bits. `logits`
  /// gets one row per token when `allRows`, else only the last token's
  /// row.
  rt::Status feedMany(const std::vector<int32_t> &ids,
                      std::vector<std::vector<float>> *logits, bool allRows);
  /// Tokens per prompt chunk actually compiled (1: none).
  int64_t batchSize() const;
  /// The row counts of the smaller chunk programs compiled for a prompt's
  /// tail, descending (empty: none).
  std::vector<int64_t> tailChunkRowCounts() const;

  /// Multi-sequence sessions (SessionOptions::sequences > 0): runs `rows`
  /// (at most maxBatchRows()) as one step, on the smallest batch step that
  /// holds them, and appends one row of logits per row that asked, in
  /// order. A row's key and value are written at its position of its
  /// sequence before any row reads them, so a prompt chunk of one sequence
  /// can share a step with the decode tokens of others. Positions past a
  /// row's are neither read nor changed.
  rt::Status runBatch(const std::vector<BatchRow> &rows,
                      std::vector<std::vector<float>> *logits);
  /// The largest batch step compiled (0 for a single-sequence session).
  int64_t maxBatchRows() const;
  /// The batch steps' row counts, ascending (empty: single-sequence).
  std::vector<int64_t> batchRowCounts() const;
  /// Runs the decode step once (token 0 at position 0; a multi-sequence
  /// session, its one-row step in sequence 0), then starts over at
  /// position 0, as llama.cpp runs a token through a model when it loads
  /// it (its --no-warmup turns that off). The step reads every weight, so
  /// the first prompt does not pay the first touch of the weights' pages,
  /// the kernels' code and the buffers (on a virtual machine, a 64-token
  /// prompt's first run took four times as long as the next). Not counted
  /// in the kernel times. Nothing for the interpreter.
  rt::Status warmUp();
  /// Starts over at position 0 (the cache needs no clearing: positions past
  /// the current one are masked).
  void reset();
  /// Goes back to `position` (at most the current one): the cached
  /// positions before it stay, the later ones are overwritten as tokens are
  /// fed (a multi-turn chat keeps the conversation's common prefix).
  void rewind(int64_t position);
  int64_t position() const;
  int64_t contextSize() const;
  /// Whether the projections quantize their activations (the option, or
  /// the device's default).
  bool quantizedActivations() const;
  const SessionStats &stats() const;
  /// Device time of each launch of the last token, in nanoseconds (empty
  /// without timing).
  std::vector<double> lastKernelTimesNs() const;
  /// Device time of each launch summed over every decode step (or, with
  /// `chunks`, every prompt chunk) run since the session was created, in
  /// nanoseconds, and the number of steps summed (empty and 0 without
  /// timing).
  std::vector<double> kernelTimeTotalsNs(bool chunks = false) const;
  /// The bytes each launch must move (rt::LaunchTraffic at the step's
  /// position), summed over the same steps as kernelTimeTotalsNs.
  std::vector<double> kernelByteTotals(bool chunks = false) const;
  int64_t timedTokens(bool chunks = false) const;
  /// Names of the launched kernels of the decode step (or of the prompt
  /// chunk), in launch order.
  std::vector<std::string> kernelNames(bool chunks = false) const;

private:
  Session();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The prompt chunk a session takes when SessionOptions::batchSize is 0:
/// 512 tokens on a GPU (CUDA, or a Vulkan device that is not a CPU), as
/// llama.cpp's n_ubatch, where a chunk's matmuls need many rows to fill the
/// device; 64 on the CPU target (on the demo file, 1.11-1.19x the prefill
/// speed of 32 chunks; 128 gains no more); 32 on a CPU-type Vulkan device
/// (lavapipe) and in the interpreter (a null `device`).
int64_t defaultBatchSize(const rt::DeviceInfo *device);

/// Whether a session quantizes the activations of q8_0, q4_0, q4_k (q6_k,
/// i2_s, tq2_0) projections when SessionOptions::quantizedActivations is unset: on the
/// CPU target, whose integer kernels are faster (as llama.cpp's CPU
/// backend does; docs/Models.md, "Integer activations"), not on the GPU
/// targets nor in the interpreter (a null `device`).
bool defaultQuantizedActivations(const rt::DeviceInfo *device);

/// The row counts of the smaller chunk programs a single-sequence session
/// compiles beside its prompt chunk of `chunkRows` tokens, for a prompt's
/// tail: chunkRows / 4, / 16, ... while at least 8 (32 -> {8}; 512 -> {128,
/// 32, 8}; 16 -> none). A short prompt (a chat turn) then costs about its
/// own rows rather than a whole chunk's.
std::vector<int64_t> tailChunkRows(int64_t chunkRows);

} // namespace hesper::models

#endif // HESPER_MODELS_SESSION_H
