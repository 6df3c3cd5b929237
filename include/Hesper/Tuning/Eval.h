//===- Eval.h - The evaluation suite --------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A standard set of workloads -- the matvecs and GEMMs of 0.5B to 8B
// parameter transformer layers in f32, f16, q8_0 and q4_k, RMSNorm, softmax,
// decode attention at several context lengths -- run on one device, each
// compiled by the normal pipeline (so with the tuning cache when there is
// one) and compared with the reference interpreter. A report is JSON (the
// schema: docs/Tuning.md); two reports diff into a table, and a workload
// slower than its baseline by more than the measured noise is a regression.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TUNING_EVAL_H
#define HESPER_TUNING_EVAL_H

#include "Hesper/Tuning/EvalReport.h"
#include "hesper/runtime/Runtime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hesper {
namespace circuit {
class GraphBuilder;
} // namespace circuit
namespace tune {

struct EvalOptions {
  /// The quick subset (small shapes, one of each kind) for tests.
  bool quick = false;
  /// Only workloads whose name contains this.
  std::string filter;
  unsigned runs = 10;
  /// GGUF models whose whole decode step is a workload each
  /// (`decode_model_<file stem>`, a KV cache of kModelContext positions,
  /// attention over all of them).
  std::vector<std::string> models;
};

/// The KV cache length of a model workload's decode step.
inline constexpr int64_t kModelContext = 256;

/// One workload: how to build its graph (a graph named "workload") and
/// how many floating-point operations it does (0: count the graph's matrix
/// products).
struct Workload {
  std::string name;
  bool quick = false;
  double flops = 0;
  std::function<void(circuit::GraphBuilder &)> build;
};

/// The workloads `options` selects, its models loaded once (they stay
/// loaded while a workload that builds from them lives); a model that
/// cannot be loaded is a failure, with the reason in `error`.
mlir::FailureOr<std::vector<Workload>>
selectWorkloads(const EvalOptions &options, std::string &error);

/// The graph of workload `name` (a graph named "workload"; the models are
/// those of `options`), or null with the reason in `error`.
mlir::OwningOpRef<mlir::ModuleOp> buildWorkload(mlir::MLIRContext *context,
                                                llvm::StringRef name,
                                                const EvalOptions &options,
                                                std::string &error);

/// The f32 FMA rate of `threads` host threads running the widest vector
/// FMAs the CPU has (AVX-512 or AVX2), in GFLOP/s: the CPU target's peak
/// for hesper-eval's "of peak" column; 0 where it is not measured (other
/// architectures, CPUs without FMA).
double measureCpuFmaPeakGflops(unsigned threads);

/// A GPU's dense f16 tensor-core peak (f32 sums, no sparsity) in GFLOP/s,
/// from NVIDIA's data sheets, for the parts whose CUDA device names it
/// knows ("NVIDIA H100 80GB HBM3": 989,400); `part` names the data sheet's
/// part. Nullopt for any other name.
struct DataSheetPeak {
  double gflops = 0;
  const char *part = "";
};
std::optional<DataSheetPeak> dataSheetPeak(llvm::StringRef deviceName);

/// Runs `workloads` (selectWorkloads), `options.runs` timed runs each;
/// `progress` is called before each workload.
mlir::FailureOr<EvalReport>
runEval(mlir::MLIRContext *context, rt::Device &device,
        const EvalOptions &options, llvm::ArrayRef<Workload> workloads,
        const std::function<void(size_t, size_t, const std::string &)>
            &progress = {});

} // namespace tune
} // namespace hesper

#endif // HESPER_TUNING_EVAL_H
