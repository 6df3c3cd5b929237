//===- DedupKernels.cpp - One copy of identical kernels -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Two kernels are identical when their printed forms agree once the symbol
// name is taken out: the printer writes every op, attribute, type and block
// argument, so equal text means equal semantics. Printing is linear in the
// kernel's size and happens once per kernel.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/ShaderM/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace hesper {
namespace shaderm {
#define GEN_PASS_DEF_SHADERMDEDUPKERNELSPASS
#include "Hesper/Dialect/ShaderM/Transforms/Passes.h.inc"
} // namespace shaderm
} // namespace hesper

using namespace mlir;
using namespace hesper;
using namespace hesper::shaderm;

/// The kernel's text with its name replaced by a fixed one.
static std::string canonicalText(KernelOp kernel) {
  StringAttr name = kernel.getSymNameAttr();
  kernel.setSymName("k");
  std::string text;
  llvm::raw_string_ostream os(text);
  kernel->print(os, OpPrintingFlags().useLocalScope());
  kernel.setSymNameAttr(name);
  return text;
}

namespace {
struct ShaderMDedupKernelsPass
    : shaderm::impl::ShaderMDedupKernelsPassBase<ShaderMDedupKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<StringAttr> firstByText;
    SmallVector<std::pair<KernelOp, StringAttr>> duplicates;
    for (KernelOp kernel : module.getOps<KernelOp>()) {
      auto [it, inserted] =
          firstByText.try_emplace(canonicalText(kernel),
                                  kernel.getSymNameAttr());
      if (!inserted)
        duplicates.push_back({kernel, it->second});
    }
    for (auto [kernel, keep] : duplicates) {
      if (failed(SymbolTable::replaceAllSymbolUses(kernel.getSymNameAttr(),
                                                   keep, module))) {
        kernel.emitOpError("cannot redirect the uses of a duplicate kernel");
        return signalPassFailure();
      }
      kernel.erase();
      ++numErased;
    }
  }
};
} // namespace
