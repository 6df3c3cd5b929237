//===- SPIRVPasses.cpp - The Vulkan ABI and SPIR-V serialization ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-prepare-spirv-kernels attaches the Vulkan entry-point and binding
// ABI before convert-gpu-to-spirv; hesper-serialize-spirv turns the
// resulting spirv.module into a gpu.binary of SPIR-V words.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Target/SPIRV/Serialization.h"

namespace hesper {
#define GEN_PASS_DEF_PREPARESPIRVKERNELSPASS
#define GEN_PASS_DEF_SERIALIZESPIRVPASS
#include "Hesper/Target/Passes.h.inc"
} // namespace hesper

using namespace mlir;
using namespace hesper;

namespace {

struct PrepareSPIRVKernelsPass
    : hesper::impl::PrepareSPIRVKernelsPassBase<PrepareSPIRVKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    // Passes that look the target up by attribute (convert-math-to-spirv)
    // see the gpu.module's SPIR-V target, not the default one.
    getOperation().walk([&](gpu::GPUModuleOp gpuModule) {
      ArrayAttr targets = gpuModule.getTargetsAttr();
      if (!targets)
        return;
      SmallVector<Attribute> updated;
      for (Attribute t : targets) {
        if (auto env = dyn_cast<spirv::TargetEnvAttr>(t)) {
          // The device's subgroup size in the resource limits, where the
          // gpu.shuffle conversion checks a shuffle's width.
          if (subgroupSize) {
            spirv::ResourceLimitsAttr limits = env.getResourceLimits();
            limits = spirv::ResourceLimitsAttr::get(
                context, limits.getMaxComputeSharedMemorySize(),
                limits.getMaxComputeWorkgroupInvocations(),
                limits.getMaxComputeWorkgroupSize(), subgroupSize,
                limits.getMinSubgroupSize(), limits.getMaxSubgroupSize(),
                limits.getCooperativeMatrixPropertiesKhr(),
                limits.getCooperativeMatrixPropertiesNv());
            env = spirv::TargetEnvAttr::get(
                env.getTripleAttr(), limits, env.getClientAPI(),
                env.getVendorID(), env.getDeviceType(), env.getDeviceID());
          }
          gpuModule->setAttr(spirv::getTargetEnvAttrName(), env);
          t = env;
        }
        updated.push_back(t);
      }
      gpuModule.setTargetsAttr(ArrayAttr::get(context, updated));
    });
    // A shuffle's width must be the subgroup size (the SPIR-V ops shuffle
    // whole subgroups): a program written for 32-lane warps says which op
    // does not fit the device, rather than failing to legalize.
    if (subgroupSize) {
      WalkResult wrongWidth = getOperation().walk([&](gpu::ShuffleOp op) {
        APInt width;
        if (matchPattern(op.getWidth(), m_ConstantInt(&width)) &&
            width.getZExtValue() != subgroupSize) {
          op.emitOpError("has width ")
              << width.getZExtValue() << ", but the device's subgroups have "
              << static_cast<unsigned>(subgroupSize)
              << " lanes; use gpu.subgroup_size as the width";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (wrongWidth.wasInterrupted())
        return signalPassFailure();
    }
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
    // loads and stores of memrefs become one access per element. A load's
    // vector.extract users take their element's load directly, so that no
    // vector is rebuilt where only its elements are used (SPIR-V has no
    // vectors of more than 4 elements).
    SmallVector<Operation *> accesses;
    getOperation().walk([&](Operation *op) {
      if (isa<vector::LoadOp, vector::StoreOp>(op))
        accesses.push_back(op);
    });
    for (Operation *op : accesses) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto at = [&](Value index, int64_t i) -> Value {
        return arith::AddIOp::create(
            b, loc, index, arith::ConstantIndexOp::create(b, loc, i));
      };
      if (auto load = dyn_cast<vector::LoadOp>(op)) {
        if (load.getIndices().size() != 1)
          continue;
        VectorType type = load.getVectorType();
        SmallVector<Value> elements;
        for (int64_t i = 0; i < type.getNumElements(); ++i)
          elements.push_back(memref::LoadOp::create(
              b, loc, load.getBase(), ValueRange{at(load.getIndices()[0], i)}));
        for (Operation *user : llvm::make_early_inc_range(load->getUsers())) {
          auto extract = dyn_cast<vector::ExtractOp>(user);
          if (!extract || extract.hasDynamicPosition() ||
              extract.getStaticPosition().size() != 1)
            continue;
          extract.replaceAllUsesWith(elements[extract.getStaticPosition()[0]]);
          extract.erase();
        }
        if (!load.use_empty())
          load.replaceAllUsesWith(
              vector::FromElementsOp::create(b, loc, type, elements)
                  .getResult());
        load.erase();
      } else if (auto store = dyn_cast<vector::StoreOp>(op)) {
        if (store.getIndices().size() != 1)
          continue;
        VectorType type = store.getVectorType();
        for (int64_t i = 0; i < type.getNumElements(); ++i)
          memref::StoreOp::create(
              b, loc, vector::ExtractOp::create(b, loc, store.getValueToStore(), i),
              store.getBase(), ValueRange{at(store.getIndices()[0], i)});
        store.erase();
      }
    }
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
