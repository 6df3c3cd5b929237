//===- GPUTargets.cpp - Target-specific steps of the kernel pipelines -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The small steps between the gpu dialect and a backend that upstream does
// not take care of: fixing the subgroup size, expanding subgroup reductions
// for NVVM, attaching the Vulkan ABI before convert-gpu-to-spirv, and
// serializing the resulting spirv.module into a gpu.binary.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
#define GEN_PASS_DEF_SPECIALIZESUBGROUPSIZEPASS
#define GEN_PASS_DEF_EXPANDSUBGROUPREDUCEPASS
#define GEN_PASS_DEF_PREPARESPIRVKERNELSPASS
#define GEN_PASS_DEF_SERIALIZESPIRVPASS
#include "Hesper/Conversion/Passes.h.inc"
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

struct ExpandSubgroupReducePass
    : hesper::impl::ExpandSubgroupReducePassBase<ExpandSubgroupReducePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuBreakDownSubgroupReducePatterns(patterns,
                                               /*maxShuffleBitwidth=*/32);
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, subgroupSize,
                                                    /*shuffleBitwidth=*/32);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // NVVM has no subgroup-id register: the linear thread id divided by
    // the size (warps are consecutive runs of linear ids).
    getOperation().walk([&](gpu::SubgroupIdOp op) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto id = [&](gpu::Dimension d) -> Value {
        return gpu::ThreadIdOp::create(b, loc, d);
      };
      auto dim = [&](gpu::Dimension d) -> Value {
        return gpu::BlockDimOp::create(b, loc, d);
      };
      Value yz = arith::AddIOp::create(
          b, loc, id(gpu::Dimension::y),
          arith::MulIOp::create(b, loc, dim(gpu::Dimension::y),
                                id(gpu::Dimension::z)));
      Value linear = arith::AddIOp::create(
          b, loc, id(gpu::Dimension::x),
          arith::MulIOp::create(b, loc, dim(gpu::Dimension::x), yz));
      Value size = arith::ConstantIndexOp::create(b, loc, subgroupSize);
      op.replaceAllUsesWith(
          arith::DivUIOp::create(b, loc, linear, size).getResult());
      op.erase();
    });
    WalkResult left = getOperation().walk([](gpu::SubgroupReduceOp op) {
      op.emitOpError("could not be expanded into shuffles (only 32-bit "
                     "values and vectors of them are)");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

struct PrepareSPIRVKernelsPass
    : hesper::impl::PrepareSPIRVKernelsPassBase<PrepareSPIRVKernelsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    // Passes that look the target up by attribute (convert-math-to-spirv)
    // see the gpu.module's SPIR-V target, not the default one.
    getOperation().walk([&](gpu::GPUModuleOp gpuModule) {
      if (ArrayAttr targets = gpuModule.getTargetsAttr())
        for (Attribute t : targets)
          if (auto env = dyn_cast<spirv::TargetEnvAttr>(t))
            gpuModule->setAttr(spirv::getTargetEnvAttrName(), env);
    });
    getOperation().walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return;
      SmallVector<int32_t, 3> size{1, 1, 1};
      if (auto known = func.getKnownBlockSizeAttr())
        size.assign(known.asArrayRef().begin(), known.asArrayRef().end());
      func->setAttr(spirv::getEntryPointABIAttrName(),
                    spirv::getEntryPointABIAttr(context, size));
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.setArgAttr(i, spirv::getInterfaceVarABIAttrName(),
                        spirv::getInterfaceVarABIAttr(
                            /*descriptorSet=*/0, /*binding=*/i,
                            std::nullopt, context));
    });
    // Vulkan's logical addressing cannot reinterpret a pointer to a buffer
    // element as a pointer to a vector (how vector.load lowers): vector
    // loads and stores of memrefs become one access per element.
    getOperation().walk([&](Operation *op) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto at = [&](Value index, int64_t i) -> Value {
        return arith::AddIOp::create(
            b, loc, index, arith::ConstantIndexOp::create(b, loc, i));
      };
      if (auto load = dyn_cast<vector::LoadOp>(op)) {
        if (load.getIndices().size() != 1)
          return;
        VectorType type = load.getVectorType();
        SmallVector<Value> elements;
        for (int64_t i = 0; i < type.getNumElements(); ++i)
          elements.push_back(memref::LoadOp::create(
              b, loc, load.getBase(), ValueRange{at(load.getIndices()[0], i)}));
        load.replaceAllUsesWith(
            vector::FromElementsOp::create(b, loc, type, elements).getResult());
        load.erase();
      } else if (auto store = dyn_cast<vector::StoreOp>(op)) {
        if (store.getIndices().size() != 1)
          return;
        VectorType type = store.getVectorType();
        for (int64_t i = 0; i < type.getNumElements(); ++i)
          memref::StoreOp::create(
              b, loc, vector::ExtractOp::create(b, loc, store.getValueToStore(), i),
              store.getBase(), ValueRange{at(store.getIndices()[0], i)});
        store.erase();
      }
    });
  }
};

struct SerializeSPIRVPass
    : hesper::impl::SerializeSPIRVPassBase<SerializeSPIRVPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp gpuModule : gpuModules) {
      // convert-gpu-to-spirv names its output after the gpu.module.
      std::string name = ("__spv__" + gpuModule.getName()).str();
      spirv::ModuleOp spirvModule;
      for (auto candidate : module.getOps<spirv::ModuleOp>())
        if (candidate.getName() == name)
          spirvModule = candidate;
      if (!spirvModule) {
        gpuModule.emitOpError("has no SPIR-V module; run "
                              "convert-gpu-to-spirv first");
        return signalPassFailure();
      }
      SmallVector<uint32_t> words;
      if (failed(spirv::serialize(spirvModule, words)))
        return signalPassFailure();
      Attribute target = spirv::lookupTargetEnvOrDefault(gpuModule);
      if (ArrayAttr targets = gpuModule.getTargetsAttr())
        for (Attribute t : targets)
          if (isa<spirv::TargetEnvAttr>(t))
            target = t;
      StringRef bytes(reinterpret_cast<const char *>(words.data()),
                      words.size() * sizeof(uint32_t));
      auto object = gpu::ObjectAttr::get(&getContext(), target,
                                         gpu::CompilationTarget::Binary,
                                         b.getStringAttr(bytes), nullptr,
                                         nullptr);
      b.setInsertionPoint(gpuModule);
      gpu::BinaryOp::create(b, gpuModule.getLoc(), gpuModule.getName(),
                            Attribute(), b.getArrayAttr({object}));
      spirvModule.erase();
      gpuModule.erase();
    }
  }
};

} // namespace
