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
#include <string>

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
  // MLIR's lexer reads the byte after the text (it stops at a NUL), so the
  // text is copied into a NUL-terminated string, as the tools' file buffers
  // are. (Without the copy, libFuzzer's exact-size inputs make the lexer
  // read one byte past the end: parseSourceString does not terminate.)
  std::string copy(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(copy.c_str(), size);
  auto buffer = llvm::MemoryBuffer::getMemBuffer(text, "fuzz.mlir",
                                                 /*RequiresNullTerminator=*/
                                                 true);
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
