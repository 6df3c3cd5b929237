//===- Session.cpp - A model running on a device --------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The running half of a session (SessionImpl.h): steps restored from a
// program cache entry or from the programs the compiler just made, their
// runners over shared buffers, the weights bound in place or uploaded, and
// the token loop. No MLIR here: hesper-run's front end links this alone and
// opens sessions from the program cache (Session::openCached).
//
//===----------------------------------------------------------------------===//

#include "SessionImpl.h"

#include "Hesper/Models/ProgramCache.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

using namespace hesper;
using namespace hesper::models;
using session::ArgBinding;
using session::isStepInput;
using session::nowMs;
using session::Step;
using rt::Status;

double session::nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

bool session::isStepInput(const ArgBinding &b) {
  using circuit::ArgRole;
  return b.role == ArgRole::Tokens || b.role == ArgRole::Position ||
         b.role == ArgRole::LastRow;
}

session::StepInterpreter::~StepInterpreter() = default;

Status Session::Impl::prepare(const Model &m, rt::Device *d,
                              const SessionOptions &o) {
  model = &m;
  device = d;
  options = o;
  ctx = options.contextSize > 0 ? options.contextSize
                                  : m.hparams().defaultContextSize();
  if (ctx > (int64_t(1) << 24))
    return Status::error("context size " + std::to_string(ctx) +
                         " is too large");
  if (options.batchSize < 0)
    return Status::error("the batch size must not be negative, got " +
                         std::to_string(options.batchSize));
  if (options.batchSize == 0)
    options.batchSize = defaultBatchSize(d ? &d->info() : nullptr);
  if (!options.quantizedActivations)
    options.quantizedActivations =
        defaultQuantizedActivations(d ? &d->info() : nullptr);
  if (options.sequences < 0 || options.sequences > 4096)
    return Status::error("the number of sequences must be between 0 and "
                         "4096, got " + std::to_string(options.sequences));
  if (options.sequences > 0) {
    // The caches' element indices (global position * KV width) are i32.
    int64_t widest = 0;
    for (int64_t l = 0; l < m.hparams().layers; ++l)
      widest = std::max(widest, m.hparams().layer(l).kvDim());
    if (ctx * (options.sequences + 1) * widest >= (int64_t(1) << 31))
      return Status::error(
          "the KV caches of " + std::to_string(options.sequences) +
          " sequences of " + std::to_string(ctx) +
          " positions are too large for one buffer; use fewer slots or a "
          "smaller context");
  }
  return Status();
}

int64_t hesper::models::defaultBatchSize(const rt::DeviceInfo *device) {
  if (!device || device->type == rt::DeviceType::Cpu)
    return device && device->backend == rt::Backend::Cpu ? 64 : 32;
  return 512;
}

bool hesper::models::defaultQuantizedActivations(
    const rt::DeviceInfo *device) {
  return device && device->backend == rt::Backend::Cpu;
}

std::vector<int64_t> hesper::models::tailChunkRows(int64_t chunkRows) {
  std::vector<int64_t> rows;
  for (int64_t r = chunkRows / 4; r >= 8; r /= 4)
    rows.push_back(r);
  return rows;
}

std::vector<Session::Impl::Step *> Session::Impl::borrowers() {
  std::vector<Step *> out;
  if (hasChunk)
    out.push_back(&chunk);
  for (Step &t : tails)
    out.push_back(&t);
  for (Step &b : batches)
    out.push_back(&b);
  return out;
}

std::vector<Session::Impl::Step *> Session::Impl::steps() {
  std::vector<Step *> out{&decode};
  for (Step *b : borrowers())
    out.push_back(b);
  return out;
}

void session::indexBindings(Step &step) {
  step.tokensIndex = step.posIndex = step.lastIndex = -1;
  for (auto [i, b] : llvm::enumerate(step.argBindings)) {
    if (b.role == circuit::ArgRole::Tokens)
      step.tokensIndex = i;
    if (b.role == circuit::ArgRole::Position)
      step.posIndex = i;
    if (b.role == circuit::ArgRole::LastRow)
      step.lastIndex = i;
  }
}

