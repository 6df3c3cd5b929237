//===- ShaderMDialect.cpp - ShaderM dialect registration -----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hesper::shaderm;

#include "Hesper/Dialect/ShaderM/IR/ShaderMDialect.cpp.inc"
#include "Hesper/Dialect/ShaderM/IR/ShaderMEnums.cpp.inc"

void ShaderMDialect::initialize() {
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "Hesper/Dialect/ShaderM/IR/ShaderMOps.cpp.inc"
      >();
}
