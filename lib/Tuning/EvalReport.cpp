//===- EvalReport.cpp - The eval suite's JSON report ----------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Tuning/EvalReport.h"

#include "Hesper/Support/Json.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::tune;

std::string hesper::tune::printReport(const EvalReport &report) {
  llvm::json::Array workloads;
  for (const WorkloadResult &w : report.workloads)
    workloads.push_back(llvm::json::Object{
        {"name", w.name},
        {"latency_us",
         llvm::json::Object{{"min", w.minUs}, {"median", w.medianUs}}},
        {"noise", w.noise},
        {"gbps", w.gbps},
        {"gflops", w.gflops},
        {"copy_fraction", w.copyFraction},
        {"max_error", w.maxError},
        {"correct", w.correct}});
  llvm::json::Value root = llvm::json::Object{
      {"hesper_eval", 1},
      {"device", report.device},
      {"device_id", report.deviceId},
      {"compiler", report.compiler},
      {"copy_gbps", report.copyGbps},
      {"copy_kernel_gbps", report.copyKernelGbps},
      {"driver_copy_gbps", report.driverCopyGbps},
      {"peak_gflops", report.peakGflops},
      {"workloads", std::move(workloads)}};
  if (!report.peakKind.empty())
    (*root.getAsObject())["peak_kind"] = report.peakKind;
  return json::print(root);
}

FailureOr<EvalReport> hesper::tune::parseReport(StringRef text,
                                                std::string &error) {
  llvm::json::Value parsed(nullptr);
  const llvm::json::Object *root =
      json::parseVersioned(parsed, text, "hesper_eval", "report", error);
  if (!root)
    return failure();
  EvalReport report;
  // Strings are non-empty and printable; numbers are finite and below
  // kMaxReportNumber (a microsecond count of 11 days, a bandwidth of an
  // exabyte per second): anything else is a corrupt or hand-made report.
  constexpr double kMaxReportNumber = 1e12;
  auto str = [&](const llvm::json::Object &o, StringRef key,
                 std::string &out, StringRef where) {
    auto s = o.getString(key);
    if (!s) {
      error = (where + ": \"" + key + "\" must be a string").str();
      return false;
    }
    if (s->empty() || llvm::any_of(*s, [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        })) {
      error = (where + ": \"" + key +
               "\" must be non-empty, without control characters")
                  .str();
      return false;
    }
    out = s->str();
    return true;
  };
  auto num = [&](const llvm::json::Object &o, StringRef key, double &out,
                 StringRef where, bool positive = false) {
    std::optional<double> n = o.getNumber(key);
    if (n && std::isfinite(*n) && (positive ? *n > 0 : *n >= 0) &&
        *n < kMaxReportNumber) {
      out = *n + 0.0; // -0 reads as 0 (it would print as -0, then read as 0)
      return true;
    }
    error = (where + ": \"" + key + "\" must be a number " +
             (positive ? "> 0" : ">= 0") + " and below 1e12")
                .str();
    return false;
  };
  if (!str(*root, "device", report.device, "report") ||
      !str(*root, "device_id", report.deviceId, "report") ||
      !str(*root, "compiler", report.compiler, "report") ||
      !num(*root, "copy_gbps", report.copyGbps, "report"))
    return failure();
  // Reports written before the peak and the two copies were measured have
  // none.
  if (root->get("peak_gflops") &&
      !num(*root, "peak_gflops", report.peakGflops, "report"))
    return failure();
  if (root->get("peak_kind") &&
      !str(*root, "peak_kind", report.peakKind, "report"))
    return failure();
  if (root->get("copy_kernel_gbps") &&
      !num(*root, "copy_kernel_gbps", report.copyKernelGbps, "report"))
    return failure();
  if (root->get("driver_copy_gbps") &&
      !num(*root, "driver_copy_gbps", report.driverCopyGbps, "report"))
    return failure();
  const llvm::json::Array *list = root->getArray("workloads");
  if (!list) {
    error = "report: \"workloads\" must be an array";
    return failure();
  }
  for (auto [i, value] : llvm::enumerate(*list)) {
    std::string where = "workloads[" + std::to_string(i) + "]";
    const llvm::json::Object *o = value.getAsObject();
    if (!o) {
      error = where + ": must be an object";
      return failure();
    }
    WorkloadResult w;
    const llvm::json::Object *latency = o->getObject("latency_us");
    if (!str(*o, "name", w.name, where))
      return failure();
    if (!latency) {
      error = where + ": \"latency_us\" must be an object";
      return failure();
    }
    auto correct = o->getBoolean("correct");
    // A latency of 0 would make every later median "ok" against it.
    if (!num(*latency, "min", w.minUs, where + ".latency_us", true) ||
        !num(*latency, "median", w.medianUs, where + ".latency_us", true) ||
        !num(*o, "noise", w.noise, where) || !num(*o, "gbps", w.gbps, where) ||
        !num(*o, "gflops", w.gflops, where) ||
        !num(*o, "copy_fraction", w.copyFraction, where) ||
        !num(*o, "max_error", w.maxError, where))
      return failure();
    if (!correct) {
      error = where + ": \"correct\" must be true or false";
      return failure();
    }
    w.correct = *correct;
    if (w.minUs > w.medianUs) {
      error = where + ": latency_us.min is above latency_us.median";
      return failure();
    }
    for (const WorkloadResult &earlier : report.workloads)
      if (earlier.name == w.name) {
        error = where + ": workload '" + w.name + "' appears twice";
        return failure();
      }
    report.workloads.push_back(w);
  }
  return report;
}

std::vector<DiffRow> hesper::tune::diffReports(const EvalReport &baseline,
                                               const EvalReport &current,
                                               double threshold) {
  std::vector<DiffRow> rows;
  for (const WorkloadResult &b : baseline.workloads) {
    DiffRow row;
    row.name = b.name;
    row.baselineUs = b.medianUs;
    auto it = llvm::find_if(current.workloads, [&](const WorkloadResult &c) {
      return c.name == b.name;
    });
    if (it == current.workloads.end()) {
      row.missing = true;
      rows.push_back(row);
      continue;
    }
    row.currentUs = it->medianUs;
    row.ratio = b.medianUs > 0 ? it->medianUs / b.medianUs : 1.0;
    row.allowed = 1.0 + std::max(threshold, 3 * std::max(b.noise, it->noise));
    row.regression = row.ratio > row.allowed;
    rows.push_back(row);
  }
  return rows;
}