Status Session::Impl::initialBytes(const ArgBinding &arg, size_t bytes,
                                   InitialBytes &out) {
  out = InitialBytes();
  switch (arg.role) {
  case circuit::ArgRole::Weight: {
    const uint8_t *data = nullptr;
    if (Status s = model->tensorBytes(arg.tensor, arg.firstRow,
                                      arg.rowCount, data, out.size);
        !s)
      return s;
    if (out.size > bytes)
      return Status::error("weight '" + arg.name + "' has " +
                           std::to_string(out.size) +
                           " bytes, the program's buffer " +
                           std::to_string(bytes));
    out.src = data;
    return Status();
  }
  case circuit::ArgRole::RopeFreqs:
  case circuit::ArgRole::RopeFreqsSwa:
    out.freqs = model->ropeFrequencies(
        arg.role == circuit::ArgRole::RopeFreqsSwa, ctx);
    out.src = out.freqs.data();
    out.size = std::min<uint64_t>(bytes, out.freqs.size() * sizeof(float));
    return Status();
  default:
    return Status();
  }
}

/// Sets a device buffer of `bytes` to its initial bytes, copied straight
/// from where they are (the file's mapping for a weight). A CPU buffer
/// starts zeroed (the CPU driver maps fresh pages) and is written only
/// where it must be, so a KV cache's pages become resident as positions
/// are written, not at the start; other devices' buffers are cleared.
Status Session::Impl::initialize(const InitialBytes &initial, size_t bytes,
                                 rt::Buffer &dst) {
  if (initial.size < bytes && device->info().backend != rt::Backend::Cpu)
    if (Status s = device->fill(dst, 0); !s)
      return s;
  return initial.size ? device->upload(dst, initial.src, initial.size, 0)
                      : Status();
}

std::string Session::Impl::cacheMetadata() {
  llvm::json::Array stepsJson;
  for (Step *step : steps()) {
    llvm::json::Array bindings;
    for (const ArgBinding &b : step->argBindings)
      bindings.push_back(llvm::json::Object{
          {"role", circuit::stringifyArgRole(b.role)},
          {"name", b.name},
          {"tensor", b.tensor},
          {"firstRow", b.firstRow},
          {"rowCount", b.rowCount}});
    stepsJson.push_back(llvm::json::Object{{"name", step->name},
                                           {"rows", step->rows},
                                           {"bindings", std::move(bindings)}});
  }
  llvm::json::Object meta{
      {"steps", std::move(stepsJson)},
      {"dispatchOpsUnfused", stats.dispatchOpsUnfused},
      {"quantizedInputs", stats.quantizedInputs}};
  return llvm::formatv("{0}", llvm::json::Value(std::move(meta)));
}

Status Session::Impl::restore(const rt::ProgramSet &set) {
  auto bad = [](const std::string &why) {
    return Status::error("the entry does not fit: " + why);
  };
  auto parsed = llvm::json::parse(set.metadata);
  if (!parsed) {
    std::string why = llvm::toString(parsed.takeError());
    return bad(why);
  }
  const llvm::json::Object *meta = parsed->getAsObject();
  const llvm::json::Array *stepsJson = meta ? meta->getArray("steps")
                                            : nullptr;
  if (!stepsJson || stepsJson->empty() ||
      stepsJson->size() != set.programs.size())
    return bad("steps and programs differ");
  std::vector<Step> restored;
  for (auto [k, v] : llvm::enumerate(*stepsJson)) {
    const llvm::json::Object *o = v.getAsObject();
    Step step;
    auto name = o ? o->getString("name") : std::nullopt;
    auto rows = o ? o->getInteger("rows") : std::nullopt;
    const llvm::json::Array *bindings = o ? o->getArray("bindings")
                                          : nullptr;
    if (!name || !rows || !bindings ||
        bindings->size() != set.programs[k].numArguments)
      return bad("step #" + std::to_string(k));
    step.name = name->str();
    step.rows = *rows;
    for (const llvm::json::Value &bv : *bindings) {
      const llvm::json::Object *bo = bv.getAsObject();
      auto role = bo ? bo->getString("role") : std::nullopt;
      auto argName = bo ? bo->getString("name") : std::nullopt;
      auto tensor = bo ? bo->getString("tensor") : std::nullopt;
      auto first = bo ? bo->getInteger("firstRow") : std::nullopt;
      auto count = bo ? bo->getInteger("rowCount") : std::nullopt;
      auto r = role ? circuit::symbolizeArgRole(*role) : std::nullopt;
      if (!r || !argName || !tensor || !first || !count)
        return bad("a binding of step " + step.name);
      step.argBindings.push_back(
          {*r, argName->str(), tensor->str(), *first, *count});
    }
    indexBindings(step);
    restored.push_back(std::move(step));
  }
  decode = std::move(restored[0]);
  batches.clear();
  tails.clear();
  hasChunk = false;
  for (size_t k = 1; k < restored.size(); ++k) {
    if (options.sequences > 0) {
      batches.push_back(std::move(restored[k]));
    } else if (!hasChunk) {
      chunk = std::move(restored[k]);
      hasChunk = true;
    } else {
      tails.push_back(std::move(restored[k]));
    }
  }
  stats.dispatchOpsUnfused =
      meta->getInteger("dispatchOpsUnfused").value_or(0);
  stats.quantizedInputs = meta->getInteger("quantizedInputs").value_or(0);
  return Status();
}

