//===- KernelsToCPU.cpp - Kernels of one lane per workgroup as functions --===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-gpu-to-cpu takes the gpu.module that convert-shaderm-to-gpu wrote
// for the CPU target (kernels of one lane per workgroup) and turns each
// gpu.func into a func.func that runs one workgroup: its buffers, then the
// workgroup's x, y, z and the grid's x, y, z as `index` arguments. With one
// lane, every lane and subgroup query is a constant, subgroup operations
// return their operand, barriers disappear and shared memory is a stack
// array. The functions land in a builtin.module marked `hesper.cpu_kernels`
// (named after the gpu.module), which the rest of the CPU pipeline lowers
// to the llvm dialect and hesper-serialize-cpu compiles to native code.
//
//===----------------------------------------------------------------------===//

#include "../Attributions.h"
#include "CPUPasses.h"
#include "Hesper/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace hesper {
#define GEN_PASS_DEF_GPUTOCPUPASS
#include "Hesper/Target/Passes.h.inc"
} // namespace hesper

namespace hesper::cpu {

std::string kernelBodyName(llvm::StringRef kernel) {
  return ("__hesper_body_" + kernel).str();
}

std::string threadBodyName(llvm::StringRef kernel) {
  return ("__hesper_thread_body_" + kernel).str();
}

namespace {

/// What a subgroup query or operation gives when subgroups have one lane:
/// lane 0, size 1, the lane's own value for a reduction or a broadcast;
/// null for any other op. (Shuffles differ between the two kinds of
/// kernels and are handled by each.)
Value oneLaneSubgroupValue(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  if (isa<gpu::LaneIdOp>(op))
    return arith::ConstantIndexOp::create(b, loc, 0);
  if (isa<gpu::SubgroupSizeOp>(op))
    return arith::ConstantIndexOp::create(b, loc, 1);
  if (auto reduce = dyn_cast<gpu::SubgroupReduceOp>(op))
    return reduce.getValue();
  if (auto broadcast = dyn_cast<gpu::SubgroupBroadcastOp>(op))
    return broadcast.getSrc();
  return Value();
}

/// Rewrites the gpu ops of a kernel body moved into `func` (buffers are
/// arguments 0..numBuffers-1, then workgroup x/y/z, then grid x/y/z).
LogicalResult rewriteBody(func::FuncOp func, unsigned numBuffers) {
  Block &entry = func.getBody().front();
  OpBuilder b(func.getContext());
  auto arg = [&](unsigned i) -> Value { return entry.getArgument(i); };
  auto index = [&](Location loc, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    b.setInsertionPoint(op);
    Location loc = op->getLoc();
    auto dim = [](gpu::Dimension d) { return static_cast<unsigned>(d); };
    Value replacement;
    if (Value oneLane = oneLaneSubgroupValue(b, op))
      replacement = oneLane;
    else if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      replacement = arg(numBuffers + dim(id.getDimension()));
    else if (auto id = dyn_cast<gpu::GlobalIdOp>(op))
      replacement = arg(numBuffers + dim(id.getDimension()));
    else if (auto grid = dyn_cast<gpu::GridDimOp>(op))
      replacement = arg(numBuffers + 3 + dim(grid.getDimension()));
    else if (isa<gpu::ThreadIdOp, gpu::SubgroupIdOp>(op))
      replacement = index(loc, 0);
    else if (isa<gpu::BlockDimOp, gpu::NumSubgroupsOp>(op))
      replacement = index(loc, 1);
    else if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
      // The only lane is its own partner: the value, and valid.
      Value valid = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      shuffle.getResult(0).replaceAllUsesWith(shuffle.getValue());
      shuffle.getResult(1).replaceAllUsesWith(valid);
      op->erase();
      continue;
    } else if (isa<gpu::BarrierOp>(op)) {
      op->erase();
      continue;
    } else if (isa<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(b, loc);
      op->erase();
      continue;
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      // Shared memory of a one-lane workgroup: a stack array.
      auto type = alloc.getType();
      auto plain = MemRefType::get(type.getShape(), type.getElementType());
      b.setInsertionPointToStart(&entry);
      replacement = memref::AllocaOp::create(b, loc, plain);
    } else if (isa<vector::LoadOp, vector::StoreOp>(op)) {
      // The GPU lowering promises a vector's own alignment; blocks of
      // quantized weights are read at any word, a workgroup array becomes
      // a stack array aligned only to its element, and the CPU loads and
      // stores unaligned vectors at full speed. (A promise the stack does
      // not keep is an aligned vmovaps on a 16-byte boundary: a fault.)
      if (auto load = dyn_cast<vector::LoadOp>(op))
        load.setAlignment(std::nullopt);
      else
        cast<vector::StoreOp>(op).setAlignment(std::nullopt);
      continue;
    } else if (auto add = dyn_cast<arith::AddFOp>(op)) {
      // Sums may be reassociated so that LLVM vectorizes reductions; the
      // order is then fixed by the compiled code, the same on every run
      // and for every thread count.
      add.setFastmath(add.getFastmath() | arith::FastMathFlags::reassoc);
      continue;
    } else if (isa<arith::MaxNumFOp, arith::MinNumFOp>(op)) {
      // A running maximum (softmax, attention) vectorizes only when NaNs
      // may be ignored: on this target a NaN input of a max or min gives
      // an unspecified value rather than the other operand.
      auto fm = cast<arith::ArithFastMathInterface>(op);
      op->setAttr(fm.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      op->getContext(), fm.getFastMathFlagsAttr().getValue() |
                                            arith::FastMathFlags::nnan |
                                            arith::FastMathFlags::reassoc));
      continue;
    } else if (auto fma = dyn_cast<math::FmaOp>(op)) {
      // A chain of fused multiply-adds is one long dependency that no
      // vectorizer may reorder; as a contractible multiply and a
      // reassociable add, a dot product becomes vector FMAs into several
      // accumulators.
      auto flags = arith::FastMathFlags::reassoc |
                   arith::FastMathFlags::contract;
      Value product = arith::MulFOp::create(b, loc, fma.getA(), fma.getB(),
                                            flags);
      replacement = arith::AddFOp::create(b, loc, product, fma.getC(), flags);
    } else if (op->getDialect() &&
               isa<gpu::GPUDialect>(op->getDialect())) {
      return op->emitOpError("is not supported by the CPU target");
    } else {
      continue;
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels of several threads per workgroup (gpu dialect programs)
//===----------------------------------------------------------------------===//

/// Workgroup attributions are placed in the workgroup memory block at
/// offsets of this alignment.
constexpr int64_t kSharedAlign = 16;

/// The C library function `name` of `type`, declared in `module` on first
/// use.
LLVM::LLVMFuncOp libcFunction(ModuleOp module, StringRef name,
                              LLVM::LLVMFunctionType type, Location loc) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return fn;
  OpBuilder top(module.getContext());
  top.setInsertionPointToStart(module.getBody());
  return LLVM::LLVMFuncOp::create(top, loc, name, type);
}

/// Replaces `print` (the builder is at it) with a call of the C library's
/// printf: the format as a constant string of the module, floats widened
/// to double and small integers to int, as C's variadic calls promote them.
void lowerPrintf(OpBuilder &b, gpu::PrintfOp print) {
  Location loc = print.getLoc();
  MLIRContext *context = b.getContext();
  auto module = print->getParentOfType<ModuleOp>();
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto i32 = b.getI32Type();
  OpBuilder top(context);
  top.setInsertionPointToStart(module.getBody());
  auto printfFn = libcFunction(
      module, "printf",
      LLVM::LLVMFunctionType::get(i32, {ptr}, /*isVarArg=*/true), loc);
  std::string text = print.getFormat().str();
  text.push_back('\0');
  unsigned index = 0;
  std::string name;
  do
    name = "__hesper_printf_format_" + std::to_string(index++);
  while (module.lookupSymbol(name));
  auto format = LLVM::GlobalOp::create(
      top, loc, LLVM::LLVMArrayType::get(b.getI8Type(), text.size()),
      /*isConstant=*/true, LLVM::Linkage::Internal, name,
      b.getStringAttr(text));
  SmallVector<Value> args{LLVM::AddressOfOp::create(b, loc, format)};
  for (Value v : print.getArgs()) {
    Type type = v.getType();
    if (isa<FloatType>(type) && !type.isF64())
      v = arith::ExtFOp::create(b, loc, b.getF64Type(), v);
    else if (type.isIndex())
      v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
    else if (type.isInteger() && type.getIntOrFloatBitWidth() < 32)
      v = arith::ExtSIOp::create(b, loc, i32, v);
    args.push_back(v);
  }
  LLVM::CallOp::create(b, loc, printfFn, args);
}

/// The file, line and function a failed assertion names, as CUDA's
/// __assertfail prints them: the innermost callee of call sites, the name
/// of a named location, the file and line of a file location.
void assertLocation(Location loc, std::string &file, unsigned &line,
                    std::string &function) {
  while (true) {
    if (auto call = dyn_cast<CallSiteLoc>(loc)) {
      loc = call.getCallee();
    } else if (auto named = dyn_cast<NameLoc>(loc)) {
      if (function.empty())
        function = named.getName().str();
      loc = named.getChildLoc();
    } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
      if (fused.getLocations().empty())
        break;
      loc = fused.getLocations().front();
    } else {
      if (auto fileLoc = dyn_cast<FileLineColLoc>(loc)) {
        file = fileLoc.getFilename().str();
        line = fileLoc.getLine();
      }
      break;
    }
  }
  if (file.empty())
    file = "<unknown>";
  if (function.empty())
    function = "<unknown>";
}

/// `text` as a printf format that prints it as is.
std::string literalFormat(StringRef text) {
  std::string out;
  for (char c : text) {
    out.push_back(c);
    if (c == '%')
      out.push_back('%');
  }
  return out;
}

/// Replaces `assertOp` (the builder is at it) with: when its condition is
/// false, print CUDA's message for a failed assertion, then end the thread
/// (the barrier function called with a null state; it does not return).
void lowerAssert(OpBuilder &b, cf::AssertOp assertOp, Value barrier,
                 ArrayRef<Value> blockIds, ArrayRef<Value> threadIds) {
  Location loc = assertOp.getLoc();
  std::string file, function;
  unsigned line = 0;
  assertLocation(loc, file, line, function);
  std::string format = literalFormat(file) + ":" + std::to_string(line) +
                       ": " + literalFormat(function) +
                       ": block: [%ld,%ld,%ld], thread: [%ld,%ld,%ld] "
                       "Assertion `" +
                       literalFormat(assertOp.getMsg()) + "` failed.\n";
  Value failed = arith::XOrIOp::create(
      b, loc, assertOp.getArg(),
      arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  auto ifOp = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> ids(blockIds);
  ids.append(threadIds.begin(), threadIds.end());
  auto print = gpu::PrintfOp::create(b, loc, b.getStringAttr(format), ids);
  lowerPrintf(b, print);
  print->erase();
  MLIRContext *context = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto module = assertOp->getParentOfType<ModuleOp>();
  // stdout now, before the thread ends: the driver's error follows on
  // stderr.
  auto fflushFn = libcFunction(
      module, "fflush", LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr}),
      loc);
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  LLVM::CallOp::create(b, loc, fflushFn, ValueRange{null});
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context),
                                          {ptr});
  LLVM::CallOp::create(b, loc, type, ValueRange{barrier, null});
}

