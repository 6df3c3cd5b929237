//===- Dot4ToSDot.cpp - Byte dot products as SPIR-V's OpSDot --------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// exp.dot4_i8 (four signed byte products of two 32-bit words added to an
// i32, wrapping) as SPIR-V's integer dot product on packed bytes:
// `spirv.SDot %a, %b, <PackedVectorFormat4x8Bit> : i32` (the four products'
// sum, at most 4 * 128 * 128 in magnitude, so exact in i32), then an
// ordinary add of the accumulator (OpSDotAccSat would saturate where
// exp.dot4_i8 wraps). It needs the DotProduct and
// DotProductInput4x8BitPacked capabilities and SPV_KHR_integer_dot_product
// (core in SPIR-V 1.6), which the Vulkan device offers as the
// shaderIntegerDotProduct feature (core in Vulkan 1.3). Run before
// convert-exp-to-std would expand it into byte extracts, multiplies and
// adds; convert-gpu-to-spirv keeps the op as it is.
//
//===----------------------------------------------------------------------===//

#include "SPIRVPasses.h"

#include "Hesper/Dialect/Exp/IR/Exp.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace {
struct Dot4ToSDotPass : PassWrapper<Dot4ToSDotPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Dot4ToSDotPass)

  StringRef getArgument() const override { return "hesper-spirv-dot4-to-sdot"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<spirv::SPIRVDialect, arith::ArithDialect>();
  }
  void runOnOperation() override {
    getOperation().walk([](hesper::exp::Dot4I8Op op) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto packed = spirv::PackedVectorFormatAttr::get(
          b.getContext(), spirv::PackedVectorFormat::PackedVectorFormat4x8Bit);
      Value dot = spirv::SDotOp::create(b, loc, b.getI32Type(), op.getA(),
                                        op.getB(), packed);
      op.replaceAllUsesWith(
          arith::AddIOp::create(b, loc, dot, op.getAcc()).getResult());
      op.erase();
    });
  }
};
} // namespace

std::unique_ptr<Pass> hesper::spirv_target::createDot4ToSDotPass() {
  return std::make_unique<Dot4ToSDotPass>();
}

namespace {
/// spirv-update-vce lowers a module's version to the least its ops need,
/// but spirv-lower-abi-attrs has already listed the entry points'
/// interfaces by the target's version: from 1.4 on every global variable
/// the entry point uses, before it only Input and Output ones. A 1.6 target
/// (the integer dot product) whose module needs no 1.6 op would be
/// declared 1.0 with a 1.4 interface, which validators refuse; the module
/// keeps its target's version instead.
struct KeepTargetVersionPass
    : PassWrapper<KeepTargetVersionPass, OperationPass<spirv::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(KeepTargetVersionPass)

  StringRef getArgument() const override {
    return "hesper-spirv-keep-target-version";
  }
  void runOnOperation() override {
    spirv::ModuleOp module = getOperation();
    std::optional<spirv::VerCapExtAttr> vce = module.getVceTriple();
    spirv::TargetEnvAttr target = spirv::lookupTargetEnv(module);
    if (!vce || !target || target.getVersion() < spirv::Version::V_1_4 ||
        vce->getVersion() >= target.getVersion())
      return;
    SmallVector<spirv::Capability> capabilities =
        llvm::to_vector(vce->getCapabilities());
    SmallVector<spirv::Extension> extensions =
        llvm::to_vector(vce->getExtensions());
    module.setVceTripleAttr(spirv::VerCapExtAttr::get(
        target.getVersion(), capabilities, extensions, &getContext()));
  }
};
} // namespace

std::unique_ptr<Pass> hesper::spirv_target::createKeepTargetVersionPass() {
  return std::make_unique<KeepTargetVersionPass>();
}
