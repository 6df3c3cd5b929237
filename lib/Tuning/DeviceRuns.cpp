//===- DeviceRuns.cpp - Running graphs against the interpreter ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "DeviceRuns.h"

#include "Hesper/Interpreter/Validate.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace hesper;
using namespace hesper::tune;
namespace cir = hesper::circuit;

std::vector<interp::HostTensor> devrun::randomInputs(cir::GraphOp graph,
                                                     uint64_t seed) {
  std::vector<interp::HostTensor> inputs;
  for (Type t : graph.getArgumentTypes())
    inputs.push_back(
        interp::randomTensor(cast<RankedTensorType>(t), seed + inputs.size()));
  graph.walk([&](cir::AttentionOp attention) {
    auto pos = dyn_cast<BlockArgument>(attention.getPos());
    if (!pos || pos.getOwner()->getParentOp() != graph.getOperation())
      return;
    int64_t head = attention.getHeadDim();
    auto elements = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getNumElements();
    };
    int64_t positions =
        elements(attention.getKCache()) / (attention.getKvHeads() * head);
    int64_t rows = elements(attention.getQ()) / (attention.getHeads() * head);
    inputs[pos.getArgNumber()].setInt(
        0, static_cast<int32_t>(std::max<int64_t>(positions - rows, 0)));
  });
  return inputs;
}

CompileOptions devrun::asSet() {
  CompileOptions options;
  options.fuse = false;
  options.useTuneCache = false;
  return options;
}

FailureOr<std::vector<interp::HostTensor>>
devrun::interpret(cir::GraphOp graph, ArrayRef<interp::HostTensor> inputs) {
  std::vector<interp::HostTensor> scratch(inputs.begin(), inputs.end());
  return interp::runGraph(graph, scratch);
}

FailureOr<std::unique_ptr<rt::ProgramRunner>>
devrun::loadRunner(Operation *where, rt::Device &device,
                   const rt::Program &program, bool timing,
                   ArrayRef<interp::HostTensor> inputs) {
  auto runner = rt::ProgramRunner::create(device, program, timing);
  if (!runner)
    return where->emitError(runner.status().message());
  if (failed(upload(**runner, inputs, where)))
    return failure();
  return std::move(*runner);
}

LogicalResult devrun::upload(rt::ProgramRunner &runner,
                             ArrayRef<interp::HostTensor> inputs,
                             Operation *where) {
  // (A q8_0 tensor of an odd number of blocks ends mid-word, its buffer
  // on a whole word.)
  for (auto [i, t] : llvm::enumerate(inputs))
    if (rt::Status s =
            runner.setArgumentPadded(i, t.bytes().data(), t.bytes().size());
        !s)
      return where->emitError(s.message());
  return success();
}

FailureOr<double> devrun::stepNs(rt::ProgramRunner &runner, Operation *where) {
  if (rt::Status s = runner.run(); !s)
    return where->emitError(s.message());
  double ns = 0;
  for (double t : runner.lastKernelTimesNs())
    ns += t;
  return ns;
}

FailureOr<Verification>
devrun::compareWithInterpreter(rt::ProgramRunner &runner, cir::GraphOp graph,
                               ArrayRef<interp::HostTensor> want) {
  Verification v;
  auto tolerances = interp::computeCheckTolerances(graph);
  Operation *output = graph.getBody().front().getTerminator();
  for (auto [r, value] : llvm::enumerate(output->getOperands())) {
    std::vector<uint8_t> bytes;
    if (rt::Status s = runner.readResult(r, bytes); !s)
      return graph.emitError(s.message());
    interp::HostTensor got(cast<RankedTensorType>(value.getType()));
    if (bytes.size() != got.bytes().size())
      return graph.emitError("result #") << r << " has the wrong size";
    std::memcpy(got.bytes().data(), bytes.data(), bytes.size());
    interp::Comparison c = interp::compareWithinTolerance(
        got, want[r], tolerances.lookup(value));
    v.maxError = std::max(v.maxError, c.maxError);
    if (c.mismatch >= 0 && v.ok) {
      v.ok = false;
      v.problem = llvm::formatv("result #{0}[{1}] is {2}, the interpreter "
                                "says {3}",
                                r, c.mismatch, c.got, c.want)
                      .str();
    }
  }
  return v;
}

std::vector<uint8_t> devrun::programBinary(const rt::Program &program) {
  std::vector<uint8_t> bytes;
  // A kernel's code and the launch settings beside it (the CPU's thread
  // cap changes no code).
  for (const rt::KernelDesc &k : program.kernels) {
    bytes.insert(bytes.end(), k.binary.begin(), k.binary.end());
    for (int shift = 0; shift < 32; shift += 8)
      bytes.push_back(static_cast<uint8_t>(k.hostThreads >> shift));
  }
  return bytes;
}

double devrun::quartile(std::vector<double> values, unsigned k) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() * k / 4];
}

double devrun::median(std::vector<double> values) {
  return quartile(std::move(values), 2);
}

double devrun::spread(const std::vector<double> &values) {
  double middle = median(values);
  return middle > 0 ? (quartile(values, 3) - quartile(values, 1)) / middle : 0;
}