std::string Session::Impl::cacheDir() const {
  if (!device || !options.programCache || !options.dumpDir.empty())
    return "";
  return options.programCacheDir.empty() ? defaultProgramCacheDir()
                                         : options.programCacheDir;
}

bool Session::Impl::loadFromCache(const std::string &dir,
                                  const std::string &path, double start) {
  if (!llvm::sys::fs::exists(path))
    return false;
  auto set = readProgramCacheEntry(path);
  Status status = set ? restore(*set) : set.status();
  // What a hit saves is the compile: its time is the key and the load.
  stats.compileMs = nowMs() - start;
  if (status)
    status = setUpRunners(set->programs);
  if (!status) {
    // Whatever a half-done restore left is rebuilt by the compile.
    decode = Step();
    chunk = Step();
    batches.clear();
    tails.clear();
    hasChunk = false;
    stats.deviceBytes = stats.weightBufferBytes = stats.cacheBytes = 0;
    stats.inPlaceWeightBytes = 0;
    inPlaceWeights.clear();
    stats.programCacheWarning =
        status.message() + "; compiling again";
    return false;
  }
  stats.programCache = "hit";
  touchProgramCacheEntry(path);
  stats.compileStages.push_back(
      {"program cache", start * 1000.0, stats.compileMs * 1000.0});
  recordProgramCacheUse(dir, /*hit=*/true);
  return true;
}

