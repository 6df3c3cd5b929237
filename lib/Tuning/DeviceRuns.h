//===- DeviceRuns.h - Running graphs against the interpreter ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Tuning: the steps the tuner, plan verification and the
// evaluation suite share -- seeded inputs, the interpreter's results, a
// loaded runner, the comparison within --check's tolerances.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_TUNING_DEVICERUNS_H
#define HESPER_LIB_TUNING_DEVICERUNS_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Execution/Execution.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Tuning/Tuner.h"

#include "hesper/runtime/Program.h"

#include <memory>
#include <vector>

namespace hesper::tune::devrun {

/// Seeded random values for every argument of `graph` (argument i from
/// seed + i). Random i32 values are small (0..15), so an argument that is
/// the position of an attention op is set to the last position its cache
/// holds for its rows instead: attention then does the work of a decode
/// step at full context, as the workloads and the tuner mean to time.
std::vector<interp::HostTensor> randomInputs(circuit::GraphOp graph,
                                             uint64_t seed);

/// How the tuner, plan verification and the mutation tests compile: the
/// graph as it is (fused already, or one kernel alone) with the knobs it
/// carries, and no tuning cache, which would replace them.
CompileOptions asSet();

/// The reference interpreter's results of `graph` on `inputs` (arguments
/// it writes in place are updated on a copy).
mlir::FailureOr<std::vector<interp::HostTensor>>
interpret(circuit::GraphOp graph, llvm::ArrayRef<interp::HostTensor> inputs);

/// A runner of `program` on `device` with `inputs` uploaded; errors are
/// reported on `where`.
mlir::FailureOr<std::unique_ptr<rt::ProgramRunner>>
loadRunner(mlir::Operation *where, rt::Device &device,
           const rt::Program &program, bool timing,
           llvm::ArrayRef<interp::HostTensor> inputs);

/// Uploads `inputs` as `runner`'s arguments (again: a graph that writes
/// arguments in place starts over from them).
mlir::LogicalResult upload(rt::ProgramRunner &runner,
                           llvm::ArrayRef<interp::HostTensor> inputs,
                           mlir::Operation *where);

/// Runs the step once: the sum of its launches' device times, in ns.
mlir::FailureOr<double> stepNs(rt::ProgramRunner &runner,
                               mlir::Operation *where);

/// Reads the results of `runner`'s last run and compares them with the
/// interpreter's `want` within --check's tolerances.
mlir::FailureOr<Verification>
compareWithInterpreter(rt::ProgramRunner &runner, circuit::GraphOp graph,
                       llvm::ArrayRef<interp::HostTensor> want);

/// Every kernel binary of `program`, one after another: what tells two
/// compiles of a kernel apart.
std::vector<uint8_t> programBinary(const rt::Program &program);

/// Quartile `k` (1, 2 or 3) of `values`: the element a quarter, half or
/// three quarters of the way up.
double quartile(std::vector<double> values, unsigned k);
double median(std::vector<double> values);
/// The interquartile range over the median (0 when the median is 0).
double spread(const std::vector<double> &values);

} // namespace hesper::tune::devrun

#endif // HESPER_LIB_TUNING_DEVICERUNS_H
