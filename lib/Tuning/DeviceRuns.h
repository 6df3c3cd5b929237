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

/// Reads the results of `runner`'s last run and compares them with the
/// interpreter's `want` within --check's tolerances.
mlir::FailureOr<Verification>
compareWithInterpreter(rt::ProgramRunner &runner, circuit::GraphOp graph,
                       llvm::ArrayRef<interp::HostTensor> want);

/// Every kernel binary of `program`, one after another: what tells two
/// compiles of a kernel apart.
std::vector<uint8_t> programBinary(const rt::Program &program);

double median(std::vector<double> values);

} // namespace hesper::tune::devrun

#endif // HESPER_LIB_TUNING_DEVICERUNS_H