Status Session::Impl::setUpRunners(const std::vector<rt::Program> &programs) {
  const rt::Program &decodeProgram = programs[0];
  stats.kernelsPerToken = decodeProgram.launches.size();
  std::set<std::string> distinct;
  for (const rt::Program &p : programs)
    for (const rt::KernelDesc &k : p.kernels)
      distinct.insert(k.name);
  stats.distinctKernels = distinct.size();
  for (const rt::ProgramLaunch &l : decodeProgram.launches) {
    decode.kernelNames.push_back(decodeProgram.kernels[l.kernel].name);
    decode.traffic.push_back(l.traffic);
  }

  double uploadStart = nowMs();
  // A weight whose bytes in the file fill its buffer exactly is read
  // where it is on a device that can (the CPU): no copy, and no second
  // resident copy of the weights.
  std::vector<InitialBytes> initial(decodeProgram.numArguments);
  std::vector<rt::Buffer *> inPlace(decodeProgram.numArguments, nullptr);
  for (uint32_t i = 0; i < decodeProgram.numArguments; ++i) {
    uint64_t bytes = decodeProgram.buffers[i].bytes;
    if (Status s = initialBytes(decode.argBindings[i], bytes, initial[i]);
        !s)
      return s;
    if (decode.argBindings[i].role != circuit::ArgRole::Weight ||
        initial[i].size != bytes)
      continue;
    auto imported = device->importHostMemory(initial[i].src, bytes);
    if (!imported)
      continue; // copied below
    inPlace[i] = imported->get();
    stats.inPlaceWeightBytes += bytes;
    inPlaceWeights.push_back(std::move(*imported));
  }
  auto created = rt::ProgramRunner::create(*device, decodeProgram,
                                           options.timing, inPlace);
  if (!created)
    return created.status();
  decode.runner = std::move(*created);
  for (const rt::ProgramBuffer &b : decodeProgram.buffers)
    stats.deviceBytes += b.bytes;
  for (uint32_t i = 0; i < decodeProgram.numArguments; ++i) {
    circuit::ArgRole role = decode.argBindings[i].role;
    if (role == circuit::ArgRole::Weight)
      stats.weightBufferBytes += decodeProgram.buffers[i].bytes;
    if (role == circuit::ArgRole::Cache)
      stats.cacheBytes += decodeProgram.buffers[i].bytes;
  }
  // The program's arguments are the graph's, in order.
  for (uint32_t i = 0; i < decodeProgram.numArguments; ++i)
    if (Status s = inPlace[i] ? Status()
                              : initialize(initial[i],
                                           decodeProgram.buffers[i].bytes,
                                           *decode.runner->argumentBuffer(i));
        !s)
      return s;
  std::map<std::string, uint32_t> decodeArgs;
  for (uint32_t i = 0; i < decodeProgram.numArguments; ++i)
    decodeArgs[decodeProgram.buffers[i].name] = i;
  for (auto [k, step] : llvm::enumerate(borrowers())) {
    // Every argument but the step's own inputs is the decode step's.
    const rt::Program &program = programs[k + 1];
    std::vector<rt::Buffer *> shared(program.numArguments, nullptr);
    for (uint32_t i = 0; i < program.numArguments; ++i) {
      const std::string &name = program.buffers[i].name;
      if (isStepInput(step->argBindings[i]))
        continue;
      auto it = decodeArgs.find(name);
      if (it == decodeArgs.end())
        return Status::error("the " + step->name + " step's argument '" +
                             name + "' is not one of the " + decode.name +
                             " step's");
      shared[i] = decode.runner->argumentBuffer(it->second);
    }
    auto runner = rt::ProgramRunner::create(*device, program,
                                            options.timing, shared);
    if (!runner)
      return runner.status();
    step->runner = std::move(*runner);
    if (step == &chunk)
      stats.kernelsPerChunk = program.launches.size();
    for (const rt::ProgramLaunch &l : program.launches) {
      step->kernelNames.push_back(program.kernels[l.kernel].name);
      step->traffic.push_back(l.traffic);
    }
    for (uint32_t i = program.numArguments; i < program.buffers.size(); ++i)
      stats.deviceBytes += program.buffers[i].bytes;
  }
  stats.uploadMs = nowMs() - uploadStart;
  return Status();
}

Status Session::Impl::setInput(Step &step, int index, const void *data,
                               size_t bytes) {
  if (!device)
    return interpreter->setInput(indexOf(step), index, data, bytes);
  return step.runner->setArgument(index, data, bytes);
}

