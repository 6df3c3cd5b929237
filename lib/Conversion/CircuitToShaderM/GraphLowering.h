//===- GraphLowering.h - convert-circuit-to-shaderm internals -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/CircuitToShaderM: the GraphLowering class that
// turns one circuit.graph into kernels and a schedule, and the helpers its
// parts share. Each part lives in its own file:
//
//   CircuitToShaderM.cpp  the pass, the graph walk, kernel plumbing
//   Elementwise.cpp       zeros, map, gather, scatter, scatter_multi,
//                         scatter_add
//   Reductions.cpp        reductions, their epilogues, quantized stores
//   Matmul.cpp            matmul, multi_matmul, gated_matmul, block decoding
//   BlockDots.cpp         one-lane quantized dot products as vector<32> ops
//   Ternary.cpp           tq1_0, tq2_0, i2_s dot products and decoding
//   WeightFormats.cpp     q4_0 and bf16 dot products and decoding
//   Attention.cpp         circuit.attention
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_CONVERSION_CIRCUITTOSHADERM_GRAPHLOWERING_H
#define HESPER_LIB_CONVERSION_CIRCUITTOSHADERM_GRAPHLOWERING_H

#include "Hesper/Conversion/Passes.h"
#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"
#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <limits>

namespace hesper::lowering {

using namespace mlir;
namespace cir = hesper::circuit;
namespace ex = hesper::exp;
namespace sm = hesper::shaderm;

/// Lanes per workgroup of the one-lane-per-element kernels.
inline constexpr int64_t kElementwiseLanes = 256;
/// Lanes per workgroup of a row reduction (at most; rows shorter than this
/// get the next power of two at or above their length).
inline constexpr int64_t kReduceLanes = 256;
/// Lanes per workgroup of a dot product (matmul output element).
inline constexpr int64_t kDotLanes = 64;
/// Workgroups at least this large reduce within subgroups first (64: a
/// whole number of subgroups on every common device, 8 to 64 lanes).
inline constexpr int64_t kSubgroupReduceLanes = 64;
/// Positions per tile of the attention kernel, and its lanes on GPU targets
/// (the `lanes` knob changes both). The reference interpreter walks the
/// positions in tiles of the same size.
inline constexpr int64_t kAttentionTile = 64;
/// Tiles of positions one workgroup of GPU decode attention takes: a cache
/// of more positions is split into ranges of this many tiles, scored in
/// parallel and combined by a second kernel (flash-decoding).
inline constexpr int64_t kAttentionSplitTiles = 2;
/// Positions of a tile a GPU decode-attention lane adds V rows of per turn
/// of its unrolled loop (the sums keep their order).
inline constexpr int64_t kAttentionVUnroll = 8;
/// The workgroups a prompt chunk's attention aims at: it splits the cache
/// into ranges only until its grid has this many (two per SM of an H100).
inline constexpr int64_t kChunkAttentionWorkgroups = 256;
/// The most 32-value vectors of a head's accumulators the CPU target's
/// attention keeps in registers over a tile's positions (a head of up to
/// 256 dimensions: 16 AVX-512 registers).
inline constexpr int64_t kMaxAttentionChunks = 8;
/// The largest workgroup count of one grid dimension every backend accepts.
inline constexpr int64_t kMaxGridDim = 65535;
/// Words of a q8_1 block (circuit.quantize's activations): f16 d and
/// d * sum(q) in the first, 32 signed bytes in the other eight.
inline constexpr int64_t kQ8_1Words = 9;
/// Rows of x (tokens) one subgroup multiplies with each weight row it reads.
inline constexpr int64_t kXRows = 8;
/// Value words of a q8_0/q4_0/iq4_nl block each GPU lane takes at a time
/// (the `block_words` knob's default): several lanes share a block, so
/// that a subgroup's loads fall on few cache lines (emitHalfScaledBlockDot).
inline constexpr int64_t kBlockWords = 2;
/// The same for the 8 quant words of a q4_k/q5_k quarter super-block
/// (eight lanes share a super-block: fewer lanes per block than q8_0's
/// four, since each unit also reads the block's scales).
inline constexpr int64_t kQ4_KBlockWords = 4;
/// Weight rows of the CPU target's integer tile (emitByteTileDot):
/// four 512-bit vectors of four rows.
inline constexpr int64_t kByteTileRows = 16;
/// The tiled GEMM of prompt chunks on GPU targets (emitTiledMatmul): a
/// workgroup of kGemmLanes lanes computes kGemmTile rows of x by kGemmTile
/// weight rows, over slices of kGemmSlice values of K staged in workgroup
/// memory; it is taken from kGemmMinRows rows of x on.
inline constexpr int64_t kGemmLanes = 256;
inline constexpr int64_t kGemmTile = 64;
inline constexpr int64_t kGemmSlice = 16;
/// The most workgroup memory a tiled GEMM's tiles take: what CUDA gives a
/// kernel's static arrays (48 KiB) without opting in to more.
inline constexpr int64_t kGemmMaxTileBytes = 48 * 1024;
inline constexpr int64_t kGemmMinRows = 16;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// How the kernels of one target are shaped. GPUs get the lane counts
/// above. The CPU target gets one lane per workgroup: a workgroup is the
/// unit of work one thread takes (an element, a row, a head), its lanes'
/// strided loops become plain loops over the row that LLVM vectorizes, and
/// nothing needs shared memory or a barrier to combine lanes.
struct KernelShape {
  int64_t elementwiseLanes = kElementwiseLanes;
  int64_t reduceLanes = kReduceLanes;
  /// The fewest lanes of a row reduction.
  int64_t minReduceLanes = 32;
  int64_t dotLanes = kDotLanes;
  /// Lanes of a GPU attention kernel, which are also the positions of its
  /// tiles.
  int64_t attentionLanes = kAttentionTile;
  /// Workgroups of at least this many lanes reduce within subgroups first.
  int64_t subgroupReduceLanes = kSubgroupReduceLanes;
  /// Rows of x a matmul workgroup takes at once when it can; 0: the
  /// target's choice (kXRows on GPUs; the CPU target's register tile).
  int64_t xRows = 0;
  /// Unroll factor of a reduction's per-lane loop over its row (the order
  /// of the sums is unchanged, so are the results).
  int64_t unroll = 1;
  /// Weight rows (output columns) each subgroup, workgroup or CPU lane of
  /// a matmul computes: with `xRows`, the tile of the result it owns; 0:
  /// the target's choice (1 on GPUs and for one row of x).
  int64_t cols = 0;
  /// Elements per load of a plain (f32, f16) dot product on GPU targets;
  /// 0: 4 where the row length allows.
  int64_t dotVector = 0;
  /// Value words of a q8_0/q4_0/iq4_nl block, or of a q4_k/q5_k quarter
  /// super-block, each lane of a GPU dot product takes at a time (1, 2, 4,
  /// 8: the `block_words` knob; a block of fewer words is taken whole); 0:
  /// kBlockWords, kQ4_KBlockWords. The CPU target's lane takes whole
  /// blocks.
  int64_t blockWords = 0;
  /// Consecutive elements each lane of a GPU map kernel takes, with one
  /// vector load per input and one vector store (the `vector_width` knob;
  /// 1: an element per lane).
  int64_t mapVector = 1;
  /// CPU target: the most host threads a kernel's workgroups are spread
  /// over (0: all of the device's), and the vector width in bits LLVM's
  /// vectorizers prefer for it (0: the target's own choice).
  int64_t hostThreads = 0;
  int64_t vectorBits = 0;
  int64_t maxGridDim = kMaxGridDim;
  /// Lanes per subgroup, 0 when unknown.
  int64_t subgroupSize = 0;
  bool singleLane = false;
  /// Prompt-chunk matmuls (the tiled GEMM) multiply f16 tiles with the
  /// subgroup's matrix ops (shaderm.matrix_mma) instead of lane FMAs.
  bool matrixUnits = false;
  /// Runs of elements are read with one vector load where only the load
  /// width changes (attention's K rows); off for SPIR-V, whose kernels
  /// load a vector one element at a time (the option `wide-loads`).
  bool wideLoads = true;
  /// Rows of x of a tiled GEMM's workgroup (the `gemm_rows` knob: 64 or
  /// 128; 0: kGemmTile). With 128 a lane holds 8 x rows by 4 weight rows.
  /// Matrix units keep kGemmTile.
  int64_t gemmRows = 0;
  /// The tiled GEMM keeps two copies of its workgroup tiles (one slice's
  /// loads overlap the previous slice's products); off for SPIR-V (the
  /// option `double-buffer`).
  bool doubleBuffer = true;
  /// Values of K per staged slice of the tiled GEMM (16 or 32, the option
  /// `gemm-slice`; 0: kGemmSlice). A kernel whose tiles would then pass
  /// kGemmMaxTileBytes takes kGemmSlice.
  int64_t gemmSlice = 0;
  /// A deliberately wrong lowering (the pass's `mutant` option, for the
  /// verifier's mutation tests); empty in every real compile.
  std::string mutant;

