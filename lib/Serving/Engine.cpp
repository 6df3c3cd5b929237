//===- Engine.cpp - Generation for many requests at once ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Serving/Engine.h"

#include <algorithm>
#include <cmath>
#include <thread>

using namespace hesper;
using namespace hesper::serving;
using rt::Status;

static double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

const char *hesper::serving::finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::None:
    return "none";
  case FinishReason::Stop:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Cancelled:
    return "cancelled";
  case FinishReason::Error:
    return "error";
  case FinishReason::Shutdown:
    return "shutdown";
  }
  return "none";
}

size_t hesper::serving::completeUtf8Prefix(std::string_view text) {
  // Look back at most 3 bytes for the lead byte of the last sequence.
  size_t n = text.size();
  for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
    unsigned char c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80)
      continue; // a continuation byte
    size_t want = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                              : (c >> 3) == 30 ? 4
                                               : 1; // invalid: pass it on
    return back >= want ? n : n - back;
  }
  return n; // only continuation bytes: not ours to fix
}

//===----------------------------------------------------------------------===//
// Request
//===----------------------------------------------------------------------===//

bool Request::next(std::vector<TokenPiece> &out,
                   std::chrono::milliseconds wait) {
  out.clear();
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait_for(lock, wait, [&] { return done || !pieces.empty(); });
  while (!pieces.empty()) {
    out.push_back(std::move(pieces.front()));
    pieces.pop_front();
  }
  return !(done && out.empty());
}

std::vector<TokenPiece> Request::waitAll() {
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait(lock, [&] { return done; });
  std::vector<TokenPiece> out(std::make_move_iterator(pieces.begin()),
                              std::make_move_iterator(pieces.end()));
  pieces.clear();
  return out;
}

void Request::cancel() {
  std::lock_guard<std::mutex> lock(mutex);
  cancelFlag = true;
}

bool Request::cancelled() const {
  std::lock_guard<std::mutex> lock(mutex);
  return cancelFlag;
}

#define HESPER_REQUEST_GETTER(type, name, field)                               \
  type Request::name() const {                                                 \
    std::lock_guard<std::mutex> lock(mutex);                                   \
    return field;                                                              \
  }
HESPER_REQUEST_GETTER(FinishReason, reason, finish)
HESPER_REQUEST_GETTER(std::string, error, errorText)
HESPER_REQUEST_GETTER(int64_t, promptTokens, nPrompt)
HESPER_REQUEST_GETTER(int64_t, reusedTokens, nReused)
HESPER_REQUEST_GETTER(int64_t, completionTokens, nCompletion)
HESPER_REQUEST_GETTER(double, promptMs, msPrompt)
HESPER_REQUEST_GETTER(double, decodeMs, msDecode)
HESPER_REQUEST_GETTER(int, slot, slotIndex)
#undef HESPER_REQUEST_GETTER

//===----------------------------------------------------------------------===//
// Engine
//===----------------------------------------------------------------------===//

namespace {
/// A slot: one sequence of the batch session, what its cache holds, and
/// the request it runs.
struct Slot {
  std::vector<int32_t> cached; ///< tokens at positions 0..size()-1
  uint64_t lastUsed = 0;

  // The running request (null: idle).
  std::shared_ptr<Request> request;
  GenerationRequest gen;
  size_t fed = 0;     ///< prompt tokens in the cache
  size_t reused = 0;  ///< of which were there before the request
  bool ready = false; ///< `logits` are the next token's
  std::vector<float> logits;
  std::vector<int32_t> history; ///< prompt and generated, for the penalty
  std::unique_ptr<models::Sampler> sampler;
  std::string text;     ///< the reply's text so far
  size_t sentBytes = 0; ///< of which handed out
  int32_t generated = 0;
  double promptMs = 0, decodeMs = 0;
};
} // namespace

struct Engine::Impl {
  const models::Model *model = nullptr;
  EngineOptions options;
  /// One session, a KV-cache sequence per slot: a step runs every busy
  /// slot's next token (and prompt chunks) as the rows of one batch.
  std::unique_ptr<models::Session> session;
  std::vector<Slot> slots;
  uint64_t clock = 0;
  int64_t chunk = 1; ///< prompt tokens per slot per step

  mutable std::mutex mutex; ///< guards the fields below and the stats
  std::condition_variable wake;
  std::deque<std::pair<std::shared_ptr<Request>, GenerationRequest>> waiting;
  int busy = 0;
  bool stopping = false;
  EngineStats counters;
  std::thread thread;

