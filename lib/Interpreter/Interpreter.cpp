//===- Interpreter.cpp - Reference interpreter for Circuit graphs --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Support/Half.h"

#include "BodyProgram.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

static size_t storageBytes(RankedTensorType type) {
  return static_cast<size_t>(getStorageBytes(type));
}

HostTensor::HostTensor(RankedTensorType type, bool wide)
    : type(type), wide(wide && type.getElementType().isF32()) {
  storage.assign(this->wide ? 8 * static_cast<size_t>(type.getNumElements())
                            : storageBytes(type),
                 0);
}

double HostTensor::getDouble(int64_t i) const {
  if (wide) {
    double v;
    std::memcpy(&v, storage.data() + 8 * i, 8);
    return v;
  }
  return getFloat(i);
}

void HostTensor::setDouble(int64_t i, double v) {
  if (wide) {
    std::memcpy(storage.data() + 8 * i, &v, 8);
    return;
  }
  setFloat(i, static_cast<float>(v));
}

HostTensor HostTensor::widened() const {
  if (wide || !getElementType().isF32())
    return *this;
  HostTensor t(type, /*wide=*/true);
  for (int64_t i = 0, e = getNumElements(); i < e; ++i)
    t.setDouble(i, getFloat(i));
  return t;
}

float HostTensor::getFloat(int64_t i) const {
  if (wide)
    return static_cast<float>(getDouble(i));
  if (getElementType().isF16()) {
    uint16_t h;
    std::memcpy(&h, storage.data() + 2 * i, 2);
    return halfBitsToFloat(h);
  }
  if (getElementType().isBF16()) {
    uint16_t h;
    std::memcpy(&h, storage.data() + 2 * i, 2);
    return bfloat16BitsToFloat(h);
  }
  float v;
  std::memcpy(&v, storage.data() + 4 * i, 4);
  return v;
}

void HostTensor::setFloat(int64_t i, float v) {
  if (wide)
    return setDouble(i, v);
  if (getElementType().isF16()) {
    uint16_t h = floatToHalfBits(v);
    std::memcpy(storage.data() + 2 * i, &h, 2);
    return;
  }
  if (getElementType().isBF16()) {
    uint16_t h = floatToBFloat16Bits(v);
    std::memcpy(storage.data() + 2 * i, &h, 2);
    return;
  }
  std::memcpy(storage.data() + 4 * i, &v, 4);
}

int32_t HostTensor::getInt(int64_t i) const {
  int32_t v;
  std::memcpy(&v, storage.data() + 4 * i, 4);
  return v;
}

void HostTensor::setInt(int64_t i, int32_t v) {
  std::memcpy(storage.data() + 4 * i, &v, 4);
}

HostTensor HostTensor::fromFloats(MLIRContext *context,
                                  ArrayRef<int64_t> shape,
                                  ArrayRef<float> values) {
  HostTensor t(RankedTensorType::get(shape, Float32Type::get(context)));
  assert(static_cast<int64_t>(values.size()) == t.getNumElements());
  for (size_t i = 0; i < values.size(); ++i)
    t.setFloat(i, values[i]);
  return t;
}

HostTensor HostTensor::fromInts(MLIRContext *context, ArrayRef<int64_t> shape,
                                ArrayRef<int32_t> values) {
  HostTensor t(RankedTensorType::get(shape, IntegerType::get(context, 32)));
  assert(static_cast<int64_t>(values.size()) == t.getNumElements());
  for (size_t i = 0; i < values.size(); ++i)
    t.setInt(i, values[i]);
  return t;
}

