//===- NormalizeGpuKernels.cpp - Hand-written kernels to Hesper's ABI -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-normalize-gpu-kernels: see Passes.td. The kernels of a gpu dialect
// program come as their authors wrote them, for CUDA or for Vulkan; after
// this pass every target's kernel pipeline sees the same shape: one buffer
// per argument, a fixed block size, no all_reduce, and (for SPIR-V) no
// memory attributions.
//
//===----------------------------------------------------------------------===//

#include "Attributions.h"
#include "Hesper/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace hesper {
#define GEN_PASS_DEF_NORMALIZEGPUKERNELSPASS
#include "Hesper/Target/Passes.h.inc"
} // namespace hesper

using namespace mlir;
using namespace hesper;

namespace {

/// Memory spaces convert-gpu-to-spirv maps to Workgroup and Function
/// storage (its numeric mapping for Vulkan).
constexpr unsigned kWorkgroupSpace = 3;
constexpr unsigned kFunctionSpace = 6;

/// Scalar arguments become one-element buffers of this element type.
Type bufferElementFor(Type type) {
  if (type.isIndex())
    return IntegerType::get(type.getContext(), 64);
  if (type.isInteger(1))
    return IntegerType::get(type.getContext(), 8);
  return type;
}

LogicalResult scalarArgumentsToBuffers(gpu::GPUFuncOp func) {
  OpBuilder b(func.getContext());
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  SmallVector<Type> inputs(func.getArgumentTypes());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    BlockArgument arg = func.getArgument(i);
    Type type = arg.getType();
    if (isa<MemRefType>(type))
      continue;
    if (!type.isIntOrIndexOrFloat())
      return func.emitOpError("has argument #")
             << i << " of type " << type
             << ", which Hesper cannot pass to a kernel (memrefs, integers, "
                "floats and index can be)";
    Type element = bufferElementFor(type);
    auto bufferType = MemRefType::get({1}, element);
    arg.setType(bufferType);
    inputs[i] = bufferType;
    Value zero = arith::ConstantIndexOp::create(b, func.getLoc(), 0);
    auto load = memref::LoadOp::create(b, func.getLoc(), arg, zero);
    Value value = load;
    if (type.isIndex())
      value = arith::IndexCastOp::create(b, func.getLoc(), type, value);
    else if (type.isInteger(1))
      value = arith::TruncIOp::create(b, func.getLoc(), type, value);
    arg.replaceAllUsesExcept(value, load);
  }
  func.setFunctionTypeAttr(TypeAttr::get(
      b.getFunctionType(inputs, func.getFunctionType().getResults())));
  return success();
}

/// The combining op of an all_reduce: its operation attribute, or its
/// region inlined.
Value combine(OpBuilder &b, Location loc, gpu::AllReduceOp op, Value lhs,
              Value rhs) {
  if (std::optional<gpu::AllReduceOperation> kind = op.getOp()) {
    bool isFloat = isa<FloatType>(lhs.getType());
    using K = gpu::AllReduceOperation;
    switch (*kind) {
    case K::ADD:
      return isFloat ? Value(arith::AddFOp::create(b, loc, lhs, rhs))
                     : Value(arith::AddIOp::create(b, loc, lhs, rhs));
    case K::MUL:
      return isFloat ? Value(arith::MulFOp::create(b, loc, lhs, rhs))
                     : Value(arith::MulIOp::create(b, loc, lhs, rhs));
    case K::MINUI:
      return arith::MinUIOp::create(b, loc, lhs, rhs);
    case K::MINSI:
      return arith::MinSIOp::create(b, loc, lhs, rhs);
    case K::MINNUMF:
      return arith::MinNumFOp::create(b, loc, lhs, rhs);
    case K::MAXUI:
      return arith::MaxUIOp::create(b, loc, lhs, rhs);
    case K::MAXSI:
      return arith::MaxSIOp::create(b, loc, lhs, rhs);
    case K::MAXNUMF:
      return arith::MaxNumFOp::create(b, loc, lhs, rhs);
    case K::AND:
      return arith::AndIOp::create(b, loc, lhs, rhs);
    case K::OR:
      return arith::OrIOp::create(b, loc, lhs, rhs);
    case K::XOR:
      return arith::XOrIOp::create(b, loc, lhs, rhs);
    case K::MINIMUMF:
      return arith::MinimumFOp::create(b, loc, lhs, rhs);
    case K::MAXIMUMF:
      return arith::MaximumFOp::create(b, loc, lhs, rhs);
    }
  }
  // The region: ^bb0(%lhs, %rhs): ... gpu.yield %result, in one block.
  Region &body = op.getBody();
  IRMapping map;
  map.map(body.getArgument(0), lhs);
  map.map(body.getArgument(1), rhs);
  Value result;
  for (Operation &nested : body.front()) {
    if (auto yield = dyn_cast<gpu::YieldOp>(nested)) {
      result = map.lookup(yield.getValues()[0]);
      break;
    }
    b.clone(nested, map);
  }
  return result;
}

