//===- GraphEvaluator.h - The interpreter's graph evaluator -----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The evaluator behind runGraph, shared by Interpreter.cpp (the walk over a
// graph's ops) and EvalOps.cpp (the evaluation of each op): the tensors each
// value holds, broadcasting of body inputs, and the bounds checks of
// --check-bounds.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_INTERPRETER_GRAPHEVALUATOR_H
#define HESPER_LIB_INTERPRETER_GRAPHEVALUATOR_H

#include "Hesper/Interpreter/Interpreter.h"

#include "BodyProgram.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>
#include <tuple>
#include <vector>

namespace hesper {
namespace interp {

/// Maps an iteration lane to the element an input is read at: the lane
/// itself for same-size inputs, else NumPy broadcasting.
class BroadcastIndexer {
public:
  BroadcastIndexer(llvm::ArrayRef<int64_t> input,
                   llvm::ArrayRef<int64_t> iteration) {
    int64_t inputElements = 1, iterElements = 1;
    for (int64_t d : input)
      inputElements *= d;
    for (int64_t d : iteration)
      iterElements *= d;
    // An input of higher rank than the iteration is not broadcast: the
    // body reads it whole (circuit.extract), and its indexer is unused.
    flat = inputElements == iterElements || input.size() > iteration.size();
    if (flat)
      return;
    // Per iteration dimension: its extent, and the input stride to move by
    // (0 where the input broadcasts).
    size_t offset = iteration.size() - input.size();
    int64_t stride = 1;
    strides.assign(iteration.size(), 0);
    for (size_t k = input.size(); k-- > 0;) {
      if (input[k] != 1)
        strides[offset + k] = stride;
      stride *= input[k];
    }
    extents.assign(iteration.begin(), iteration.end());
  }

  int64_t operator()(int64_t lane) const {
    if (flat)
      return lane;
    int64_t index = 0;
    for (size_t k = extents.size(); k-- > 0;) {
      int64_t coord = lane % extents[k];
      lane /= extents[k];
      index += coord * strides[k];
    }
    return index;
  }

private:
  bool flat = true;
  llvm::SmallVector<int64_t> extents, strides;
};

/// A value's tensor, shared where an op updates it in place.
using TensorRef = std::shared_ptr<HostTensor>;

/// Evaluates a graph op by op, each value's tensor kept in `env`.
class GraphEvaluator {
public:
  GraphEvaluator(const Options &options) : options(options) {}

  /// With Options::checkBounds, remembers the first out-of-range access
  /// of the op being evaluated; reportBounds turns it into the op's error.
  void noteOutOfRange(int64_t lane, int64_t addr, int64_t extent) {
    if (options.checkBounds && !outOfRange)
      outOfRange = {lane, addr, extent};
  }
  mlir::LogicalResult reportBounds(mlir::Operation *op, llvm::StringRef what) {
    if (!outOfRange)
      return mlir::success();
    auto [lane, addr, extent] = *outOfRange;
    outOfRange.reset();
    return op->emitOpError("--check-bounds: lane ")
           << lane << " " << what << " address " << addr
           << ", outside [0, " << extent << ")";
  }
  std::optional<std::tuple<int64_t, int64_t, int64_t>> outOfRange;

