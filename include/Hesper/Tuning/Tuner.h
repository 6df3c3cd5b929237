//===- Tuner.h - Searching kernel knobs on a device -----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// For every kernel of a fused graph, the tuner measures the legal knob
// settings on the device (each kernel alone, on seeded random inputs, timed
// with the device's timestamps) by successive halving: every candidate runs
// a few times, the faster half runs twice as often, and so on until one is
// left. Every candidate is first checked against the reference interpreter;
// one that disagrees is never kept, however fast. The default knobs (none)
// are always a candidate, and a winner must beat them by the measured noise
// to replace them.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TUNING_TUNER_H
#define HESPER_TUNING_TUNER_H

#include "Hesper/Target/Plan.h"

#include "hesper/runtime/Runtime.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <optional>

namespace hesper {
namespace tune {

struct TuneOptions {
  /// Timed runs of each candidate in the first round (doubled each round).
  unsigned firstRuns = 3;
  /// A winner must be at least this much faster than the defaults.
  double minSpeedup = 1.05;
  /// Seeds the random inputs.
  uint64_t seed = 1;
  /// Confirm each kernel's winner inside the whole graph (when it has more
  /// than one kernel): a winner that does not make the graph faster, timed
  /// alternately against the graph without it, is dropped.
  bool confirmInGraph = true;
  /// Alternating runs of the graph per confirmation.
  unsigned graphRounds = 12;
  /// When set, each kernel alone is written here as kernel<i>.mlir (a
  /// one-op graph @kernel that hesper-run runs), to reproduce its timing.
  std::string kernelDumpDir;
};

struct KernelTuning {
  std::string signature;
  mlir::DictionaryAttr best; ///< empty: the defaults stay
  double defaultNs = 0;      ///< median of the defaults
  double bestNs = 0;         ///< median of the winner
  double minNs = 0;          ///< fastest single run of the winner
  unsigned candidates = 0;   ///< legal settings tried
  unsigned rejected = 0;     ///< of which disagreed with the interpreter
  /// The winner the kernel alone chose that the whole graph did not
  /// confirm (then `best` is empty); null otherwise.
  mlir::DictionaryAttr lostInGraph;
  /// The median saving of the graph step with the winner, alternating runs
  /// (confirmed winners; 0 otherwise).
  double graphSavingNs = 0;
};

struct TuneReport {
  std::vector<KernelTuning> kernels;
  /// The whole graph's median step, with the defaults and with the
  /// confirmed knobs (both 0 when nothing was confirmed in the graph).
  double graphDefaultNs = 0, graphTunedNs = 0;
  double seconds = 0;
};

/// What a kernel's winner saves inside its graph, when the graph confirms
/// it: `without` and `with` are the graph step's times without and with
/// it, one pair per round of alternating runs. The median of the rounds'
/// differences (the saving returned) must be positive and at least a
/// quarter of `isolatedSavingNs` (what the kernel alone saved, times its
/// uses), and the slower quarter of the runs with it no slower than
/// without it: a setting that is faster on some runs and much slower on
/// others (fewer workgroups than the device balances well) is not a win.
/// nullopt when not confirmed.
std::optional<double> graphSaving(const std::vector<double> &without,
                                  const std::vector<double> &with,
                                  double isolatedSavingNs);

/// The legal knob settings of `op` on `device` (the defaults first).
std::vector<mlir::DictionaryAttr> candidateKnobs(mlir::Operation *op,
                                                 const TargetDevice &device);

/// Tunes every kernel of `graph` (fused first unless `fused`). `progress`
/// is called after each candidate with (kernel index, kernels, line).
mlir::FailureOr<TuneReport>
tuneGraph(mlir::ModuleOp module, llvm::StringRef graph, rt::Device &device,
          const TuneOptions &options,
          const std::function<void(size_t, size_t, const std::string &)>
              &progress = {});

/// What comparing a kernel's results with the interpreter found.
struct Verification {
  bool ok = true;
  double maxError = 0;
  std::string problem; ///< the first element out of tolerance, when not ok
};

/// Compiles graph `graph` of `module` (fused, knobs set) for `device`, runs
/// it on seeded random inputs and compares every result with the reference
/// interpreter within --check's tolerances: the check the tuner applies to
/// every candidate.
mlir::FailureOr<Verification> verifyOnDevice(mlir::ModuleOp module,
                                             llvm::StringRef graph,
                                             rt::Device &device,
                                             uint64_t seed = 1);

/// Checks a plan numerically before it is used: fuses graph `graph` of
/// `module` as a compile would, applies the plan (its legality checks
/// first), and verifies every kernel the plan gives knobs to, alone, with
/// verifyOnDevice. Fails with an error naming the kernel, its knobs and the
/// first wrong element.
mlir::LogicalResult verifyPlan(mlir::ModuleOp module, llvm::StringRef graph,
                               const Plan &plan, rt::Device &device);

/// One deliberately wrong lowering and what caught it.
struct MutantResult {
  std::string mutant;
  bool caught = false;
  /// False when the mutant changes no kernel on this target (the code it
  /// breaks is not used there): there is nothing to catch.
  bool applies = true;
  std::string caughtBy; ///< the workload whose verification failed
  std::string problem;
};

/// The verifier's mutation tests: each mutant of convert-circuit-to-shaderm
/// (a dropped q8_0 scale, a reduction one short, an unmasked row tail, a
/// bounds guard one short, a wrong q8_0 block size) compiles small
/// workloads that exercise it; verifyOnDevice must reject at least one.
/// Fails if the unmutated compiler does not pass every workload.
mlir::FailureOr<std::vector<MutantResult>>
runMutationTests(mlir::MLIRContext *context, rt::Device &device);

/// The cache entries of a report (the kernels whose knobs changed).
std::vector<CacheEntry> cacheEntries(const TuneReport &report,
                                     const rt::DeviceInfo &device);

} // namespace tune
} // namespace hesper

#endif // HESPER_TUNING_TUNER_H
