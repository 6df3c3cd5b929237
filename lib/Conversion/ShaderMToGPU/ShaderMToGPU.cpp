//===- ShaderMToGPU.cpp - Lower shaderm kernels to gpu.func --------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Each shaderm.kernel becomes a gpu.func kernel in gpu.module
// @hesper_kernels. Bindings keep their order; buffers become 1-D memrefs,
// shared allocations workgroup attributions. The ABI the runtime needs (the
// bindings, the workgroup size, the shared-memory bytes) is recorded in a
// `hesper.abi` dictionary on the function.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Conversion/Passes.h"
#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

namespace hesper {
#define GEN_PASS_DEF_CONVERTSHADERMTOGPUPASS
#include "Hesper/Conversion/Passes.h.inc"
} // namespace hesper

using namespace mlir;
using namespace hesper;
namespace sm = hesper::shaderm;

static constexpr StringLiteral kGpuModuleName = "hesper_kernels";

static Type convertBindingType(Type type) {
  if (auto buffer = dyn_cast<sm::BufferType>(type))
    return MemRefType::get({buffer.getLength()}, buffer.getElementType());
  return type;
}

static gpu::Dimension toGpu(sm::Dim dim) {
  switch (dim) {
  case sm::Dim::x:
    return gpu::Dimension::x;
  case sm::Dim::y:
    return gpu::Dimension::y;
  case sm::Dim::z:
    return gpu::Dimension::z;
  }
  return gpu::Dimension::x;
}

/// The `hesper.abi` dictionary of a kernel.
static DictionaryAttr buildAbi(OpBuilder &b, sm::KernelOp kernel) {
  SmallVector<Attribute> bindings;
  for (auto [i, type] : llvm::enumerate(kernel.getArgumentTypes())) {
    SmallVector<NamedAttribute> fields;
    fields.push_back(b.getNamedAttr("index", b.getI32IntegerAttr(i)));
    if (auto buffer = dyn_cast<sm::BufferType>(type)) {
      fields.push_back(b.getNamedAttr("kind", b.getStringAttr("buffer")));
      fields.push_back(b.getNamedAttr(
          "access", b.getStringAttr(buffer.isReadOnly() ? "read_only"
                                                        : "read_write")));
    } else {
      fields.push_back(b.getNamedAttr("kind", b.getStringAttr("scalar")));
    }
    fields.push_back(b.getNamedAttr("type", TypeAttr::get(type)));
    bindings.push_back(b.getDictionaryAttr(fields));
  }
  SmallVector<NamedAttribute> abi{
      b.getNamedAttr("bindings", b.getArrayAttr(bindings)),
      b.getNamedAttr("shared_bytes",
                     b.getI64IntegerAttr(kernel.getSharedMemoryBytes())),
      b.getNamedAttr("workgroup_size", kernel.getWorkgroupSizeAttr())};
  if (IntegerAttr sg = kernel.getSubgroupSizeAttr())
    abi.push_back(b.getNamedAttr("subgroup_size", sg));
  if (IntegerAttr minWg = kernel.getMinWorkgroupsPerSmAttr())
    abi.push_back(b.getNamedAttr("min_workgroups_per_sm", minWg));
  if (IntegerAttr threads = kernel.getHostThreadsAttr())
    abi.push_back(b.getNamedAttr("host_threads", threads));
  if (IntegerAttr bits = kernel.getVectorBitsAttr())
    abi.push_back(b.getNamedAttr("vector_bits", bits));
  return b.getDictionaryAttr(abi);
}

static std::optional<arith::AtomicRMWKind> toArith(sm::AtomicKind kind,
                                                   bool isFloat) {
  using K = arith::AtomicRMWKind;
  switch (kind) {
  case sm::AtomicKind::add:
    return isFloat ? K::addf : K::addi;
  case sm::AtomicKind::max:
    return isFloat ? K::maxnumf : K::maxs;
  case sm::AtomicKind::min:
    return isFloat ? K::minnumf : K::mins;
  case sm::AtomicKind::umax:
    return K::maxu;
  case sm::AtomicKind::umin:
    return K::minu;
  case sm::AtomicKind::bit_and:
    return K::andi;
  case sm::AtomicKind::bit_or:
    return K::ori;
  case sm::AtomicKind::exchange:
    return K::assign;
  case sm::AtomicKind::bit_xor:
    return std::nullopt; // No memref.atomic_rmw kind: a generic RMW.
  }
  return std::nullopt;
}

/// Replaces one shaderm op inside a moved kernel body.
/// The alignment a vectorized shaderm.load/store promises: its whole size,
/// or the largest power of two dividing it (the op's contract is that the
/// caller aligns the index to the vector length).
static llvm::MaybeAlign vectorAlignment(VectorType type) {
  uint64_t bytes = type.getNumElements() *
                   type.getElementType().getIntOrFloatBitWidth() / 8;
  return llvm::MaybeAlign(bytes & (~bytes + 1));
}