/// Rewrites a hand-written kernel's body moved into `func`, whose arguments
/// are its buffers, then workgroup x/y/z, grid x/y/z, thread x/y/z, the
/// workgroup memory (memref<Sxi8>), the barrier function and its state
/// (!llvm.ptr). Floating-point semantics are left as written: no
/// reassociation, no approximations.
LogicalResult rewriteThreadBody(func::FuncOp func, unsigned numBuffers,
                                ArrayRef<int32_t> block,
                                ArrayRef<int64_t> sharedOffsets,
                                unsigned numWorkgroup) {
  Block &entry = func.getBody().front();
  OpBuilder b(func.getContext());
  unsigned first = numBuffers;
  auto arg = [&](unsigned i) -> Value { return entry.getArgument(i); };
  Value shared = arg(first + 9), barrier = arg(first + 10),
        state = arg(first + 11);
  auto index = [&](Location loc, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // Attributions: workgroup ones as views of the workgroup memory, private
  // ones on the stack. They are the block arguments after the 12 above. Their
  // users must take any memref type (loads, stores, atomics): a view's
  // memory space differs from the attribution's.
  for (unsigned i = first + 12; i < entry.getNumArguments(); ++i)
    if (failed(hesper::checkAttributionUsers(entry.getArgument(i))))
      return failure();
  b.setInsertionPointToStart(&entry);
  unsigned attribution = first + 12;
  for (unsigned i = attribution; i < entry.getNumArguments(); ++i) {
    BlockArgument a = entry.getArgument(i);
    auto type = cast<MemRefType>(a.getType());
    auto plain = MemRefType::get(type.getShape(), type.getElementType());
    Value memory;
    if (i - attribution < numWorkgroup)
      memory = memref::ViewOp::create(
          b, a.getLoc(), plain, shared,
          index(a.getLoc(), sharedOffsets[i - attribution]), ValueRange{});
    else
      memory = memref::AllocaOp::create(b, a.getLoc(), plain);
    a.replaceAllUsesWith(memory);
  }
  while (entry.getNumArguments() > attribution)
    entry.eraseArgument(attribution);

  auto dim = [](gpu::Dimension d) { return static_cast<unsigned>(d); };
  auto threadCount = int64_t(block[0]) * block[1] * block[2];
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    b.setInsertionPoint(op);
    Location loc = op->getLoc();
    auto linearThread = [&]() -> Value {
      Value yz = arith::AddIOp::create(
          b, loc, arg(first + 7),
          arith::MulIOp::create(b, loc, index(loc, block[1]), arg(first + 8)));
      return arith::AddIOp::create(
          b, loc, arg(first + 6),
          arith::MulIOp::create(b, loc, index(loc, block[0]), yz));
    };
    Value replacement;
    if (Value oneLane = oneLaneSubgroupValue(b, op))
      replacement = oneLane;
    else if (auto id = dyn_cast<gpu::ThreadIdOp>(op))
      replacement = arg(first + 6 + dim(id.getDimension()));
    else if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      replacement = arg(first + dim(id.getDimension()));
    else if (auto grid = dyn_cast<gpu::GridDimOp>(op))
      replacement = arg(first + 3 + dim(grid.getDimension()));
    else if (auto bd = dyn_cast<gpu::BlockDimOp>(op))
      replacement = index(loc, block[dim(bd.getDimension())]);
    else if (auto id = dyn_cast<gpu::GlobalIdOp>(op)) {
      unsigned d = dim(id.getDimension());
      replacement = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, arg(first + d),
                                        index(loc, block[d])),
          arg(first + 6 + d));
    } else if (isa<gpu::SubgroupIdOp>(op))
      replacement = linearThread();
    else if (isa<gpu::NumSubgroupsOp>(op))
      replacement = index(loc, threadCount);
    else if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
      // One-lane subgroups: a shuffle of width 1 reads lane 0 (itself)
      // only when its offset leaves the lane where it is.
      APInt width;
      if (!matchPattern(shuffle.getWidth(), m_ConstantInt(&width)) ||
          width != 1)
        return op->emitOpError("needs a width of 1 on the CPU target, "
                               "whose subgroups have one lane; use "
                               "gpu.subgroup_size as the width");
      Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          shuffle.getOffset(), zero);
      shuffle.getResult(0).replaceAllUsesWith(shuffle.getValue());
      shuffle.getResult(1).replaceAllUsesWith(valid);
      op->erase();
      continue;
    } else if (isa<gpu::BarrierOp>(op)) {
      auto ptr = LLVM::LLVMPointerType::get(b.getContext());
      auto type = LLVM::LLVMFunctionType::get(
          LLVM::LLVMVoidType::get(b.getContext()), {ptr});
      LLVM::CallOp::create(b, loc, type, ValueRange{barrier, state});
      op->erase();
      continue;
    } else if (auto print = dyn_cast<gpu::PrintfOp>(op)) {
      // The C library's printf; the fibers of a workgroup run in thread
      // order, so the lines come in that order.
      lowerPrintf(b, print);
      op->erase();
      continue;
    } else if (auto assertOp = dyn_cast<cf::AssertOp>(op)) {
      lowerAssert(b, assertOp, barrier,
                  {arg(first), arg(first + 1), arg(first + 2)},
                  {arg(first + 6), arg(first + 7), arg(first + 8)});
      op->erase();
      continue;
    } else if (isa<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(b, loc);
      op->erase();
      continue;
    } else if (op->getDialect() && isa<gpu::GPUDialect>(op->getDialect())) {
      return op->emitOpError("is not supported by the CPU target");
    } else {
      continue;
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  }
  return success();
}

