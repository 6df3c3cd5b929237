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
// median of the rounds, and its slower runs are no slower.
TEST(TunerTest, GraphConfirmsARealSaving) {
  EXPECT_TRUE(graphConfirms({1000, 1010, 990, 1005, 995},
                            {910, 900, 890, 910, 890}, 100));
  // A quarter of the isolated saving is enough (the median here is 30).
  EXPECT_TRUE(graphConfirms({1000, 1000, 1000, 1000, 1000},
                            {970, 990, 950, 970, 960}, 100));
}

TEST(TunerTest, GraphRejectsNoiseLossesAndUnsteadyWins) {
  // Faster in isolation, slower in the graph.
  EXPECT_FALSE(graphConfirms({1000, 1000, 1000, 1000, 1000},
                             {1040, 1010, 995, 1020, 1030}, 100));
  // Under a quarter of the isolated saving: within what alternating runs
  // call noise (median 15).
  EXPECT_FALSE(graphConfirms({1000, 1000, 1000, 1000, 1000},
                             {980, 1005, 976, 990, 985}, 100));
  // Faster at the median, but a quarter of its runs far slower.
  EXPECT_FALSE(graphConfirms({1000, 1000, 1000, 1000, 1000},
                             {800, 800, 800, 1500, 1600}, 100));
  // No saving at all, however small the claim; nothing to compare.
  EXPECT_FALSE(graphConfirms({1000, 1000, 1000}, {1000, 1000, 1000}, 0));
  EXPECT_FALSE(graphConfirms({}, {}, 0));
  EXPECT_FALSE(graphConfirms({1000}, {}, 0));
}

} // namespace
