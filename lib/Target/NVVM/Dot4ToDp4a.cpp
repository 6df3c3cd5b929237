//===- Dot4ToDp4a.cpp - Byte dot products as dp4a
//--------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// exp.dot4_i8 (four signed byte products of two 32-bit words added to an
// i32, wrapping) is exactly PTX's `dp4a.s32.s32`: each word goes in as the
// vector of its four bytes (an llvm.bitcast, free in PTX) to
// nvvm.dot.accumulate.4way with both operands signed. The integer kernels
// of quantized weights with q8_1 activations (CircuitToShaderM) take one
// instruction per four products this way.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Exp/IR/Exp.h"
#include "NVVMPasses.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace {
struct Dot4ToDp4aPass : PassWrapper<Dot4ToDp4aPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Dot4ToDp4aPass)

  StringRef getArgument() const override { return "hesper-nvvm-dot4-to-dp4a"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  }
  void runOnOperation() override {
    getOperation().walk([](hesper::exp::Dot4I8Op op) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto bytes = VectorType::get({4}, b.getI8Type());
      auto asBytes = [&](Value word) -> Value {
        return LLVM::BitcastOp::create(b, loc, bytes, word);
      };
      auto isSigned = NVVM::DotAccumulateTypeAttr::get(
          b.getContext(), NVVM::DotAccumulateType::SIGNED);
      Value sum = NVVM::DotAccumulate4WayOp::create(
          b, loc, b.getI32Type(), asBytes(op.getA()), isSigned,
          asBytes(op.getB()), isSigned, op.getAcc());
      op.replaceAllUsesWith(sum);
      op.erase();
    });
  }
};
} // namespace

std::unique_ptr<Pass> hesper::nvvm::createDot4ToDp4aPass() {
  return std::make_unique<Dot4ToDp4aPass>();
}
