//===- GraphRun.h - Run a Circuit graph on a device -------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What `hesper-run graph.mlir` does on a device, as a library: open the
// device a user asked for, compile a graph for it, bind host tensors, run
// the recorded step (repeatedly, for timing and determinism), compare with
// the reference interpreter, write a Chrome trace; and the conversions
// between .npy arrays and tensors. Tools parse flags and call these.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_EXECUTION_GRAPHRUN_H
#define HESPER_EXECUTION_GRAPHRUN_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Execution/DeviceSelect.h"
#include "Hesper/Interpreter/Interpreter.h"
#include "hesper/runtime/Npy.h"
#include "hesper/runtime/Program.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace hesper::exec {

/// A tensor in host memory as the device holds it: its type and its bytes
/// (f32/i32 little-endian, f16 as half bits, quantized types as their GGUF
/// blocks). Device runs move these and nothing else; the interpreter's
/// tensors appear only when a run is checked against it.
struct HostData {
  mlir::RankedTensorType type;
  std::vector<uint8_t> bytes;
};

/// Copies host tensors into a program's arguments, in order (each padded
/// with zeros to its buffer's size; a longer one is refused:
/// ProgramRunner::setArgumentPadded).
rt::Status uploadArguments(rt::ProgramRunner &runner,
                           const std::vector<HostData> &args);

/// Compiles `graph` for `device`, binds `args`, runs, reports and fills
/// `results` and the in-place-written `args`. Prints errors itself.
mlir::LogicalResult runGraphOnDevice(mlir::ModuleOp module,
                                     circuit::GraphOp graph,
                                     rt::Device &device,
                                     std::vector<HostData> &args,
                                     std::vector<HostData> &results,
                                     const DeviceModeOptions &opts,
                                     llvm::raw_ostream &os);

/// A shape as Python writes it: "(4, 8)", "(8,)".
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// Converts an .npy array into a tensor of `type`; "" or an error message.
std::string tensorFromNpy(const rt::NpyArray &array,
                          mlir::RankedTensorType type,
                          interp::HostTensor &out);
/// The .npy form of a tensor (quantized tensors as u8 bytes).
rt::NpyArray npyFromTensor(const interp::HostTensor &tensor);

/// The bound argument `i` of `graph` declares for its elements
/// (circuit.bound: token ids, training targets), or 0 for none.
int64_t indexBound(circuit::GraphOp graph, unsigned i);
/// Checks the elements of every argument of `graph` that declares a bound
/// against it: "" or one line naming the argument, the element, its value
/// and the bound (an index past it would read another row's values).
std::string checkIndexBounds(circuit::GraphOp graph,
                             llvm::ArrayRef<interp::HostTensor> args);
/// The physical memory of this machine in bytes.
uint64_t hostMemoryBytes();

/// Checks that every tensor of `graph` (its arguments and every value its
/// ops produce) has a byte size that fits in 64 bits and is at most
/// `limit`, before anything is allocated; otherwise emits an error on the
/// tensor naming its size and `where` the limit comes from ("this
/// machine's memory").
mlir::LogicalResult checkTensorSizes(circuit::GraphOp graph, uint64_t limit,
                                     llvm::StringRef where);

} // namespace hesper::exec

#endif // HESPER_EXECUTION_GRAPHRUN_H