Status Session::Impl::run(Step &step, const int32_t *ids, size_t n,
                          std::vector<float> *all) {
  // The token ids (padding rows read token 0; their results are
  // dropped and their cache rows rewritten before anything reads them).
  const int64_t vocab = model->hparams().vocab;
  tokenIds.assign(step.rows, 0);
  for (size_t r = 0; r < n; ++r) {
    if (ids[r] < 0 || ids[r] >= vocab)
      return Status::error("token id " + std::to_string(ids[r]) +
                           " is outside the vocabulary of " +
                           std::to_string(vocab));
    tokenIds[r] = ids[r];
  }
  int32_t p = static_cast<int32_t>(pos);
  if (Status s = setInput(step, step.tokensIndex, tokenIds.data(),
                          tokenIds.size() * sizeof(int32_t));
      !s)
    return s;
  if (Status s = setInput(step, step.posIndex, &p, sizeof(p)); !s)
    return s;
  if (step.lastIndex >= 0) {
    int32_t last = static_cast<int32_t>(n) - 1;
    if (Status s = setInput(step, step.lastIndex, &last, sizeof(last)); !s)
      return s;
  }
  if (!device)
    return interpreter->run(indexOf(step), all);
  if (Status s = step.runner->run(); !s)
    return s;
  // Timed: the decode step and the full prompt chunk (a tail chunk's
  // kernels are other programs').
  if (options.timing && (&step == &decode || &step == &chunk)) {
    std::vector<double> times = step.runner->lastKernelTimesNs();
    bool isDecode = &step == &decode;
    std::vector<double> &totals =
        isDecode ? kernelTotalsNs : chunkKernelTotalsNs;
    std::vector<double> &bytes = isDecode ? kernelBytes : chunkKernelBytes;
    if (!times.empty()) {
      totals.resize(times.size(), 0.0);
      bytes.resize(times.size(), 0.0);
      for (size_t k = 0; k < times.size(); ++k) {
        totals[k] += times[k];
        if (k < step.traffic.size())
          bytes[k] += static_cast<double>(
              step.traffic[k].bytes(static_cast<uint64_t>(pos),
                                    static_cast<uint64_t>(step.rows)));
      }
      ++(isDecode ? timedTokens : timedChunks);
    }
  }
  if (all) {
    if (Status s = step.runner->readResult(0, scratch); !s)
      return s;
    all->resize((step.lastIndex >= 0 ? 1 : step.rows) *
                model->hparams().vocab);
    std::memcpy(all->data(), scratch.data(), all->size() * sizeof(float));
  }
  return Status();
}

/// A batch step of a multi-sequence session (Session::runBatch).
Status Session::Impl::runBatch(const std::vector<BatchRow> &rows,
                               std::vector<std::vector<float>> *logits) {
  const int64_t n = options.sequences;
  if (n <= 0)
    return Status::error("runBatch needs a session of several sequences "
                         "(SessionOptions::sequences)");
  Step *step = &decode;
  for (Step *b : borrowers())
    if (step->rows < static_cast<int64_t>(rows.size()))
      step = b;
  if (rows.empty() || step->rows < static_cast<int64_t>(rows.size()))
    return Status::error("a batch step takes 1 to " +
                         std::to_string(step->rows) + " rows, got " +
                         std::to_string(rows.size()));
  const int64_t r = step->rows;
  const int64_t vocab = model->hparams().vocab;
  tokenIds.assign(r, 0);
  positions.assign(r, 0);
  wanted.clear();
  for (int64_t i = 0; i < r; ++i) {
    if (i >= static_cast<int64_t>(rows.size())) {
      // Padding: the scratch sequence after the last, at distinct
      // positions; results dropped.
      positions[i] = static_cast<int32_t>(n * ctx + i % ctx);
      continue;
    }
    const BatchRow &row = rows[i];
    if (row.id < 0 || row.id >= vocab)
      return Status::error("token id " + std::to_string(row.id) +
                           " is outside the vocabulary of " +
                           std::to_string(vocab));
    if (row.sequence < 0 || row.sequence >= n)
      return Status::error("sequence " + std::to_string(row.sequence) +
                           " is not one of the session's " +
                           std::to_string(n));
    if (row.position < 0 || row.position >= ctx)
      return Status::error("position " + std::to_string(row.position) +
                           " is outside the context of " +
                           std::to_string(ctx));
    tokenIds[i] = row.id;
    positions[i] = static_cast<int32_t>(row.sequence * ctx + row.position);
    if (row.logits)
      wanted.push_back(static_cast<int32_t>(i));
  }
  if (Status s = setInput(*step, step->tokensIndex, tokenIds.data(),
                          tokenIds.size() * sizeof(int32_t));
      !s)
    return s;
  if (Status s = setInput(*step, step->posIndex, positions.data(),
                          positions.size() * sizeof(int32_t));
      !s)
    return s;
  std::vector<float> out;
  if (!device) {
    if (Status s = interpreter->run(indexOf(*step), &out); !s)
      return s;
  } else {
    if (Status s = step->runner->run(); !s)
      return s;
    if (!wanted.empty()) {
      if (Status s = step->runner->readResult(0, scratch); !s)
        return s;
      out.resize(scratch.size() / sizeof(float));
      std::memcpy(out.data(), scratch.data(), out.size() * sizeof(float));
    }
  }
  if (!logits)
    return Status();
  for (int32_t at : wanted)
    logits->emplace_back(out.begin() + size_t(at) * vocab,
                         out.begin() + size_t(at + 1) * vocab);
  return Status();
}

