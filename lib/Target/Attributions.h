//===- Attributions.h - Memory attributions made allocations ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Shared by hesper-normalize-gpu-kernels (SPIR-V) and hesper-gpu-to-cpu,
// which both replace a kernel's memory attributions with memory in another
// memory space.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_TARGET_ATTRIBUTIONS_H
#define HESPER_LIB_TARGET_ATTRIBUTIONS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace hesper {

/// Succeeds when every user of a memory attribution takes a memref of any
/// memory space (loads, stores, atomics), so that the attribution can be
/// replaced by an allocation or a view in another space; ops whose result
/// types derive from the memref's (subviews, casts) would not verify, and
/// the first of them gets an error.
inline mlir::LogicalResult checkAttributionUsers(mlir::Value attribution) {
  for (mlir::Operation *user : attribution.getUsers())
    if (!mlir::isa<mlir::memref::LoadOp, mlir::memref::StoreOp,
                   mlir::memref::AtomicRMWOp, mlir::vector::LoadOp,
                   mlir::vector::StoreOp>(user))
      return user->emitOpError("uses a memory attribution, which Hesper "
                               "turns into an allocation: only loads, "
                               "stores and atomics may use one");
  return mlir::success();
}

} // namespace hesper

#endif // HESPER_LIB_TARGET_ATTRIBUTIONS_H
