//===- Sampler.cpp - Choosing the next token from logits ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_set>

std::optional<hesper::models::SamplerParamError>
hesper::models::checkSamplerParams(const SamplerParams &p) {
  auto bad = [](const char *param, const std::string &range, double got) {
    char value[32];
    std::snprintf(value, sizeof(value), "%g", got);
    return SamplerParamError{param, std::string(param) + " must be " + range +
                                        ", got " + value};
  };
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    return bad("temperature", "a finite number >= 0 (0: greedy)",
               p.temperature);
  if (p.topK < 0)
    return bad("top_k", "an integer >= 0 (0: off)", p.topK);
  if (!(p.topP >= 0 && p.topP <= 1))
    return bad("top_p", "between 0 and 1 (1: off)", p.topP);
  if (!(p.minP >= 0 && p.minP <= 1))
    return bad("min_p", "between 0 and 1 (0: off)", p.minP);
  if (!std::isfinite(p.repeatPenalty) || p.repeatPenalty <= 0)
    return bad("repeat_penalty", "a finite number > 0 (1: off)",
               p.repeatPenalty);
  if (p.repeatLastN < -1)
    return bad("repeat_last_n", "an integer >= -1 (-1: all, 0: off)",
               p.repeatLastN);
  return std::nullopt;
}

using namespace hesper::models;

Sampler::Sampler(const SamplerParams &params)
    : params(params), rng(params.seed) {}

int32_t Sampler::argmax(const std::vector<float> &logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best])
      best = static_cast<int32_t>(i);
  return best;
}

namespace {
struct Candidate {
  int32_t id;
  float logit;
  float p = 0;
};
} // namespace

/// Softmax of the candidates' logits into p (they are sorted descending).
static void normalize(std::vector<Candidate> &c) {
  double sum = 0;
  for (Candidate &x : c) {
    x.p = static_cast<float>(std::exp(double(x.logit) - double(c[0].logit)));
    sum += x.p;
  }
  for (Candidate &x : c)
    x.p = static_cast<float>(x.p / sum);
}

int32_t Sampler::sample(const std::vector<float> &logits,
                        const std::vector<int32_t> &history) {
  std::vector<float> l = logits;
  // Repetition penalty (llama.cpp's rule: divide positive logits, multiply
  // negative ones), each distinct recent token once.
  if (params.repeatPenalty != 1.0f && params.repeatLastN != 0) {
    size_t n = params.repeatLastN < 0
                   ? history.size()
                   : std::min<size_t>(history.size(), params.repeatLastN);
    std::unordered_set<int32_t> seen(history.end() - n, history.end());
    for (int32_t id : seen) {
      if (id < 0 || static_cast<size_t>(id) >= l.size())
        continue;
      l[id] = l[id] > 0 ? l[id] / params.repeatPenalty
                        : l[id] * params.repeatPenalty;
    }
  }
  if (params.temperature <= 0)
    return argmax(l);

  std::vector<Candidate> c;
  c.reserve(l.size());
  for (size_t i = 0; i < l.size(); ++i)
    c.push_back({static_cast<int32_t>(i), l[i]});
  // Sorted by logit, ties by id, so the order never depends on the sort.
  auto before = [](const Candidate &a, const Candidate &b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (params.topK > 0 && static_cast<size_t>(params.topK) < c.size()) {
    std::partial_sort(c.begin(), c.begin() + params.topK, c.end(), before);
    c.resize(params.topK);
  } else {
    std::sort(c.begin(), c.end(), before);
  }
  normalize(c);
  if (params.topP < 1.0f) {
    double cum = 0;
    size_t keep = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
      cum += c[i].p;
      if (cum >= params.topP) {
        keep = i + 1;
        break;
      }
    }
    c.resize(std::max<size_t>(keep, 1));
    normalize(c);
  }
  if (params.minP > 0) {
    float threshold = c[0].p * params.minP;
    size_t keep = 1;
    while (keep < c.size() && c[keep].p >= threshold)
      ++keep;
    c.resize(keep);
  }
  for (Candidate &x : c)
    x.logit /= params.temperature;
  normalize(c);
  // A uniform draw in [0, 1) from 32 random bits (portable, unlike
  // std::uniform_real_distribution).
  double u = static_cast<double>(rng()) / 4294967296.0;
  double cum = 0;
  for (const Candidate &x : c) {
    cum += x.p;
    if (u < cum)
      return x.id;
  }
  return c.back().id;
}