/// Turns a hand-written kernel into its thread body; records its
/// workgroup memory bytes in `abis`.
LogicalResult convertThreadedKernel(OpBuilder &b, gpu::GPUFuncOp kernel,
                                    NamedAttrList &abis) {
  DenseI32ArrayAttr known = kernel.getKnownBlockSizeAttr();
  if (!known)
    return kernel.emitOpError("has no known block size");
  int64_t sharedBytes = 0;
  SmallVector<int64_t> offsets;
  for (BlockArgument a : kernel.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(a.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat())
      return kernel.emitOpError("has a workgroup attribution of type ")
             << type
             << "; the CPU target needs a static shape of integers or "
                "floats";
    sharedBytes = llvm::alignTo(sharedBytes, kSharedAlign);
    offsets.push_back(sharedBytes);
    sharedBytes += type.getNumElements() *
                   llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  }
  for (BlockArgument a : kernel.getPrivateAttributions())
    if (!cast<MemRefType>(a.getType()).hasStaticShape())
      return kernel.emitOpError("has a private attribution of dynamic shape");
  unsigned numBuffers = kernel.getNumArguments();
  unsigned numWorkgroup = kernel.getNumWorkgroupAttributions();
  MLIRContext *context = kernel.getContext();
  auto ptr = LLVM::LLVMPointerType::get(context);
  SmallVector<Type> inputs(kernel.getArgumentTypes());
  inputs.append(9, b.getIndexType());
  inputs.push_back(MemRefType::get({std::max<int64_t>(sharedBytes, 1)},
                                   b.getI8Type()));
  inputs.append({ptr, ptr});
  auto func = func::FuncOp::create(b, kernel.getLoc(),
                                   threadBodyName(kernel.getName()),
                                   b.getFunctionType(inputs, {}));
  func.getBody().takeBody(kernel.getBody());
  Block &entry = func.getBody().front();
  // The new arguments go between the kernel's and its attributions.
  for (unsigned i = 0; i < 12; ++i)
    entry.insertArgument(numBuffers + i, inputs[numBuffers + i],
                         kernel.getLoc());
  if (failed(rewriteThreadBody(func, numBuffers, known.asArrayRef(), offsets,
                               numWorkgroup)))
    return failure();
  abis.set(kernel.getName(),
           b.getDictionaryAttr(
               {b.getNamedAttr("shared_bytes", b.getI64IntegerAttr(sharedBytes)),
                b.getNamedAttr("workgroup_size", known)}));
  return success();
}

