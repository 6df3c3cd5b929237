//===- VectorDot.cpp - Byte dot products as VNNI instructions -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// exp.vector_dot4_i8 of 32 bytes into 8 lanes (the CPU target's integer
// dot products of quantized weights with q8_1 activations) becomes one
// `vpdpbusd` where the ISA has AVX512-VNNI with AVX512-VL, or AVX-VNNI;
// of 64 bytes into 16 lanes (the prompt chunk's integer tile), one
// 512-bit `vpdpbusd` where it has AVX512-VNNI.
// That instruction multiplies unsigned bytes by signed ones, so the
// operands go in as |a| and b with a's signs (`vpabsb`, `vpsignb`): the
// products are a[i] * b[i] whenever b[i] is not -128, which the op
// requires. Where `a`'s bytes are known to be 0..127 (constants, masked
// or shifted codes: bytesNonNegative), or the op reads them as unsigned
// (`a_unsigned`), they go in as they are. It runs
// before convert-exp-to-std, which widens, multiplies and adds the ops
// left over (other ISAs, other widths).
//
//===----------------------------------------------------------------------===//

#include "CPUPasses.h"
#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace {
/// Whether every byte of `v` is known to be 0..127 (its sign bit clear), so
/// that it means the same read as unsigned: a constant of such bytes, a
/// mask that clears the sign bits, a logical right shift, or an or or xor
/// of two such values (the codes of q4_k and q5_k weights, and the
/// integer tile's nibbles of q8_0 weights, are built so).
bool bytesNonNegative(Value v, int depth = 0) {
  if (depth > 4)
    return false;
  DenseIntElementsAttr constant;
  if (matchPattern(v, m_Constant(&constant)))
    return llvm::all_of(constant.getValues<APInt>(),
                        [](const APInt &b) { return !b.isNegative(); });
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (auto andOp = dyn_cast<arith::AndIOp>(def))
    return bytesNonNegative(andOp.getLhs(), depth + 1) ||
           bytesNonNegative(andOp.getRhs(), depth + 1);
  if (auto orOp = dyn_cast<arith::OrIOp>(def))
    return bytesNonNegative(orOp.getLhs(), depth + 1) &&
           bytesNonNegative(orOp.getRhs(), depth + 1);
  if (auto xorOp = dyn_cast<arith::XOrIOp>(def))
    return bytesNonNegative(xorOp.getLhs(), depth + 1) &&
           bytesNonNegative(xorOp.getRhs(), depth + 1);
  if (auto shift = dyn_cast<arith::ShRUIOp>(def)) {
    if (!matchPattern(shift.getRhs(), m_Constant(&constant)))
      return false;
    return llvm::all_of(constant.getValues<APInt>(),
                        [](const APInt &s) { return s.uge(1); });
  }
  return false;
}

struct VectorDotToVNNIPass
    : PassWrapper<VectorDotToVNNIPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(VectorDotToVNNIPass)

  explicit VectorDotToVNNIPass(bool wide) : wide(wide) {}
  StringRef getArgument() const override { return "hesper-cpu-vector-dot"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect, math::MathDialect>();
  }
  void runOnOperation() override {
    getOperation().walk([&](hesper::exp::VectorDot4I8Op op) {
      int64_t lanes = op.getAcc().getType().getNumElements();
      StringRef dotName;
      if (lanes == 8)
        dotName = "llvm.x86.avx512.vpdpbusd.256";
      else if (lanes == 16 && wide)
        dotName = "llvm.x86.avx512.vpdpbusd.512";
      else
        return;
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value a = op.getA(), bytes = op.getB();
      Value magnitudes = a, signs = bytes;
      // Bytes of `a` known to be 0..127 go in as they are (no sign to
      // move; then b may hold -128 too).
      if (!op.getAUnsigned() && !bytesNonNegative(a)) {
        if (lanes != 8) // vpsignb has no 512-bit form
          return;
        magnitudes = math::AbsIOp::create(b, loc, a);
        signs =
            LLVM::CallIntrinsicOp::create(
                b, loc, bytes.getType(),
                b.getStringAttr("llvm.x86.avx2.psign.b"), ValueRange{bytes, a})
                .getResult(0);
      }
      Value sum = LLVM::CallIntrinsicOp::create(
                      b, loc, op.getType(),
                      b.getStringAttr(dotName),
                      ValueRange{op.getAcc(), magnitudes, signs})
                      .getResult(0);
      op.replaceAllUsesWith(sum);
      op.erase();
    });
  }

  /// 512-bit vpdpbusd is available (AVX512-VNNI).
  bool wide;
};
} // namespace

bool hesper::cpu::hasByteDotInstruction(const ISA &isa) {
  SmallVector<StringRef> features;
  StringRef(isa.features).split(features, ',');
  auto has = [&](StringRef name) {
    return llvm::is_contained(features, ("+" + name).str());
  };
  return (has("avx512vnni") && has("avx512vl")) || has("avxvnni");
}

bool hesper::cpu::hasWideByteDotInstruction(const ISA &isa) {
  SmallVector<StringRef> features;
  StringRef(isa.features).split(features, ',');
  return llvm::is_contained(features, "+avx512vnni");
}

std::unique_ptr<Pass> hesper::cpu::createVectorDotToVNNIPass(bool wide) {
  return std::make_unique<VectorDotToVNNIPass>(wide);
}