static void convertOp(OpBuilder &b, Operation *op) {
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value replacement;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](sm::GlobalIdOp id) {
        replacement = gpu::GlobalIdOp::create(b, loc, toGpu(id.getDim()));
      })
      .Case([&](sm::LocalIdOp id) {
        replacement = gpu::ThreadIdOp::create(b, loc, toGpu(id.getDim()));
      })
      .Case([&](sm::WorkgroupIdOp id) {
        replacement = gpu::BlockIdOp::create(b, loc, toGpu(id.getDim()));
      })
      .Case([&](sm::NumWorkgroupsOp id) {
        replacement = gpu::GridDimOp::create(b, loc, toGpu(id.getDim()));
      })
      .Case([&](sm::SubgroupIdOp) {
        replacement = gpu::SubgroupIdOp::create(b, loc, /*upper_bound=*/nullptr);
      })
      .Case([&](sm::LoadOp load) {
        if (auto vec = dyn_cast<VectorType>(load.getType()))
          replacement = vector::LoadOp::create(
              b, loc, vec, load.getMemory(), ValueRange{load.getIndex()},
              /*nontemporal=*/false, vectorAlignment(vec));
        else
          replacement = memref::LoadOp::create(b, loc, load.getMemory(),
                                               ValueRange{load.getIndex()});
      })
      .Case([&](sm::StoreOp store) {
        if (auto vec = dyn_cast<VectorType>(store.getValue().getType()))
          vector::StoreOp::create(b, loc, store.getValue(), store.getMemory(),
                                  ValueRange{store.getIndex()},
                                  /*nontemporal=*/false, vectorAlignment(vec));
        else
          memref::StoreOp::create(b, loc, store.getValue(), store.getMemory(),
                                  ValueRange{store.getIndex()});
      })
      .Case([&](sm::AtomicRMWOp atomic) {
        bool isFloat = isa<FloatType>(atomic.getType());
        if (auto kind = toArith(atomic.getKind(), isFloat)) {
          replacement = memref::AtomicRMWOp::create(
              b, loc, *kind, atomic.getValue(), atomic.getMemory(),
              ValueRange{atomic.getIndex()});
          return;
        }
        auto generic = memref::GenericAtomicRMWOp::create(
            b, loc, atomic.getMemory(), ValueRange{atomic.getIndex()});
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(generic.getBody());
        Value updated = arith::XOrIOp::create(b, loc, generic.getCurrentValue(),
                                              atomic.getValue());
        memref::AtomicYieldOp::create(b, loc, updated);
        replacement = generic.getResult();
      })
      .Case([&](sm::MatrixLoadOp load) {
        replacement = gpu::SubgroupMmaLoadMatrixOp::create(
            b, loc, load.getType(), load.getMemory(),
            ValueRange{load.getIndex()}, b.getIndexAttr(load.getLead()),
            load.getTranspose() ? b.getUnitAttr() : nullptr);
      })
      .Case([&](sm::MatrixMmaOp mma) {
        replacement = gpu::SubgroupMmaComputeOp::create(
            b, loc, mma.getType(), mma.getA(), mma.getB(), mma.getAcc(),
            mma.getATranspose() ? b.getUnitAttr() : nullptr,
            mma.getBTranspose() ? b.getUnitAttr() : nullptr);
      })
      .Case([&](sm::MatrixFillOp fill) {
        replacement = gpu::SubgroupMmaConstantMatrixOp::create(
            b, loc, fill.getType(), fill.getValue());
      })
      .Case([&](sm::MatrixStoreOp store) {
        gpu::SubgroupMmaStoreMatrixOp::create(
            b, loc, store.getValue(), store.getMemory(),
            ValueRange{store.getIndex()}, b.getIndexAttr(store.getLead()),
            /*transpose=*/nullptr);
      })
      .Case([&](sm::BarrierOp) { gpu::BarrierOp::create(b, loc); })
      .Case([&](sm::ReturnOp) { gpu::ReturnOp::create(b, loc); });
  if (replacement)
    op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
}