std::vector<float> HostTensor::toFloats() const {
  std::vector<float> out;
  Type element = getElementType();
  if (element.isInteger(32)) {
    for (int64_t i = 0, e = getNumElements(); i < e; ++i)
      out.push_back(static_cast<float>(getInt(i)));
    return out;
  }
  int64_t rowLength = type.getRank() ? type.getShape().back() : 1;
  for (int64_t row = 0, e = getNumElements() / rowLength; row < e; ++row)
    if (failed(dequantizeRow(*this, row, out)))
      return {};
  return out;
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

namespace {

/// Maps an iteration lane to the element an input is read at: the lane
/// itself for same-size inputs, else NumPy broadcasting.
class BroadcastIndexer {
public:
  BroadcastIndexer(ArrayRef<int64_t> input, ArrayRef<int64_t> iteration) {
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
  SmallVector<int64_t> extents, strides;
};

using TensorRef = std::shared_ptr<HostTensor>;

class GraphEvaluator {
public:
  GraphEvaluator(const Options &options) : options(options) {}

  /// With Options::checkBounds, remembers the first out-of-range access
  /// of the op being evaluated; reportBounds turns it into the op's error.
  void noteOutOfRange(int64_t lane, int64_t addr, int64_t extent) {
    if (options.checkBounds && !outOfRange)
      outOfRange = {lane, addr, extent};
  }
  LogicalResult reportBounds(Operation *op, StringRef what) {
    if (!outOfRange)
      return success();
    auto [lane, addr, extent] = *outOfRange;
    outOfRange.reset();
    return op->emitOpError("--check-bounds: lane ")
           << lane << " " << what << " address " << addr
           << ", outside [0, " << extent << ")";
  }
  std::optional<std::tuple<int64_t, int64_t, int64_t>> outOfRange;

  LogicalResult run(GraphOp graph, std::vector<HostTensor> &args,
                    std::vector<HostTensor> &results);

private:
  LogicalResult eval(Operation *op);
  LogicalResult evalMap(MapOp op);
  LogicalResult evalGather(GatherOp op);
  LogicalResult evalScatter(Operation *op, ValueRange inputs,
                            ValueRange dests, int64_t grid, Region &body);
  LogicalResult evalReduce(Operation *op, ReduceKind kind, ValueRange inputs,
                           Region &prologue, Region *epilogue,
                           Value scatterDest);
  LogicalResult evalMatmul(MatmulOp op);
  LogicalResult evalMultiMatmul(MultiMatmulOp op);
  LogicalResult evalQuantize(QuantizeOp op);
  LogicalResult evalAttention(AttentionOp op);
  LogicalResult evalGatedMatmul(GatedMatmulOp op);

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
    SmallVector<const HostTensor *> tensors;
    SmallVector<BroadcastIndexer> indexers;
    SmallVector<bool> whole;
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
  LaneInputs bindInputs(ValueRange inputs, ArrayRef<int64_t> iteration,
                        Region *region = nullptr, unsigned leading = 0) {
    LaneInputs bound;
    for (auto [k, input] : llvm::enumerate(inputs)) {
      bound.tensors.push_back(env[input].get());
      bound.indexers.emplace_back(
          cast<RankedTensorType>(input.getType()).getShape(), iteration);
      bool whole = region && !region->empty() &&
                   region->front().getArgument(leading + k).getType() ==
                       input.getType();
      bound.whole.push_back(whole);
    }
    return bound;
  }

  /// The tensor a write into `dest` updates: the graph argument itself for
  /// in-place writes, a copy for writes into a fresh buffer.
  TensorRef destinationFor(Value dest) {
    Value root = getWrittenBufferRoot(dest);
    if (isa<BlockArgument>(root))
      return env[dest];
    return std::make_shared<HostTensor>(*env[dest]);
  }

  FailureOr<BodyProgram> compile(Region &region) {
    return BodyProgram::compile(region.front(), options.subgroupSize,
                                options.wide);
  }

  /// A zero-filled result tensor (wide under Options::wide).
  TensorRef fresh(Type type) {
    return std::make_shared<HostTensor>(cast<RankedTensorType>(type),
                                        options.wide);
  }
  /// A double accumulator as stored: rounded to f32 unless wide.
  double finish(double acc) const {
    return options.wide ? acc : static_cast<double>(static_cast<float>(acc));
  }

  const Options &options;
  llvm::DenseMap<Value, TensorRef> env;
};

} // namespace

LogicalResult GraphEvaluator::run(GraphOp graph, std::vector<HostTensor> &args,
                                  std::vector<HostTensor> &results) {
  Block &body = graph.getBody().front();
  if (args.size() != body.getNumArguments())
    return graph.emitOpError("reference interpreter: expects ")
           << body.getNumArguments() << " arguments, got " << args.size();
  // Arguments are shared with the caller's vector so that in-place writes
  // show up there.
  std::vector<TensorRef> argRefs;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (args[i].getType() != arg.getType())
      return graph.emitOpError("reference interpreter: argument #")
             << i << " has type " << args[i].getType() << ", expected "
             << arg.getType();
    if (options.wide)
      args[i] = args[i].widened();
    argRefs.push_back(std::make_shared<HostTensor>(std::move(args[i])));
    env[arg] = argRefs.back();
  }
  LogicalResult status = success();
  for (Operation &op : body.without_terminator())
    if (failed(eval(&op))) {
      status = failure();
      break;
    }
  for (size_t i = 0; i < args.size(); ++i)
    args[i] = *argRefs[i];
  if (failed(status))
    return failure();
  auto output = cast<OutputOp>(body.getTerminator());
  for (Value v : output.getResults())
    results.push_back(*env[v]);
  return success();
}

LogicalResult GraphEvaluator::eval(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ZerosOp z) {
        env[z] = fresh(z.getType());
        return success();
      })
      .Case([&](MapOp m) { return evalMap(m); })
      .Case([&](GatherOp g) { return evalGather(g); })
      .Case([&](ScatterOp s) {
        return evalScatter(s, s.getInputs(), s.getDest(),
                           static_cast<int64_t>(s.getGrid()), s.getBody());
      })
      .Case([&](ScatterMultiOp s) {
        return evalScatter(s, s.getInputs(), s.getDests(),
                           static_cast<int64_t>(s.getGrid()), s.getBody());
      })
      .Case([&](ReduceOp r) {
        return evalReduce(r, r.getKind(), r.getInputs(), r.getPrologue(),
                          nullptr, nullptr);
      })
      .Case([&](ReduceEpilogueOp r) {
        return evalReduce(r, r.getKind(), r.getInputs(), r.getPrologue(),
                          &r.getEpilogue(), nullptr);
      })
      .Case([&](ReduceScatterEpilogueOp r) {
        return evalReduce(r, r.getKind(), r.getInputs(), r.getPrologue(),
                          &r.getEpilogue(), r.getDest());
      })
      .Case([&](MatmulOp m) { return evalMatmul(m); })
      .Case([&](MultiMatmulOp m) { return evalMultiMatmul(m); })
      .Case([&](QuantizeOp q) { return evalQuantize(q); })
      .Case([&](AttentionOp a) { return evalAttention(a); })
      .Case([&](GatedMatmulOp g) { return evalGatedMatmul(g); })
      .Default([](Operation *other) {
        return other->emitOpError(
            "is not supported by the reference interpreter");
      });
}

