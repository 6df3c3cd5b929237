//===- PrintfToBuffer.cpp - gpu.printf on Vulkan through a buffer ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A Vulkan kernel cannot print. Each kernel that calls gpu.printf gets one
// more argument, a buffer of kPrintfWords 32-bit words that the runtime
// binds, clears before the launch and reads after it (runtime/lib/mgpu).
// Word 0 counts the words written; a printf reserves its record with an
// atomic add on it and, where the record fits, writes
//
//   [format index, workgroup (linear), thread (linear), argument words...]
//
// f32 as its bits, f16 widened to f32, integers of up to 32 bits
// sign-extended to one word, i64 and index as two (low, high). The module
// gets `hesper.printf`: per kernel its buffer's words and its formats in
// call order, each with the kinds of its argument words ("f", "i", "l"),
// from which the runtime prints the records in a fixed order: workgroup,
// then the thread's n-th record, then thread -- CUDA's order within a
// warp, and the same on every run. A record that does not fit is counted
// and dropped; the runtime says how many.
//
//===----------------------------------------------------------------------===//

#include "SPIRVPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace {

constexpr int64_t kPrintfWords = 1 << 18; // 1 MiB

struct PrintfToBufferPass
    : PassWrapper<PrintfToBufferPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrintfToBufferPass)

  StringRef getArgument() const override {
    return "hesper-spirv-printf-to-buffer";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect,
                    scf::SCFDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SmallVector<NamedAttribute> kernels;
    WalkResult result = module.walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return WalkResult::advance();
      SmallVector<gpu::PrintfOp> printfs;
      func.walk([&](gpu::PrintfOp op) { printfs.push_back(op); });
      if (printfs.empty())
        return WalkResult::advance();
      SmallVector<Attribute> formats;
      if (failed(rewrite(func, printfs, formats)))
        return WalkResult::interrupt();
      Builder b(context);
      kernels.push_back(b.getNamedAttr(
          func.getName(),
          b.getDictionaryAttr(
              {b.getNamedAttr("words", b.getI64IntegerAttr(kPrintfWords)),
               b.getNamedAttr("formats", b.getArrayAttr(formats))})));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    if (!kernels.empty())
      module->setAttr("hesper.printf", DictionaryAttr::get(context, kernels));
  }

  /// x + nx (y + ny z) of an id op and its size op, as an i32.
  template <typename IdOp, typename SizeOp>
  static Value linear(OpBuilder &b, Location loc) {
    Value x = IdOp::create(b, loc, gpu::Dimension::x);
    Value y = IdOp::create(b, loc, gpu::Dimension::y);
    Value z = IdOp::create(b, loc, gpu::Dimension::z);
    Value nx = SizeOp::create(b, loc, gpu::Dimension::x);
    Value ny = SizeOp::create(b, loc, gpu::Dimension::y);
    Value yz =
        arith::AddIOp::create(b, loc, y, arith::MulIOp::create(b, loc, ny, z));
    Value all =
        arith::AddIOp::create(b, loc, x, arith::MulIOp::create(b, loc, nx, yz));
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), all);
  }

  /// The argument words of `value` (appended to `words`) and their kinds.
  LogicalResult toWords(OpBuilder &b, Location loc, Value value,
                        SmallVector<Value> &words, std::string &kinds,
                        Operation *op) {
    Type i32 = b.getI32Type();
    Type type = value.getType();
    if (type.isF16() || type.isBF16()) {
      value = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
      type = value.getType();
    }
    if (type.isF32()) {
      words.push_back(arith::BitcastOp::create(b, loc, i32, value));
      kinds += 'f';
      return success();
    }
    if (type.isIndex()) {
      value = arith::IndexCastOp::create(b, loc, b.getI64Type(), value);
      type = value.getType();
    }
    auto integer = dyn_cast<IntegerType>(type);
    if (integer && integer.getWidth() <= 32) {
      if (integer.getWidth() < 32)
        value = arith::ExtSIOp::create(b, loc, i32, value);
      words.push_back(value);
      kinds += 'i';
      return success();
    }
    if (integer && integer.getWidth() == 64) {
      words.push_back(arith::TruncIOp::create(b, loc, i32, value));
      Value high = arith::ShRUIOp::create(
          b, loc, value, arith::ConstantIntOp::create(b, loc, value.getType(), 32));
      words.push_back(arith::TruncIOp::create(b, loc, i32, high));
      kinds += 'l';
      return success();
    }
    return op->emitOpError("prints a value of type ")
           << type << ", which Vulkan kernels cannot print (f16, f32 and "
           << "integers of up to 64 bits can)";
  }

  LogicalResult rewrite(gpu::GPUFuncOp func, ArrayRef<gpu::PrintfOp> printfs,
                        SmallVector<Attribute> &formats) {
    OpBuilder b(func.getContext());
    Type i32 = b.getI32Type();
    auto bufferType = MemRefType::get({kPrintfWords}, i32);
    if (failed(func.insertArgument(func.getNumArguments(), bufferType, {},
                                   func.getLoc())))
      return func.emitOpError("cannot take the print buffer as an argument");
    Value buffer = func.getArgument(func.getNumArguments() - 1);
    for (auto [index, printf] : llvm::enumerate(printfs)) {
      gpu::PrintfOp op = printf;
      Location loc = op.getLoc();
      b.setInsertionPoint(op);
      SmallVector<Value> words;
      std::string kinds;
      for (Value arg : op.getArgs())
        if (failed(toWords(b, loc, arg, words, kinds, op)))
          return failure();
      formats.push_back(b.getArrayAttr(
          {op.getFormatAttr(), b.getStringAttr(kinds)}));
      // The workgroup and the thread, each as one linear number.
      Value group = linear<gpu::BlockIdOp, gpu::GridDimOp>(b, loc);
      Value thread = linear<gpu::ThreadIdOp, gpu::BlockDimOp>(b, loc);
      SmallVector<Value> record{
          arith::ConstantIntOp::create(b, loc, i32, index), group, thread};
      record.append(words);
      int64_t size = static_cast<int64_t>(record.size());
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value used = memref::AtomicRMWOp::create(
          b, loc, arith::AtomicRMWKind::addi,
          arith::ConstantIntOp::create(b, loc, i32, size), buffer,
          ValueRange{zero});
      // Word 0 is the count: the record starts after it.
      Value start = arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          arith::AddIOp::create(b, loc, used,
                                arith::ConstantIntOp::create(b, loc, i32, 1)));
      Value end = arith::AddIOp::create(
          b, loc, start, arith::ConstantIndexOp::create(b, loc, size));
      Value fits = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ule, end,
          arith::ConstantIndexOp::create(b, loc, kPrintfWords));
      auto ifFits = scf::IfOp::create(b, loc, fits);
      b.setInsertionPointToStart(ifFits.thenBlock());
      for (auto [k, word] : llvm::enumerate(record)) {
        Value at = arith::AddIOp::create(
            b, loc, start, arith::ConstantIndexOp::create(b, loc, k));
        memref::StoreOp::create(b, loc, word, buffer, ValueRange{at});
      }
      op.erase();
    }
    return success();
  }
};

} // namespace

std::unique_ptr<Pass> hesper::spirv_target::createPrintfToBufferPass() {
  return std::make_unique<PrintfToBufferPass>();
}