/// Turns a one-lane kernel (Circuit's single-lane lowering) into its
/// workgroup body.
LogicalResult convertSingleLaneKernel(OpBuilder &b, gpu::GPUFuncOp kernel) {
  if (!kernel.getWorkgroupAttributions().empty() ||
      !kernel.getPrivateAttributions().empty())
    return kernel.emitOpError("has memory attributions; the CPU target "
                              "needs shared memory as memref.alloc");
  if (auto size = kernel.getKnownBlockSize())
    if ((*size)[0] != 1 || (*size)[1] != 1 || (*size)[2] != 1)
      return kernel.emitOpError("has more than one lane per workgroup; the "
                                "CPU target needs convert-circuit-to-shaderm"
                                "{single-lane=true}");
  unsigned numBuffers = kernel.getNumArguments();
  SmallVector<Type> inputs(kernel.getArgumentTypes());
  inputs.append(6, b.getIndexType());
  auto func = func::FuncOp::create(b, kernel.getLoc(),
                                   kernelBodyName(kernel.getName()),
                                   b.getFunctionType(inputs, {}));
  // The `vector_width` knob: the vector width LLVM's vectorizers prefer
  // (an LLVM function attribute, which the entry point inherits).
  if (auto abi = kernel->getAttrOfType<DictionaryAttr>("hesper.abi"))
    if (auto bits = abi.getAs<IntegerAttr>("vector_bits"))
      func->setAttr("passthrough",
                    b.getArrayAttr({b.getStrArrayAttr(
                        {"prefer-vector-width",
                         std::to_string(bits.getInt())})}));
  func.getBody().takeBody(kernel.getBody());
  Block &entry = func.getBody().front();
  for (int i = 0; i < 6; ++i)
    entry.addArgument(b.getIndexType(), kernel.getLoc());
  return rewriteBody(func, numBuffers);
}