LogicalResult GraphEvaluator::evalMap(MapOp op) {
  auto program = compile(op.getBody());
  if (failed(program))
    return failure();
  auto result = fresh(op.getType());
  LaneInputs inputs = bindInputs(op.getInputs(), op.getType().getShape(),
                                 &op.getBody(), 1);
  program->run(
      result->getNumElements(),
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        inputs.fill(lane, args, 1);
      },
      [&](int64_t lane, const Val *out) { write(*result, lane, out[0]); });
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalGather(GatherOp op) {
  auto program = compile(op.getBody());
  if (failed(program))
    return failure();
  auto result = fresh(op.getType());
  const HostTensor &source = *env[op.getSource()];
  int64_t sourceElements = source.getNumElements();
  LaneInputs inputs = bindInputs(op.getInputs(), op.getType().getShape(),
                                 &op.getBody(), 1);
  // A quantized source is read dequantized, a row at a time (cached).
  bool quantized = isQuantized(source.getElementType());
  int64_t rowLength = source.getType().getShape().back();
  int64_t cachedRow = -1;
  std::vector<float> rowValues;
  bool decodeFailed = false;
  auto readSource = [&](int64_t addr) -> Val {
    if (!quantized)
      return read(source, addr);
    int64_t row = addr / rowLength;
    if (row != cachedRow) {
      rowValues.clear();
      decodeFailed |= failed(dequantizeRow(source, row, rowValues));
      cachedRow = row;
    }
    return Val::ofFloat(rowValues.empty() ? 0.0f
                                          : rowValues[addr % rowLength]);
  };
  program->run(
      result->getNumElements(),
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        inputs.fill(lane, args, 1);
      },
      [&](int64_t lane, const Val *out) {
        int64_t addr = out[0].i;
        if (addr >= 0 && addr < sourceElements)
          write(*result, lane, readSource(addr));
        else
          noteOutOfRange(lane, addr, sourceElements);
      });
  if (decodeFailed)
    return op.emitOpError("reference interpreter: cannot decode ")
           << source.getElementType();
  if (failed(reportBounds(op, "reads")))
    return failure();
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalScatter(Operation *op, ValueRange inputs,
                                          ValueRange dests, int64_t grid,
                                          Region &body) {
  auto program = compile(body);
  if (failed(program))
    return failure();
  SmallVector<TensorRef> outs;
  for (Value dest : dests)
    outs.push_back(destinationFor(dest));
  LaneInputs bound = bindInputs(inputs, {grid}, &body, 1);
  program->run(
      grid,
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        bound.fill(lane, args, 1);
      },
      [&](int64_t lane, const Val *out) {
        for (size_t d = 0; d < outs.size(); ++d) {
          int64_t addr = out[2 * d].i;
          if (addr >= 0 && addr < outs[d]->getNumElements())
            write(*outs[d], addr, out[2 * d + 1]);
          else
            noteOutOfRange(lane, addr, outs[d]->getNumElements());
        }
      });
  if (failed(reportBounds(op, "writes")))
    return failure();
  for (auto [result, out] : llvm::zip(op->getResults(), outs))
    env[result] = out;
  return success();
}

