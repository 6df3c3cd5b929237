//===- EvalReport.h - The eval suite's JSON report ------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What hesper-eval writes and compares, apart from what runs the workloads
// (Eval.h): the report, its JSON form (schema in docs/Tuning.md) and the
// diff of two reports. It needs no device and no compiler, so the JSON
// fuzz harness links it alone.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TUNING_EVALREPORT_H
#define HESPER_TUNING_EVALREPORT_H

#include "mlir/Support/LLVM.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace hesper {
namespace tune {

struct WorkloadResult {
  std::string name;
  double minUs = 0, medianUs = 0;
  /// The interquartile range of the runs over their median.
  double noise = 0;
  double gbps = 0;       ///< bytes read and written / median time
  double gflops = 0;     ///< floating-point operations / median time
  double copyFraction = 0; ///< gbps / the device's measured copy GB/s
  double maxError = 0;   ///< against the interpreter, relative
  bool correct = true;   ///< within --check's tolerances
};

struct EvalReport {
  std::string device, deviceId, compiler;
  /// The device's copy bandwidth, which every "of copy" is against: the
  /// faster of the two copies below.
  double copyGbps = 0;
  /// A copy kernel's (y = x, compiled as the workloads are) and the
  /// driver's own (rt::measureCopyGbps: cuMemcpyDtoD, vkCmdCopyBuffer, the
  /// CPU device's threaded memcpy), over copyBandwidthBytes. Optional in a
  /// report (0: not measured).
  double copyKernelGbps = 0, driverCopyGbps = 0;
  /// The device's peak in GFLOP/s: the f32 FMA rate measured on the CPU
  /// target (measureCpuFmaPeakGflops), a GPU's dense f16 tensor-core rate
  /// from its maker's data sheet (dataSheetPeak); 0 where unknown.
  /// Optional in a report.
  double peakGflops = 0;
  /// What peakGflops is ("f32 FMA peak, measured", ...); "" for a report
  /// that has none (older ones: the CPU's f32 FMA peak).
  std::string peakKind;
  std::vector<WorkloadResult> workloads;
};

std::string printReport(const EvalReport &report);
/// Parses a report, checking it against the schema; on failure `error`
/// names the field.
mlir::FailureOr<EvalReport> parseReport(llvm::StringRef text,
                                        std::string &error);

struct DiffRow {
  std::string name;
  double baselineUs = 0, currentUs = 0, ratio = 0, allowed = 0;
  bool regression = false;
  bool missing = false; ///< in the baseline, not in the current report
};

/// Compares `current` with `baseline` workload by workload: a workload is
/// a regression when its median is slower than the baseline's by more than
/// max(`threshold`, 3 x the larger measured noise).
std::vector<DiffRow> diffReports(const EvalReport &baseline,
                                 const EvalReport &current,
                                 double threshold);

} // namespace tune
} // namespace hesper

#endif // HESPER_TUNING_EVALREPORT_H