  void run();
  void admit(std::shared_ptr<Request> request, GenerationRequest gen);
  void step();
  /// Samples the slot's next token and hands it out; true when generation
  /// goes on (the token must be fed).
  bool sampleNext(Slot &slot);
  void emit(Slot &slot, TokenPiece piece);
  void finish(Slot &slot, FinishReason reason, const std::string &error = "");
  std::string textDelta(Slot &slot, bool final, bool &stopped);
};

Engine::Engine() : impl(std::make_unique<Impl>()) {}

Engine::~Engine() { shutdown(); }

rt::Result<std::unique_ptr<Engine>>
Engine::create(const models::Model &model, rt::Device *device,
               const EngineOptions &options) {
  if (options.slots < 1)
    return Status::error("the number of slots (-np) must be at least 1");
  if (options.queueSize < 0)
    return Status::error("the queue size must not be negative");
  std::unique_ptr<Engine> engine(new Engine());
  Impl &m = *engine->impl;
  m.model = &model;
  m.options = options;
  m.slots.resize(options.slots);
  models::SessionOptions sessionOptions = options.session;
  sessionOptions.sequences = options.slots;
  auto session = models::Session::create(model, device, sessionOptions);
  if (!session)
    return session.status();
  m.session = std::move(*session);
  if (options.warmup)
    if (Status s = m.session->warmUp(); !s)
      return s;
  // A prompt takes up to a chunk of the largest step's rows per step (the
  // rest carry the other slots' tokens).
  m.chunk = std::max<int64_t>(1, m.session->maxBatchRows() - options.slots);
  m.counters.slots = options.slots;
  m.thread = std::thread([&m] { m.run(); });
  return engine;
}

std::string Engine::validate(const GenerationRequest &r) const {
  const int64_t ctx = contextSize();
  if (r.prompt.empty())
    return "the prompt is empty (no tokens to start from)";
  if (static_cast<int64_t>(r.prompt.size()) >= ctx)
    return "the prompt has " + std::to_string(r.prompt.size()) +
           " tokens; the context of a slot has " + std::to_string(ctx) +
           " positions, and at least one must be left to generate";
  const int64_t vocab = impl->model->hparams().vocab;
  for (int32_t id : r.prompt)
    if (id < 0 || id >= vocab)
      return "token id " + std::to_string(id) +
             " is outside the vocabulary of " + std::to_string(vocab);
  return "";
}

std::shared_ptr<Request> Engine::submit(GenerationRequest gen,
                                        std::string &why, Refusal *refusal) {
  auto refuse = [&](Refusal kind, std::string message) {
    why = std::move(message);
    if (refusal)
      *refusal = kind;
    return nullptr;
  };
  if (std::string e = validate(gen); !e.empty())
    return refuse(Refusal::Invalid, e);
  auto request = std::make_shared<Request>();
  request->nPrompt = static_cast<int64_t>(gen.prompt.size());
  std::lock_guard<std::mutex> lock(impl->mutex);
  if (impl->stopping)
    return refuse(Refusal::ShuttingDown, "the server is shutting down");
  const bool slotFree = impl->busy + static_cast<int>(impl->waiting.size()) <
                        static_cast<int>(impl->slots.size());
  if (!slotFree &&
      static_cast<int>(impl->waiting.size()) >= impl->options.queueSize)
    return refuse(Refusal::Full,
                  "every slot is busy and the queue is full (" +
                      std::to_string(impl->options.queueSize) + " waiting)");
  impl->waiting.emplace_back(request, std::move(gen));
  ++impl->counters.requests;
  impl->wake.notify_all();
  return request;
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    if (impl->stopping && !impl->thread.joinable())
      return;
    impl->stopping = true;
    impl->wake.notify_all();
  }
  if (impl->thread.joinable())
    impl->thread.join();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  EngineStats s = impl->counters;
  s.slotsBusy = impl->busy;
  s.queued = static_cast<int>(impl->waiting.size());
  return s;
}

int64_t Engine::contextSize() const { return impl->session->contextSize(); }

int Engine::slots() const { return static_cast<int>(impl->slots.size()); }

const models::SessionStats &Engine::sessionStats() const {
  return impl->session->stats();
}

void Engine::Impl::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || busy > 0 || !waiting.empty(); });
      if (stopping)
        break;
      // Join: each waiting request takes the idle slot whose cache shares
      // the longest prefix with its prompt (ties: the least recently used).
      while (!waiting.empty() && busy < static_cast<int>(slots.size())) {
        auto [request, gen] = std::move(waiting.front());
        waiting.pop_front();
        lock.unlock();
        admit(std::move(request), std::move(gen));
        lock.lock();
      }
      ++counters.steps;
    }
    step();
  }
  // Shutdown: the running and the waiting requests end.
  for (Slot &slot : slots)
    if (slot.request)
      finish(slot, FinishReason::Shutdown, "the server is shutting down");
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[request, gen] : waiting)
    request->end(FinishReason::Shutdown, "the server is shutting down", 0, 0,
                 0);
  waiting.clear();
}

