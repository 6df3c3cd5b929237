//===- TunerTest.cpp - The tuner's rules --------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Tuning/Eval.h"
#include "Hesper/Tuning/Tuner.h"

#include <gtest/gtest.h>

using hesper::tune::DataSheetPeak;
using hesper::tune::dataSheetPeak;
using hesper::tune::graphSaving;

namespace {

// A winner stays when the graph, run alternately with and without it, is
// faster by at least a quarter of what the kernel alone saved, at the
// median of the rounds, and its slower runs are no slower; the saving is
// that median.
TEST(TunerTest, GraphConfirmsARealSaving) {
  std::optional<double> saving = graphSaving(
      {1000, 1010, 990, 1005, 995}, {910, 900, 890, 910, 890}, 100);
  ASSERT_TRUE(saving.has_value());
  EXPECT_EQ(*saving, 100);
  // A quarter of the isolated saving is enough (the median here is 30).
  saving = graphSaving({1000, 1000, 1000, 1000, 1000},
                       {970, 990, 950, 970, 960}, 100);
  ASSERT_TRUE(saving.has_value());
  EXPECT_EQ(*saving, 30);
}

TEST(TunerTest, GraphRejectsNoiseLossesAndUnsteadyWins) {
  // Faster in isolation, slower in the graph.
  EXPECT_FALSE(graphSaving({1000, 1000, 1000, 1000, 1000},
                           {1040, 1010, 995, 1020, 1030}, 100));
  // Under a quarter of the isolated saving: within what alternating runs
  // call noise (median 15).
  EXPECT_FALSE(graphSaving({1000, 1000, 1000, 1000, 1000},
                           {980, 1005, 976, 990, 985}, 100));
  // Faster at the median, but a quarter of its runs far slower.
  EXPECT_FALSE(graphSaving({1000, 1000, 1000, 1000, 1000},
                           {800, 800, 800, 1500, 1600}, 100));
  // No saving at all, however small the claim; nothing to compare.
  EXPECT_FALSE(graphSaving({1000, 1000, 1000}, {1000, 1000, 1000}, 0));
  EXPECT_FALSE(graphSaving({}, {}, 0));
  EXPECT_FALSE(graphSaving({1000}, {}, 0));
}


// hesper-eval's "of peak" on CUDA: the data sheets' dense f16 tensor-core
// rates, the more specific part first (a PCIe H100 is not an SXM one),
// nothing for a name it does not know.
TEST(TunerTest, DataSheetPeaksByDeviceName) {
  auto peak = [](const char *name) {
    std::optional<DataSheetPeak> p = dataSheetPeak(name);
    return p ? p->gflops : 0.0;
  };
  EXPECT_EQ(peak("NVIDIA H100 80GB HBM3"), 989400);
  EXPECT_EQ(peak("NVIDIA H100 PCIe"), 756000);
  EXPECT_EQ(peak("NVIDIA H100 NVL"), 835500);
  EXPECT_EQ(peak("NVIDIA H200"), 989400);
  EXPECT_EQ(peak("NVIDIA A100-SXM4-80GB"), 312000);
  EXPECT_EQ(peak("NVIDIA L40S"), 362050);
  EXPECT_EQ(peak("NVIDIA L4"), 121000);
  EXPECT_EQ(peak("NVIDIA GeForce RTX 3060"), 0);
  EXPECT_EQ(peak("llvmpipe (LLVM 15.0.6, 256 bits)"), 0);
  EXPECT_STREQ(dataSheetPeak("NVIDIA H100 PCIe")->part, "H100 PCIe");
}

} // namespace
