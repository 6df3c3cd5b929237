//===- MlirFuzzer.cpp - libFuzzer harness for .mlir input ----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Any text as hesper-opt reads it: the parser-crash pre-scan, parse,
// verify, then hesper-fuse followed by each kernel pipeline
// (hesper-to-spirv, hesper-to-ptx) on a fresh copy. Diagnostics are
// expected and dropped; a crash, a sanitizer report or a hang is a bug.
//
//===----------------------------------------------------------------------===//

#include "Hesper/InitAllDialects.h"
#include "Hesper/InitAllPasses.h"
#include "Hesper/Support/InputChecks.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

static MLIRContext &context() {
  static MLIRContext *ctx = [] {
    hesper::registerAllPasses();
    DialectRegistry registry;
    hesper::registerAllDialects(registry);
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

static void runPipeline(ModuleOp module, const char *pipeline) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(copy.get()->getName());
  if (failed(parsePassPipeline(pipeline, pm)))
    return;
  (void)pm.run(*copy);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler drop(&ctx, [](Diagnostic &) { return success(); });
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto buffer = llvm::MemoryBuffer::getMemBuffer(text, "fuzz.mlir",
                                                 /*RequiresNullTerminator=*/
                                                 false);
  if (!hesper::checkParserCrashes(buffer->getMemBufferRef(), llvm::nulls()))
    return 0;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&ctx), "fuzz.mlir");
  if (!module || failed(verify(*module)))
    return 0;
  runPipeline(*module, "builtin.module(hesper-fuse,hesper-to-spirv)");
  runPipeline(*module, "builtin.module(hesper-fuse,hesper-to-ptx)");
  return 0;
}
