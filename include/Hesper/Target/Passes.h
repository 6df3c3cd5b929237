//===- Passes.h - Passes of the compilation targets -------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_PASSES_H
#define HESPER_TARGET_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hesper {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "Hesper/Target/Passes.h.inc"

/// Registers the target passes and the pipelines hesper-to-ptx,
/// hesper-to-spirv and hesper-to-cpu.
void registerTargetPassesAndPipelines();

} // namespace hesper

#endif // HESPER_TARGET_PASSES_H