  mlir::LogicalResult run(circuit::GraphOp graph, std::vector<HostTensor> &args,
                          std::vector<HostTensor> &results);

private:
  mlir::LogicalResult eval(mlir::Operation *op);
  mlir::LogicalResult evalMap(circuit::MapOp op);
  mlir::LogicalResult evalGather(circuit::GatherOp op);
  mlir::LogicalResult evalScatter(mlir::Operation *op, mlir::ValueRange inputs,
                                  mlir::ValueRange dests, int64_t grid,
                                  mlir::Region &body);
  mlir::LogicalResult evalScatterAdd(circuit::ScatterAddOp op);
  mlir::LogicalResult evalReduce(mlir::Operation *op, circuit::ReduceKind kind,
                                 mlir::ValueRange inputs,
                                 mlir::Region &prologue, mlir::Region *epilogue,
                                 mlir::Value scatterDest);
  mlir::LogicalResult evalMatmul(circuit::MatmulOp op);
  mlir::LogicalResult evalMultiMatmul(circuit::MultiMatmulOp op);
  mlir::LogicalResult evalQuantize(circuit::QuantizeOp op);
  mlir::LogicalResult evalWriteRows(circuit::WriteRowsOp op);
  mlir::LogicalResult evalAttention(circuit::AttentionOp op);
  mlir::LogicalResult evalGatedMatmul(circuit::GatedMatmulOp op);
  mlir::LogicalResult evalExpertMatmul(circuit::ExpertMatmulOp op);

  /// Reads element `index` of `tensor` as a body value.
  static Val read(const HostTensor &tensor, int64_t index) {
    if (tensor.getElementType().isInteger(32))
      return Val::ofInt(tensor.getInt(index));
    return Val::ofFloat(tensor.getDouble(index));
  }
  static void write(HostTensor &tensor, int64_t index, const Val &v) {
    if (tensor.getElementType().isInteger(32))
      tensor.setInt(index, static_cast<int32_t>(v.i));
    else
      tensor.setDouble(index, v.f);
  }

  /// The inputs of a body, read for one lane with broadcasting, or passed
  /// whole when the body takes them as tensors.
  struct LaneInputs {
    llvm::SmallVector<const HostTensor *> tensors;
    llvm::SmallVector<BroadcastIndexer> indexers;
    llvm::SmallVector<bool> whole;
    /// Stores the inputs' arguments for `lane` after `leading` arguments.
    void fill(int64_t lane, Val *args, unsigned leading) const {
      for (size_t k = 0; k < tensors.size(); ++k)
        args[leading + k] = whole[k]
                                ? Val::ofTensor(tensors[k])
                                : read(*tensors[k], indexers[k](lane));
    }
  };

  /// Binds `inputs` for the body `region`, whose inputs' arguments start
  /// after `leading` ones.
  LaneInputs bindInputs(mlir::ValueRange inputs,
                        llvm::ArrayRef<int64_t> iteration,
                        mlir::Region *region = nullptr, unsigned leading = 0) {
    LaneInputs bound;
    for (auto [k, input] : llvm::enumerate(inputs)) {
      bound.tensors.push_back(env[input].get());
      bound.indexers.emplace_back(
          llvm::cast<mlir::RankedTensorType>(input.getType()).getShape(),
          iteration);
      bool whole = region && !region->empty() &&
                   region->front().getArgument(leading + k).getType() ==
                       input.getType();
      bound.whole.push_back(whole);
    }
    return bound;
  }

  /// The tensor a write into `dest` updates: the graph argument itself for
  /// in-place writes, a copy for writes into a fresh buffer.
  TensorRef destinationFor(mlir::Value dest) {
    mlir::Value root = circuit::getWrittenBufferRoot(dest);
    if (llvm::isa<mlir::BlockArgument>(root))
      return env[dest];
    return std::make_shared<HostTensor>(*env[dest]);
  }

  mlir::FailureOr<BodyProgram> compile(mlir::Region &region) {
    return BodyProgram::compile(region.front(), options.subgroupSize,
                                options.wide);
  }

  /// A zero-filled result tensor (wide under Options::wide).
  TensorRef fresh(mlir::Type type) {
    return std::make_shared<HostTensor>(
        llvm::cast<mlir::RankedTensorType>(type), options.wide);
  }
  /// A double accumulator as stored: rounded to f32 unless wide.
  double finish(double acc) const {
    return options.wide ? acc : static_cast<double>(static_cast<float>(acc));
  }

  const Options &options;
  llvm::DenseMap<mlir::Value, TensorRef> env;
};

} // namespace interp
} // namespace hesper

#endif // HESPER_LIB_INTERPRETER_GRAPHEVALUATOR_H
