//===- CircuitToShaderM.cpp - Circuit graphs to kernels and a schedule ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Every dispatch-level op of a circuit.graph becomes one shaderm.kernel; the
// graph itself becomes a shaderm.schedule of the same name that allocates
// the intermediate buffers and launches the kernels in graph order.
//
// Bodies (Exp ops over a lane index and the inputs' elements) are cloned
// into the kernels: a body argument becomes a load at the lane's broadcast
// index, a whole-tensor argument becomes the buffer itself and each
// `circuit.extract` of it a load, `circuit.yield` gives the values to store.
//
// Index arithmetic is emitted with `arith` on `index`; values keep the types
// the bodies give them.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Conversion/Passes.h"
#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"
#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

namespace hesper {
#define GEN_PASS_DEF_CONVERTCIRCUITTOSHADERMPASS
#include "Hesper/Conversion/Passes.h.inc"
} // namespace hesper

using namespace mlir;
using namespace hesper;
namespace cir = hesper::circuit;
namespace ex = hesper::exp;
namespace sm = hesper::shaderm;

/// Lanes per workgroup of the one-lane-per-element kernels.
static constexpr int64_t kElementwiseLanes = 256;
/// Lanes per workgroup of a row reduction (at most; rows shorter than this
/// get the next power of two at or above their length).
static constexpr int64_t kReduceLanes = 256;
/// Lanes per workgroup of a dot product (matmul output element).
static constexpr int64_t kDotLanes = 64;
/// Workgroups at least this large reduce within subgroups first (64: a
/// whole number of subgroups on every common device, 8 to 64 lanes).
static constexpr int64_t kSubgroupReduceLanes = 64;
/// The largest workgroup count of one grid dimension every backend accepts.
static constexpr int64_t kMaxGridDim = 65535;
/// Rows of x (tokens) one subgroup multiplies with each weight row it reads.
static constexpr int64_t kXRows = 8;

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

static int64_t numElements(Type type) {
  return cast<RankedTensorType>(type).getNumElements();
}

/// The buffer a tensor lives in: its elements, or for quantized tensors the
/// 32-bit words holding its blocks.
static sm::BufferType bufferTypeFor(RankedTensorType type, bool readOnly) {
  MLIRContext *context = type.getContext();
  Type element = type.getElementType();
  int64_t length = type.getNumElements();
  if (cir::isQuantized(element)) {
    length = ceilDiv(cir::getStorageBytes(type), 4);
    element = IntegerType::get(context, 32);
  }
  return sm::BufferType::get(context, length, element,
                             readOnly ? sm::Access::read_only
                                      : sm::Access::read_write);
}

static Value zeroOf(OpBuilder &b, Location loc, Type element) {
  if (isa<FloatType>(element))
    return ex::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  return ex::ConstantOp::create(b, loc, b.getIntegerAttr(element, 0));
}

/// One workgroup per row: the rows must fit in one grid dimension.
static LogicalResult checkRows(Operation *op, int64_t rows) {
  if (rows <= kMaxGridDim)
    return success();
  return op->emitOpError("has ")
         << rows << " rows, more than convert-circuit-to-shaderm launches "
         << "in one grid dimension";
}

static bool hasLaneOps(Region &region) {
  WalkResult found = region.walk([](Operation *op) {
    if (isa<ex::LaneIdOp, ex::SubgroupSizeOp, ex::SubgroupReduceOp,
            ex::ShuffleXorOp, ex::BroadcastFirstOp>(op))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// Wraps a strided `scf.for` with carried values in `scf.if lb < ub`,
/// yielding the initial values when the loop would not run. A lane whose
/// first index is past the end (rows shorter than the workgroup) must get
/// the identity: the SPIR-V lowering of a zero-trip loop in LLVM 22 does not
/// return the initial values (llvm/llvm-project#211981). Returns the
/// guarded results.
static ValueRange guardZeroTrip(OpBuilder &b, scf::ForOp loop) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = loop.getLoc();
  b.setInsertionPoint(loop);
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                     loop.getLowerBound(),
                                     loop.getUpperBound());
  auto guarded = scf::IfOp::create(b, loc, loop.getResultTypes(), runs,
                                   /*withElseRegion=*/true);
  for (Block *block : {guarded.thenBlock(), guarded.elseBlock()})
    if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
      block->back().erase();
  loop->moveBefore(guarded.thenBlock(), guarded.thenBlock()->end());
  b.setInsertionPointToEnd(guarded.thenBlock());
  scf::YieldOp::create(b, loc, loop.getResults());
  b.setInsertionPointToEnd(guarded.elseBlock());
  scf::YieldOp::create(b, loc, loop.getInitArgs());
  return guarded.getResults();
}

namespace {

/// Index arithmetic on `index` values, folded where both sides are known.
class IndexMath {
public:
  IndexMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, int64_t d) {
    return d == 1 ? x : Value(arith::DivUIOp::create(b, loc, x, c(d)));
  }
  Value rem(Value x, int64_t d) {
    return arith::RemUIOp::create(b, loc, x, c(d));
  }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value toI32(Value x) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), x);
  }
  Value toIndex(Value x) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), x);
  }

  /// The element of an input of shape `input` read by iteration lane `lane`
  /// of shape `iteration`: the lane itself for inputs of the same size, else
  /// NumPy broadcasting (trailing dimensions aligned, size-1 dimensions
  /// read at 0).
  Value broadcast(Value lane, ArrayRef<int64_t> input,
                  ArrayRef<int64_t> iteration) {
    int64_t inputElements = 1, iterElements = 1;
    for (int64_t d : input)
      inputElements *= d;
    for (int64_t d : iteration)
      iterElements *= d;
    if (inputElements == iterElements)
      return lane;
    if (inputElements == 1)
      return c(0);
    size_t offset = iteration.size() - input.size();
    Value index = c(0);
    int64_t inputStride = 1, iterStride = 1;
    for (size_t k = iteration.size(); k-- > 0;) {
      int64_t extent = iteration[k];
      bool broadcasts = k < offset || input[k - offset] == 1;
      if (!broadcasts) {
        Value coord = rem(div(lane, iterStride), extent);
        index = add(index, mul(coord, c(inputStride)));
        inputStride *= input[k - offset];
      }
      iterStride *= extent;
    }
    return index;
  }

private:
  OpBuilder &b;
  Location loc;
};

/// The kernels and the schedule of one graph.
class GraphLowering {
public:
  GraphLowering(ModuleOp module, cir::GraphOp graph, int64_t subgroupSize)
      : module(module), graph(graph), b(graph.getContext()),
        subgroupSize(subgroupSize) {}

  LogicalResult run();

private:
  // One kernel under construction: its bindings (schedule buffers, in
  // binding order) and the kernel op once created.
  struct KernelState {
    llvm::MapVector<Value, bool> bindings; // buffer -> written
    DenseMap<Value, Value> tensorBuffer;   // graph tensor -> buffer
    sm::KernelOp kernel;
    DenseMap<Value, Value> argOf; // schedule buffer -> kernel argument
  };

  /// Binds the buffer of graph tensor `tensor` to the kernel.
  void bind(KernelState &ks, Value tensor, bool written) {
    Value buffer = bufferOf.lookup(tensor);
    ks.tensorBuffer[tensor] = buffer;
    ks.bindings[buffer] |= written;
  }
  /// The kernel argument of graph tensor `tensor`.
  Value arg(KernelState &ks, Value tensor) {
    return ks.argOf.lookup(ks.tensorBuffer.lookup(tensor));
  }

  /// Creates the kernel for `op` with the bindings collected so far, sets
  /// the builder inside it and returns it.
  void createKernel(KernelState &ks, Operation *op, int64_t lanes);
  /// Finishes the kernel and launches it with `grid` workgroups.
  void finishKernel(KernelState &ks, ArrayRef<int64_t> grid);

  /// A fresh schedule buffer for `tensor`.
  Value allocFor(Value tensor) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(schedule.getBody().front().getTerminator());
    auto type = bufferTypeFor(cast<RankedTensorType>(tensor.getType()), false);
    Value buffer = sm::AllocOp::create(b, tensor.getLoc(), type);
    bufferOf[tensor] = buffer;
    return buffer;
  }

  /// Clones `body` at the builder with `args` for its block arguments
  /// (nullptr for a whole-tensor argument, read through `extract` from the
  /// kernel argument of `wholeTensors[i]`), returns the yielded values.
  SmallVector<Value> inlineBody(KernelState &ks, Region &body,
                                ArrayRef<Value> args,
                                ArrayRef<Value> wholeTensors);

  /// Block-argument values for `inputs` of a body whose first input
  /// argument is `leading`: loads at the broadcast index of `lane`, or null
  /// for whole-tensor arguments (recorded in `whole`).
  void loadInputs(KernelState &ks, Region *body, unsigned leading,
                  ValueRange inputs, ArrayRef<int64_t> iteration, Value lane,
                  SmallVector<Value> &args, SmallVector<Value> &whole);

  /// Element `index` (flat, in values) of a q8_0, q4_k or q6_k buffer of
  /// 32-bit words, dequantized to f32 (ggml's formulas).
  Value emitDequantizeElement(Value words, Type element, Value index,
                              Location loc);
  Value loadElement(Value buffer, Value index, Location loc) {
    auto type = cast<sm::BufferType>(buffer.getType());
    return sm::LoadOp::create(b, loc, type.getElementType(), buffer, index);
  }
  Value toF32(Value v, Location loc) {
    if (v.getType().isF32())
      return v;
    return ex::ConvertOp::create(b, loc, b.getF32Type(), v, false);
  }

  LogicalResult lowerZeros(cir::ZerosOp op);
  LogicalResult lowerElementwise(Operation *op);
  LogicalResult lowerReduce(Operation *op, cir::ReduceKind kind,
                            ValueRange inputs, Region &prologue,
                            Region *epilogue, Value dest);
  LogicalResult lowerQuantize(cir::QuantizeOp op);
  LogicalResult lowerAttention(cir::AttentionOp op);
  /// Checks that rows of `rowLength` values quantized to `resultType` can be
  /// written by one workgroup each (whole words, fits in shared memory).
  LogicalResult checkQuantizedRows(Operation *op, RankedTensorType resultType,
                                   int64_t rowLength, int64_t lanes);
  /// Quantizes the `rowLength` f32 values in shared `values` into GGUF
  /// q8_0/q8_1 blocks at row `row` of the word buffer `out`.
  void emitQuantizedRow(Value values, int64_t rowLength, Value row, Value out,
                        bool withSums, Value tid, int64_t lanes,
                        Location loc);
  /// Matmul and multi_matmul; with `combine`, a gated_matmul: the two
  /// weights' dot products of each row are combined into one result.
  LogicalResult lowerMatmul(Operation *op, Value x, ArrayRef<Value> weights,
                            ArrayRef<Region *> epilogues, ValueRange inputs,
                            Region *combine = nullptr);

  /// Emits the strided dot products of row `n` of `weight` with rows `ms`
  /// of `x`, accumulated by this lane (f32, one per x row): the weight row
  /// is read and decoded once for all of them.
  SmallVector<Value> emitPartialDot(KernelState &ks, Value x, Value weight,
                                    ArrayRef<Value> ms, Value n, Value tid,
                                    int64_t lanes, Location loc);
  /// What the per-format dot products need: the x and weight buffers, the
  /// first x element of each x row, the weight row, its length, the lane
  /// and the workgroup size.
  struct DotOperands {
    Value x, w;
    SmallVector<Value> xRows;
    Value n;
    int64_t k;
    Value tid;
    int64_t lanes;
    Location loc;
  };
  /// Starts the loop of this lane's work units, `tid, tid + lanes, ...`
  /// below `units`, carrying `count` f32 accumulators from 0 (the first
  /// init value is the zero inner loops reuse); the builder is left inside
  /// (the caller keeps an InsertionGuard). `finishUnits` yields the next
  /// accumulators and returns the lane's totals.
  scf::ForOp beginUnits(const DotOperands &d, int64_t units, size_t count);
  SmallVector<Value> finishUnits(scf::ForOp loop, ValueRange next);
  /// The four f32 values of x at `index`, a multiple of 4: one vector load.
  SmallVector<Value, 4> loadX4(const DotOperands &d, Value index);
  SmallVector<Value> emitPlainDot(const DotOperands &d);
  SmallVector<Value> emitQ8_0Dot(const DotOperands &d);
  SmallVector<Value> emitQ4_KDot(const DotOperands &d);
  SmallVector<Value> emitQ6_KDot(const DotOperands &d);
  /// Emits the shared-memory tree combining every lane's `value`; returns
  /// the combined value (the same in every lane).
  Value emitWorkgroupReduce(Value value, Value tid, int64_t lanes,
                            cir::ReduceKind kind, Location loc);

  ModuleOp module;
  cir::GraphOp graph;
  OpBuilder b;
  sm::ScheduleOp schedule;
  DenseMap<Value, Value> bufferOf; // graph tensor -> schedule buffer
  unsigned kernelCount = 0;
  /// Lanes per subgroup of the target, 0 when unknown.
  int64_t subgroupSize = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// Kernel plumbing