LogicalResult GraphEvaluator::evalReduce(Operation *op, ReduceKind kind,
                                         ValueRange inputs, Region &prologue,
                                         Region *epilogue, Value scatterDest) {
  SmallVector<int64_t> iteration = getReductionIteration(op);
  int64_t rowLength = iteration.back();
  int64_t total = 1;
  for (int64_t d : iteration)
    total *= d;
  int64_t rows = total / rowLength;

  LaneInputs bound = bindInputs(inputs, iteration, &prologue, 1);

  // The value each lane contributes.
  std::vector<double> values(total);
  if (prologue.empty()) {
    for (int64_t lane = 0; lane < total; ++lane)
      values[lane] = bound.tensors[0]->getDouble(bound.indexers[0](lane));
  } else {
    auto program = compile(prologue);
    if (failed(program))
      return failure();
    program->run(
        total,
        [&](int64_t lane, Val *args) {
          args[0] = Val::ofInt(lane);
          bound.fill(lane, args, 1);
        },
        [&](int64_t lane, const Val *out) { values[lane] = out[0].f; });
  }

  // Sums accumulate in double along each row and round to f32 once, so the
  // oracle is more accurate than any f32 summation order a device uses.
  std::vector<double> reduced(rows);
  for (int64_t row = 0; row < rows; ++row) {
    double acc = kind == ReduceKind::max
                     ? -std::numeric_limits<double>::infinity()
                     : 0.0;
    for (int64_t k = 0; k < rowLength; ++k) {
      double v = values[row * rowLength + k];
      if (kind == ReduceKind::sum)
        acc += v;
      else if (kind == ReduceKind::sum_sq)
        acc += v * v;
      else
        acc = std::fmax(acc, v);
    }
    reduced[row] = finish(acc);
  }

  if (!epilogue) {
    auto result = fresh(op->getResult(0).getType());
    for (int64_t row = 0; row < rows; ++row)
      result->setDouble(row, reduced[row]);
    env[op->getResult(0)] = result;
    return success();
  }

  auto program = compile(*epilogue);
  if (failed(program))
    return failure();
  LaneInputs epilogueInputs = bindInputs(inputs, iteration, epilogue, 2);
  auto setEpilogueArgs = [&](int64_t lane, Val *args) {
    args[0] = Val::ofInt(lane);
    args[1] = Val::ofFloat(reduced[lane / rowLength]);
    epilogueInputs.fill(lane, args, 2);
  };
  if (scatterDest) {
    TensorRef out = destinationFor(scatterDest);
    program->run(total, setEpilogueArgs, [&](int64_t lane, const Val *res) {
      int64_t addr = res[0].i;
      if (addr >= 0 && addr < out->getNumElements())
        write(*out, addr, res[1]);
      else
        noteOutOfRange(lane, addr, out->getNumElements());
    });
    if (failed(reportBounds(op, "writes")))
      return failure();
    env[op->getResult(0)] = out;
    return success();
  }
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto result = fresh(resultType);
  if (isQuantized(resultType.getElementType())) {
    // Quantized as stored: evaluate in f32, then encode the blocks.
    std::vector<float> epilogueValues(total);
    program->run(total, setEpilogueArgs, [&](int64_t lane, const Val *res) {
      epilogueValues[lane] = static_cast<float>(res[0].f);
    });
    std::vector<uint8_t> bytes;
    quantizeBlocks(epilogueValues,
                   isa<Q8_1Type>(resultType.getElementType()), bytes);
    result->bytes() = std::move(bytes);
  } else {
    program->run(total, setEpilogueArgs, [&](int64_t lane, const Val *res) {
      write(*result, lane, res[0]);
    });
  }
  env[op->getResult(0)] = result;
  return success();
}