/// Lowers one all_reduce over the block's `threads` threads: each thread
/// stores its value at its linear id, then halving steps combine element
/// i with element i + s (s a power of two, elements past the block
/// skipped), one barrier per step; every thread reads element 0. The order
/// of the combinations is fixed by the block size alone.
LogicalResult lowerAllReduce(gpu::GPUFuncOp func, gpu::AllReduceOp op,
                             ArrayRef<int32_t> block) {
  Location loc = op.getLoc();
  if (!op.getOp() && (op.getBody().empty() ||
                      !op.getBody().hasOneBlock()))
    return op.emitOpError("with a region of more than one block is not "
                          "supported by Hesper");
  int64_t threads = int64_t(block[0]) * block[1] * block[2];
  Type type = op.getType();
  Value memory = addPerThreadBuffer(func, type, block, loc);

  OpBuilder b(op);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value tid = linearThreadId(b, loc, block);
  memref::StoreOp::create(b, loc, op.getValue(), memory, tid);
  gpu::BarrierOp::create(b, loc);
  int64_t span = 1;
  while (span < threads)
    span *= 2;
  for (int64_t s = span / 2; s >= 1; s /= 2) {
    Value partner = arith::AddIOp::create(b, loc, tid, c(s));
    Value active = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, c(s)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, partner,
                              c(threads)));
    auto ifOp = scf::IfOp::create(b, loc, active, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value lhs = memref::LoadOp::create(b, loc, memory, tid);
      Value rhs = memref::LoadOp::create(b, loc, memory, partner);
      Value combined = combine(b, loc, op, lhs, rhs);
      if (!combined)
        return op.emitOpError("has a region that yields nothing");
      memref::StoreOp::create(b, loc, combined, memory, tid);
    }
    gpu::BarrierOp::create(b, loc);
  }
  Value result = memref::LoadOp::create(b, loc, memory, c(0));
  // No thread may store the next reduction's value (in a loop) before
  // every thread has read this one.
  gpu::BarrierOp::create(b, loc);
  op.replaceAllUsesWith(result);
  op.erase();
  return success();
}

/// Replaces a memory attribution by an allocation of the same shape in
/// `space`, at the kernel's entry (its users take any memref type:
/// checkAttributionUsers).
void attributionToAlloc(OpBuilder &b, BlockArgument attribution,
                        unsigned space, bool stack) {
  auto type = cast<MemRefType>(attribution.getType());
  auto newType = MemRefType::get(type.getShape(), type.getElementType(),
                                 type.getLayout(),
                                 b.getI64IntegerAttr(space));
  Location loc = attribution.getLoc();
  Value memory = stack ? Value(memref::AllocaOp::create(b, loc, newType))
                       : Value(memref::AllocOp::create(b, loc, newType));
  attribution.replaceAllUsesWith(memory);
}

