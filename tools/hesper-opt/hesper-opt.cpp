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

#include "Hesper/InitAllDialects.h"
#include "Hesper/InitAllPasses.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  hesper::registerAllPasses();
  mlir::DialectRegistry registry;
  hesper::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Hesper optimizer driver\n", registry));
}