//===----------------------------------------------------------------------===//

void GraphLowering::createKernel(KernelState &ks, Operation *op,
                                 int64_t lanes) {
  SmallVector<Type> argTypes;
  for (auto [buffer, written] : ks.bindings) {
    auto type = cast<sm::BufferType>(buffer.getType());
    argTypes.push_back(sm::BufferType::get(
        type.getContext(), type.getLength(), type.getElementType(),
        written ? sm::Access::read_write : sm::Access::read_only));
  }
  std::string name = (graph.getSymName() + "_k" + Twine(kernelCount++) + "_" +
                      op->getName().stripDialect())
                         .str();
  b.setInsertionPoint(schedule);
  ks.kernel = sm::KernelOp::create(b, op->getLoc(), name, argTypes,
                                   {static_cast<int32_t>(lanes), 1, 1});
  Block &entry = ks.kernel.getBody().front();
  for (auto [i, binding] : llvm::enumerate(ks.bindings))
    ks.argOf[binding.first] = entry.getArgument(i);
  b.setInsertionPointToStart(&entry);
}

void GraphLowering::finishKernel(KernelState &ks, ArrayRef<int64_t> grid) {
  Location loc = ks.kernel.getLoc();
  b.setInsertionPointToEnd(&ks.kernel.getBody().front());
  sm::ReturnOp::create(b, loc);
  b.setInsertionPoint(schedule.getBody().front().getTerminator());
  SmallVector<Value> buffers;
  for (auto &binding : ks.bindings)
    buffers.push_back(binding.first);
  sm::LaunchOp::create(b, loc, ks.kernel.getSymName(), grid, buffers);
}

SmallVector<Value> GraphLowering::inlineBody(KernelState &ks, Region &body,
                                             ArrayRef<Value> args,
                                             ArrayRef<Value> wholeTensors) {
  Block &block = body.front();
  IRMapping mapping;
  DenseMap<Value, Value> wholeArg; // block argument -> kernel buffer
  for (auto [i, blockArg] : llvm::enumerate(block.getArguments())) {
    if (args[i])
      mapping.map(blockArg, args[i]);
    else
      wholeArg[blockArg] = arg(ks, wholeTensors[i]);
  }
  SmallVector<Value> yielded;
  IndexMath im(b, body.getLoc());
  for (Operation &op : block) {
    if (auto yield = dyn_cast<cir::YieldOp>(op)) {
      for (Value v : yield.getOperands())
        yielded.push_back(mapping.lookupOrDefault(v));
      break;
    }
    if (auto extract = dyn_cast<cir::ExtractOp>(op)) {
      Value buffer = wholeArg.lookup(extract.getOperand(0));
      Value index = im.toIndex(mapping.lookupOrDefault(extract.getOperand(1)));
      mapping.map(extract.getResult(),
                  loadElement(buffer, index, extract.getLoc()));
      continue;
    }
    b.clone(op, mapping);
  }
  return yielded;
}

void GraphLowering::loadInputs(KernelState &ks, Region *body,
                               unsigned leading, ValueRange inputs,
                               ArrayRef<int64_t> iteration, Value lane,
                               SmallVector<Value> &args,
                               SmallVector<Value> &whole) {
  IndexMath im(b, lane.getLoc());
  for (auto [k, input] : llvm::enumerate(inputs)) {
    bool isWhole = body && !body->empty() &&
                   body->front().getArgument(leading + k).getType() ==
                       input.getType();
    if (isWhole) {
      args.push_back(nullptr);
      whole.push_back(input);
      continue;
    }
    auto type = cast<RankedTensorType>(input.getType());
    Value index = im.broadcast(lane, type.getShape(), iteration);
    args.push_back(loadElement(arg(ks, input), index, input.getLoc()));
    whole.push_back(nullptr);
  }
}

//===----------------------------------------------------------------------===//
// zeros
//===----------------------------------------------------------------------===//

/// True when every element of `zeros` is overwritten before anything reads
/// it: its only use is as the destination of a scatter or scatter_multi
/// whose grid covers it and whose address for it is the lane itself.
static bool isOverwrittenWhole(cir::ZerosOp zeros) {
  Value value = zeros.getResult();
  if (!value.hasOneUse())
    return false;
  OpOperand &use = *value.use_begin();
  Operation *user = use.getOwner();
  int64_t grid = 0;
  unsigned destIndex = 0;
  if (auto s = dyn_cast<cir::ScatterOp>(user)) {
    if (use.get() != s.getDest())
      return false;
    grid = s.getGrid();
  } else if (auto s = dyn_cast<cir::ScatterMultiOp>(user)) {
    auto dests = s.getDests();
    auto it = llvm::find(dests, value);
    if (it == dests.end() || llvm::count(dests, value) != 1)
      return false;
    destIndex = it - dests.begin();
    grid = s.getGrid();
  } else {
    return false;
  }
  if (grid < numElements(value.getType()))
    return false;
  Block &body = user->getRegion(0).front();
  auto yield = cast<cir::YieldOp>(body.getTerminator());
  return yield.getOperand(2 * destIndex) == body.getArgument(0);
}

