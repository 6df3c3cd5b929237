//===- SamplerTest.cpp - Samplers of the generation loop ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace hesper::models;

namespace {

SamplerParams params(float temp) {
  SamplerParams p;
  p.temperature = temp;
  p.topK = 0;
  p.topP = 1.0f;
  p.minP = 0.0f;
  return p;
}

TEST(Sampler, GreedyTakesTheLargestLogitAndTheLowestIdOnTies) {
  Sampler s(params(0));
  EXPECT_EQ(s.sample({0.1f, 2.0f, -1.0f, 2.0f}, {}), 1);
  EXPECT_EQ(Sampler::argmax({-3.0f, -2.0f, -2.5f}), 1);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  SamplerParams p = params(0);
  p.repeatPenalty = 2.0f;
  Sampler s(p);
  // Token 0 (3.0) was seen: 1.5 < 2.0, so token 1 wins.
  EXPECT_EQ(s.sample({3.0f, 2.0f, -1.0f}, {0}), 1);
  // Negative logits get more negative: token 2 (-1 * 2 = -2) loses to
  // token 1 (-1.5).
  EXPECT_EQ(s.sample({-5.0f, -1.5f, -1.0f}, {2}), 1);
  // Outside the window (repeatLastN = 1) the penalty does not apply.
  p.repeatLastN = 1;
  Sampler w(p);
  EXPECT_EQ(w.sample({3.0f, 2.0f, -1.0f}, {0, 2}), 0);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  SamplerParams p = params(5.0f);
  p.topK = 1;
  Sampler s(p);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(s.sample({0.0f, 0.5f, 0.4f, 0.1f}, {}), 1);
}

TEST(Sampler, SeedMakesDrawsReproducible) {
  std::vector<float> logits{0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  SamplerParams p = params(1.0f);
  p.seed = 42;
  Sampler a(p), b(p);
  std::vector<int32_t> ra, rb;
  for (int i = 0; i < 100; ++i) {
    ra.push_back(a.sample(logits, {}));
    rb.push_back(b.sample(logits, {}));
  }
  EXPECT_EQ(ra, rb);
  p.seed = 43;
  Sampler c(p);
  std::vector<int32_t> rc;
  for (int i = 0; i < 100; ++i)
    rc.push_back(c.sample(logits, {}));
  EXPECT_NE(ra, rc);
}

TEST(Sampler, DrawsFollowTheDistribution) {
  // p = softmax([0, log 3]) = [0.25, 0.75].
  SamplerParams p = params(1.0f);
  p.seed = 7;
  Sampler s(p);
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    ones += s.sample({0.0f, std::log(3.0f)}, {});
  EXPECT_NEAR(double(ones) / n, 0.75, 0.02);
}

TEST(Sampler, TopPAndMinPCutTheTail) {
  // p ~ [0.64, 0.24, 0.09, 0.03]: top-p 0.7 keeps two tokens.
  std::vector<float> logits{3.0f, 2.0f, 1.0f, 0.0f};
  SamplerParams p = params(1.0f);
  p.topP = 0.7f;
  p.seed = 1;
  Sampler s(p);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 2000; ++i)
    ++seen[s.sample(logits, {})];
  EXPECT_EQ(seen.count(2) + seen.count(3), 0u);
  EXPECT_GT(seen[1], 0);
  // min-p 0.2: tokens below 0.2 * 0.64 = 0.128 go (2 and 3).
  SamplerParams q = params(1.0f);
  q.minP = 0.2f;
  q.seed = 2;
  Sampler m(q);
  seen.clear();
  for (int i = 0; i < 2000; ++i)
    ++seen[m.sample(logits, {})];
  EXPECT_EQ(seen.count(2) + seen.count(3), 0u);
  EXPECT_GT(seen[0], seen[1]);
}

} // namespace
