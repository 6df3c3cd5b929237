//===- EvalReportTest.cpp - The eval report's JSON form -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Round trips of hesper-eval's report (the invariant hesper-fuzz-json
// checks), and the case the fuzzer found: -0 read, printed as -0, read
// back as the integer 0 and printed as 0.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Tuning/EvalReport.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace hesper::tune;

namespace {

const char *kReport = R"({
  "hesper_eval": 1, "device": "d", "device_id": "i", "compiler": "c",
  "copy_gbps": 10,
  "workloads": [{"name": "w", "latency_us": {"min": 1.5, "median": 2},
                 "noise": -0.0, "gbps": 5, "gflops": 1,
                 "copy_fraction": 0.5, "max_error": 0, "correct": false}]
})";

TEST(EvalReportTest, PrintsWhatItReadsAndReadsWhatItPrints) {
  std::string error;
  auto report = parseReport(kReport, error);
  ASSERT_TRUE(mlir::succeeded(report)) << error;
  ASSERT_EQ(report->workloads.size(), 1u);
  const WorkloadResult &w = report->workloads[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.minUs, 1.5);
  EXPECT_EQ(w.medianUs, 2);
  EXPECT_FALSE(w.correct);
  // -0 is read as 0.
  EXPECT_FALSE(std::signbit(w.noise));
  std::string printed = printReport(*report);
  EXPECT_EQ(printed.find("-0"), std::string::npos) << printed;
  auto again = parseReport(printed, error);
  ASSERT_TRUE(mlir::succeeded(again)) << error;
  EXPECT_EQ(printReport(*again), printed);
}

TEST(EvalReportTest, PeakIsOptionalAndChecked) {
  std::string error;
  // Absent (a report of an older hesper-eval): unknown, 0.
  auto report = parseReport(kReport, error);
  ASSERT_TRUE(mlir::succeeded(report)) << error;
  EXPECT_EQ(report->peakGflops, 0);
  // Present: read, and printed back.
  std::string withPeak(kReport);
  withPeak.replace(withPeak.find("\"copy_gbps\": 10"), 15,
                   "\"copy_gbps\": 10, \"peak_gflops\": 523.5");
  report = parseReport(withPeak, error);
  ASSERT_TRUE(mlir::succeeded(report)) << error;
  EXPECT_EQ(report->peakGflops, 523.5);
  auto again = parseReport(printReport(*report), error);
  ASSERT_TRUE(mlir::succeeded(again)) << error;
  EXPECT_EQ(again->peakGflops, 523.5);
  // Negative or not a number: refused, naming the field.
  for (const char *bad : {"-1", "\"fast\""}) {
    std::string text(kReport);
    text.replace(text.find("\"copy_gbps\": 10"), 15,
                 std::string("\"copy_gbps\": 10, \"peak_gflops\": ") + bad);
    EXPECT_TRUE(mlir::failed(parseReport(text, error))) << bad;
    EXPECT_NE(error.find("peak_gflops"), std::string::npos) << error;
  }
}

TEST(EvalReportTest, DiffFlagsOnlyRealSlowdowns) {
  std::string error;
  auto base = parseReport(kReport, error);
  ASSERT_TRUE(mlir::succeeded(base)) << error;
  EvalReport slower = *base;
  slower.workloads[0].medianUs = 2.5; // 1.25x
  auto rows = diffReports(*base, slower, 0.10);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].regression);
  EXPECT_DOUBLE_EQ(rows[0].ratio, 1.25);
  rows = diffReports(*base, slower, 0.30);
  EXPECT_FALSE(rows[0].regression);
}

} // namespace

TEST(EvalReportTest, PeakKindIsOptionalAndRoundTrips) {
  std::string error;
  std::string text(kReport);
  text.replace(text.find("\"copy_gbps\": 10"), 15,
               "\"copy_gbps\": 10, \"peak_gflops\": 989400, \"peak_kind\": "
               "\"f16 tensor-core peak\"");
  auto report = parseReport(text, error);
  ASSERT_TRUE(mlir::succeeded(report)) << error;
  EXPECT_EQ(report->peakKind, "f16 tensor-core peak");
  auto again = parseReport(printReport(*report), error);
  ASSERT_TRUE(mlir::succeeded(again)) << error;
  EXPECT_EQ(again->peakKind, "f16 tensor-core peak");
  // Not a string: refused, naming the field.
  text.replace(text.find("\"f16 tensor-core peak\""), 22, "7");
  EXPECT_TRUE(mlir::failed(parseReport(text, error)));
  EXPECT_NE(error.find("peak_kind"), std::string::npos) << error;
}