void Engine::Impl::admit(std::shared_ptr<Request> request,
                         GenerationRequest gen) {
  Slot *best = nullptr;
  size_t reuse = 0;
  for (Slot &slot : slots) {
    if (slot.request)
      continue;
    size_t common = models::reusablePrefix(slot.cached, gen.prompt);
    if (!best || common > reuse ||
        (common == reuse && slot.lastUsed < best->lastUsed)) {
      best = &slot;
      reuse = common;
    }
  }
  Slot &slot = *best;
  slot.cached.resize(reuse);
  slot.fed = slot.reused = reuse;
  slot.ready = false;
  slot.history = gen.prompt;
  slot.sampler = std::make_unique<models::Sampler>(gen.sampler);
  slot.text.clear();
  slot.sentBytes = 0;
  slot.generated = 0;
  slot.promptMs = slot.decodeMs = 0;
  slot.logits.clear();
  slot.lastUsed = ++clock;
  slot.gen = std::move(gen);
  {
    std::lock_guard<std::mutex> lock(request->mutex);
    request->slotIndex = static_cast<int>(&slot - slots.data());
    request->nReused = static_cast<int64_t>(reuse);
  }
  slot.request = std::move(request);
  std::lock_guard<std::mutex> lock(mutex);
  ++busy;
}

void Engine::Impl::emit(Slot &slot, TokenPiece piece) {
  Request &r = *slot.request;
  std::lock_guard<std::mutex> lock(r.mutex);
  r.pieces.push_back(std::move(piece));
  r.nCompletion = slot.generated;
  r.changed.notify_all();
}

void Request::end(FinishReason reason, const std::string &error,
                  int64_t completion, double promptMs, double decodeMs) {
  std::lock_guard<std::mutex> lock(mutex);
  done = true;
  finish = reason;
  errorText = error;
  nCompletion = completion;
  msPrompt = promptMs;
  msDecode = decodeMs;
  changed.notify_all();
}

void Engine::Impl::finish(Slot &slot, FinishReason reason,
                          const std::string &error) {
  // The slot counts as free before the request ends: a client that has its
  // answer and then reads /metrics must not see its own slot still busy.
  {
    std::lock_guard<std::mutex> lock(mutex);
    --busy;
    counters.promptTokens += slot.fed - slot.reused;
    counters.generatedTokens += slot.generated;
    counters.promptSeconds += slot.promptMs / 1000;
    counters.decodeSeconds += slot.decodeMs / 1000;
  }
  slot.request->end(reason, error, slot.generated, slot.promptMs,
                    slot.decodeMs);
  slot.request.reset();
  slot.sampler.reset();
}

/// The text that can be handed out now: up to a stop string (then `stopped`)
/// or, while generation goes on, short of anything that may be the start of
/// one and of an incomplete UTF-8 character.
std::string Engine::Impl::textDelta(Slot &slot, bool final, bool &stopped) {
  stopped = false;
  size_t end = slot.text.size();
  // A stop string that starts in the unsent text (it may begin in text
  // that was held back, never in text already sent).
  size_t firstStop = std::string::npos;
  for (const std::string &s : slot.gen.stop) {
    if (s.empty())
      continue;
    size_t from = slot.sentBytes;
    size_t at = slot.text.find(s, from);
    if (at != std::string::npos && at < firstStop)
      firstStop = at;
  }
  if (firstStop != std::string::npos) {
    stopped = true;
    end = firstStop;
  } else if (!final) {
    // Hold back a suffix that is a proper prefix of a stop string.
    size_t hold = 0;
    for (const std::string &s : slot.gen.stop)
      for (size_t k = std::min(s.size() - 1, end - slot.sentBytes); k > hold;
           --k)
        if (slot.text.compare(end - k, k, s, 0, k) == 0) {
          hold = k;
          break;
        }
    end -= hold;
    end = std::max(slot.sentBytes,
                   std::min(end, completeUtf8Prefix(
                                     std::string_view(slot.text).substr(0, end))));
  }
  std::string delta = slot.text.substr(slot.sentBytes, end - slot.sentBytes);
  slot.sentBytes = end;
  return delta;
}