Status Session::Impl::checkRoom(size_t n) {
  if (pos + static_cast<int64_t>(n) > ctx)
    return Status::error("the context is full (" + std::to_string(ctx) +
                         " tokens); use a larger -c/--ctx-size");
  return Status();
}

Status Session::Impl::feed(int32_t id, std::vector<float> *logits) {
  if (Status s = checkRoom(1); !s)
    return s;
  if (Status s = run(decode, &id, 1, logits); !s)
    return s;
  ++pos;
  return Status();
}

Status Session::Impl::feedMany(const std::vector<int32_t> &ids,
                               std::vector<std::vector<float>> *logits,
                               bool allRows) {
  if (Status s = checkRoom(ids.size()); !s)
    return s;
  const int64_t vocab = model->hparams().vocab;
  std::vector<float> rowsOut;
  size_t done = 0;
  // Every token's logits from a chunk that computes only its last
  // token's: run token by token instead.
  bool chunks = hasChunk && !(allRows && logits && chunk.lastIndex >= 0);
  while (done < ids.size()) {
    Step *step = chunks ? chunkStepFor(ids.size() - done) : nullptr;
    size_t n = step ? std::min<size_t>(step->rows, ids.size() - done) : 1;
    bool last = done + n == ids.size();
    bool want = logits && (allRows || last);
    if (!step) {
      if (Status s = feed(ids[done], want ? &rowsOut : nullptr); !s)
        return s;
    } else {
      if (Status s = run(*step, ids.data() + done, n,
                         want ? &rowsOut : nullptr);
          !s)
        return s;
      pos += n;
      ++stats.chunkRuns[step->rows];
    }
    if (want && step && step->lastIndex >= 0) {
      logits->push_back(rowsOut); // the chunk's last token only
    } else if (want) {
      for (size_t r = allRows ? 0 : n - 1; r < n; ++r)
        logits->emplace_back(rowsOut.begin() + r * vocab,
                             rowsOut.begin() + (r + 1) * vocab);
    }
    done += n;
  }
  return Status();
}

Session::Impl::Step *Session::Impl::chunkStepFor(size_t left) {
  if (!hasChunk || left <= 1)
    return nullptr;
  if (left >= static_cast<size_t>(chunk.rows))
    return &chunk;
  // The fewest padded rows for what is left; the full chunk on a tie.
  auto padded = [&](const Step &s) {
    size_t rows = static_cast<size_t>(s.rows);
    return (left + rows - 1) / rows * rows;
  };
  Step *best = &chunk;
  for (Step &t : tails)
    if (padded(t) < padded(*best))
      best = &t;
  return best;
}

size_t Session::Impl::indexOf(const Step &step) {
  std::vector<Step *> all = steps();
  return std::find(all.begin(), all.end(), &step) - all.begin();
}

std::string Session::Impl::cacheEntryPath(const std::string &dir) const {
  return programCacheEntryPath(
      dir, programCacheKey(*model, options, ctx, device->info(),
                           tuningFingerprint(), compilerIdentity()));
}

size_t hesper::models::reusablePrefix(const std::vector<int32_t> &cached,
                                      const std::vector<int32_t> &prompt) {
  size_t n = 0;
  while (n < cached.size() && n < prompt.size() && cached[n] == prompt[n])
    ++n;
  return prompt.empty() ? 0 : std::min(n, prompt.size() - 1);
}

Session::Session() : impl(std::make_unique<Impl>()) {}
Session::~Session() = default;

