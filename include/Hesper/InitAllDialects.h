//===- InitAllDialects.h - Register Hesper and upstream dialects -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The dialects and dialect interfaces that Hesper's tools load: the three
// Hesper dialects and the upstream dialects the lowering pipelines produce
// (func, arith, math, memref, scf, cf, vector, index, ub, gpu, nvvm, spirv,
// llvm), with the interfaces that upstream conversions and the GPU targets
// look up at run time.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_INITALLDIALECTS_H
#define HESPER_INITALLDIALECTS_H

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace hesper {

/// Adds the Hesper dialects (exp, shaderm, circuit) to `registry`.
void registerHesperDialects(mlir::DialectRegistry &registry);

/// Adds the Hesper dialects, the upstream dialects Hesper lowers to, and the
/// external interface models (ConvertToLLVM, GPU targets, LLVM IR
/// translation) those lowerings need.
void registerAllDialects(mlir::DialectRegistry &registry);

} // namespace hesper

#endif // HESPER_INITALLDIALECTS_H
