//===- JsonFuzzer.cpp - libFuzzer harness for plans and reports ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Any bytes through the JSON readers the tools expose (issue 28): tuning
// plans (parsePlan, also the tuning cache's entries) and eval reports
// (parseReport), both behind json::parseVersioned and its nesting bound.
// Each must return a value or a one-line error, never crash, overflow the
// stack or hang. What parses must survive a round trip: printed and parsed
// again, it is accepted, and a report prints to the same text twice.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Plan.h"
#include "Hesper/Tuning/EvalReport.h"

#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

[[noreturn]] static void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  std::string error;

  auto plan = hesper::tune::parsePlan(text, &context, error);
  if (mlir::succeeded(plan)) {
    std::string printed = hesper::tune::printPlan(*plan);
    if (mlir::failed(hesper::tune::parsePlan(printed, &context, error)))
      fail("a printed plan does not parse", error);
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    fail("a plan's error is not one line", error);
  }

  error.clear();
  auto report = hesper::tune::parseReport(text, error);
  if (mlir::succeeded(report)) {
    std::string printed = hesper::tune::printReport(*report);
    auto again = hesper::tune::parseReport(printed, error);
    if (mlir::failed(again))
      fail("a printed report does not parse", error);
    if (hesper::tune::printReport(*again) != printed)
      fail("a report prints differently after a round trip", printed);
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    fail("a report's error is not one line", error);
  }
  return 0;
}
