//===- ShareWorkgroupMemory.cpp - One set of Workgroup variables ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-spirv-share-workgroup-memory: the kernels of one SPIR-V module
// share its Workgroup-class variables. Each kernel's workgroup memory
// (ShaderM's shared allocations, a gpu.func's attributions) becomes a
// module-scope variable of its own, and Vulkan's validation layer counts
// every Workgroup variable of a module against each entry point's limit
// (maxComputeSharedMemorySize, 32 KiB on lavapipe), however few of them
// the entry point uses. Workgroup memory is fresh (undefined) at every
// dispatch and private to it, so kernels that never call one another may
// use the same variables: the n-th variable of a type that a kernel uses
// becomes the module's n-th variable of that type, and the module holds,
// per type, as many as the kernel that uses the most.
//
//===----------------------------------------------------------------------===//

#include "SPIRVPasses.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace {

struct ShareWorkgroupMemoryPass
    : PassWrapper<ShareWorkgroupMemoryPass, OperationPass<spirv::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ShareWorkgroupMemoryPass)

  StringRef getArgument() const override {
    return "hesper-spirv-share-workgroup-memory";
  }
  StringRef getDescription() const override {
    return "Let the kernels of a SPIR-V module share its Workgroup "
           "variables";
  }

  void runOnOperation() override {
    spirv::ModuleOp module = getOperation();
    // Functions that call others would need the variables of their
    // callees counted with theirs: such modules are left as they are.
    if (module.walk([](spirv::FunctionCallOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      return;
    DenseMap<StringAttr, spirv::GlobalVariableOp> workgroup;
    for (auto var : module.getOps<spirv::GlobalVariableOp>())
      if (auto pointer = dyn_cast<spirv::PointerType>(var.getType());
          pointer && pointer.getStorageClass() ==
                         spirv::StorageClass::Workgroup)
        workgroup[var.getSymNameAttr()] = var;
    // The Workgroup variables each function uses, in order of first use,
    // and the functions that use each.
    llvm::MapVector<spirv::FuncOp, llvm::SetVector<StringAttr>> uses;
    DenseMap<StringAttr, unsigned> users;
    for (auto func : module.getOps<spirv::FuncOp>()) {
      llvm::SetVector<StringAttr> &mine = uses[func];
      func.walk([&](spirv::AddressOfOp op) {
        StringAttr name = op.getVariableAttr().getAttr();
        if (workgroup.count(name))
          mine.insert(name);
      });
      for (StringAttr name : mine)
        ++users[name];
    }
    // Slot (type, n): the first variable that takes it stays; the others
    // are renamed to it and erased.
    DenseMap<std::pair<Type, unsigned>, StringAttr> slots;
    SmallVector<std::pair<StringAttr, StringAttr>> renames;
    for (auto &[func, names] : uses) {
      DenseMap<Type, unsigned> count;
      for (StringAttr name : names) {
        if (users[name] != 1)
          continue; // shared already: keep it as it is
        Type type = workgroup[name].getType();
        auto [slot, inserted] =
            slots.try_emplace({type, count[type]++}, name);
        if (!inserted)
          renames.push_back({name, slot->second});
      }
    }
    for (auto [from, to] : renames) {
      if (failed(SymbolTable::replaceAllSymbolUses(from, to, module)))
        return signalPassFailure();
      workgroup[from].erase();
    }
    // An entry point's interface names each variable once.
    for (auto entry : module.getOps<spirv::EntryPointOp>()) {
      llvm::SetVector<Attribute> unique(entry.getInterface().begin(),
                                        entry.getInterface().end());
      if (unique.size() != entry.getInterface().size())
        entry.setInterfaceAttr(
            ArrayAttr::get(&getContext(), unique.getArrayRef()));
    }
  }
};

} // namespace

std::unique_ptr<Pass> hesper::spirv_target::createShareWorkgroupMemoryPass() {
  return std::make_unique<ShareWorkgroupMemoryPass>();
}