rt::Result<std::unique_ptr<Session>>
Session::openCached(const Model &model, rt::Device &device,
                    const SessionOptions &options) {
  std::unique_ptr<Session> session(new Session());
  Impl &s = *session->impl;
  if (Status st = s.prepare(model, &device, options); !st)
    return st;
  std::string dir = s.cacheDir();
  if (dir.empty())
    return Status::error("no program cache to open the session from (it is "
                         "off, or no cache folder is set)");
  double start = nowMs();
  std::string path = s.cacheEntryPath(dir);
  s.stats.programCachePath = path;
  if (!s.loadFromCache(dir, path, start))
    return Status::error(
        s.stats.programCacheWarning.empty()
            ? "the program cache has no entry for this model, device and "
              "options (" + path + ")"
            : s.stats.programCacheWarning);
  return session;
}

Status Session::feed(int32_t id, std::vector<float> *logits) {
  if (impl->options.sequences > 0)
    return Status::error("a session of several sequences runs batches "
                         "(runBatch)");
  return impl->feed(id, logits);
}
Status Session::runBatch(const std::vector<BatchRow> &rows,
                         std::vector<std::vector<float>> *logits) {
  return impl->runBatch(rows, logits);
}
int64_t Session::maxBatchRows() const {
  if (impl->options.sequences <= 0)
    return 0;
  return impl->batches.empty() ? impl->decode.rows : impl->batches.back().rows;
}
std::vector<int64_t> Session::batchRowCounts() const {
  std::vector<int64_t> out;
  if (impl->options.sequences <= 0)
    return out;
  out.push_back(impl->decode.rows);
  for (const Step &b : impl->batches)
    out.push_back(b.rows);
  return out;
}
Status Session::feedMany(const std::vector<int32_t> &ids,
                         std::vector<std::vector<float>> *logits,
                         bool allRows) {
  if (impl->options.sequences > 0)
    return Status::error("a session of several sequences runs batches "
                         "(runBatch)");
  return impl->feedMany(ids, logits, allRows);
}
int64_t Session::batchSize() const {
  return impl->hasChunk ? impl->chunk.rows : 1;
}
std::vector<int64_t> Session::tailChunkRowCounts() const {
  std::vector<int64_t> out;
  for (const Step &t : impl->tails)
    out.push_back(t.rows);
  return out;
}

Status Session::warmUp() {
  Impl &s = *impl;
  if (!s.device)
    return Status();
  double start = nowMs();
  if (s.options.sequences > 0) {
    if (Status st = s.runBatch({BatchRow{}}, nullptr); !st)
      return st;
  } else {
    s.pos = 0;
    int32_t token = 0;
    if (Status st = s.run(s.decode, &token, 1, nullptr); !st)
      return st;
    s.pos = 0;
  }
  // The warm-up is not one of the steps the kernel times describe.
  s.kernelTotalsNs.clear();
  s.chunkKernelTotalsNs.clear();
  s.kernelBytes.clear();
  s.chunkKernelBytes.clear();
  s.timedTokens = s.timedChunks = 0;
  s.stats.warmUpMs = nowMs() - start;
  return Status();
}

void Session::reset() { impl->pos = 0; }
void Session::rewind(int64_t position) {
  impl->pos = std::clamp<int64_t>(position, 0, impl->pos);
}
int64_t Session::position() const { return impl->pos; }
int64_t Session::contextSize() const { return impl->ctx; }
bool Session::quantizedActivations() const {
  return impl->options.quantizedActivations.value_or(false);
}
const SessionStats &Session::stats() const { return impl->stats; }
std::vector<double> Session::lastKernelTimesNs() const {
  return impl->decode.runner ? impl->decode.runner->lastKernelTimesNs()
                             : std::vector<double>();
}
std::vector<double> Session::kernelTimeTotalsNs(bool chunks) const {
  return chunks ? impl->chunkKernelTotalsNs : impl->kernelTotalsNs;
}
std::vector<double> Session::kernelByteTotals(bool chunks) const {
  return chunks ? impl->chunkKernelBytes : impl->kernelBytes;
}
int64_t Session::timedTokens(bool chunks) const {
  return chunks ? impl->timedChunks : impl->timedTokens;
}
std::vector<std::string> Session::kernelNames(bool chunks) const {
  return chunks ? impl->chunk.kernelNames : impl->decode.kernelNames;
}
