//===- SubgroupSize.cpp - The subgroup size every GPU target fixes -------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-specialize-subgroup-size: the SPIR-V and NVVM pipelines replace
// gpu.subgroup_size by their target's constant and record it in the ABI.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace hesper {
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
