//===- Attributions.h - Memory attributions made allocations ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Shared by hesper-normalize-gpu-kernels (SPIR-V) and hesper-gpu-to-cpu,
// which both replace a kernel's memory attributions with memory in another
// memory space, and by the rewrites that give a kernel a workgroup buffer
// of one element per thread (all_reduce in normalize-gpu-kernels, wide
// shuffles in hesper-emulate-wide-shuffles).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_TARGET_ATTRIBUTIONS_H
#define HESPER_LIB_TARGET_ATTRIBUTIONS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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

/// A new workgroup attribution of `func`: one element of `type` per thread
/// of a block of `block` threads.
inline mlir::Value addPerThreadBuffer(mlir::gpu::GPUFuncOp func,
                                      mlir::Type type,
                                      llvm::ArrayRef<int32_t> block,
                                      mlir::Location loc) {
  int64_t threads = int64_t(block[0]) * block[1] * block[2];
  auto memoryType = mlir::MemRefType::get(
      {threads}, type, mlir::MemRefLayoutAttrInterface(),
      mlir::gpu::AddressSpaceAttr::get(func.getContext(),
                                       mlir::gpu::AddressSpace::Workgroup));
  return func.addWorkgroupAttribution(memoryType, loc);
}

/// The thread's linear id in a block of `block` threads, x + X (y + Y z),
/// built at `b`.
inline mlir::Value linearThreadId(mlir::OpBuilder &b, mlir::Location loc,
                                  llvm::ArrayRef<int32_t> block) {
  namespace gpu = mlir::gpu;
  namespace arith = mlir::arith;
  auto c = [&](int64_t v) -> mlir::Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  mlir::Value x = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  mlir::Value y = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::y);
  mlir::Value z = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::z);
  return arith::AddIOp::create(
      b, loc, x,
      arith::MulIOp::create(
          b, loc, c(block[0]),
          arith::AddIOp::create(b, loc, y,
                                arith::MulIOp::create(b, loc, c(block[1]), z))));
}

} // namespace hesper

#endif // HESPER_LIB_TARGET_ATTRIBUTIONS_H
