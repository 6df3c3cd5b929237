//===- BenchMode.cpp - hesper-run --bench: llama-bench's tests ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Prompt processing (ppN) and generation (tgN) speed of an open session,
// measured as llama.cpp's llama-bench measures them, so that the two tools'
// figures compare like with like: each test runs once untimed (the warm-up:
// the first touch of the buffers and the kernels' code is not the kernels'
// speed), then `reps` times from position 0, after `depth` untimed tokens
// when a depth is asked; each rep's tokens per second are one sample, and
// the test reports their mean and sample standard deviation. Tokens are
// drawn from the vocabulary by a fixed generator (the same ids every run).
//
//===----------------------------------------------------------------------===//

#include "BenchMode.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdint>

using namespace hesper;
using namespace hesper::models;

namespace {

struct Test {
  int64_t prompt = 0, gen = 0, depth = 0;
  std::vector<double> samplesNs;

  int64_t tokens() const { return prompt ? prompt : gen; }
  std::string name() const {
    std::string n = (prompt ? "pp" : "tg") + std::to_string(tokens());
    return depth ? n + " @ d" + std::to_string(depth) : n;
  }
  std::vector<double> samplesTs() const {
    std::vector<double> ts;
    for (double ns : samplesNs)
      ts.push_back(tokens() / (ns * 1e-9));
    return ts;
  }
};

double mean(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return v.empty() ? 0 : sum / v.size();
}

double stddev(const std::vector<double> &v) {
  if (v.size() < 2)
    return 0;
  double m = mean(v), sq = 0;
  for (double x : v)
    sq += (x - m) * (x - m);
  return std::sqrt(sq / (v.size() - 1));
}

/// Token ids in [0, vocab) from a 64-bit LCG (Knuth's MMIX constants).
class Tokens {
public:
  explicit Tokens(int64_t vocab) : vocab(vocab) {}
  int32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(vocab));
  }
  std::vector<int32_t> take(int64_t n) {
    std::vector<int32_t> ids(n);
    for (int32_t &id : ids)
      id = next();
    return ids;
  }

private:
  int64_t vocab;
  uint64_t state = 1;
};

/// One run of `t` from position 0: its depth untimed, then the timed part.
rt::Result<double> runOnce(Session &s, const Test &t, Tokens &tokens) {
  s.reset();
  if (t.depth)
    if (rt::Status st = s.feedMany(tokens.take(t.depth), nullptr, false); !st)
      return st;
  std::vector<int32_t> ids = tokens.take(t.tokens());
  auto start = std::chrono::steady_clock::now();
  if (t.prompt) {
    if (rt::Status st = s.feedMany(ids, nullptr, false); !st)
      return st;
  } else {
    for (int32_t id : ids)
      if (rt::Status st = s.feed(id, nullptr); !st)
        return st;
  }
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now() - start)
      .count();
}

std::string fileName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

int hesper::run::runBench(Session &s, const Model &model,
                          const std::string &path, const std::string &backend,
                          const BenchSpec &spec, llvm::raw_ostream &out,
                          llvm::raw_ostream &err) {
  std::vector<Test> tests;
  for (int64_t d : spec.depths) {
    for (int64_t p : spec.prompts)
      if (p > 0)
        tests.push_back({p, 0, d, {}});
    for (int64_t g : spec.gens)
      if (g > 0)
        tests.push_back({0, g, d, {}});
  }
  if (tests.empty()) {
    err << "error: --bench has no test: give --bench-prompt or --bench-gen "
           "a count above 0\n";
    return 1;
  }
  for (const Test &t : tests)
    if (t.depth < 0 || t.depth + t.tokens() > s.contextSize()) {
      err << "error: --bench test " << t.name() << " needs "
          << t.depth + t.tokens() << " positions; the context has "
          << s.contextSize() << " (-c/--ctx-size)\n";
      return 1;
    }

  Tokens tokens(model.hparams().vocab);
  for (Test &t : tests) {
    // The warm-up: a prompt test runs its prompt, a generation test one
    // token (as llama-bench's).
    Test warm = t;
    if (!warm.prompt)
      warm.gen = 1;
    if (auto ns = runOnce(s, warm, tokens); !ns) {
      err << "error: " << ns.status().message() << "\n";
      return 1;
    }
    for (int r = 0; r < spec.reps; ++r) {
      auto ns = runOnce(s, t, tokens);
      if (!ns) {
        err << "error: " << ns.status().message() << "\n";
        return 1;
      }
      t.samplesNs.push_back(*ns);
    }
  }
  s.reset();

  const std::string name = fileName(path);
  const uint64_t bytes = model.weightBytes();
  const int64_t params = model.hparams().parameterCount();
  if (spec.json) {
    // llama-bench's -o json keys, for the scripts that read both.
    llvm::json::Array array;
    for (const Test &t : tests) {
      std::vector<double> ts = t.samplesTs();
      llvm::json::Array ns, tps;
      for (double v : t.samplesNs)
        ns.push_back(static_cast<int64_t>(v));
      for (double v : ts)
        tps.push_back(v);
      array.push_back(llvm::json::Object{
          {"model_filename", path},
          {"model_size", static_cast<int64_t>(bytes)},
          {"model_n_params", params},
          {"backend", backend},
          {"n_batch", s.batchSize()},
          {"n_ctx", s.contextSize()},
          {"n_prompt", t.prompt},
          {"n_gen", t.gen},
          {"n_depth", t.depth},
          {"avg_ns", static_cast<int64_t>(mean(t.samplesNs))},
          {"stddev_ns", static_cast<int64_t>(stddev(t.samplesNs))},
          {"avg_ts", mean(ts)},
          {"stddev_ts", stddev(ts)},
          {"samples_ns", std::move(ns)},
          {"samples_ts", std::move(tps)}});
    }
    out << llvm::formatv("{0:2}", llvm::json::Value(std::move(array))) << "\n";
    return 0;
  }
  out << "| model | size | params | backend | n_batch | test | t/s |\n"
      << "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n";
  for (const Test &t : tests) {
    std::vector<double> ts = t.samplesTs();
    out << "| " << name << " | " << llvm::format("%.2f MiB", bytes / 1048576.0)
        << " | " << llvm::format("%.2f M", params / 1e6) << " | " << backend
        << " | " << s.batchSize() << " | " << t.name() << " | "
        << llvm::format("%.2f ± %.2f", mean(ts), stddev(ts)) << " |\n";
  }
  return 0;
}
