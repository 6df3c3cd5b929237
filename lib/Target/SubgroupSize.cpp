//===- SubgroupSize.cpp - The subgroup size every GPU target fixes -------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-specialize-subgroup-size: the SPIR-V and NVVM pipelines replace
// gpu.subgroup_size by their target's constant and record it in the ABI.
// hesper-emulate-wide-shuffles: the SPIR-V and CPU targets carry out
// shuffles wider than their subgroups through workgroup memory.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Passes.h"

#include "Attributions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace hesper {
#define GEN_PASS_DEF_EMULATEWIDESHUFFLESPASS
#define GEN_PASS_DEF_SPECIALIZESUBGROUPSIZEPASS
#include "Hesper/Target/Passes.h.inc"
} // namespace hesper

using namespace mlir;
using namespace hesper;

namespace {

struct SpecializeSubgroupSizePass
    : hesper::impl::SpecializeSubgroupSizePassBase<
          SpecializeSubgroupSizePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    bool failedAny = false;
    module.walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return;
      auto abi = func->getAttrOfType<DictionaryAttr>("hesper.abi");
      if (abi) {
        if (auto stated = abi.getAs<IntegerAttr>("subgroup_size")) {
          if (stated.getInt() != subgroupSize) {
            func.emitOpError("assumes a subgroup of ")
                << stated.getInt() << " lanes, but the target has "
                << static_cast<unsigned>(subgroupSize);
            failedAny = true;
            return;
          }
        }
      }
      func.walk([&](gpu::SubgroupSizeOp op) {
        b.setInsertionPoint(op);
        Value size = arith::ConstantIndexOp::create(b, op.getLoc(),
                                                    subgroupSize);
        op.replaceAllUsesWith(size);
        op.erase();
      });
      NamedAttrList fields(abi ? abi.getValue() : ArrayRef<NamedAttribute>());
      fields.set("subgroup_size", b.getI32IntegerAttr(subgroupSize));
      func->setAttr("hesper.abi", fields.getDictionary(&getContext()));
    });
    if (failedAny)
      return signalPassFailure();
    // Keep the module-level copy of the ABI in step.
    if (auto kernels = module->getAttrOfType<DictionaryAttr>("hesper.kernels")) {
      NamedAttrList updated;
      for (NamedAttribute entry : kernels) {
        NamedAttrList fields(cast<DictionaryAttr>(entry.getValue()).getValue());
        fields.set("subgroup_size", b.getI32IntegerAttr(subgroupSize));
        updated.set(entry.getName(), fields.getDictionary(&getContext()));
      }
      module->setAttr("hesper.kernels", updated.getDictionary(&getContext()));
    }
  }
};

} // namespace

namespace {

/// Whether `width` is the target's subgroup size: that constant, or
/// gpu.subgroup_size (through casts).
bool isSubgroupWidth(Value width, unsigned subgroupSize) {
  APInt c;
  if (matchPattern(width, m_ConstantInt(&c)))
    return c == subgroupSize;
  while (Operation *def = width.getDefiningOp()) {
    if (isa<gpu::SubgroupSizeOp>(def))
      return true;
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::TruncIOp,
             arith::ExtUIOp, arith::ExtSIOp>(def))
      return false;
    width = def->getOperand(0);
  }
  return false;
}

/// Whether every thread of the workgroup reaches `op` as often as every
/// other: it sits in the kernel's body, at most inside scf.for loops with
/// constant bounds.
bool reachedByAllThreads(Operation *op, gpu::GPUFuncOp func) {
  if (op->getBlock() != &func.getBody().front()) {
    for (Operation *p = op->getParentOp(); p != func; p = p->getParentOp()) {
      auto loop = dyn_cast<scf::ForOp>(p);
      if (!loop || !matchPattern(loop.getLowerBound(), m_Constant()) ||
          !matchPattern(loop.getUpperBound(), m_Constant()) ||
          !matchPattern(loop.getStep(), m_Constant()))
        return false;
    }
    // Its block must be the loop body's only one (no branches inside).
    return op->getBlock()->getParent()->hasOneBlock();
  }
  return true;
}

struct EmulateWideShufflesPass
    : hesper::impl::EmulateWideShufflesPassBase<EmulateWideShufflesPass> {
  using Base::Base;

  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return;
      SmallVector<gpu::ShuffleOp> wide;
      func.walk([&](gpu::ShuffleOp op) {
        if (!isSubgroupWidth(op.getWidth(), subgroupSize))
          wide.push_back(op);
      });
      for (gpu::ShuffleOp op : wide)
        if (failed(emulate(op, func))) {
          failedAny = true;
          return;
        }
    });
    if (failedAny)
      signalPassFailure();
  }

  LogicalResult emulate(gpu::ShuffleOp op, gpu::GPUFuncOp func) {
    auto diagnose = [&]() {
      InFlightDiagnostic diag = op.emitOpError("is wider than this target's "
                                               "subgroups of ")
                                << static_cast<unsigned>(subgroupSize)
                                << " lane(s), so the workgroup carries it "
                                   "out through workgroup memory; ";
      return diag;
    };
    DenseI32ArrayAttr known = func.getKnownBlockSizeAttr();
    if (!known)
      return diagnose() << "that needs the kernel's block size "
                           "(known_block_size)";
    ArrayRef<int32_t> block = known.asArrayRef();
    if (!reachedByAllThreads(op, func))
      return diagnose()
             << "its barriers need every thread to reach it, so it must not "
                "be under a branch or in a loop without constant bounds";
    Type type = op.getValue().getType();
    if (!type.isIntOrFloat())
      return diagnose() << "it takes scalars, not " << type;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value buffer = addPerThreadBuffer(func, type, block, loc);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Value linear = linearThreadId(b, loc, block);
    // Lanes of a warp of 32, or of the width where it is a larger constant.
    int64_t lanes = 32;
    APInt constantWidth;
    if (matchPattern(op.getWidth(), m_ConstantInt(&constantWidth)) &&
        constantWidth.getSExtValue() > lanes)
      lanes = constantWidth.getSExtValue();
    Value laneIndex = arith::RemUIOp::create(b, loc, linear, index(lanes));
    Value first = arith::SubIOp::create(b, loc, linear, laneIndex);
    Value lane =
        arith::IndexCastOp::create(b, loc, b.getI32Type(), laneIndex);
    Value offset = op.getOffset(), width = op.getWidth();
    Value source;
    switch (op.getMode()) {
    case gpu::ShuffleMode::XOR:
      source = arith::XOrIOp::create(b, loc, lane, offset);
      break;
    case gpu::ShuffleMode::DOWN:
      source = arith::AddIOp::create(b, loc, lane, offset);
      break;
    case gpu::ShuffleMode::UP:
      source = arith::SubIOp::create(b, loc, lane, offset);
      break;
    case gpu::ShuffleMode::IDX:
      source = offset;
      break;
    }
    // In [0, width): one unsigned compare.
    Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        source, width);
    Value from = arith::SelectOp::create(b, loc, valid, source, lane);
    Value at = arith::AddIOp::create(
        b, loc, first,
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), from));

    // Earlier readers of the buffer (a shuffle in a loop) are done before
    // it is written, and every thread's value is in before any is read.
    gpu::BarrierOp::create(b, loc);
    memref::StoreOp::create(b, loc, op.getValue(), buffer, linear);
    gpu::BarrierOp::create(b, loc);
    Value result = memref::LoadOp::create(b, loc, buffer, at);
    op.getShuffleResult().replaceAllUsesWith(result);
    op.getValid().replaceAllUsesWith(valid);
    op.erase();
    return success();
  }
};

} // namespace