LogicalResult GraphLowering::lowerZeros(cir::ZerosOp op) {
  // A buffer that the next kernel writes in full needs no clearing.
  if (isOverwrittenWhole(op)) {
    allocFor(op.getResult());
    return success();
  }
  Value buffer = allocFor(op.getResult());
  auto type = cast<sm::BufferType>(buffer.getType());
  int64_t n = type.getLength();
  KernelState ks;
  bind(ks, op.getResult(), /*written=*/true);
  int64_t lanes = std::min(kElementwiseLanes, powerOfTwoAtLeast(n));
  createKernel(ks, op, lanes);
  Location loc = op.getLoc();
  IndexMath im(b, loc);
  Value gid = sm::GlobalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  auto guard = scf::IfOp::create(b, loc, im.lt(gid, im.c(n)));
  b.setInsertionPointToStart(guard.thenBlock());
  Type element = type.getElementType();
  Value zero = zeroOf(b, loc, element);
  sm::StoreOp::create(b, loc, zero, arg(ks, op.getResult()), gid);
  finishKernel(ks, {ceilDiv(n, lanes), 1, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// map, gather, scatter, scatter_multi
//===----------------------------------------------------------------------===//

LogicalResult GraphLowering::lowerElementwise(Operation *op) {
  Region &body = op->getRegion(0);
  ValueRange inputs;
  SmallVector<Value> dests;
  Value source;
  int64_t grid = 0;
  SmallVector<int64_t> iteration;
  if (auto map = dyn_cast<cir::MapOp>(op)) {
    inputs = map.getInputs();
    grid = numElements(map.getType());
    iteration.assign(map.getType().getShape().begin(),
                     map.getType().getShape().end());
  } else if (auto gather = dyn_cast<cir::GatherOp>(op)) {
    inputs = gather.getInputs();
    source = gather.getSource();
    grid = numElements(gather.getType());
    iteration.assign(gather.getType().getShape().begin(),
                     gather.getType().getShape().end());
  } else if (auto scatter = dyn_cast<cir::ScatterOp>(op)) {
    inputs = scatter.getInputs();
    dests.push_back(scatter.getDest());
    grid = scatter.getGrid();
    iteration.push_back(grid);
  } else {
    auto multi = cast<cir::ScatterMultiOp>(op);
    inputs = multi.getInputs();
    llvm::append_range(dests, multi.getDests());
    grid = multi.getGrid();
    iteration.push_back(grid);
  }
  if (ceilDiv(grid, kElementwiseLanes) > kMaxGridDim)
    return op->emitOpError("has ")
           << grid << " lanes, more than convert-circuit-to-shaderm "
           << "launches in one grid dimension";

  // Results: scatters write their destinations in place, maps and gathers
  // a fresh buffer.
  KernelState ks;
  for (Value input : inputs)
    bind(ks, input, false);
  if (source)
    bind(ks, source, false);
  if (dests.empty()) {
    allocFor(op->getResult(0));
    bind(ks, op->getResult(0), true);
  } else {
    for (auto [dest, result] : llvm::zip(dests, op->getResults())) {
      bufferOf[result] = bufferOf.lookup(dest);
      bind(ks, dest, true);
      bind(ks, result, true);
    }
  }

  // Subgroup operations see every lane of a subgroup; lanes past the end
  // would join with clamped values, where the op means only the active
  // lanes. Full subgroups are required instead (32 is a multiple of every
  // subgroup size up to NVIDIA's warp: 8 on lavapipe, 16, 32).
  if (hasLaneOps(body) && grid % 32 != 0)
    return op->emitOpError("has subgroup operations in its body over ")
           << grid << " lanes; convert-circuit-to-shaderm needs a multiple "
           << "of 32 lanes so that every subgroup is full";
  int64_t lanes = std::min(kElementwiseLanes, powerOfTwoAtLeast(grid));
  if (lanes < 32)
    lanes = 32;
  createKernel(ks, op, lanes);
  Location loc = op->getLoc();
  IndexMath im(b, loc);
  Value gid = sm::GlobalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value inRange = im.lt(gid, im.c(grid));
  // Bodies with subgroup operations run on every lane of the subgroup (on
  // a clamped lane for the loads); only the stores are guarded.
  bool allLanes = hasLaneOps(body);
  Value lane = gid;
  if (allLanes) {
    lane = arith::SelectOp::create(b, loc, inRange, gid, im.c(0));
  } else {
    auto guard = scf::IfOp::create(b, loc, inRange);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  SmallVector<Value> args{im.toI32(allLanes ? gid : lane)};
  SmallVector<Value> whole{nullptr};
  loadInputs(ks, &body, 1, inputs, iteration, lane, args, whole);
  SmallVector<Value> yielded = inlineBody(ks, body, args, whole);
  if (allLanes) {
    auto guard = scf::IfOp::create(b, loc, inRange);
    b.setInsertionPointToStart(guard.thenBlock());
  }

  if (dests.empty() && !source) {
    sm::StoreOp::create(b, loc, yielded[0], arg(ks, op->getResult(0)), gid);
  } else if (source) {
    // out[i] = source[addr], or zero when addr is out of range.
    int64_t size = numElements(source.getType());
    Value addr = im.toIndex(yielded[0]);
    Value valid = im.lt(addr, im.c(size)); // unsigned: negatives fail too
    Value safe = arith::SelectOp::create(b, loc, valid, addr, im.c(0));
    Type sourceElement =
        cast<RankedTensorType>(source.getType()).getElementType();
    Value v = cir::isQuantized(sourceElement)
                  ? emitDequantizeElement(arg(ks, source), sourceElement,
                                          safe, loc)
                  : loadElement(arg(ks, source), safe, loc);
    Type element = v.getType();
    Value zero = zeroOf(b, loc, element);
    v = arith::SelectOp::create(b, loc, valid, v, zero);
    sm::StoreOp::create(b, loc, v, arg(ks, op->getResult(0)), gid);
  } else {
    for (auto [d, dest] : llvm::enumerate(dests)) {
      int64_t size = numElements(dest.getType());
      Value addr = im.toIndex(yielded[2 * d]);
      auto write = scf::IfOp::create(b, loc, im.lt(addr, im.c(size)));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(write.thenBlock());
      sm::StoreOp::create(b, loc, yielded[2 * d + 1], arg(ks, dest), addr);
    }
  }
  finishKernel(ks, {ceilDiv(grid, lanes), 1, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Combines two partial reductions (sum_sq partials are already squared).
static Value combine(OpBuilder &b, Location loc, cir::ReduceKind kind,
                     Value x, Value y) {
  if (kind == cir::ReduceKind::max)
    return ex::MaxOp::create(b, loc, x, y);
  return ex::AddOp::create(b, loc, x, y);
}

static Value identity(OpBuilder &b, Location loc, cir::ReduceKind kind) {
  double v = kind == cir::ReduceKind::max
                 ? -std::numeric_limits<double>::infinity()
                 : 0.0;
  return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value GraphLowering::emitWorkgroupReduce(Value value, Value tid, int64_t lanes,
                                         cir::ReduceKind kind, Location loc) {
  IndexMath im(b, loc);
  auto sharedType = sm::SharedType::get(b.getContext(), lanes, b.getF32Type());
  Value tile = sm::SharedAllocOp::create(b, loc, sharedType);
  if (lanes >= kSubgroupReduceLanes) {
    // Each subgroup reduces in registers; its first lane writes the total
    // to slot subgroup_id; after one barrier every lane combines the
    // slots in index order. The tile has a slot per lane, enough for any
    // subgroup size.
    Value total = ex::SubgroupReduceOp::create(
        b, loc,
        kind == cir::ReduceKind::max ? ex::ReduceKind::max
                                     : ex::ReduceKind::sum,
        value);
    Value lane = ex::LaneIdOp::create(b, loc, b.getI32Type());
    Value first = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, lane,
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    auto leader = scf::IfOp::create(b, loc, first);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(leader.thenBlock());
      sm::StoreOp::create(b, loc, total, tile,
                          sm::SubgroupIdOp::create(b, loc, b.getIndexType()));
    }
    sm::BarrierOp::create(b, loc);
    Value size = im.toIndex(ex::SubgroupSizeOp::create(b, loc, b.getI32Type()));
    Value subgroups = arith::DivUIOp::create(b, loc, im.c(lanes), size);
    Value first0 = sm::LoadOp::create(b, loc, b.getF32Type(), tile, im.c(0));
    auto slots = scf::ForOp::create(b, loc, im.c(1), subgroups, im.c(1),
                                    ValueRange{first0});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(slots.getBody());
      Value slot = sm::LoadOp::create(b, loc, b.getF32Type(), tile,
                                      slots.getInductionVar());
      scf::YieldOp::create(
          b, loc, combine(b, loc, kind, slots.getRegionIterArgs()[0], slot));
    }
    return guardZeroTrip(b, slots)[0];
  }
  sm::StoreOp::create(b, loc, value, tile, tid);
  sm::BarrierOp::create(b, loc);
  // A fixed tree: lane i adds lane i + s for s = lanes/2, ..., 1.
  for (int64_t s = lanes / 2; s >= 1; s /= 2) {
    auto active = scf::IfOp::create(b, loc, im.lt(tid, im.c(s)));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(active.thenBlock());
      Value mine = sm::LoadOp::create(b, loc, b.getF32Type(), tile, tid);
      Value other = sm::LoadOp::create(b, loc, b.getF32Type(), tile,
                                       im.add(tid, im.c(s)));
      sm::StoreOp::create(b, loc, combine(b, loc, kind, mine, other), tile,
                          tid);
    }
    sm::BarrierOp::create(b, loc);
  }
  return sm::LoadOp::create(b, loc, b.getF32Type(), tile, im.c(0));
}

LogicalResult GraphLowering::lowerReduce(Operation *op, cir::ReduceKind kind,
                                         ValueRange inputs, Region &prologue,
                                         Region *epilogue, Value dest) {
  Location loc = op->getLoc();
  Value result = op->getResult(0);
  auto resultType = cast<RankedTensorType>(result.getType());
  bool quantized = cir::isQuantized(resultType.getElementType());
  SmallVector<int64_t> iteration = cir::getReductionIteration(op);
  int64_t rowLength = iteration.back();
  int64_t total = 1;
  for (int64_t d : iteration)
    total *= d;
  int64_t rows = total / rowLength;
  if (failed(checkRows(op, rows)))
    return failure();

  KernelState ks;
  for (Value input : inputs)
    bind(ks, input, false);
  if (dest) {
    bufferOf[result] = bufferOf.lookup(dest);
    bind(ks, dest, true);
    bind(ks, result, true);
  } else {
    allocFor(result);
    bind(ks, result, true);
  }
  int64_t lanes =
      std::max<int64_t>(32, std::min(kReduceLanes, powerOfTwoAtLeast(rowLength)));
  if (quantized &&
      failed(checkQuantizedRows(op, resultType, rowLength, lanes)))
    return failure();
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value row = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value rowBase = im.mul(row, im.c(rowLength));

  // Each lane accumulates k = tid, tid + lanes, ... in order.
  Value init = identity(b, loc, kind);
  auto loop = scf::ForOp::create(b, loc, tid, im.c(rowLength), im.c(lanes),
                                 ValueRange{init});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value lane = im.add(rowBase, loop.getInductionVar());
    Value v;
    if (prologue.empty()) {
      auto type = cast<RankedTensorType>(inputs[0].getType());
      v = loadElement(arg(ks, inputs[0]),
                      im.broadcast(lane, type.getShape(), iteration), loc);
    } else {
      SmallVector<Value> args{im.toI32(lane)}, whole{nullptr};
      loadInputs(ks, &prologue, 1, inputs, iteration, lane, args, whole);
      v = inlineBody(ks, prologue, args, whole)[0];
    }
    v = toF32(v, loc);
    if (kind == cir::ReduceKind::sum_sq)
      v = ex::MulOp::create(b, loc, v, v);
    Value acc = combine(b, loc, kind, loop.getRegionIterArgs()[0], v);
    scf::YieldOp::create(b, loc, acc);
  }
  Value reduced =
      emitWorkgroupReduce(guardZeroTrip(b, loop)[0], tid, lanes, kind, loc);

  if (!epilogue) {
    auto first = scf::IfOp::create(b, loc, im.lt(tid, im.c(1)));
    b.setInsertionPointToStart(first.thenBlock());
    sm::StoreOp::create(b, loc, reduced, arg(ks, result), row);
    finishKernel(ks, {rows, 1, 1});
    return success();
  }

  // A quantized result goes through shared memory: the epilogue's f32
  // values first, then whole blocks.
  Value staged;
  if (quantized)
    staged = sm::SharedAllocOp::create(
        b, loc, sm::SharedType::get(b.getContext(), rowLength, b.getF32Type()));
  auto each = scf::ForOp::create(b, loc, tid, im.c(rowLength), im.c(lanes));
  b.setInsertionPointToStart(each.getBody());
  Value lane = im.add(rowBase, each.getInductionVar());
  SmallVector<Value> args{im.toI32(lane), reduced}, whole{nullptr, nullptr};
  loadInputs(ks, epilogue, 2, inputs, iteration, lane, args, whole);
  SmallVector<Value> yielded = inlineBody(ks, *epilogue, args, whole);
  if (quantized) {
    sm::StoreOp::create(b, loc, toF32(yielded[0], loc), staged,
                        each.getInductionVar());
    b.setInsertionPointAfter(each);
    sm::BarrierOp::create(b, loc);
    emitQuantizedRow(staged, rowLength, row, arg(ks, result),
                     isa<cir::Q8_1Type>(resultType.getElementType()), tid,
                     lanes, loc);
  } else if (dest) {
    Value addr = im.toIndex(yielded[0]);
    auto write =
        scf::IfOp::create(b, loc, im.lt(addr, im.c(numElements(dest.getType()))));
    b.setInsertionPointToStart(write.thenBlock());
    sm::StoreOp::create(b, loc, yielded[1], arg(ks, dest), addr);
  } else {
    sm::StoreOp::create(b, loc, yielded[0], arg(ks, result), lane);
  }
  finishKernel(ks, {rows, 1, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// Quantized stores
//===----------------------------------------------------------------------===//

LogicalResult GraphLowering::checkQuantizedRows(Operation *op,
                                                RankedTensorType resultType,
                                                int64_t rowLength,
                                                int64_t lanes) {
  bool withSums = isa<cir::Q8_1Type>(resultType.getElementType());
  if (!withSums && !isa<cir::Q8_0Type>(resultType.getElementType()))
    return op->emitOpError("stores ")
           << resultType.getElementType()
           << ", but convert-circuit-to-shaderm quantizes only to q8_0 and "
              "q8_1";
  if (rowLength % 32 != 0)
    return op->emitOpError("quantizes rows of ")
           << rowLength << " values, not a multiple of the 32-value block";
  int64_t rowBytes = rowLength / 32 * (withSums ? 36 : 34);
  if (rowBytes % 4 != 0)
    return op->emitOpError("quantizes rows of ")
           << rowBytes << " bytes; convert-circuit-to-shaderm needs rows of "
           << "whole 32-bit words (an even number of q8_0 blocks)";
  int64_t sharedBytes = rowLength * 4 + rowLength / 32 * 8 + lanes * 4;
  if (sharedBytes > 32768)
    return op->emitOpError("quantizes rows of ")
           << rowLength << " values, more than fit in 32 KiB of shared memory";
  return success();
}

void GraphLowering::emitQuantizedRow(Value values, int64_t rowLength,
                                     Value row, Value out, bool withSums,
                                     Value tid, int64_t lanes, Location loc) {
  IndexMath im(b, loc);
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  MLIRContext *context = b.getContext();
  int64_t blocks = rowLength / 32;
  int64_t blockBytes = withSums ? 36 : 34;
  int64_t headerBytes = withSums ? 4 : 2;
  int64_t rowWords = blocks * blockBytes / 4;
  auto f32Const = [&](double v) {
    return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  auto i32Const = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  // q = clamp(round(v / d), -127, 127), 0 when d is 0: what
  // circuit.quantize specifies, as the interpreter computes it.
  auto quantizeValue = [&](Value v, Value d) -> Value {
    Value zero = f32Const(0.0);
    Value nonzero = ex::CmpOp::create(b, loc, ex::CmpPredicate::ne, d, zero);
    Value safeD = ex::SelectOp::create(b, loc, nonzero, d, f32Const(1.0));
    Value scaled = ex::DivOp::create(b, loc, v, safeD);
    Value r = ex::ClampOp::create(b, loc, ex::RoundOp::create(b, loc, scaled),
                                  f32Const(-127.0), f32Const(127.0));
    r = ex::SelectOp::create(b, loc, nonzero, r, zero);
    return ex::ConvertOp::create(b, loc, i32, r, false);
  };

  // Pass 1: per block, the scale d = amax / 127 and d * sum(q).
  Value scales =
      sm::SharedAllocOp::create(b, loc, sm::SharedType::get(context, blocks, f32));
  Value sums =
      sm::SharedAllocOp::create(b, loc, sm::SharedType::get(context, blocks, f32));
  {
    auto perBlock = scf::ForOp::create(b, loc, tid, im.c(blocks), im.c(lanes));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(perBlock.getBody());
    Value blk = perBlock.getInductionVar();
    Value base = im.mul(blk, im.c(32));
    auto amaxLoop = scf::ForOp::create(b, loc, im.c(0), im.c(32), im.c(1),
                                       ValueRange{f32Const(0.0)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(amaxLoop.getBody());
      Value v = sm::LoadOp::create(b, loc, f32, values,
                                   im.add(base, amaxLoop.getInductionVar()));
      Value m = ex::MaxOp::create(b, loc, amaxLoop.getRegionIterArgs()[0],
                                  ex::AbsOp::create(b, loc, v));
      scf::YieldOp::create(b, loc, m);
    }
    Value d = ex::DivOp::create(b, loc, amaxLoop.getResult(0),
                                f32Const(127.0));
    auto sumLoop = scf::ForOp::create(b, loc, im.c(0), im.c(32), im.c(1),
                                      ValueRange{i32Const(0)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      Value v = sm::LoadOp::create(b, loc, f32, values,
                                   im.add(base, sumLoop.getInductionVar()));
      Value q = quantizeValue(v, d);
      scf::YieldOp::create(
          b, loc,
          ValueRange{arith::AddIOp::create(b, loc,
                                           sumLoop.getRegionIterArgs()[0], q)});
    }
    Value s = ex::MulOp::create(
        b, loc, d,
        ex::ConvertOp::create(b, loc, f32, sumLoop.getResult(0), false));
    sm::StoreOp::create(b, loc, d, scales, blk);
    sm::StoreOp::create(b, loc, s, sums, blk);
  }
  sm::BarrierOp::create(b, loc);

  // Pass 2: one lane per 32-bit word of the row, assembling its 4 bytes
  // (blocks are not word-aligned in q8_0, so no lane writes a partial word).
  auto perWord = scf::ForOp::create(b, loc, tid, im.c(rowWords), im.c(lanes));
  b.setInsertionPointToStart(perWord.getBody());
  Value w = perWord.getInductionVar();
  Value word = i32Const(0);
  for (int64_t k = 0; k < 4; ++k) {
    Value offset = im.add(im.mul(w, im.c(4)), im.c(k));
    Value blk = im.div(offset, blockBytes);
    Value pos = im.rem(offset, blockBytes);
    Value d = sm::LoadOp::create(b, loc, f32, scales, blk);
    Value s = sm::LoadOp::create(b, loc, f32, sums, blk);
    Value header = ex::PackF16x2Op::create(b, loc, i32, d,
                                           withSums ? s : f32Const(0.0));
    Value inHeader = im.lt(pos, im.c(headerBytes));
    // Header byte: bits 8*pos of the packed halves.
    Value headerShift = arith::MulIOp::create(
        b, loc,
        im.toI32(arith::SelectOp::create(b, loc, inHeader, pos, im.c(0))),
        i32Const(8));
    Value headerByte = arith::ShRUIOp::create(b, loc, header, headerShift);
    // Quant byte: value j of the block.
    Value j = arith::SelectOp::create(
        b, loc, inHeader, im.c(0),
        arith::SubIOp::create(b, loc, pos, im.c(headerBytes)));
    Value v = sm::LoadOp::create(b, loc, f32, values,
                                 im.add(im.mul(blk, im.c(32)), j));
    Value q = quantizeValue(v, d);
    Value byte = arith::SelectOp::create(b, loc, inHeader, headerByte, q);
    byte = arith::AndIOp::create(b, loc, byte, i32Const(0xff));
    if (k)
      byte = arith::ShLIOp::create(b, loc, byte, i32Const(8 * k));
    word = arith::OrIOp::create(b, loc, word, byte);
  }
  sm::StoreOp::create(b, loc, word, out,
                      im.add(im.mul(row, im.c(rowWords)), w));
}

LogicalResult GraphLowering::lowerQuantize(cir::QuantizeOp op) {
  Location loc = op.getLoc();
  Value input = op.getInput();
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rowLength = inputType.getShape().back();
  int64_t rows = inputType.getNumElements() / rowLength;
  if (failed(checkRows(op, rows)))
    return failure();
  int64_t lanes = std::max<int64_t>(
      32, std::min(kReduceLanes, powerOfTwoAtLeast(rowLength / 32)));
  if (failed(checkQuantizedRows(op, op.getType(), rowLength, lanes)))
    return failure();
  KernelState ks;
  bind(ks, input, false);
  allocFor(op.getResult());
  bind(ks, op.getResult(), true);
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value row = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value staged = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), rowLength, b.getF32Type()));
  {
    auto each = scf::ForOp::create(b, loc, tid, im.c(rowLength), im.c(lanes));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(each.getBody());
    Value k = each.getInductionVar();
    Value v = loadElement(arg(ks, input),
                          im.add(im.mul(row, im.c(rowLength)), k), loc);
    sm::StoreOp::create(b, loc, toF32(v, loc), staged, k);
  }
  sm::BarrierOp::create(b, loc);
  emitQuantizedRow(staged, rowLength, row, arg(ks, op.getResult()),
                   isa<cir::Q8_1Type>(op.getType().getElementType()), tid,
                   lanes, loc);
  finishKernel(ks, {rows, 1, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// Reads byte `byteIndex` of a buffer of 32-bit words, zero-extended to i32.
static Value loadByte(OpBuilder &b, Location loc, Value words,
                      Value byteIndex) {
  IndexMath im(b, loc);
  Value word = sm::LoadOp::create(b, loc, b.getI32Type(), words,
                                  im.div(byteIndex, 4));
  Value shift = arith::MulIOp::create(
      b, loc, im.toI32(im.rem(byteIndex, 4)),
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), 8));
  Value shifted = arith::ShRUIOp::create(b, loc, word, shift);
  return arith::AndIOp::create(
      b, loc, shifted, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0xff));
}

namespace {
/// 32-bit integer arithmetic with constant operands, for unpacking blocks.
class WordMath {
public:
  WordMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  Value c(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value shr(Value x, int64_t s) {
    return s == 0 ? x : Value(arith::ShRUIOp::create(b, loc, x, c(s)));
  }
  Value shr(Value x, Value s) { return arith::ShRUIOp::create(b, loc, x, s); }
  Value shl(Value x, int64_t s) {
    return s == 0 ? x : Value(arith::ShLIOp::create(b, loc, x, c(s)));
  }
  Value mask(Value x, int64_t m) {
    return arith::AndIOp::create(b, loc, x, c(m));
  }
  Value bitOr(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value toF32(Value x) {
    return ex::ConvertOp::create(b, loc, b.getF32Type(), x, false);
  }

private:
  OpBuilder &b;
  Location loc;
};
} // namespace

/// The f32 `a * x + b * y + acc`.
static Value fma2(OpBuilder &b, Location loc, Value a, Value x, Value c,
                  Value y, Value acc) {
  return ex::FmaOp::create(b, loc, a, x, ex::FmaOp::create(b, loc, c, y, acc));
}

SmallVector<Value> GraphLowering::emitPartialDot(KernelState &ks, Value x,
                                                 Value weight,
                                                 ArrayRef<Value> ms, Value n,
                                                 Value tid, int64_t lanes,
                                                 Location loc) {
  IndexMath im(b, loc);
  auto wType = cast<RankedTensorType>(weight.getType());
  int64_t k = wType.getShape().back();
  DotOperands ops{arg(ks, x), arg(ks, weight), {}, n, k, tid, lanes, loc};
  for (Value m : ms)
    ops.xRows.push_back(im.mul(m, im.c(k)));
  return llvm::TypeSwitch<Type, SmallVector<Value>>(wType.getElementType())
      .Case([&](cir::Q8_0Type) { return emitQ8_0Dot(ops); })
      .Case([&](cir::Q4_KType) { return emitQ4_KDot(ops); })
      .Case([&](cir::Q6_KType) { return emitQ6_KDot(ops); })
      .Default([&](Type) { return emitPlainDot(ops); });
}

scf::ForOp GraphLowering::beginUnits(const DotOperands &d, int64_t units,
                                     size_t count) {
  IndexMath im(b, d.loc);
  Value zero = ex::ConstantOp::create(b, d.loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> init(count, zero);
  auto loop = scf::ForOp::create(b, d.loc, d.tid, im.c(units), im.c(d.lanes),
                                 init);
  b.setInsertionPointToStart(loop.getBody());
  return loop;
}

SmallVector<Value> GraphLowering::finishUnits(scf::ForOp loop,
                                              ValueRange next) {
  scf::YieldOp::create(b, loop.getLoc(), next);
  return SmallVector<Value>(guardZeroTrip(b, loop));
}

SmallVector<Value, 4> GraphLowering::loadX4(const DotOperands &d,
                                            Value index) {
  Type element = cast<sm::BufferType>(d.x.getType()).getElementType();
  Value four = sm::LoadOp::create(b, d.loc, VectorType::get({4}, element),
                                  d.x, index);
  SmallVector<Value, 4> values;
  for (int64_t j = 0; j < 4; ++j)
    values.push_back(
        toF32(vector::ExtractOp::create(b, d.loc, four, j), d.loc));
  return values;
}

SmallVector<Value> GraphLowering::emitPlainDot(const DotOperands &d) {
  // Lanes stride over k, kVector consecutive elements at a time (one
  // vector load of x and of w) where k allows; the components are
  // accumulated in order.
  constexpr int64_t kVector = 4;
  Location loc = d.loc;
  IndexMath im(b, loc);
  Value wRow = im.mul(d.n, im.c(d.k));
  int64_t width = d.k % kVector == 0 ? kVector : 1;
  const size_t rows = d.xRows.size();
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = beginUnits(d, d.k / width, rows);
  Value i = im.mul(loop.getInductionVar(), im.c(width));
  SmallVector<Value> acc(loop.getRegionIterArgs());
  if (width == 1) {
    SmallVector<Value> xv;
    for (size_t r = 0; r < rows; ++r)
      xv.push_back(toF32(loadElement(d.x, im.add(d.xRows[r], i), loc), loc));
    Value wv = toF32(loadElement(d.w, im.add(wRow, i), loc), loc);
    for (size_t r = 0; r < rows; ++r)
      acc[r] = ex::FmaOp::create(b, loc, xv[r], wv, acc[r]);
  } else {
    auto loadVector = [&](Value buffer, Value index) -> Value {
      Type element = cast<sm::BufferType>(buffer.getType()).getElementType();
      return sm::LoadOp::create(b, loc, VectorType::get({width}, element),
                                buffer, index);
    };
    // The rows' x vectors, then one weight load shared by the rows.
    SmallVector<Value> xs;
    for (size_t r = 0; r < rows; ++r)
      xs.push_back(loadVector(d.x, im.add(d.xRows[r], i)));
    Value ws = loadVector(d.w, im.add(wRow, i));
    for (int64_t j = 0; j < width; ++j) {
      SmallVector<Value> xv;
      for (size_t r = 0; r < rows; ++r)
        xv.push_back(toF32(vector::ExtractOp::create(b, loc, xs[r], j), loc));
      Value wv = toF32(vector::ExtractOp::create(b, loc, ws, j), loc);
      for (size_t r = 0; r < rows; ++r)
        acc[r] = ex::FmaOp::create(b, loc, xv[r], wv, acc[r]);
    }
  }
  return finishUnits(loop, acc);
}

SmallVector<Value> GraphLowering::emitQ8_0Dot(const DotOperands &d) {
  // Blocks of 34 bytes (f16 scale, 32 signed bytes); lanes stride over the
  // blocks of the row, each block's dot product is scaled once. The 32
  // values are read as 8 words; a block starts at an even byte, so when its
  // values are not word-aligned a word is assembled from the two aligned
  // words around it.
  constexpr int64_t kBlock = 32, kBlockBytes = 34;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  int64_t blocksPerRow = d.k / kBlock;
  int64_t lastWord = cast<sm::BufferType>(d.w.getType()).getLength() - 1;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocksPerRow));
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = beginUnits(d, blocksPerRow, rows);
  Value zero = loop.getInitArgs()[0];
  Value blk = loop.getInductionVar();
  Value base = im.mul(im.add(rowBlocks, blk), im.c(kBlockBytes));
  Value lo = loadByte(b, loc, d.w, base);
  Value hi = loadByte(b, loc, d.w, im.add(base, im.c(1)));
  Value scale = ex::UnpackF16x2Op::create(b, loc, b.getF32Type(),
                                          wm.bitOr(lo, wm.shl(hi, 8)), 0);
  Value values = im.add(base, im.c(2)); // first value byte
  Value misaligned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, im.rem(values, 4), im.c(0));
  SmallVector<Value> xBlocks;
  for (size_t r = 0; r < rows; ++r)
    xBlocks.push_back(im.add(d.xRows[r], im.mul(blk, im.c(kBlock))));
  auto inner = scf::ForOp::create(b, loc, im.c(0), im.c(kBlock / 4), im.c(1),
                                  SmallVector<Value>(rows, zero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(inner.getBody());
    Value w = inner.getInductionVar();
    Value offset = im.mul(w, im.c(4));
    Value first = im.div(im.add(values, offset), 4);
    Value w0 = sm::LoadOp::create(b, loc, b.getI32Type(), d.w, first);
    // The next word, clamped into the buffer (it is used only when
    // misaligned, and then it exists).
    Value next = arith::MinUIOp::create(b, loc, im.add(first, im.c(1)),
                                        im.c(lastWord));
    Value w1 = sm::LoadOp::create(b, loc, b.getI32Type(), d.w, next);
    Value word = wm.select(misaligned,
                           wm.bitOr(wm.shr(w0, 16), wm.shl(w1, 16)), w0);
    SmallVector<SmallVector<Value, 4>> xs;
    for (size_t r = 0; r < rows; ++r)
      xs.push_back(loadX4(d, im.add(xBlocks[r], offset)));
    SmallVector<Value> acc(inner.getRegionIterArgs());
    for (int64_t t = 0; t < 4; ++t) {
      // Byte t, sign-extended: shifted to the top, then arithmetically down.
      Value q = arith::ShRSIOp::create(b, loc, wm.shl(word, 24 - 8 * t),
                                       wm.c(24));
      Value qf = wm.toF32(q);
      for (size_t r = 0; r < rows; ++r)
        acc[r] = ex::FmaOp::create(b, loc, qf, xs[r][t], acc[r]);
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> acc;
  for (size_t r = 0; r < rows; ++r)
    acc.push_back(ex::FmaOp::create(b, loc, scale, inner.getResult(r),
                                    loop.getRegionIterArgs()[r]));
  return finishUnits(loop, acc);
}

SmallVector<Value> GraphLowering::emitQ4_KDot(const DotOperands &d) {
  // Super-blocks of 144 bytes (36 words, so every block is word-aligned)
  // for 256 values: f16 d and dmin, 12 bytes of packed 6-bit scales and
  // mins for eight 32-value sub-blocks, 128 bytes of 4-bit quants. A lane's
  // unit is one quarter p of a super-block: the 32 quant bytes at 16 + 32p,
  // whose low nibbles are sub-block 2p and high nibbles sub-block 2p + 1.
  // Per sub-block, sum(x * (d*sc*q - dmin*m)) = d*sc*sum(q*x) - dmin*m*sum(x).
  constexpr int64_t kValues = 256, kWords = 36;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  int64_t blocksPerRow = d.k / kValues;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocksPerRow));
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = beginUnits(d, blocksPerRow * 4, rows);
  Value zero = loop.getInitArgs()[0];
  Value unit = loop.getInductionVar();
  Value blk = im.div(unit, 4), quarter = im.rem(unit, 4);
  Value blockWord = im.mul(im.add(rowBlocks, blk), im.c(kWords));
  Value head = sm::LoadOp::create(b, loc, b.getI32Type(), d.w, blockWord);
  Value scaleD = ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 0);
  Value scaleMin = ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 1);

  // The 6-bit scale and min of sub-block j (0..7), from scale bytes s[]:
  // j < 4: s[j] & 63 and s[j+4] & 63; else the low/high nibble of s[j+4]
  // with the top two bits of s[j-4] / s[j] above it.
  // The 12 scale bytes are words 1-3 of the block, loaded once per unit.
  Value scaleWords[3];
  for (int64_t w = 0; w < 3; ++w)
    scaleWords[w] = sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                       im.add(blockWord, im.c(1 + w)));
  auto scaleByte = [&](Value i) -> Value {
    Value word = wm.select(im.lt(i, im.c(4)), scaleWords[0],
                           wm.select(im.lt(i, im.c(8)), scaleWords[1],
                                     scaleWords[2]));
    Value shift = arith::MulIOp::create(b, loc, im.toI32(im.rem(i, 4)),
                                        wm.c(8));
    return wm.mask(wm.shr(word, shift), 0xff);
  };
  auto scaleAndMin = [&](Value j) -> std::pair<Value, Value> {
    Value sj = scaleByte(j);
    Value sj4 = scaleByte(im.add(j, im.c(4)));
    Value sjm4 = scaleByte(im.rem(j, 4));
    Value low = im.lt(j, im.c(4));
    Value sc = wm.select(low, wm.mask(sj, 63),
                         wm.bitOr(wm.mask(sj4, 0xf), wm.shl(wm.shr(sjm4, 6), 4)));
    Value mn = wm.select(low, wm.mask(sj4, 63),
                         wm.bitOr(wm.shr(sj4, 4), wm.shl(wm.shr(sj, 6), 4)));
    return {ex::MulOp::create(b, loc, scaleD, wm.toF32(sc)),
            ex::MulOp::create(b, loc, scaleMin, wm.toF32(mn))};
  };
  Value sub = im.mul(quarter, im.c(2));
  auto [dLo, mLo] = scaleAndMin(sub);
  auto [dHi, mHi] = scaleAndMin(im.add(sub, im.c(1)));

  // Eight quant words; byte t of word w holds values 4w + t (low nibble)
  // and 32 + 4w + t (high nibble) of the unit.
  Value quants = im.add(blockWord, im.add(im.c(4), im.mul(quarter, im.c(8))));
  Value unitOffset =
      im.add(im.mul(blk, im.c(kValues)), im.mul(quarter, im.c(64)));
  // Per x row: sum(q*x) and sum(x) of the low and of the high nibbles.
  auto words = scf::ForOp::create(b, loc, im.c(0), im.c(8), im.c(1),
                                  SmallVector<Value>(4 * rows, zero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(words.getBody());
    Value w = words.getInductionVar();
    SmallVector<Value> acc(words.getRegionIterArgs());
    Value word = sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                    im.add(quants, w));
    // x of the low nibbles at xWord, of the high ones 32 later (both
    // multiples of 4: K is a multiple of 256), for every row.
    SmallVector<SmallVector<Value, 4>> xsLo, xsHi;
    for (size_t r = 0; r < rows; ++r) {
      Value xWord =
          im.add(im.add(d.xRows[r], unitOffset), im.mul(w, im.c(4)));
      xsLo.push_back(loadX4(d, xWord));
      xsHi.push_back(loadX4(d, im.add(xWord, im.c(32))));
    }
    for (int64_t t = 0; t < 4; ++t) {
      Value qLo = wm.toF32(wm.mask(wm.shr(word, 8 * t), 0xf));
      Value qHi = wm.toF32(wm.mask(wm.shr(word, 8 * t + 4), 0xf));
      for (size_t r = 0; r < rows; ++r) {
        Value *a = &acc[4 * r];
        a[0] = ex::FmaOp::create(b, loc, qLo, xsLo[r][t], a[0]);
        a[1] = ex::AddOp::create(b, loc, a[1], xsLo[r][t]);
        a[2] = ex::FmaOp::create(b, loc, qHi, xsHi[r][t], a[2]);
        a[3] = ex::AddOp::create(b, loc, a[3], xsHi[r][t]);
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> totals;
  for (size_t r = 0; r < rows; ++r) {
    Value acc = loop.getRegionIterArgs()[r];
    acc = fma2(b, loc, dLo, words.getResult(4 * r), dHi,
               words.getResult(4 * r + 2), acc);
    Value mins = fma2(b, loc, mLo, words.getResult(4 * r + 1), mHi,
                      words.getResult(4 * r + 3), zero);
    totals.push_back(ex::SubOp::create(b, loc, acc, mins));
  }
  return finishUnits(loop, totals);
}

SmallVector<Value> GraphLowering::emitQ6_KDot(const DotOperands &d) {
  // Super-blocks of 210 bytes for 256 values: ql[128] (low 4 bits), qh[64]
  // (high 2 bits), int8 scales[16], f16 d; v = d * scale * (q - 32). Value
  // 128h + 32r + l (h < 2, r < 4, l < 32) takes the low (r < 2) or high
  // nibble of ql[64h + 32(r&1) + l], bits 2r of qh[32h + l], and scale
  // 8h + 2r + l/16. A lane's unit is 16 values sharing one scale (fixed h,
  // r, l/16): four words of ql and four of qh. Blocks start at even bytes,
  // so a word is read from the two aligned words around it.
  constexpr int64_t kValues = 256, kBytes = 210;
  Location loc = d.loc;
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  int64_t blocksPerRow = d.k / kValues;
  const size_t rows = d.xRows.size();
  Value rowBlocks = im.mul(d.n, im.c(blocksPerRow));
  OpBuilder::InsertionGuard guard(b);
  scf::ForOp loop = beginUnits(d, blocksPerRow * 16, rows);
  Value zero = loop.getInitArgs()[0];
  Value unit = loop.getInductionVar();
  Value blk = im.div(unit, 16), within = im.rem(unit, 16);
  Value half = im.div(within, 8), r = im.rem(im.div(within, 2), 4),
        sixteenth = im.rem(within, 2);
  Value base = im.mul(im.add(rowBlocks, blk), im.c(kBytes));
  // Reads the 32 bits at even byte offset `at`.
  Value misaligned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, im.rem(base, 4), im.c(0));
  auto wordAt = [&](Value at) -> Value {
    Value first = im.div(at, 4);
    Value w0 = sm::LoadOp::create(b, loc, b.getI32Type(), d.w, first);
    Value w1 = sm::LoadOp::create(b, loc, b.getI32Type(), d.w,
                                  im.add(first, im.c(1)));
    return wm.select(misaligned, wm.bitOr(wm.shr(w0, 16), wm.shl(w1, 16)), w0);
  };
  Value l0 = im.mul(sixteenth, im.c(16));
  Value qlAt = im.add(base, im.add(im.add(im.mul(half, im.c(64)),
                                          im.mul(im.rem(r, 2), im.c(32))),
                                   l0));
  Value qhAt = im.add(base, im.add(im.add(im.c(128), im.mul(half, im.c(32))),
                                   l0));
  Value scaleAt = im.add(base, im.add(im.add(im.c(192), im.mul(half, im.c(8))),
                                      im.add(im.mul(r, im.c(2)), sixteenth)));
  Value dWord = wm.bitOr(loadByte(b, loc, d.w, im.add(base, im.c(208))),
                         wm.shl(loadByte(b, loc, d.w,
                                         im.add(base, im.c(209))), 8));
  Value scaleByte = loadByte(b, loc, d.w, scaleAt);
  Value c24 = wm.c(24);
  Value scaleInt = arith::ShRSIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, scaleByte, c24), c24);
  Value superScale =
      ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), dWord, 0);
  Value scale = ex::MulOp::create(b, loc, superScale, wm.toF32(scaleInt));
  Value r32 = im.toI32(r);
  Value lowShift = arith::MulIOp::create(b, loc, im.toI32(im.div(r, 2)),
                                         wm.c(4));
  Value highShift = arith::MulIOp::create(b, loc, r32, wm.c(2));
  Value unitOffset = im.add(im.mul(blk, im.c(kValues)),
                            im.add(im.add(im.mul(half, im.c(128)),
                                          im.mul(r, im.c(32))),
                                   l0));
  auto words = scf::ForOp::create(b, loc, im.c(0), im.c(4), im.c(1),
                                  SmallVector<Value>(rows, zero));
  {
    OpBuilder::InsertionGuard innerGuard(b);
    b.setInsertionPointToStart(words.getBody());
    Value w = words.getInductionVar();
    Value offset = im.mul(w, im.c(4));
    Value lowBits = wm.shr(wordAt(im.add(qlAt, offset)), lowShift);
    Value highBits = wm.shr(wordAt(im.add(qhAt, offset)), highShift);
    SmallVector<Value> acc(words.getRegionIterArgs());
    SmallVector<SmallVector<Value, 4>> xs;
    for (size_t row = 0; row < rows; ++row)
      xs.push_back(
          loadX4(d, im.add(im.add(d.xRows[row], unitOffset), offset)));
    for (int64_t t = 0; t < 4; ++t) {
      Value q = wm.bitOr(wm.mask(wm.shr(lowBits, 8 * t), 0xf),
                         wm.shl(wm.mask(wm.shr(highBits, 8 * t), 3), 4));
      Value centered =
          wm.toF32(arith::SubIOp::create(b, loc, q, wm.c(32)));
      for (size_t row = 0; row < rows; ++row)
        acc[row] = ex::FmaOp::create(b, loc, centered, xs[row][t], acc[row]);
    }
    scf::YieldOp::create(b, loc, acc);
  }
  SmallVector<Value> totals;
  for (size_t row = 0; row < rows; ++row)
    totals.push_back(ex::FmaOp::create(b, loc, scale, words.getResult(row),
                                       loop.getRegionIterArgs()[row]));
  return finishUnits(loop, totals);
}

LogicalResult GraphLowering::lowerMatmul(Operation *op, Value x,
                                         ArrayRef<Value> weights,
                                         ArrayRef<Region *> epilogues,
                                         ValueRange inputs, Region *combine) {
  Location loc = op->getLoc();
  auto xType = cast<RankedTensorType>(x.getType());
  if (cir::isQuantized(xType.getElementType()))
    return op->emitOpError("with ")
           << xType.getElementType()
           << " activations is not supported by convert-circuit-to-shaderm "
              "yet";
  for (Value w : weights) {
    Type element = cast<RankedTensorType>(w.getType()).getElementType();
    if (isa<cir::I2_SType>(element))
      return op->emitOpError("with ")
             << element
             << " weights is not supported by convert-circuit-to-shaderm yet";
  }
  int64_t k = xType.getShape().back();
  int64_t m = xType.getNumElements() / k;
  int64_t lanes = kDotLanes;
  // With a known subgroup size that divides the workgroup, each subgroup
  // computes one output row and combines it with a subgroup reduction: no
  // shared memory and no barrier, and a workgroup does lanes/subgroup rows
  // (a barrier per row costs more than the row's work on CPU devices, and
  // a warp per row is the usual matvec on GPUs).
  int64_t rowsPerGroup = 1;
  if (subgroupSize > 1 && subgroupSize <= lanes && lanes % subgroupSize == 0)
    rowsPerGroup = lanes / subgroupSize;
  int64_t totalGroups = 0;
  for (Value w : weights)
    totalGroups += ceilDiv(cast<RankedTensorType>(w.getType()).getShape().front(),
                           rowsPerGroup);
  if (combine) // Both weights' rows of a group are computed together.
    totalGroups = ceilDiv(
        cast<RankedTensorType>(weights[0].getType()).getShape().front(),
        rowsPerGroup);
  // With a subgroup per weight row, each subgroup also takes several rows
  // of x at once (the tokens of a prompt chunk), so that a weight row is
  // read and decoded once per kXRows tokens: the matvec becomes a GEMM.
  int64_t xRows = rowsPerGroup > 1 ? std::min<int64_t>(m, kXRows) : 1;
  int64_t xBlocks = ceilDiv(m, xRows);
  if (totalGroups > kMaxGridDim || xBlocks > kMaxGridDim)
    return op->emitOpError("has more output rows than "
                           "convert-circuit-to-shaderm launches in one grid "
                           "dimension");

  KernelState ks;
  bind(ks, x, false);
  for (Value w : weights)
    bind(ks, w, false);
  for (Value input : inputs)
    bind(ks, input, false);
  for (Value result : op->getResults()) {
    allocFor(result);
    bind(ks, result, true);
  }
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value group = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  // Workgroup y: a block of xRows rows of x (activations of consecutive
  // tokens); the last block may be partial, its loads clamped to the last
  // row and its stores skipped.
  Value block = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  SmallVector<Value> xRowIds, ms;
  for (int64_t i = 0; i < xRows; ++i) {
    Value id = xRows == 1 ? block
                          : im.add(im.mul(block, im.c(xRows)), im.c(i));
    xRowIds.push_back(id);
    ms.push_back(xRows == 1
                     ? id
                     : Value(arith::MinUIOp::create(b, loc, id, im.c(m - 1))));
  }
  Value subgroup, laneInSubgroup;
  if (rowsPerGroup > 1) {
    subgroup = sm::SubgroupIdOp::create(b, loc, b.getIndexType());
    laneInSubgroup =
        im.toIndex(ex::LaneIdOp::create(b, loc, b.getI32Type()));
  }

  // Runs `body` for each x row of the block that exists.
  auto forEachRow = [&](llvm::function_ref<void(int64_t)> body) {
    for (int64_t i = 0; i < xRows; ++i) {
      OpBuilder::InsertionGuard guard(b);
      if (m % xRows != 0 && i >= m % xRows) {
        auto exists = scf::IfOp::create(b, loc, im.lt(xRowIds[i], im.c(m)));
        b.setInsertionPointToStart(exists.thenBlock());
      }
      body(i);
    }
  };
  // Stores output `n` of weight `i` for x row `mi` (its epilogue applied)
  // from the lane that holds the whole dot product.
  auto store = [&](size_t i, Value dot, Value mi, Value n, int64_t rows) {
    Value result = op->getResult(i);
    Value lane = im.add(im.mul(mi, im.c(rows)), n);
    Value stored = dot;
    Region *epilogue = epilogues[i];
    if (epilogue && !epilogue->empty()) {
      SmallVector<Value> args{im.toI32(lane), dot}, whole{nullptr, nullptr};
      auto resultType = cast<RankedTensorType>(result.getType());
      loadInputs(ks, epilogue, 2, inputs, resultType.getShape(), lane, args,
                 whole);
      stored = inlineBody(ks, *epilogue, args, whole)[0];
    }
    auto resultElement =
        cast<RankedTensorType>(result.getType()).getElementType();
    if (stored.getType() != resultElement)
      stored = ex::ConvertOp::create(b, loc, resultElement, stored, false);
    sm::StoreOp::create(b, loc, stored, arg(ks, result), lane);
  };

  if (combine) {
    // gated_matmul: the row's two dot products, then the combine body on
    // the lane that holds both.
    int64_t n = cast<RankedTensorType>(weights[0].getType()).getShape().front();
    Value r = group, leader = tid;
    SmallVector<Value> dots[2];
    if (rowsPerGroup > 1) {
      r = im.add(im.mul(group, im.c(rowsPerGroup)), subgroup);
      auto inRange = scf::IfOp::create(b, loc, im.lt(r, im.c(n)));
      b.setInsertionPointToStart(inRange.thenBlock());
      for (int k = 0; k < 2; ++k)
        for (Value partial : emitPartialDot(ks, x, weights[k], ms, r,
                                            laneInSubgroup, subgroupSize,
                                            loc))
          dots[k].push_back(ex::SubgroupReduceOp::create(
              b, loc, ex::ReduceKind::sum, partial));
      leader = laneInSubgroup;
    } else {
      for (int k = 0; k < 2; ++k)
        dots[k].push_back(emitWorkgroupReduce(
            emitPartialDot(ks, x, weights[k], ms, r, tid, lanes, loc)[0], tid,
            lanes, cir::ReduceKind::sum, loc));
    }
    auto first = scf::IfOp::create(b, loc, im.lt(leader, im.c(1)));
    b.setInsertionPointToStart(first.thenBlock());
    forEachRow([&](int64_t i) {
      Value lane = im.add(im.mul(xRowIds[i], im.c(n)), r);
      Value value = inlineBody(ks, *combine,
                               {im.toI32(lane), dots[0][i], dots[1][i]},
                               {nullptr, nullptr, nullptr})[0];
      Value result = op->getResult(0);
      auto resultElement =
          cast<RankedTensorType>(result.getType()).getElementType();
      if (value.getType() != resultElement)
        value = ex::ConvertOp::create(b, loc, resultElement, value, false);
      sm::StoreOp::create(b, loc, value, arg(ks, result), lane);
    });
    finishKernel(ks, {totalGroups, xBlocks, 1});
    return success();
  }

  // Weight i owns workgroups [offset, offset + groups_i) of the x
  // dimension; the condition is uniform over a workgroup, so barriers stay
  // legal.
  int64_t offset = 0;
  for (auto [i, w] : llvm::enumerate(weights)) {
    int64_t n = cast<RankedTensorType>(w.getType()).getShape().front();
    int64_t groups = ceilDiv(n, rowsPerGroup);
    OpBuilder::InsertionGuard guard(b);
    Value mine = group;
    if (weights.size() > 1) {
      Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                          group, im.c(offset));
      Value upper = im.lt(group, im.c(offset + groups));
      auto select = scf::IfOp::create(
          b, loc, arith::AndIOp::create(b, loc, lower, upper));
      b.setInsertionPointToStart(select.thenBlock());
      mine = arith::SubIOp::create(b, loc, group, im.c(offset));
    }
    offset += groups;
    if (rowsPerGroup > 1) {
      // The subgroup's row; a partial last workgroup skips the rows past
      // the end (uniform over each subgroup).
      Value r = im.add(im.mul(mine, im.c(rowsPerGroup)), subgroup);
      auto inRange = scf::IfOp::create(b, loc, im.lt(r, im.c(n)));
      b.setInsertionPointToStart(inRange.thenBlock());
      SmallVector<Value> dots;
      for (Value partial : emitPartialDot(ks, x, w, ms, r, laneInSubgroup,
                                          subgroupSize, loc))
        dots.push_back(ex::SubgroupReduceOp::create(
            b, loc, ex::ReduceKind::sum, partial));
      auto first = scf::IfOp::create(b, loc, im.lt(laneInSubgroup, im.c(1)));
      b.setInsertionPointToStart(first.thenBlock());
      forEachRow([&](int64_t k) { store(i, dots[k], xRowIds[k], r, n); });
      continue;
    }
    Value partial = emitPartialDot(ks, x, w, ms, mine, tid, lanes, loc)[0];
    Value dot = emitWorkgroupReduce(partial, tid, lanes, cir::ReduceKind::sum,
                                    loc);
    auto first = scf::IfOp::create(b, loc, im.lt(tid, im.c(1)));
    b.setInsertionPointToStart(first.thenBlock());
    store(i, dot, xRowIds[0], mine, n);
  }
  finishKernel(ks, {totalGroups, xBlocks, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// Reading one quantized element (gathers from an embedding table)
//===----------------------------------------------------------------------===//

Value GraphLowering::emitDequantizeElement(Value words, Type element,
                                           Value index, Location loc) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  auto halfAt = [&](Value byte) -> Value {
    Value lo = loadByte(b, loc, words, byte);
    Value hi = loadByte(b, loc, words, im.add(byte, im.c(1)));
    return ex::UnpackF16x2Op::create(b, loc, b.getF32Type(),
                                     wm.bitOr(lo, wm.shl(hi, 8)), 0);
  };
  auto signExtend = [&](Value byte) -> Value {
    Value c24 = wm.c(24);
    return arith::ShRSIOp::create(
        b, loc, arith::ShLIOp::create(b, loc, byte, c24), c24);
  };
  if (isa<cir::Q8_0Type>(element)) {
    // 34-byte blocks: f16 d, then 32 int8 values.
    Value base = im.mul(im.div(index, 32), im.c(34));
    Value q = signExtend(
        loadByte(b, loc, words, im.add(base, im.add(im.c(2), im.rem(index, 32)))));
    return ex::MulOp::create(b, loc, halfAt(base), wm.toF32(q));
  }
  Value within = im.rem(index, 256);
  if (isa<cir::Q4_KType>(element)) {
    // 144-byte blocks: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins,
    // 128 bytes of nibbles; value 64c + p: byte 16 + 32c + p%32, the low
    // nibble for p < 32, sub-block j = 2c + (p >= 32).
    Value base = im.mul(im.div(index, 256), im.c(144));
    Value c = im.div(within, 64), p = im.rem(within, 64);
    Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, p,
                                       im.c(32));
    Value j = im.add(im.mul(c, im.c(2)),
                     arith::SelectOp::create(b, loc, high, im.c(1), im.c(0)));
    Value byte = loadByte(
        b, loc, words,
        im.add(base, im.add(im.add(im.c(16), im.mul(c, im.c(32))),
                            im.rem(p, 32))));
    Value q = wm.select(high, wm.shr(byte, 4), wm.mask(byte, 0xf));
    auto scaleByte = [&](Value k) {
      return loadByte(b, loc, words, im.add(base, im.add(im.c(4), k)));
    };
    Value low = im.lt(j, im.c(4));
    // j < 4: s[j] & 63, s[j+4] & 63; else the nibbles of s[j+4] with the
    // top bits of s[j-4] and s[j] (j taken mod 4 for the in-range reads).
    Value j4 = im.rem(j, 4);
    Value sj = scaleByte(j), sj4 = scaleByte(im.add(j4, im.c(4))),
          sjm4 = scaleByte(j4), sj8 = scaleByte(im.add(j4, im.c(8)));
    Value sc = wm.select(low, wm.mask(sj, 63),
                         wm.bitOr(wm.mask(sj8, 0xf), wm.shl(wm.shr(sjm4, 6), 4)));
    Value mn = wm.select(low, wm.mask(sj4, 63),
                         wm.bitOr(wm.shr(sj8, 4), wm.shl(wm.shr(sj4, 6), 4)));
    Value d = halfAt(base), dmin = halfAt(im.add(base, im.c(2)));
    Value scaled = ex::MulOp::create(
        b, loc, ex::MulOp::create(b, loc, d, wm.toF32(sc)), wm.toF32(q));
    return ex::SubOp::create(
        b, loc, scaled, ex::MulOp::create(b, loc, dmin, wm.toF32(mn)));
  }
  // q6_k: 210-byte blocks: ql[128], qh[64], int8 scales[16], f16 d; value
  // 128h + 32r + l: the low (r < 2) or high nibble of ql[64h + 32(r&1) + l],
  // bits 2r of qh[32h + l], scale 8h + 2r + l/16; v = d * scale * (q - 32).
  Value base = im.mul(im.div(index, 256), im.c(210));
  Value h = im.div(within, 128), r = im.rem(im.div(within, 32), 4),
        l = im.rem(within, 32);
  Value ql = loadByte(
      b, loc, words,
      im.add(base, im.add(im.add(im.mul(h, im.c(64)),
                                 im.mul(im.rem(r, 2), im.c(32))),
                          l)));
  Value qh = loadByte(
      b, loc, words,
      im.add(base, im.add(im.add(im.c(128), im.mul(h, im.c(32))), l)));
  Value nibble = wm.select(im.lt(r, im.c(2)), wm.mask(ql, 0xf), wm.shr(ql, 4));
  Value twoBits = wm.mask(
      wm.shr(qh, arith::MulIOp::create(b, loc, im.toI32(r), wm.c(2))), 3);
  Value q = arith::SubIOp::create(b, loc, wm.bitOr(nibble, wm.shl(twoBits, 4)),
                                  wm.c(32));
  Value scale = signExtend(loadByte(
      b, loc, words,
      im.add(base, im.add(im.add(im.c(192), im.mul(h, im.c(8))),
                          im.add(im.mul(r, im.c(2)), im.div(l, 16))))));
  Value d = halfAt(im.add(base, im.c(208)));
  return ex::MulOp::create(
      b, loc, ex::MulOp::create(b, loc, d, wm.toF32(scale)), wm.toF32(q));
}

//===----------------------------------------------------------------------===//
// Decode attention
//===----------------------------------------------------------------------===//

/// Positions per tile of the attention kernel, and its lanes. The reference
/// interpreter walks the positions in tiles of the same size.
static constexpr int64_t kAttentionTile = 64;

/// One workgroup per query head. Each tile of positions: every lane scores
/// one position (a dot product over the head dimension) into shared
/// memory; after a barrier every lane reads the tile's scores in index
/// order to update the running maximum and sum (the same values in every
/// lane), rescales its accumulators and adds the tile's weighted V rows for
/// the dimensions it owns (d = lane, lane + 64, ...). Only positions up to
/// `pos` are read.
LogicalResult GraphLowering::lowerAttention(cir::AttentionOp op) {
  Location loc = op.getLoc();
  const int64_t heads = op.getHeads(), dim = op.getHeadDim(),
                group = heads / op.getKvHeads();
  const int64_t rowStride = op.getKvHeads() * dim;
  const int64_t positions = numElements(op.getKCache().getType()) / rowStride;
  const int64_t lanes = kAttentionTile;
  const int64_t owned = ceilDiv(dim, lanes); // dimensions per lane
  const int64_t rows = numElements(op.getQ().getType()) / (heads * dim);
  if (failed(checkRows(op, heads)) || failed(checkRows(op, rows)))
    return failure();

  KernelState ks;
  for (Value input : {op.getQ(), op.getKCache(), op.getVCache(), op.getPos()})
    bind(ks, input, false);
  allocFor(op.getResult());
  bind(ks, op.getResult(), true);
  createKernel(ks, op, lanes);
  IndexMath im(b, loc);
  Type f32 = b.getF32Type();
  auto constant = [&](double v) {
    return ex::ConstantOp::create(b, loc, b.getF32FloatAttr(v)).getResult();
  };
  auto fmax = [&](Value x, Value y) {
    return ex::MaxOp::create(b, loc, x, y).getResult();
  };
  auto fadd = [&](Value x, Value y) {
    return ex::AddOp::create(b, loc, x, y).getResult();
  };
  auto fmul = [&](Value x, Value y) {
    return ex::MulOp::create(b, loc, x, y).getResult();
  };
  auto fexp = [&](Value x) { return ex::ExpOp::create(b, loc, x).getResult(); };
  Value q = arg(ks, op.getQ()), kCache = arg(ks, op.getKCache()),
        vCache = arg(ks, op.getVCache()), out = arg(ks, op.getResult());

  Value scores = sm::SharedAllocOp::create(
      b, loc, sm::SharedType::get(b.getContext(), lanes, f32));
  Value tid = sm::LocalIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value head = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::x);
  Value qRow = sm::WorkgroupIdOp::create(b, loc, b.getIndexType(), sm::Dim::y);
  Value qBase = im.mul(im.add(im.mul(qRow, im.c(heads)), head), im.c(dim));
  Value kvBase = im.mul(im.div(head, group), im.c(dim));
  // The last position read: pos + row, clamped to the cache.
  Value pos = loadElement(arg(ks, op.getPos()), im.c(0), loc);
  pos = arith::AddIOp::create(b, loc, pos,
                              arith::IndexCastOp::create(
                                  b, loc, b.getI32Type(), qRow));
  Value i32Zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  Value i32Last =
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), positions - 1);
  pos = arith::MaxSIOp::create(b, loc, pos, i32Zero);
  pos = arith::MinSIOp::create(b, loc, pos, i32Last);
  Value count = im.add(im.toIndex(pos), im.c(1));
  // This lane's dimensions, clamped in range for the loads (the extra
  // lanes of a head dimension that is not a multiple of 64 compute a value
  // they never store).
  SmallVector<Value> dims;
  for (int64_t j = 0; j < owned; ++j)
    dims.push_back(arith::MinUIOp::create(b, loc, im.add(tid, im.c(j * lanes)),
                                          im.c(dim - 1)));

  Value lowest = constant(-std::numeric_limits<float>::max());
  SmallVector<Value> init{lowest, constant(0.0)};
  for (int64_t j = 0; j < owned; ++j)
    init.push_back(constant(0.0));
  auto tiles = scf::ForOp::create(b, loc, im.c(0), count, im.c(lanes), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value tile = tiles.getInductionVar();
    ValueRange carried = tiles.getRegionIterArgs();
    Value t = im.add(tile, tid);
    // Score of position t (the lowest float past the end: it never wins
    // the maximum and is never summed).
    auto scored = scf::IfOp::create(b, loc, TypeRange{f32}, im.lt(t, count),
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(scored.thenBlock());
      Value kRow = im.add(im.mul(t, im.c(rowStride)), kvBase);
      auto dot = scf::ForOp::create(b, loc, im.c(0), im.c(dim), im.c(1),
                                    ValueRange{constant(0.0)});
      {
        OpBuilder::InsertionGuard body(b);
        b.setInsertionPointToStart(dot.getBody());
        Value d = dot.getInductionVar();
        Value qv = loadElement(q, im.add(qBase, d), loc);
        Value kv = loadElement(kCache, im.add(kRow, d), loc);
        scf::YieldOp::create(
            b, loc, fadd(dot.getRegionIterArgs()[0], fmul(qv, kv)));
      }
      Value scale = constant(op.getScale().convertToFloat());
      scf::YieldOp::create(b, loc, fmul(dot.getResult(0), scale));
      b.setInsertionPointToStart(scored.elseBlock());
      scf::YieldOp::create(b, loc, lowest);
    }
    sm::StoreOp::create(b, loc, scored.getResult(0), scores, tid);
    sm::BarrierOp::create(b, loc);

    // Positions in this tile: min(64, count - tile) >= 1.
    Value n = arith::MinUIOp::create(b, loc, im.c(lanes),
                                     arith::SubIOp::create(b, loc, count, tile));
    auto maxLoop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1),
                                      ValueRange{lowest});
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value s = sm::LoadOp::create(b, loc, f32, scores,
                                   maxLoop.getInductionVar());
      scf::YieldOp::create(b, loc, fmax(maxLoop.getRegionIterArgs()[0], s));
    }
    Value tileMax = guardZeroTrip(b, maxLoop)[0];
    Value mNew = fmax(carried[0], tileMax);
    Value correction = fexp(ex::SubOp::create(b, loc, carried[0], mNew));

    SmallVector<Value> sums{constant(0.0)};
    for (int64_t j = 0; j < owned; ++j)
      sums.push_back(fmul(carried[2 + j], correction));
    auto accLoop = scf::ForOp::create(b, loc, im.c(0), n, im.c(1), sums);
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(accLoop.getBody());
      Value i = accLoop.getInductionVar();
      ValueRange acc = accLoop.getRegionIterArgs();
      Value s = sm::LoadOp::create(b, loc, f32, scores, i);
      Value p = fexp(ex::SubOp::create(b, loc, s, mNew));
      SmallVector<Value> next{fadd(acc[0], p)};
      Value vRow = im.add(im.mul(im.add(tile, i), im.c(rowStride)), kvBase);
      for (int64_t j = 0; j < owned; ++j) {
        Value v = loadElement(vCache, im.add(vRow, dims[j]), loc);
        next.push_back(fadd(acc[1 + j], fmul(p, v)));
      }
      scf::YieldOp::create(b, loc, next);
    }
    ValueRange accumulated = guardZeroTrip(b, accLoop);
    // Every lane has read the tile's scores before the next tile writes
    // them.
    sm::BarrierOp::create(b, loc);
    SmallVector<Value> yielded{
        mNew, fadd(fmul(carried[1], correction), accumulated[0])};
    for (int64_t j = 0; j < owned; ++j)
      yielded.push_back(accumulated[1 + j]);
    scf::YieldOp::create(b, loc, yielded);
  }
  ValueRange final = guardZeroTrip(b, tiles);
  for (int64_t j = 0; j < owned; ++j) {
    Value d = im.add(tid, im.c(j * lanes));
    auto inRange = scf::IfOp::create(b, loc, im.lt(d, im.c(dim)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inRange.thenBlock());
    Value value = ex::DivOp::create(b, loc, final[2 + j], final[1]);
    sm::StoreOp::create(b, loc, value, out, im.add(qBase, d));
  }
  finishKernel(ks, {heads, rows, 1});
  return success();
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

LogicalResult GraphLowering::run() {
  Location loc = graph.getLoc();
  SmallVector<Type> argTypes, resultTypes;
  for (Type t : graph.getArgumentTypes())
    argTypes.push_back(bufferTypeFor(cast<RankedTensorType>(t), false));
  for (Type t : graph.getResultTypes())
    resultTypes.push_back(bufferTypeFor(cast<RankedTensorType>(t), false));
  b.setInsertionPoint(graph);
  schedule = sm::ScheduleOp::create(b, loc, graph.getSymName(),
                                    b.getFunctionType(argTypes, resultTypes),
                                    ArrayAttr(), ArrayAttr());
  // Argument names (circuit.name) and other attributes carry over.
  if (ArrayAttr argAttrs = graph.getArgAttrsAttr())
    schedule.setArgAttrsAttr(argAttrs);
  if (ArrayAttr resAttrs = graph.getResAttrsAttr())
    schedule.setResAttrsAttr(resAttrs);
  Block *entry = new Block();
  schedule.getBody().push_back(entry);
  Block &body = graph.getBody().front();
  for (auto [arg, type] : llvm::zip(body.getArguments(), argTypes))
    bufferOf[arg] = entry->addArgument(type, arg.getLoc());
  b.setInsertionPointToEnd(entry);
  auto output = sm::OutputOp::create(b, loc, ValueRange{});

  for (Operation &op : body.without_terminator()) {
    LogicalResult status =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](cir::ZerosOp z) { return lowerZeros(z); })
            .Case<cir::MapOp, cir::GatherOp, cir::ScatterOp,
                  cir::ScatterMultiOp>(
                [&](Operation *e) { return lowerElementwise(e); })
            .Case([&](cir::ReduceOp r) {
              return lowerReduce(r, r.getKind(), r.getInputs(),
                                 r.getPrologue(), nullptr, nullptr);
            })
            .Case([&](cir::ReduceEpilogueOp r) {
              return lowerReduce(r, r.getKind(), r.getInputs(),
                                 r.getPrologue(), &r.getEpilogue(), nullptr);
            })
            .Case([&](cir::ReduceScatterEpilogueOp r) {
              return lowerReduce(r, r.getKind(), r.getInputs(),
                                 r.getPrologue(), &r.getEpilogue(),
                                 r.getDest());
            })
            .Case([&](cir::QuantizeOp q) { return lowerQuantize(q); })
            .Case([&](cir::AttentionOp a) { return lowerAttention(a); })
            .Case([&](cir::MatmulOp mm) {
              Region *epilogue = &mm.getEpilogue();
              return lowerMatmul(mm, mm.getX(), {mm.getWeight()}, {epilogue},
                                 mm.getInputs());
            })
            .Case([&](cir::GatedMatmulOp gm) {
              return lowerMatmul(gm, gm.getX(), {gm.getGate(), gm.getUp()},
                                 {nullptr, nullptr}, ValueRange{},
                                 &gm.getCombine());
            })
            .Case([&](cir::MultiMatmulOp mm) {
              SmallVector<Value> weights(mm.getWeights());
              SmallVector<Region *> epilogues;
              for (Region &r : mm.getEpilogues())
                epilogues.push_back(&r);
              return lowerMatmul(mm, mm.getX(), weights, epilogues,
                                 ValueRange{});
            })
            .Default([](Operation *other) {
              return other->emitOpError(
                  "is not supported by convert-circuit-to-shaderm yet");
            });
    if (failed(status))
      return failure();
  }

  SmallVector<Value> results;
  for (Value v : cast<cir::OutputOp>(body.getTerminator()).getResults())
    results.push_back(bufferOf.lookup(v));
  output->setOperands(results);
  graph.erase();
  return success();
}

namespace {
struct ConvertCircuitToShaderMPass
    : hesper::impl::ConvertCircuitToShaderMPassBase<
          ConvertCircuitToShaderMPass> {
  using ConvertCircuitToShaderMPassBase::ConvertCircuitToShaderMPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cir::GraphOp> graphs(module.getOps<cir::GraphOp>());
    for (cir::GraphOp graph : graphs)
      if (failed(GraphLowering(module, graph, subgroupSize).run()))
        return signalPassFailure();
  }
};
} // namespace
