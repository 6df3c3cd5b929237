//===- Passes.h - ShaderM passes --------------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_SHADERM_TRANSFORMS_PASSES_H
#define HESPER_DIALECT_SHADERM_TRANSFORMS_PASSES_H

#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hesper {
namespace shaderm {

#define GEN_PASS_DECL
#include "Hesper/Dialect/ShaderM/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Hesper/Dialect/ShaderM/Transforms/Passes.h.inc"

} // namespace shaderm
} // namespace hesper

#endif // HESPER_DIALECT_SHADERM_TRANSFORMS_PASSES_H