  static KernelShape gpu(int64_t subgroupSize) {
    KernelShape shape;
    shape.subgroupSize = subgroupSize;
    return shape;
  }
  /// This shape with the knobs of one op (its `circuit.knobs` attribute,
  /// checked by the tuning library before it is set): `lanes` sets the
  /// workgroup size of whichever kernel the op becomes, `rows` the rows of
  /// x per matmul workgroup, `subgroup_reduce` whether reductions combine
  /// within subgroups first, `unroll` the unrolling of a reduction's row
  /// loop or of a dot product's loop, `cols` the weight rows per matmul
  /// lane or subgroup, `vector_width` the f32 elements of a vector (GPU:
  /// per load of a plain dot product; CPU: the vectorizer's width),
  /// `block_words` the words of a q8_0/q4_0 block a GPU lane takes,
  /// `gemm_rows` the rows of x of a tiled GEMM's workgroup, `threads` the
  /// host threads of a CPU kernel. A single-lane target keeps one lane.
  KernelShape withKnobs(DictionaryAttr knobs) const {
    KernelShape shape = *this;
    if (!knobs)
      return shape;
    if (auto lanes = knobs.getAs<IntegerAttr>("lanes"); lanes && !singleLane) {
      int64_t n = lanes.getInt();
      shape.elementwiseLanes = shape.reduceLanes = shape.dotLanes =
          shape.attentionLanes = n;
      shape.minReduceLanes = std::min(shape.minReduceLanes, n);
    }
    if (auto rows = knobs.getAs<IntegerAttr>("rows"))
      shape.xRows = rows.getInt();
    if (auto unroll = knobs.getAs<IntegerAttr>("unroll"))
      shape.unroll = unroll.getInt();
    if (auto cols = knobs.getAs<IntegerAttr>("cols"))
      shape.cols = cols.getInt();
    if (auto width = knobs.getAs<IntegerAttr>("vector_width")) {
      if (singleLane) {
        shape.vectorBits = 32 * width.getInt();
      } else {
        shape.dotVector = width.getInt();
        shape.mapVector = width.getInt();
      }
    }
    if (auto words = knobs.getAs<IntegerAttr>("block_words"))
      shape.blockWords = words.getInt();
    if (auto rows = knobs.getAs<IntegerAttr>("gemm_rows"))
      shape.gemmRows = rows.getInt();
    if (auto threads = knobs.getAs<IntegerAttr>("threads"))
      shape.hostThreads = threads.getInt();
    if (auto sub = knobs.getAs<BoolAttr>("subgroup_reduce"))
      shape.subgroupReduceLanes =
          sub.getValue() ? std::max<int64_t>(subgroupSize, 1)
                         : std::numeric_limits<int64_t>::max();
    return shape;
  }

