//===- NVVMPasses.h - The NVVM target's own passes --------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Target/NVVM.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_TARGET_NVVM_NVVMPASSES_H
#define HESPER_LIB_TARGET_NVVM_NVVMPASSES_H

#include "mlir/Pass/Pass.h"

namespace hesper::nvvm {

/// exp.dot4_i8 as PTX's dp4a (nvvm.dot.accumulate.4way, signed bytes by
/// signed bytes; sm_61 and later), before convert-exp-to-std would expand
/// it into byte extracts, multiplies and adds (Dot4ToDp4a.cpp).
std::unique_ptr<mlir::Pass> createDot4ToDp4aPass();

} // namespace hesper::nvvm

#endif // HESPER_LIB_TARGET_NVVM_NVVMPASSES_H