bool Engine::Impl::sampleNext(Slot &slot) {
  TokenPiece piece;
  piece.id = slot.sampler->sample(slot.logits, slot.history);
  {
    // Log-softmax of the raw logits, in double.
    const std::vector<float> &l = slot.logits;
    double maxLogit = *std::max_element(l.begin(), l.end());
    double sum = 0;
    for (float v : l)
      sum += std::exp(double(v) - maxLogit);
    double logSum = maxLogit + std::log(sum);
    piece.logprob = static_cast<float>(l[piece.id] - logSum);
    if (slot.gen.topLogprobs > 0) {
      std::vector<int32_t> order(l.size());
      for (size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int32_t>(i);
      size_t k = std::min<size_t>(slot.gen.topLogprobs, order.size());
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int32_t a, int32_t b) {
                          return l[a] > l[b] || (l[a] == l[b] && a < b);
                        });
      for (size_t i = 0; i < k; ++i)
        piece.top.push_back(
            {order[i], static_cast<float>(l[order[i]] - logSum)});
    }
  }
  slot.ready = false;
  slot.history.push_back(piece.id);
  ++slot.generated;
  const models::Tokenizer *tok = model->tokenizer();
  const bool end =
      slot.gen.stopAtEndOfGeneration && tok && tok->isEog(piece.id);
  if (tok && !end)
    slot.text += tok->decodeToken(piece.id);
  const bool budgetSpent =
      slot.gen.maxTokens >= 0 && slot.generated >= slot.gen.maxTokens;
  const bool contextFull =
      static_cast<int64_t>(slot.cached.size()) >= session->contextSize();
  bool stopped = false;
  piece.text = textDelta(slot, end || budgetSpent || contextFull, stopped);
  emit(slot, std::move(piece));
  if (end || stopped) {
    finish(slot, FinishReason::Stop);
    return false;
  }
  if (budgetSpent || contextFull) {
    finish(slot, FinishReason::Length);
    return false;
  }
  return true;
}

void Engine::Impl::step() {
  // Requests whose clients went away end here; their slots are free.
  for (Slot &slot : slots)
    if (slot.request && slot.request->cancelled())
      finish(slot, FinishReason::Cancelled);

  // One row per generating slot: its next token, sampled from the logits
  // of its last step.
  const double start = nowMs();
  std::vector<models::BatchRow> rows;
  std::vector<Slot *> owners; ///< the slot of each row that asks logits
  std::vector<Slot *> decoding, prompting;
  for (Slot &slot : slots) {
    if (!slot.request || !slot.ready)
      continue;
    if (!sampleNext(slot))
      continue;
    const int32_t sequence = static_cast<int32_t>(&slot - slots.data());
    rows.push_back({slot.history.back(), sequence,
                    static_cast<int64_t>(slot.cached.size()), true});
    owners.push_back(&slot);
    decoding.push_back(&slot);
  }
  // Prompt chunks fill the rest of the largest step, slot by slot, each
  // at most `chunk` tokens (the session's batch size: the splits of a
  // prompt are those of a one-sequence session).
  const int64_t maxRows = session->maxBatchRows();
  std::vector<size_t> promptRows;
  for (Slot &slot : slots) {
    if (!slot.request || slot.ready || slot.fed >= slot.gen.prompt.size())
      continue;
    const int64_t room = maxRows - static_cast<int64_t>(rows.size());
    if (room <= 0)
      break;
    const int32_t sequence = static_cast<int32_t>(&slot - slots.data());
    const size_t n = std::min<size_t>(
        {slot.gen.prompt.size() - slot.fed, size_t(chunk), size_t(room)});
    for (size_t i = 0; i < n; ++i) {
      const size_t p = slot.fed + i;
      const bool last = p + 1 == slot.gen.prompt.size();
      rows.push_back(
          {slot.gen.prompt[p], sequence, static_cast<int64_t>(p), last});
      if (last)
        owners.push_back(&slot);
    }
    prompting.push_back(&slot);
    promptRows.push_back(n);
  }
  if (rows.empty())
    return;

  std::vector<std::vector<float>> logits;
  if (rt::Status s = session->runBatch(rows, &logits); !s) {
    for (Slot *slot : decoding)
      finish(*slot, FinishReason::Error, s.message());
    for (Slot *slot : prompting)
      if (slot->request)
        finish(*slot, FinishReason::Error, s.message());
    return;
  }
  const double ms = nowMs() - start;
  // What the caches now hold, and whose logits came back (in row order).
  for (Slot *slot : decoding) {
    slot->cached.push_back(slot->history.back());
    slot->decodeMs += ms;
  }
  for (size_t k = 0; k < prompting.size(); ++k) {
    Slot &slot = *prompting[k];
    slot.cached.insert(slot.cached.end(), slot.gen.prompt.begin() + slot.fed,
                       slot.gen.prompt.begin() + slot.fed + promptRows[k]);
    slot.fed += promptRows[k];
    slot.promptMs += ms;
  }
  size_t at = 0;
  for (Slot *slot : owners) {
    slot->logits = std::move(logits[at++]);
    slot->ready = true;
  }
}