  static KernelShape single() {
    KernelShape shape;
    shape.elementwiseLanes = shape.reduceLanes = shape.minReduceLanes =
        shape.dotLanes = shape.subgroupSize = 1;
    shape.maxGridDim = std::numeric_limits<int32_t>::max();
    shape.singleLane = true;
    return shape;
  }
};

/// Rows of x of a tiled GEMM's workgroup: the `gemm_rows` knob's, or
/// kGemmTile (always with matrix units, whose warps tile 64 rows).
inline int64_t gemmXRows(const KernelShape &shape) {
  return shape.matrixUnits || !shape.gemmRows ? kGemmTile : shape.gemmRows;
}

inline int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

inline int64_t numElements(Type type) {
  return cast<RankedTensorType>(type).getNumElements();
}

/// The buffer a tensor lives in: its elements, or for quantized tensors the
/// 32-bit words holding its blocks.
inline sm::BufferType bufferTypeFor(RankedTensorType type, bool readOnly) {
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

inline Value zeroOf(OpBuilder &b, Location loc, Type element) {
  if (isa<FloatType>(element))
    return ex::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  return ex::ConstantOp::create(b, loc, b.getIntegerAttr(element, 0));
}

/// One workgroup per row: the rows must fit in one grid dimension.
inline LogicalResult checkRows(Operation *op, int64_t rows,
                               const KernelShape &shape) {
  if (rows <= shape.maxGridDim)
    return success();
  return op->emitOpError("has ")
         << rows << " rows, more than convert-circuit-to-shaderm launches "
         << "in one grid dimension";
}

inline bool hasLaneOps(Region &region) {
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
inline ValueRange guardZeroTrip(OpBuilder &b, scf::ForOp loop) {
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

/// Unrolls `loop` by `factor` (the same iterations in the same order), then
/// guards the unrolled loop and its remainder loop against zero trips the
/// way guardZeroTrip does: either may run zero times for some lanes.
inline LogicalResult unrollGuarded(OpBuilder &b, scf::ForOp loop,
                                   int64_t factor) {
  if (factor <= 1)
    return success();
  FailureOr<UnrolledLoopInfo> unrolled =
      loopUnrollByFactor(loop, static_cast<uint64_t>(factor));
  if (failed(unrolled))
    return failure();
  for (std::optional<scf::ForOp> part :
       {unrolled->mainLoopOp, unrolled->epilogueLoopOp}) {
    if (!part || part->getNumResults() == 0)
      continue;
    SmallVector<Value> results(part->getResults());
    ValueRange guarded = guardZeroTrip(b, *part);
    Operation *yield = guarded.front().getDefiningOp<scf::IfOp>()
                           .thenBlock()->getTerminator();
    for (auto [old, now] : llvm::zip(results, guarded))
      old.replaceUsesWithIf(now, [&](OpOperand &use) {
        return use.getOwner() != yield;
      });
  }
  return success();
}


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
  GraphLowering(ModuleOp module, cir::GraphOp graph, KernelShape shape)
      : module(module), graph(graph), b(graph.getContext()), shape(shape),
        subgroupSize(shape.subgroupSize) {}

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

  /// A schedule buffer of `length` `element`s that no graph tensor names:
  /// one kernel's partial results for the next.
  Value allocScratch(int64_t length, Type element, Location loc) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(schedule.getBody().front().getTerminator());
    auto type = sm::BufferType::get(b.getContext(), length, element,
                                    sm::Access::read_write);
    return sm::AllocOp::create(b, loc, type);
  }
  /// Binds schedule buffer `buffer` itself (allocScratch's) to the kernel;
  /// its kernel argument is then `ks.argOf.lookup(buffer)`.
  void bindBuffer(KernelState &ks, Value buffer, bool written) {
    ks.bindings[buffer] |= written;
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

  /// Element `index` (flat, in values) of a block-stored buffer (every
  /// quantized weight format, and bf16) of
  /// 32-bit words, dequantized to f32 (ggml's formulas).
  Value emitDequantizeElement(Value words, Type element, Value index,
                              Location loc);
  /// Elements `index` .. `index` + 3 (`index` a multiple of 4) of the same,
  /// each value computed as emitDequantizeElement computes it (the same
  /// bits), with the loads and scales of their block shared: q8_0, q4_k
  /// and q5_k read one word of values; other formats read per element.
  SmallVector<Value, 4> emitDequantizeRun(Value words, Type element,
                                          Value index, Location loc);
  /// The same for tq1_0 and tq2_0 (Ternary.cpp).
  Value emitDequantizeTernary(Value words, Type element, Value index,
                              Location loc);
  /// The same for q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k and
  /// bf16 (WeightFormats.cpp).
  Value emitDequantizeQ4_0OrBF16(Value words, Type element, Value index,
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
  /// `n` consecutive values of a float buffer from `index` on, as f32
  /// (loadRun's loads and its alignment promise).
  SmallVector<Value> loadF32s(Value buffer, Value index, int64_t n,
                              Location loc);

  LogicalResult lowerZeros(cir::ZerosOp op);
  LogicalResult lowerElementwise(Operation *op);
  /// A map whose lanes take `width` consecutive elements each.
  LogicalResult lowerVectorMap(cir::MapOp map, int64_t width);
  LogicalResult lowerScatterAdd(cir::ScatterAddOp op);
  LogicalResult lowerReduce(Operation *op, cir::ReduceKind kind,
                            ValueRange inputs, Region &prologue,
                            Region *epilogue, Value dest);
  LogicalResult lowerQuantize(cir::QuantizeOp op);
  LogicalResult lowerWriteRows(cir::WriteRowsOp op);
  LogicalResult lowerAttention(cir::AttentionOp op);
  /// A prompt chunk's attention on a GPU target: a workgroup per head and
  /// tile of query rows (flash attention; Attention.cpp).
  void emitChunkAttention(cir::AttentionOp op, int64_t rows, int64_t lanes,
                          int64_t splits, int64_t splitPositions,
                          Value partials);
  /// The kernel that combines attention's ranges (`splits` of them per
  /// head and row, in `partials`) in index order.
  void emitAttentionCombine(cir::AttentionOp op, Value partials, int64_t rows,
                            int64_t splits, int64_t lanes);
  /// What both attention kernels work with: the op's sizes, the kernel's
  /// buffers, and (after locateAttentionRow) where the workgroup's query
  /// head and KV head start and how many positions it reads.
  struct AttentionFrame {
    int64_t dim = 0, heads = 0, rowStride = 0, positions = 0;
    int64_t window = 0; ///< sliding window (0: every position)
    int64_t seqLen = 0; ///< positions per sequence (0: one sequence)
    float scale = 0;
    float softcap = 0;  ///< score soft-capping (0: none)
    Value q, kCache, vCache, pos, out;
    Type kElement, vElement; ///< the caches' element types (f32/f16/q8_0)
    Value qBase, kvBase, first, count;
    Value start; ///< the row's sequence's first position (0: one sequence)
  };
  /// Element `index` of a cache buffer of `element`s, as f32.
  Value loadCacheValue(Value cache, Type element, Value index, Location loc) {
    if (isa<cir::Q8_0Type>(element))
      return emitDequantizeElement(cache, element, index, loc);
    return toF32(loadElement(cache, index, loc), loc);
  }
  /// One lane: the 32 cache values from element `index` on (a multiple of
  /// 32: a whole block of a q8_0 cache), as vector<32xf32>.
  Value loadCacheVector(Value cache, Type element, Value index, Location loc);
  /// Binds the op's buffers (and `partials`, a scratch buffer the kernel
  /// writes, when given) and creates its kernel of `lanes` lanes.
  AttentionFrame beginAttention(cir::AttentionOp op, KernelState &ks,
                                int64_t lanes, Value partials = {});
  /// The workgroup's head (grid x) and query row (grid y): fills qBase,
  /// kvBase, count (pos + row + 1, clamped to the cache) and first (0, or
  /// count - window with a sliding window).
  /// `head` overrides the head (the workgroup's first, for a group).
  void locateAttentionRow(AttentionFrame &f, int64_t group, Location loc,
                          Value head = {});
  /// scale * `dot`, soft-capped when the op says so: a score from q . k.
  Value scaleScore(const AttentionFrame &f, Value dot, Location loc);
  /// scale * (q . k[position]) of the workgroup's head, soft-capped when
  /// the op says so.
  Value emitAttentionScore(const AttentionFrame &f, Value position,
                           Location loc);
  /// The body of circuit.attention with one lane per workgroup (the CPU
  /// target).
  void emitAttentionSingleLane(AttentionFrame &f, int64_t group,
                               Location loc);
  /// The same with a workgroup per KV head and row, its `group` query heads
  /// sharing each K and V row (head dimensions of whole vectors of 32, at
  /// most kMaxAttentionChunks of them).
  void emitGroupedAttentionSingleLane(AttentionFrame &f, int64_t group,
                                      Location loc);
  /// Checks that rows of `rowLength` values quantized to `resultType` can be
  /// written by one workgroup each (whole words, fits in shared memory).
  LogicalResult checkQuantizedRows(Operation *op, RankedTensorType resultType,
                                   int64_t rowLength, int64_t lanes);
  /// The lanes of a kernel that quantizes rows of `rowLength` values from
  /// shared memory (circuit.quantize, circuit.write_rows): one per block,
  /// within the shape's reduction lanes.
  int64_t quantizedRowLanes(int64_t rowLength) const {
    return std::max(shape.minReduceLanes,
                    std::min(shape.reduceLanes,
                             powerOfTwoAtLeast(rowLength / 32)));
  }
  /// Quantizes the `rowLength` f32 values in shared `values` into GGUF
  /// q8_0/q8_1 blocks at row `row` of the word buffer `out`; with `store`
  /// (an i1, the same in every lane), only where it holds.
  void emitQuantizedRowVector(Value values, int64_t rowLength, Value row,
                              Value out, Location loc);
  void emitQuantizedRow(Value values, int64_t rowLength, Value row, Value out,
                        bool withSums, Value tid, int64_t lanes, Location loc,
                        Value store = nullptr);
  /// Matmul and multi_matmul; with `combine`, a gated_matmul: the two
  /// weights' dot products of each row are combined into one result. With
  /// `expertIds`, an expert_matmul: result row r reads the weights' rows
  /// of expert ids[r] ([E, N, K] weights) and x row r, or r / S when x has
  /// one row per token (`xPerSlot` false).
  /// The tiled GEMM of a prompt chunk on GPU targets (lowerMatmul's
  /// choice): emits the kernel body after createKernel; `storeOutput(i,
  /// value, x row, weight row, n)` stores output element (x row, weight
  /// row) of weight i with its epilogue, `combineOutputs(gate, up, x row,
  /// weight row, n)` a gated matmul's. Its grid: a workgroup per tile of
  /// kGemmTile weight rows (multi_matmul's weights one after another) by
  /// one per tile of kGemmTile rows of x.
  void emitTiledMatmul(
      KernelState &ks, Value x, ArrayRef<Value> weights, bool gated,
      int64_t m, Location loc,
      llvm::function_ref<void(size_t, Value, Value, Value, int64_t)>
          storeOutput,
      llvm::function_ref<void(Value, Value, Value, Value, int64_t)>
          combineOutputs);
  LogicalResult lowerMatmul(Operation *op, Value x, ArrayRef<Value> weights,
                            ArrayRef<Region *> epilogues, ValueRange inputs,
                            Region *combine = nullptr,
                            Value expertIds = nullptr, bool xPerSlot = true);

  /// Emits the strided dot products of rows `ns` of `weight` with rows
  /// `ms` of `x`, accumulated by this lane (f32, one per weight row and x
  /// row, weight row major): each weight row is read and decoded once for
  /// all x rows. Plain weights take all of `ns` in one loop (each x load
  /// serves every weight row); block formats one loop per weight row.
  SmallVector<Value> emitPartialDot(KernelState &ks, Value x, Value weight,
                                    ArrayRef<Value> ms, ArrayRef<Value> ns,
                                    Value tid, int64_t lanes, Location loc);
  /// What the per-format dot products need: the x and weight buffers, the
  /// first x element of each x row, the weight row, its length, the lane
  /// and the workgroup size.
  struct DotOperands {
    Value x, w;
    SmallVector<Value> xRows;
    Value n;
    /// Every weight row of the tile (plain dot products and the one-lane
    /// paths of hasTileVectorDot; `n` is the first).
    SmallVector<Value> ns;
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
  /// Where the lane is in a block-format weight row: what every
  /// lane-strided quantized dot product starts with (beginBlockUnits).
  struct BlockUnit {
    scf::ForOp loop; ///< over the lane's units (beginUnits)
    Value zero;      ///< the accumulators' start, for inner loops
    Value unit;      ///< the unit's index within the row
    Value block;     ///< the unit's block within the row
    Value part;      ///< the unit within its block (null: one per block)
    /// The block's index in the whole weight buffer (row n's blocks
    /// first): times the block's bytes or words, where the block starts.
    Value blockIndex;
  };
  /// Starts the lane's loop over the units of weight row `d.n`: its
  /// K/blockValues blocks, each split into `unitsPerBlock` units, with
  /// `accumulators` f32 sums (the builder is left inside; the caller keeps
  /// an InsertionGuard and ends with finishUnits).
  BlockUnit beginBlockUnits(const DotOperands &d, int64_t blockValues,
                            int64_t unitsPerBlock, size_t accumulators);
  /// Whether byte offset `at` is not on a word boundary: blocks of an odd
  /// number of half-words (q8_0's 34 bytes, q6_k's 210, ...) alternate,
  /// and their words are assembled from the two aligned words around them
  /// (loadWordAtEvenByte).
  Value isMisaligned(Value at, Location loc);
  /// The dot product of a block-format (quantized, bf16) weight row.
  SmallVector<Value> emitBlockDot(const DotOperands &d, Type element);
  SmallVector<Value> finishUnits(scf::ForOp loop, ValueRange next);
  /// The four f32 values of x at `index`, a multiple of 4: one vector load.
  SmallVector<Value, 4> loadX4(const DotOperands &d, Value index);
  SmallVector<Value> emitPlainDot(const DotOperands &d);
  /// Blocks of `blockValues` values in `blockBytes` bytes that start with
  /// an f16 scale (q8_0, q4_0): a lane per block, its value bytes read a
  /// word at a time; `addWord(word, w, xBlocks, acc)` adds word w's
  /// products to each x row's accumulator (xBlocks: where each row's
  /// values of the block start). The block's sums are scaled once. With
  /// `q8Activations`, x is q8_1 words: xBlocks are the x blocks' first
  /// words, the accumulators i32, scaled by d_x too.
  SmallVector<Value> emitHalfScaledBlockDot(
      const DotOperands &d, int64_t blockValues, int64_t blockBytes,
      llvm::function_ref<void(Value word, Value w, ArrayRef<Value> xBlocks,
                              MutableArrayRef<Value> acc)>
          addWord,
      bool q8Activations = false);
  /// 32 decoded weights of a weight row, and where their x values start
  /// relative to the step's first.
  struct WeightPiece {
    Value weights;
    int64_t xOffset;
  };
  /// One lane: the dot products of every x row of `d` with every weight
  /// row of `d.ns` (a register tile; result c * rows + r), over `steps`
  /// steps of `stepValues` values, each of `pieces` pieces: `decode(c, n,
  /// step, p)` gives piece p of weight row n (the tile's c-th) in that
  /// step, which is multiplied with every x row before the next piece is
  /// decoded (BlockDots.cpp).
  SmallVector<Value> emitDecodedTileDot(
      const DotOperands &d, int64_t steps, int64_t stepValues, int64_t pieces,
      llvm::function_ref<WeightPiece(size_t c, Value n, Value step,
                                     int64_t p)>
          decode);
  /// One lane: pairs of such blocks of 32 values (K a multiple of 64)
  /// whose values take `valueWords` words (8: q8_0, 4: q4_0), as
  /// vector<32> operations; `decode` turns a block's value words into its
  /// 32 unscaled values, as signed bytes or as f32.
  SmallVector<Value> emitHalfScaledBlockPairDotVector(
      const DotOperands &d, int64_t valueWords,
      llvm::function_ref<Value(Value words)> decode);
  /// The same pairs against x in q8_1 blocks: integer products of the
  /// bytes, scaled once per block (BlockDots.cpp).
  SmallVector<Value> emitQ8ActivationPairDotVector(
      const DotOperands &d, int64_t valueWords,
      llvm::function_ref<Value(Value words)> decode);
  /// A pair's value words (block A's realigned) and f16 scales, at pair
  /// `pair` of weight row `d.n`.
  struct HalfScaledPair {
    Value valuesA, valuesB, scaleA, scaleB;
  };
  HalfScaledPair loadHalfScaledPair(const DotOperands &d, Value pair,
                                    int64_t valueWords);
  /// One lane, x in q8_1 and q4_0 or q8_0 weights (`element`; K a
  /// multiple of 64): the register tile of kByteTileRows consecutive
  /// weight rows (`d.ns`) by every x row, in integers (BlockDots.cpp).
  SmallVector<Value> emitByteTileDot(const DotOperands &d, Type element);
  /// The same tile for q4_k weights (K a multiple of 256).
  SmallVector<Value> emitQ4_KByteTileDot(const DotOperands &d);
  /// The same tile for q2_k weights (16-value sub-blocks: each x block's
  /// halves are scaled apart).
  SmallVector<Value> emitQ2_KByteTileDot(const DotOperands &d);
  /// The same tile for i2_s weights, scaled by the tensor's scale.
  SmallVector<Value> emitI2_SByteTileDot(const DotOperands &d);
  /// The same tile for tq2_0 weights (a row's blocks on a word or two
  /// bytes into one, row by row).
  SmallVector<Value> emitTQ2_0ByteTileDot(const DotOperands &d);
  SmallVector<Value> emitQ8_0Dot(const DotOperands &d);
  /// Activations in q8_1 blocks (x is words, `xRows` their first words):
  /// q8_0 and q4_0 (`nibbles`) weight blocks per lane unit, the byte
  /// products added with exp.dot4_i8 and scaled once per block.
  SmallVector<Value> emitQ8ActivationDot(const DotOperands &d, bool nibbles);
  /// The dot products against q8_1 activations (q8_0, q4_0, q4_k, q5_k,
  /// q6_k, i2_s and tq2_0 weights: hasQ8ActivationKernel in Matmul.cpp).
  SmallVector<Value> emitQ8ActivationBlockDot(const DotOperands &d,
                                              Type element);
  /// q4_k, or q5_k with `fifthBits` (q4_k's layout with a plane of fifth
  /// bits after the scales).
  SmallVector<Value> emitQ4_KDot(const DotOperands &d, bool fifthBits = false,
                                 bool q8Activations = false);
  /// q2_k and q3_k (`threeBits`) super-blocks, a 16-value sub-block per
  /// lane unit (WeightFormats.cpp).
  SmallVector<Value> emitKLowBitDot(const DotOperands &d, bool threeBits,
                                    bool q8Activations = false);
  /// One lane: q2_k and q3_k super-blocks, 32 values at a time.
  SmallVector<Value> emitKLowBitDotVector(const DotOperands &d,
                                          bool threeBits);
  /// q4_1, q5_0 and q5_1 blocks, a block per lane unit (any number of
  /// lanes; WeightFormats.cpp).
  SmallVector<Value> emitLegacyDot(const DotOperands &d, Type element);
  /// q4_0 (or iq4_nl, `nonLinear`) and bf16 weights (WeightFormats.cpp).
  SmallVector<Value> emitQ4_0Dot(const DotOperands &d, bool nonLinear = false);
  SmallVector<Value> emitBF16Dot(const DotOperands &d);
  /// iq4_xs super-blocks, a sub-block per lane unit (WeightFormats.cpp).
  SmallVector<Value> emitIQ4_XSDot(const DotOperands &d);
  /// q6_k, a 16-value scale group per lane unit; with q8_1 activations
  /// the codes multiply x's bytes in integers (Matmul.cpp).
  SmallVector<Value> emitQ6_KDot(const DotOperands &d,
                                 bool q8Activations = false);
  /// Ternary weights (Ternary.cpp): tq2_0 half-blocks and tq1_0 blocks per
  /// lane unit, decoded in registers.
  SmallVector<Value> emitTQ2_0Dot(const DotOperands &d);
  SmallVector<Value> emitTQ1_0Dot(const DotOperands &d);
  /// i2_s blocks of 128 per lane unit, unscaled (the per-tensor scale is
  /// the graph's to apply).
  SmallVector<Value> emitI2_SDot(const DotOperands &d);
  /// i2_s weights with q8_1 activations, a word of a block per lane unit
  /// (any number of lanes), scaled by the tensor's scale.
  SmallVector<Value> emitI2_SQ8Dot(const DotOperands &d);
  /// tq2_0 weights with q8_1 activations, a word of a super-block's codes
  /// per lane unit (any number of lanes).
  SmallVector<Value> emitTQ2_0Q8Dot(const DotOperands &d);
  /// One lane (the CPU target): whole ternary blocks as vector operations.
  SmallVector<Value> emitTQ2_0DotVector(const DotOperands &d);
  SmallVector<Value> emitTQ1_0DotVector(const DotOperands &d);
  SmallVector<Value> emitI2_SDotVector(const DotOperands &d);
  /// One lane: whole q8_0 block pairs (K a multiple of 64) and q4_k
  /// super-blocks as vector<32> operations.
  SmallVector<Value> emitQ8_0DotVector(const DotOperands &d,
                                       bool q8Activations = false);
  SmallVector<Value> emitQ4_KDotVector(const DotOperands &d,
                                       bool fifthBits = false,
                                       bool q8Activations = false);
  /// One lane: q4_0 block pairs (K a multiple of 64) and bf16 (K a
  /// multiple of 32) as vector<32> operations (WeightFormats.cpp).
  SmallVector<Value> emitQ4_0DotVector(const DotOperands &d,
                                       bool nonLinear = false,
                                       bool q8Activations = false);
  SmallVector<Value> emitBF16DotVector(const DotOperands &d);
  /// One lane: q4_1, q5_0 and q5_1, a block's 32 values at a time.
  SmallVector<Value> emitLegacyDotVector(const DotOperands &d, Type element);
  /// One lane: iq4_xs super-blocks, a sub-block's 32 values at a time.
  SmallVector<Value> emitIQ4_XSDotVector(const DotOperands &d);
  /// One lane: q6_k super-block pairs (K a multiple of 512).
  SmallVector<Value> emitQ6_KDotVector(const DotOperands &d,
                                       bool q8Activations = false);
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
  KernelShape shape;
  /// Lanes per subgroup of the target, 0 when unknown.
  int64_t subgroupSize = 0;
};

/// `n` consecutive elements of `buffer` from element `index` on, in vector
/// loads of up to 16 bytes (`n` a power of two): the caller promises that
/// `index` is a multiple of each load's length (min(n, 16 bytes)), which
/// the loads then promise as their alignment.
inline SmallVector<Value> loadRun(OpBuilder &b, Location loc, Value buffer,
                                  Value index, int64_t n) {
  IndexMath im(b, loc);
  Type element = cast<sm::BufferType>(buffer.getType()).getElementType();
  const int64_t perLoad =
      std::min<int64_t>(n, 128 / element.getIntOrFloatBitWidth());
  assert(llvm::isPowerOf2_64(n) && "runs of a power of two");
  SmallVector<Value> values;
  for (int64_t i = 0; i < n; i += perLoad) {
    Value at = i ? im.add(index, im.c(i)) : index;
    if (perLoad == 1) {
      values.push_back(sm::LoadOp::create(b, loc, element, buffer, at));
      continue;
    }
    Value run = sm::LoadOp::create(
        b, loc, VectorType::get({perLoad}, element), buffer, at);
    for (int64_t j = 0; j < perLoad; ++j)
      values.push_back(vector::ExtractOp::create(b, loc, run, j));
  }
  return values;
}

/// Reads byte `byteIndex` of a buffer of 32-bit words, zero-extended to i32.
inline Value loadByte(OpBuilder &b, Location loc, Value words,
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
  /// A byte (0..255 in an i32) as a signed int8 value.
  Value signExtendByte(Value byte) {
    return arith::ShRSIOp::create(b, loc, shl(byte, 24), c(24));
  }

private:
  OpBuilder &b;
  Location loc;
};

/// The scale d of the q8_1 block whose first word is `block` in `words`
/// (the low half of that word), as f32.
inline Value loadQ8_1Scale(OpBuilder &b, Location loc, Value words,
                           Value block) {
  Value head = sm::LoadOp::create(b, loc, b.getI32Type(), words, block);
  return ex::UnpackF16x2Op::create(b, loc, b.getF32Type(), head, 0);
}

/// The f32 scale after the blocks of the i2_s weight buffer `w`: the
/// first of its last 8 words (the blocks are whole words, and the scale
/// and its padding are 32 bytes).
inline Value i2sScale(OpBuilder &b, Location loc, Value w) {
  IndexMath im(b, loc);
  int64_t words = cast<sm::BufferType>(w.getType()).getLength();
  Value word = sm::LoadOp::create(
      b, loc, b.getI32Type(), w,
      im.c(words - cir::I2_SType::kTrailerBytes / 4));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), word);
}

/// `dots` times the tensor scale of the i2_s weight buffer `w`, once each
/// after the dot products (which sum the codes less one times x).
inline SmallVector<Value> scaledByI2S(OpBuilder &b, Location loc, Value w,
                                      SmallVector<Value> dots) {
  Value scale = i2sScale(b, loc, w);
  for (Value &dot : dots)
    dot = ex::MulOp::create(b, loc, dot, scale);
  return dots;
}

/// The f16 at byte `byteIndex` of a buffer of 32-bit words, as f32.
inline Value loadHalf(OpBuilder &b, Location loc, Value words,
                      Value byteIndex) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  Value lo = loadByte(b, loc, words, byteIndex);
  Value hi = loadByte(b, loc, words, im.add(byteIndex, im.c(1)));
  return ex::UnpackF16x2Op::create(b, loc, b.getF32Type(),
                                   wm.bitOr(lo, wm.shl(hi, 8)), 0);
}

/// The 32 bits at even byte `at` of a buffer of 32-bit words: the aligned
/// word, or, when `misaligned` (at % 4 == 2), the halves of the two aligned
/// words around it (blocks of 34 or 210 bytes start at even bytes). The
/// second word's index is clamped into the buffer: it is only used when
/// misaligned, and then it exists.
inline Value loadWordAtEvenByte(OpBuilder &b, Location loc, Value words,
                                Value at, Value misaligned) {
  IndexMath im(b, loc);
  WordMath wm(b, loc);
  int64_t lastWord = cast<sm::BufferType>(words.getType()).getLength() - 1;
  Value first = im.div(at, 4);
  Value w0 = sm::LoadOp::create(b, loc, b.getI32Type(), words, first);
  Value next =
      arith::MinUIOp::create(b, loc, im.add(first, im.c(1)), im.c(lastWord));
  Value w1 = sm::LoadOp::create(b, loc, b.getI32Type(), words, next);
  return wm.select(misaligned, wm.bitOr(wm.shr(w0, 16), wm.shl(w1, 16)), w0);
}

/// The 6-bit scale and min (i32) of sub-block `j` (0..7) of a q4_k
/// super-block, from its 12 scale bytes s[] (`scaleByte(i)` reads s[i]):
/// j < 4: s[j] & 63 and s[j+4] & 63; else the low/high nibble of s[j+4]
/// with the top two bits of s[j-4] / s[j] above it (ggml's
/// get_scale_min_k4).
inline std::pair<Value, Value>
unpackQ4_KScaleMin(IndexMath &im, WordMath &wm, Value j,
                   llvm::function_ref<Value(Value)> scaleByte) {
  Value sj = scaleByte(j);
  Value sj4 = scaleByte(im.add(j, im.c(4)));
  Value sjm4 = scaleByte(im.rem(j, 4));
  Value low = im.lt(j, im.c(4));
  Value sc = wm.select(low, wm.mask(sj, 63),
                       wm.bitOr(wm.mask(sj4, 0xf), wm.shl(wm.shr(sjm4, 6), 4)));
  Value mn = wm.select(low, wm.mask(sj4, 63),
                       wm.bitOr(wm.shr(sj4, 4), wm.shl(wm.shr(sj, 6), 4)));
  return {sc, mn};
}

/// The bytes dispatch-level `op` must move at the least, as a launch's
/// `traffic` (rt::LaunchTraffic): read and written at every run, read per
/// cached position attended, the window and the cache's positions.
std::array<int64_t, 5> opTraffic(Operation *op);

} // namespace hesper::lowering

#endif // HESPER_LIB_CONVERSION_CIRCUITTOSHADERM_GRAPHLOWERING_H
