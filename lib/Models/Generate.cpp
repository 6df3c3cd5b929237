//===- Generate.cpp - The generation loop ---------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Generate.h"

#include <chrono>

using namespace hesper;
using namespace hesper::models;
using rt::Status;

static double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

rt::Result<GenerateResult>
hesper::models::generate(Session &session, const std::vector<int32_t> &prompt,
                         const GenerateOptions &options,
                         const std::function<bool(int32_t)> &onToken,
                         const std::function<bool(int32_t)> &isEnd) {
  if (prompt.empty())
    return Status::error("the prompt is empty (no tokens to start from)");
  int64_t room = session.contextSize() - session.position();
  if (static_cast<int64_t>(prompt.size()) > room)
    return Status::error("the prompt has " + std::to_string(prompt.size()) +
                         " tokens, more than the " + std::to_string(room) +
                         " positions left in the context of " +
                         std::to_string(session.contextSize()) +
                         " (-c/--ctx-size)");
  GenerateResult result;
  result.promptTokens = prompt.size();
  std::vector<float> logits;
  std::vector<int32_t> history(prompt);
  double start = nowMs();
  // The prompt in chunks of the session's batch size.
  std::vector<std::vector<float>> rows;
  if (Status s = session.feedMany(prompt, &rows, options.keepLogits); !s)
    return s;
  logits = rows.back();
  if (options.keepLogits)
    result.logits = std::move(rows);
  result.promptMs = nowMs() - start;

  Sampler sampler(options.sampler);
  start = nowMs();
  for (int32_t n = 0; options.maxTokens < 0 || n < options.maxTokens; ++n) {
    double sampleStart = nowMs();
    int32_t next = sampler.sample(logits, history);
    result.sampleMs += nowMs() - sampleStart;
    result.generated.push_back(next);
    history.push_back(next);
    bool keepGoing = !onToken || onToken(next);
    if (options.stopAtEndOfGeneration && isEnd && isEnd(next)) {
      result.stoppedAtEnd = true;
      break;
    }
    if (!keepGoing)
      break;
    // The last token is fed only when its logits are wanted or more tokens
    // follow.
    bool more = options.maxTokens < 0 || n + 1 < options.maxTokens;
    if (!more && !options.keepLogits)
      break;
    if (session.position() >= session.contextSize()) {
      if (!more)
        break;
      return Status::error("the context is full (" +
                           std::to_string(session.contextSize()) +
                           " tokens); use a larger -c/--ctx-size");
    }
    if (Status s = session.feed(next, &logits); !s)
      return s;
    if (options.keepLogits)
      result.logits.push_back(logits);
  }
  result.decodeMs = nowMs() - start;
  return result;
}
