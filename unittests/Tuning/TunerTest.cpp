//===- TunerTest.cpp - The tuner's rules --------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Tuning/Tuner.h"

#include <gtest/gtest.h>

using hesper::tune::graphConfirms;

namespace {

// A winner stays when the graph, run alternately with and without it, is
// faster by at least a quarter of what the kernel alone saved, at the
// median of the rounds.
TEST(TunerTest, GraphConfirmsARealSaving) {
  EXPECT_TRUE(graphConfirms({90, 110, 100, 95, 105}, 100));
  // A quarter of the isolated saving is enough (the median here is 30).
  EXPECT_TRUE(graphConfirms({30, 10, 50, 30, 40}, 100));
}

TEST(TunerTest, GraphRejectsNoiseAndLosses) {
  // Faster in isolation, slower in the graph.
  EXPECT_FALSE(graphConfirms({-40, -10, 5, -20, -30}, 100));
  // Under a quarter of the isolated saving: within what alternating runs
  // call noise.
  EXPECT_FALSE(graphConfirms({20, -5, 24, 10, 15}, 100));
  // No saving at all, however small the claim.
  EXPECT_FALSE(graphConfirms({0, 0, 0}, 0));
  EXPECT_FALSE(graphConfirms({}, 0));
}

} // namespace