/// Appends row `row` of `t` (rows of `rowLength`) as doubles: a wide
/// tensor's exactly, any other decoded.
static LogicalResult readRow(const HostTensor &t, int64_t row,
                             int64_t rowLength, std::vector<double> &out) {
  if (t.isWide()) {
    for (int64_t k = 0; k < rowLength; ++k)
      out.push_back(t.getDouble(row * rowLength + k));
    return success();
  }
  std::vector<float> decoded;
  if (failed(dequantizeRow(t, row, decoded)))
    return failure();
  out.insert(out.end(), decoded.begin(), decoded.end());
  return success();
}

/// Computes x · wᵀ (row-major [M, N]) after decoding both operands, each dot
/// product accumulated in double and rounded to f32 once (unless `wide`).
static FailureOr<std::vector<double>> product(Operation *op, Value xValue,
                                              const HostTensor &x,
                                              Value wValue,
                                              const HostTensor &w,
                                              bool wide) {
  auto xType = cast<RankedTensorType>(xValue.getType());
  auto wType = cast<RankedTensorType>(wValue.getType());
  int64_t k = xType.getShape().back();
  int64_t m = xType.getRank() == 2 ? xType.getDimSize(0) : 1;
  int64_t n = wType.getDimSize(0);
  std::vector<double> xs, ws;
  for (int64_t row = 0; row < m; ++row)
    if (failed(readRow(x, row, k, xs)))
      return op->emitOpError("reference interpreter: cannot decode ")
             << xType.getElementType() << " activations";
  for (int64_t row = 0; row < n; ++row)
    if (failed(readRow(w, row, k, ws)))
      return op->emitOpError("reference interpreter: cannot decode ")
             << wType.getElementType() << " weights";
  std::vector<double> acc(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += xs[i * k + kk] * ws[j * k + kk];
      acc[i * n + j] = wide ? sum : static_cast<float>(sum);
    }
  return acc;
}

