//===- Passes.h - Hesper conversion passes ----------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_CONVERSION_PASSES_H
#define HESPER_CONVERSION_PASSES_H

#include "Hesper/Conversion/ExpToStd/ExpToStd.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/Pass/Pass.h"

namespace hesper {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "Hesper/Conversion/Passes.h.inc"

} // namespace hesper

#endif // HESPER_CONVERSION_PASSES_H
