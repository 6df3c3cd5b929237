//===- hesper-opt.cpp - Hesper's mlir-opt-style pass driver --------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Parses a module, runs the passes or pipelines named on the command line and
// prints the result, exactly like mlir-opt, with the Hesper dialects and the
// upstream dialects and passes Hesper lowers through.
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/InitAllPasses.h"
#include "Hesper/Support/InputChecks.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  hesper::tools::armCrashWatchdog();
  hesper::registerAllPasses();
  mlir::DialectRegistry registry;
  hesper::registerAllDialects(registry);
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "Hesper optimizer driver\n", registry);
  // Text MLIR 22's parser crashes on is answered with a diagnostic first
  // (for files: standard input can be read only once, by MlirOptMain).
  std::string error;
  if (input != "-")
    if (auto file = mlir::openInputFile(input, &error))
      if (!hesper::checkParserCrashes(file->getMemBufferRef(), llvm::errs()))
        return 1;
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