LogicalResult GraphEvaluator::evalMatmul(MatmulOp op) {
  auto accOr = product(op, op.getX(), *env[op.getX()], op.getWeight(),
                       *env[op.getWeight()], options.wide);
  if (failed(accOr))
    return failure();
  std::vector<double> &acc = *accOr;
  int64_t total = op.getType().getNumElements();
  auto result = fresh(op.getType());
  if (op.getEpilogue().empty()) {
    for (int64_t i = 0; i < total; ++i)
      result->setDouble(i, acc[i]);
  } else {
    auto program = compile(op.getEpilogue());
    if (failed(program))
      return failure();
    LaneInputs bound = bindInputs(op.getInputs(), op.getType().getShape(),
                                  &op.getEpilogue(), 2);
    program->run(
        total,
        [&](int64_t lane, Val *args) {
          args[0] = Val::ofInt(lane);
          args[1] = Val::ofFloat(acc[lane]);
          bound.fill(lane, args, 2);
        },
        [&](int64_t lane, const Val *out) {
          result->setDouble(lane, out[0].f);
        });
  }
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalGatedMatmul(GatedMatmulOp op) {
  auto gate = product(op, op.getX(), *env[op.getX()], op.getGate(),
                      *env[op.getGate()], options.wide);
  auto up = product(op, op.getX(), *env[op.getX()], op.getUp(),
                    *env[op.getUp()], options.wide);
  if (failed(gate) || failed(up))
    return failure();
  auto program = compile(op.getCombine());
  if (failed(program))
    return failure();
  auto result = fresh(op.getType());
  program->run(
      op.getType().getNumElements(),
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        args[1] = Val::ofFloat((*gate)[lane]);
        args[2] = Val::ofFloat((*up)[lane]);
      },
      [&](int64_t lane, const Val *out) { result->setDouble(lane, out[0].f); });
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalMultiMatmul(MultiMatmulOp op) {
  for (auto [weight, resultValue, epilogue] :
       llvm::zip(op.getWeights(), op.getResults(), op.getEpilogues())) {
    auto accOr = product(op, op.getX(), *env[op.getX()], weight, *env[weight],
                         options.wide);
    if (failed(accOr))
      return failure();
    std::vector<double> &acc = *accOr;
    auto result = fresh(resultValue.getType());
    if (epilogue.empty()) {
      for (size_t i = 0; i < acc.size(); ++i)
        result->setDouble(i, acc[i]);
    } else {
      auto program = compile(epilogue);
      if (failed(program))
        return failure();
      program->run(
          static_cast<int64_t>(acc.size()),
          [&](int64_t lane, Val *args) {
            args[0] = Val::ofInt(lane);
            args[1] = Val::ofFloat(acc[lane]);
          },
          [&](int64_t lane, const Val *out) {
            result->setDouble(lane, out[0].f);
          });
    }
    env[resultValue] = result;
  }
  return success();
}

LogicalResult GraphEvaluator::evalQuantize(QuantizeOp op) {
  const HostTensor &input = *env[op.getInput()];
  auto result = std::make_shared<HostTensor>(op.getType());
  std::vector<float> values;
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
    values.push_back(static_cast<float>(input.getDouble(i)));
  std::vector<uint8_t> bytes;
  quantizeBlocks(values, isa<Q8_1Type>(op.getType().getElementType()), bytes);
  result->bytes() = std::move(bytes);
  env[op] = result;
  return success();
}

FailureOr<std::vector<HostTensor>>
hesper::interp::runGraph(GraphOp graph, std::vector<HostTensor> &args,
                         const Options &options) {
  if (options.subgroupSize == 0 ||
      (options.subgroupSize & (options.subgroupSize - 1)) != 0)
    return graph.emitOpError("reference interpreter: subgroup size must be a "
                             "power of two, got ")
           << options.subgroupSize;
  GraphEvaluator evaluator(options);
  std::vector<HostTensor> results;
  if (failed(evaluator.run(graph, args, results)))
    return failure();
  return results;
}

/// Follows the schedule of the attention kernel (convert-circuit-to-shaderm):
/// positions in tiles of kAttentionTile, an online softmax whose running
/// maximum and sum are rescaled once per tile, every sum in index order. As
/// in the other reductions, scores, sums and the weighted values accumulate
/// in double; the output rounds to f32 once.
static constexpr int64_t kAttentionTile = 64;

LogicalResult GraphEvaluator::evalAttention(AttentionOp op) {
  const HostTensor &q = *env[op.getQ()];
  const HostTensor &kc = *env[op.getKCache()];
  const HostTensor &vc = *env[op.getVCache()];
  const int64_t heads = op.getHeads(), kvHeads = op.getKvHeads(),
                dim = op.getHeadDim(), group = heads / kvHeads;
  const int64_t rowStride = kvHeads * dim;
  const int64_t positions = kc.getNumElements() / rowStride;
  const int64_t rows = q.getNumElements() / (heads * dim);
  const float scale = op.getScale().convertToFloat();
  const double softcap =
      op.getSoftcap() ? op.getSoftcap()->convertToFloat() : 0.0;
  const int64_t window = op.getWindow() ? int64_t(*op.getWindow()) : 0;
  auto out = fresh(op.getType());
  std::vector<double> scores(kAttentionTile), acc(dim);
  for (int64_t r = 0; r < rows; ++r)
  for (int64_t h = 0; h < heads; ++h) {
    // Row r is the token at pos + r: it sees positions 0 .. pos + r.
    const int64_t last = std::clamp<int64_t>(
        int64_t(env[op.getPos()]->getInt(0)) + r, 0, positions - 1);
    // A window of W keeps positions last - W + 1 .. last; the tiles start
    // at the first of them, as the kernels' do.
    const int64_t first = window > 0 ? std::max<int64_t>(0, last + 1 - window)
                                     : 0;
    const int64_t qh = (r * heads + h) * dim;
    const int64_t kvBase = (h / group) * dim;
    double m = -std::numeric_limits<double>::max(), sum = 0;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t tile = first; tile <= last; tile += kAttentionTile) {
      const int64_t n = std::min(kAttentionTile, last + 1 - tile);
      double tileMax = -std::numeric_limits<double>::max();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = (tile + i) * rowStride + kvBase;
        double dot = 0;
        for (int64_t d = 0; d < dim; ++d)
          dot += q.getDouble(qh + d) * kc.getDouble(row + d);
        scores[i] = dot * scale;
        if (softcap > 0)
          scores[i] = softcap * std::tanh(scores[i] / softcap);
        tileMax = std::max(tileMax, scores[i]);
      }
      const double mNew = std::max(m, tileMax);
      const double correction = std::exp(m - mNew);
      double tileSum = 0;
      for (int64_t d = 0; d < dim; ++d)
        acc[d] *= correction;
      for (int64_t i = 0; i < n; ++i) {
        const double p = std::exp(scores[i] - mNew);
        tileSum += p;
        const int64_t row = (tile + i) * rowStride + kvBase;
        for (int64_t d = 0; d < dim; ++d)
          acc[d] += p * vc.getDouble(row + d);
      }
      sum = sum * correction + tileSum;
      m = mNew;
    }
    for (int64_t d = 0; d < dim; ++d)
      out->setDouble(qh + d, finish(acc[d] / sum));
  }
  env[op.getResult()] = std::move(out);
  return success();
}