static LogicalResult convertKernel(sm::KernelOp kernel,
                                   gpu::GPUModuleOp gpuModule,
                                   bool sharedAsAlloc) {
  // What this lowering cannot express yet is refused up front.
  WalkResult unsupported = kernel.walk([](sm::SubgroupBarrierOp op) {
    op.emitOpError("is not supported by convert-shaderm-to-gpu: the gpu "
                   "dialect has no subgroup barrier");
    return WalkResult::interrupt();
  });
  if (unsupported.wasInterrupted())
    return failure();

  MLIRContext *context = kernel.getContext();
  OpBuilder b(context);
  SmallVector<Type> argTypes;
  for (Type type : kernel.getArgumentTypes())
    argTypes.push_back(convertBindingType(type));
  SmallVector<sm::SharedAllocOp> allocs;
  kernel.walk([&](sm::SharedAllocOp alloc) { allocs.push_back(alloc); });
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  SmallVector<Type> sharedTypes;
  for (sm::SharedAllocOp alloc : allocs)
    sharedTypes.push_back(MemRefType::get({alloc.getType().getLength()},
                                          alloc.getType().getElementType(),
                                          MemRefLayoutAttrInterface(),
                                          workgroup));
  SmallVector<Type> attributionTypes;
  if (!sharedAsAlloc)
    attributionTypes = sharedTypes;

  b.setInsertionPointToEnd(gpuModule.getBody());
  auto func = gpu::GPUFuncOp::create(b, kernel.getLoc(), kernel.getSymName(),
                                     b.getFunctionType(argTypes, {}),
                                     attributionTypes);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(kernel.getWorkgroupSizeAttr());
  func->setAttr("hesper.abi", buildAbi(b, kernel));

  // Move the body over, then rewrite its shaderm ops.
  Block &entry = func.getBody().front();
  Block &old = kernel.getBody().front();
  for (auto [oldArg, newArg] :
       llvm::zip(old.getArguments(), entry.getArguments())) {
    oldArg.replaceAllUsesWith(newArg);
  }
  entry.getOperations().splice(entry.end(), old.getOperations());
  if (sharedAsAlloc) {
    // Workgroup allocations where the shared allocations were
    // (convert-gpu-to-spirv turns them into Workgroup-storage globals).
    // Memory space 3 is what convert-gpu-to-spirv maps to Workgroup (it
    // does not map #gpu.address_space<workgroup>). The builder is set
    // before each one: a fixed point before the first would dangle once
    // that allocation is erased.
    for (sm::SharedAllocOp alloc : allocs) {
      b.setInsertionPoint(alloc);
      auto type = MemRefType::get({alloc.getType().getLength()},
                                  alloc.getType().getElementType(),
                                  MemRefLayoutAttrInterface(),
                                  b.getI64IntegerAttr(3));
      Value memory = memref::AllocOp::create(b, alloc.getLoc(), type);
      alloc.getResult().replaceAllUsesWith(memory);
      alloc.erase();
    }
  } else {
    // Every workgroup array gets an explicit alignment. Without one, LLVM
    // assumes a global of more than 16 bytes starts on a 16-byte boundary
    // (its preferred alignment for large globals) and the load-store
    // vectorizer merges four f32 reads into one 16-byte access on that
    // assumption, while NVPTX declares the array `.align 4` (its element's
    // alignment): ptxas may then place it 4 bytes past a boundary, after an
    // array whose size is not a multiple of 16 (a chunk of 5 rows), and the
    // vector access faults (CUDA_ERROR_MISALIGNED_ADDRESS). Matrix tiles
    // are read and written at 32-byte aligned addresses (NVIDIA's wmma):
    // their kernels' arrays start at one.
    bool matrixTiles = false;
    func.walk([&](Operation *op) {
      matrixTiles |= isa<sm::MatrixLoadOp, sm::MatrixStoreOp>(op);
    });
    for (auto [i, pair] : llvm::enumerate(
             llvm::zip(allocs, func.getWorkgroupAttributions()))) {
      auto [alloc, attribution] = pair;
      alloc.getResult().replaceAllUsesWith(attribution);
      alloc.erase();
      func.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(matrixTiles ? 32
                                                                       : 16));
    }
  }
  SmallVector<Operation *> toConvert;
  func.walk([&](Operation *op) {
    if (isa<sm::ShaderMDialect>(op->getDialect()))
      toConvert.push_back(op);
  });
  for (Operation *op : toConvert)
    convertOp(b, op);
  kernel.erase();
  return success();
}

namespace {
struct ConvertShaderMToGPUPass
    : hesper::impl::ConvertShaderMToGPUPassBase<ConvertShaderMToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<sm::KernelOp> kernels(module.getOps<sm::KernelOp>());
    if (kernels.empty())
      return;
    OpBuilder b(&getContext());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto gpuModule = module.lookupSymbol<gpu::GPUModuleOp>(kGpuModuleName);
    if (!gpuModule) {
      b.setInsertionPointToEnd(module.getBody());
      gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), kGpuModuleName);
    }
    // The ABI of every kernel also goes on the module, where it survives
    // serialization of the gpu.module into a gpu.binary.
    NamedAttrList abis;
    if (auto existing = module->getAttrOfType<DictionaryAttr>("hesper.kernels"))
      abis.append(existing.getValue());
    for (sm::KernelOp kernel : kernels) {
      abis.set(kernel.getSymName(), buildAbi(b, kernel));
      if (failed(convertKernel(kernel, gpuModule, sharedMemoryAsAlloc)))
        return signalPassFailure();
    }
    module->setAttr("hesper.kernels", abis.getDictionary(&getContext()));
  }
};
} // namespace