struct NormalizeGpuKernelsPass
    : hesper::impl::NormalizeGpuKernelsPassBase<NormalizeGpuKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (!allowLLVMFuncs) {
      WalkResult llvmFunc = getOperation().walk([&](LLVM::LLVMFuncOp func) {
        if (!func->getParentOfType<gpu::GPUModuleOp>())
          return WalkResult::advance();
        func.emitOpError("is LLVM IR, which this target cannot take (the "
                         "SPIR-V target compiles gpu.func kernels; the CPU "
                         "target and CUDA take llvm.func too)");
        return WalkResult::interrupt();
      });
      if (llvmFunc.wasInterrupted())
        return signalPassFailure();
    }
    SmallVector<gpu::GPUFuncOp> kernels;
    getOperation().walk([&](gpu::GPUFuncOp func) {
      if (func.isKernel())
        kernels.push_back(func);
    });
    for (gpu::GPUFuncOp func : kernels)
      if (failed(normalize(func)))
        return signalPassFailure();
  }

  /// Each memref argument of dynamic shape as the buffer's pointer (a
  /// one-element memref) and its sizes (the next argument, rank i64s); the
  /// body sees the view rebuilt from them (row-major, offset 0), as the
  /// launch passed it.
  /// The sizes of a memref of `type` whose dynamic ones are in `sizesArg`
  /// (i64s), as index values.
  static SmallVector<Value> loadSizes(OpBuilder &b, Location loc,
                                      MemRefType type, Value sizesArg) {
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        sizes.push_back(
            arith::ConstantIndexOp::create(b, loc, type.getDimSize(d)));
        continue;
      }
      Value at = arith::ConstantIndexOp::create(b, loc, d);
      Value size = memref::LoadOp::create(b, loc, sizesArg, ValueRange{at});
      sizes.push_back(
          arith::IndexCastOp::create(b, loc, b.getIndexType(), size));
    }
    return sizes;
  }

  /// The kernel's function type from its arguments' types (after they
  /// changed in place).
  static void retypeFunction(gpu::GPUFuncOp func) {
    SmallVector<Type> inputs;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      inputs.push_back(func.getArgument(i).getType());
    func.setFunctionTypeAttr(TypeAttr::get(
        FunctionType::get(func.getContext(), inputs, {})));
  }

  /// flatten-dynamic-shapes (see the option).
  LogicalResult flattenShapes(gpu::GPUFuncOp func) {
    MLIRContext *context = func.getContext();
    OpBuilder b(context);
    Location loc = func.getLoc();
    bool changed = false;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      BlockArgument buffer = func.getArgument(i);
      auto type = dyn_cast<MemRefType>(buffer.getType());
      if (!type || type.hasStaticShape())
        continue;
      auto refuse = [&](const Twine &why) {
        return func.emitOpError("has argument #")
               << i << " of type " << type << ", a dynamic shape of rank "
               << type.getRank() << ", which this target " << why;
      };
      if (!type.getLayout().isIdentity())
        return refuse("cannot pass with a layout");
      // A 1-D one keeps its type (a runtime array) and its users; only
      // memref.dim reads the sizes.
      bool flatten = type.getRank() > 1;
      for (Operation *user : buffer.getUsers()) {
        if (!flatten)
          break;
        bool indexes = isa<memref::LoadOp, memref::DimOp>(user);
        if (auto store = dyn_cast<memref::StoreOp>(user))
          indexes = store.getMemRef() == buffer;
        if (!indexes)
          return refuse("reads only through memref.load, memref.store and "
                        "memref.dim, not ")
                 << user->getName();
      }
      changed = true;
      auto sizesType = MemRefType::get({type.getRank()}, b.getI64Type());
      if (failed(func.insertArgument(i + 1, sizesType, {}, loc)))
        return failure();
      buffer.setType(MemRefType::get({ShapedType::kDynamic},
                                     type.getElementType(),
                                     MemRefLayoutAttrInterface(),
                                     type.getMemorySpace()));
      Value sizesArg = func.getArgument(i + 1);
      b.setInsertionPointToStart(&func.getBody().front());
      SmallVector<Value> sizes = loadSizes(b, loc, type, sizesArg);
      // Row-major: ((i0 s1 + i1) s2 + i2) ...
      auto flat = [&](ValueRange indices) -> Value {
        Value at = indices.front();
        for (size_t d = 1; d < indices.size(); ++d)
          at = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, at, sizes[d]), indices[d]);
        return at;
      };
      for (Operation *user : llvm::make_early_inc_range(buffer.getUsers())) {
        b.setInsertionPoint(user);
        if (!flatten && !isa<memref::DimOp>(user))
          continue;
        if (auto load = dyn_cast<memref::LoadOp>(user)) {
          load.getResult().replaceAllUsesWith(memref::LoadOp::create(
              b, load.getLoc(), buffer, ValueRange{flat(load.getIndices())}));
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          memref::StoreOp::create(b, store.getLoc(), store.getValueToStore(),
                                  buffer,
                                  ValueRange{flat(store.getIndices())});
        } else {
          auto dim = cast<memref::DimOp>(user);
          std::optional<int64_t> d = dim.getConstantIndex();
          Value size =
              d && *d >= 0 && *d < type.getRank()
                  ? sizes[*d]
                  : Value(arith::IndexCastOp::create(
                        b, dim.getLoc(), b.getIndexType(),
                        memref::LoadOp::create(b, dim.getLoc(), sizesArg,
                                               ValueRange{dim.getIndex()})));
          dim.getResult().replaceAllUsesWith(size);
        }
        user->erase();
      }
      ++i; // past the sizes
    }
    if (changed)
      retypeFunction(func);
    return success();
  }

  LogicalResult passSizes(gpu::GPUFuncOp func) {
    MLIRContext *context = func.getContext();
    OpBuilder b(context);
    Location loc = func.getLoc();
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto type = dyn_cast<MemRefType>(func.getArgument(i).getType());
      if (!type || type.hasStaticShape())
        continue;
      if (!type.getLayout().isIdentity())
        return func.emitOpError("has argument #")
               << i << " of type " << type
               << ", a dynamic shape with a layout, which Hesper cannot "
                  "pass to a kernel on this target";
      int64_t rank = type.getRank();
      auto sizesType = MemRefType::get({rank}, b.getI64Type());
      if (failed(func.insertArgument(i + 1, sizesType, {}, loc)))
        return failure();
      BlockArgument buffer = func.getArgument(i);
      buffer.setType(MemRefType::get({1}, type.getElementType(),
                                     MemRefLayoutAttrInterface(),
                                     type.getMemorySpace()));
      b.setInsertionPointToStart(&func.getBody().front());
      SmallVector<Value> sizes =
          loadSizes(b, loc, type, func.getArgument(i + 1));
      // Row-major strides: 1, then each the product of the sizes after it.
      SmallVector<OpFoldResult> sizeFolds(sizes.begin(), sizes.end());
      SmallVector<OpFoldResult> strideFolds(rank, b.getIndexAttr(1));
      Value stride = sizes[rank - 1];
      for (int64_t d = rank - 2; d >= 0; --d) {
        strideFolds[d] = stride;
        if (d > 0)
          stride = arith::MulIOp::create(b, loc, stride, sizes[d]);
      }
      auto view = memref::ReinterpretCastOp::create(
          b, loc, type, buffer, b.getIndexAttr(0), sizeFolds, strideFolds);
      buffer.replaceAllUsesExcept(view, view);
      ++i; // past the sizes
    }
    retypeFunction(func);
    return success();
  }

  LogicalResult normalize(gpu::GPUFuncOp func) {
    if (sizesForDynamicShapes && failed(passSizes(func)))
      return failure();
    if (flattenDynamicShapes && failed(flattenShapes(func)))
      return failure();
    WalkResult refused = func.walk([&](Operation *op) {
      if (isa<gpu::DynamicSharedMemoryOp>(op)) {
        op->emitOpError("is not supported by Hesper's backends: declare the "
                        "memory as a workgroup attribution of the kernel");
        return WalkResult::interrupt();
      }
      if (!allowPrintf && isa<gpu::PrintfOp>(op)) {
        op->emitOpError("cannot be lowered for this target (Vulkan kernels "
                        "have no printf)");
        return WalkResult::interrupt();
      }
      if (!allowPrintf && isa<cf::AssertOp>(op)) {
        op->emitOpError("cannot be lowered for this target (Vulkan kernels "
                        "have no printf to report a failed assertion; the "
                        "CPU target and CUDA run it)");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (refused.wasInterrupted())
      return failure();
    DenseI32ArrayAttr known = func.getKnownBlockSizeAttr();
    if (!known)
      return func.emitOpError("has no known block size: launch it with a "
                              "constant block size, or give it "
                              "known_block_size");
    ArrayRef<int32_t> block = known.asArrayRef();

    SmallVector<gpu::AllReduceOp> reductions;
    func.walk([&](gpu::AllReduceOp op) { reductions.push_back(op); });
    for (gpu::AllReduceOp op : reductions)
      if (failed(lowerAllReduce(func, op, block)))
        return failure();

    if (failed(scalarArgumentsToBuffers(func)))
      return failure();

    if (attributionsAsAlloc) {
      for (BlockArgument a : func.getWorkgroupAttributions())
        if (failed(checkAttributionUsers(a)))
          return failure();
      for (BlockArgument a : func.getPrivateAttributions())
        if (failed(checkAttributionUsers(a)))
          return failure();
      OpBuilder b(func.getContext());
      b.setInsertionPointToStart(&func.getBody().front());
      for (BlockArgument a : func.getWorkgroupAttributions())
        attributionToAlloc(b, a, kWorkgroupSpace, /*stack=*/false);
      for (BlockArgument a : func.getPrivateAttributions())
        attributionToAlloc(b, a, kFunctionSpace, /*stack=*/true);
      // The attributions are unused now; drop them from the signature.
      Block &entry = func.getBody().front();
      unsigned first = func.getFirstWorkgroupAttributionIndex();
      unsigned count = func.getNumWorkgroupAttributions() +
                       func.getNumPrivateAttributions();
      for (unsigned i = 0; i < count; ++i)
        entry.eraseArgument(first);
      func->setAttr(gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName(),
                    b.getI64IntegerAttr(0));
      func.removeWorkgroupAttribAttrsAttr();
      func.removePrivateAttribAttrsAttr();
    }
    return success();
  }
};

} // namespace