//===----------------------------------------------------------------------===//
// Tolerances of --check
//===----------------------------------------------------------------------===//

static Tolerance looser(Tolerance a, Tolerance b) {
  return {std::max(a.abs, b.abs), std::max(a.rel, b.rel)};
}

static Tolerance ownTolerance(Operation *op, Type resultType) {
  constexpr Tolerance elementwise{1e-5, 1e-4}, accumulated{1e-3, 1e-3};
  Tolerance tol = isa<ReduceOp, ReduceEpilogueOp, ReduceScatterEpilogueOp,
                      MatmulOp, MultiMatmulOp, GatedMatmulOp, AttentionOp>(op)
                      ? accumulated
                      : elementwise;
  auto tensor = dyn_cast<RankedTensorType>(resultType);
  if (tensor && tensor.getElementType().isF16())
    tol.rel = std::max(tol.rel, 2e-3);
  return tol;
}

llvm::DenseMap<Value, Tolerance>
hesper::interp::computeCheckTolerances(GraphOp graph) {
  llvm::DenseMap<Value, Tolerance> tolerances;
  Block &body = graph.getBody().front();
  for (BlockArgument arg : body.getArguments())
    tolerances[arg] = ownTolerance(graph, arg.getType());
  for (Operation &op : body.without_terminator()) {
    // Bodies are isolated from above: the op's operands are all it reads.
    Tolerance inputs;
    for (Value operand : op.getOperands()) {
      auto it = tolerances.find(operand);
      if (it != tolerances.end())
        inputs = looser(inputs, it->second);
    }
    for (Value result : op.getResults()) {
      Tolerance tol = looser(inputs, ownTolerance(&op, result.getType()));
      tolerances[result] = tol;
      // An in-place write gives the argument it updates this version's
      // tolerance too.
      Value root = getWrittenBufferRoot(result);
      if (root != result && isa<BlockArgument>(root))
        tolerances[root] = looser(tolerances[root], tol);
    }
  }
  return tolerances;
}

Comparison hesper::interp::compareWithinTolerance(const HostTensor &got,
                                                  const HostTensor &want,
                                                  Tolerance tol) {
  Comparison result;
  std::vector<float> g = got.toFloats(), w = want.toFloats();
  if (g.size() != w.size()) {
    result.maxError = INFINITY;
    result.mismatch = 0;
    return result;
  }
  // Quantized values may differ by one step of their block's scale where
  // the two sides round the scaled value differently.
  bool quantized = isQuantized(want.getElementType());
  constexpr size_t kBlock = 32;
  double step = 0;
  for (size_t k = 0; k < w.size(); ++k) {
    if (quantized && k % kBlock == 0) {
      double amax = 0;
      for (size_t j = k; j < std::min(w.size(), k + kBlock); ++j)
        amax = std::max(amax, std::fabs(double(w[j])));
      step = 1.01 * amax / 127.0;
    }
    double allowed = tol.abs + tol.rel * std::fabs(double(w[k])) + step;
    // NaN matches only NaN and an infinity only itself; the rest within
    // the tolerance.
    bool match;
    double err;
    if (std::isnan(w[k]) || std::isnan(g[k]) || std::isinf(w[k]) ||
        std::isinf(g[k])) {
      match = std::isnan(w[k]) ? std::isnan(g[k]) : g[k] == w[k];
      err = match ? 0 : INFINITY;
    } else {
      err = std::fabs(double(g[k]) - double(w[k]));
      match = err <= allowed;
    }
    result.maxError = std::max(result.maxError, err);
    if (!match && result.mismatch < 0) {
      result.mismatch = static_cast<int64_t>(k);
      result.got = g[k];
      result.want = w[k];
    }
  }
  return result;
}