/// Transcendental functions as polynomials in plain arithmetic, which the
/// loop vectorizer widens (a call to libm's expf it cannot).
LogicalResult approximateTranscendentals(ModuleOp kernels) {
  RewritePatternSet patterns(kernels.getContext());
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
    name.consume_front("math.");
    return llvm::is_contained(
        {"exp", "expm1", "tanh", "log", "log2", "log1p", "erf"}, name);
  });
  return applyPatternsGreedily(kernels, std::move(patterns));
}

struct GpuToCPUPass : hesper::impl::GpuToCPUPassBase<GpuToCPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    NamedAttrList abis;
    SmallVector<gpu::GPUModuleOp> gpuModules(
        module.getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp gpuModule : gpuModules) {
      b.setInsertionPoint(gpuModule);
      auto kernels = ModuleOp::create(b, gpuModule.getLoc(),
                                      gpuModule.getName());
      kernels->setAttr(kCPUKernelsAttr, b.getUnitAttr());
      b.setInsertionPointToEnd(kernels.getBody());
      SmallVector<gpu::GPUFuncOp> funcs(gpuModule.getOps<gpu::GPUFuncOp>());
      for (gpu::GPUFuncOp kernel : funcs) {
        if (!kernel.isKernel()) {
          kernel.emitOpError("is a device function, which the CPU target "
                             "does not compile yet (only kernels)");
          return signalPassFailure();
        }
        // A CPU kernel gets each buffer as a pointer alone: the shape is
        // the kernel's own.
        for (auto [i, type] : llvm::enumerate(kernel.getArgumentTypes()))
          if (auto memref = dyn_cast<MemRefType>(type);
              memref && !memref.hasStaticShape()) {
            kernel.emitOpError("has argument #")
                << i << " of type " << type
                << ", a dynamic shape, which the CPU target cannot pass "
                   "as it is (hesper-normalize-gpu-kernels with "
                   "sizes-for-dynamic-shapes passes it as a pointer and "
                   "its sizes)";
            return signalPassFailure();
          }
        if (failed(threads ? convertThreadedKernel(b, kernel, abis)
                           : convertSingleLaneKernel(b, kernel)))
          return signalPassFailure();
      }
      // Whatever else the module holds (globals, declarations) moves along.
      for (Operation &op : llvm::make_early_inc_range(*gpuModule.getBody()))
        if (!isa<gpu::GPUFuncOp>(op) && !op.hasTrait<OpTrait::IsTerminator>())
          op.moveBefore(kernels.getBody(), kernels.getBody()->end());
      gpuModule.erase();
      // Hand-written kernels keep their arithmetic as written.
      if (!threads && failed(approximateTranscendentals(kernels)))
        return signalPassFailure();
    }
    // Each hand-written kernel's workgroup memory, as Hesper's other
    // kernels state their ABI.
    // A Circuit kernel's ABI (its bindings) is already there: its entry
    // keeps them and takes these two fields.
    if (threads) {
      NamedAttrList merged;
      if (auto existing =
              module->getAttrOfType<DictionaryAttr>("hesper.kernels"))
        merged.append(existing.getValue());
      for (NamedAttribute abi : abis) {
        auto old = dyn_cast_or_null<DictionaryAttr>(merged.get(abi.getName()));
        if (!old) {
          merged.set(abi.getName(), abi.getValue());
          continue;
        }
        NamedAttrList entry(old.getValue());
        for (NamedAttribute field : cast<DictionaryAttr>(abi.getValue()))
          entry.set(field.getName(), field.getValue());
        merged.set(abi.getName(), entry.getDictionary(&getContext()));
      }
      module->setAttr("hesper.kernels", merged.getDictionary(&getContext()));
    }
  }
};
} // namespace

} // namespace hesper::cpu
