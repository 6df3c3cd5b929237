//===- Plan.h - Kernel knobs and tuning plans ------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A kernel's knobs are the choices its lowering leaves open: `lanes` (the
// workgroup size), the matmul tile (`rows` of x, `cols` of the weights),
// `subgroup_reduce` (whether lanes combine within subgroups before shared
// memory), `unroll` (of a row or dot-product loop), `vector_width` and, on
// the CPU target, `threads` (docs/Tuning.md has the table). They live on a
// dispatch op as its `circuit.knobs` attribute; an op without one keeps the
// target's defaults.
//
// A plan is a JSON file mapping kernel signatures to knobs for one device:
//
//   {"hesper_plan": 1, "device": "llvmpipe (LLVM 15.0.6, 256 bits)",
//    "kernels": [{"signature": "circuit.map (tensor<4096xf32>) -> ...",
//                 "knobs": {"lanes": 64}}]}
//
// Whoever wrote it (the tuner, a person, another program), a plan is
// checked before use: every knob must be legal for the device (the limit it
// breaks is named otherwise).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_PLAN_H
#define HESPER_TARGET_PLAN_H

#include "Hesper/Target/TargetDevice.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace hesper {
namespace tune {

/// What a plan entry matches: the op's name, its operand and result types,
/// and a hash of its bodies (two maps of one shape with other bodies are
/// other kernels), e.g. "circuit.map (tensor<4096xf32>) -> tensor<4096xf32>
/// #9f2c01d7".
std::string kernelSignature(mlir::Operation *op);

/// "" when `knobs` are legal for `op` on `device`; otherwise one line
/// naming the knob, its value and the limit it breaks.
std::string checkKnobs(mlir::Operation *op, mlir::DictionaryAttr knobs,
                       const TargetDevice &device);

struct PlanEntry {
  std::string signature;
  mlir::DictionaryAttr knobs;
};

struct Plan {
  std::string device;
  std::vector<PlanEntry> entries;
};

/// Parses a plan; on error returns failure and sets `error` (one line).
mlir::FailureOr<Plan> parsePlan(llvm::StringRef text,
                                mlir::MLIRContext *context,
                                std::string &error);
/// Serializes a plan (what parsePlan reads).
std::string printPlan(const Plan &plan);

/// A plan for `device` with one entry per kernel of `module`'s graphs
/// (fused already) and the knobs they carry now (none: the defaults): a
/// template to edit, or the starting point of a search.
Plan planOf(mlir::ModuleOp module, const TargetDevice &device);

/// Sets the knobs of every dispatch op of `module`'s graphs that the plan
/// names, after checking the plan is for `device` and every knob it sets
/// is legal there. Fails with an error (naming the signature, the knob and
/// the limit) before changing anything; with `skipIllegal`, an entry whose
/// knobs are illegal is left out instead (for the cache, which must never
/// stop a compile).
mlir::LogicalResult applyPlan(mlir::ModuleOp module, const Plan &plan,
                              const TargetDevice &device,
                              bool skipIllegal = false);

//===----------------------------------------------------------------------===//
// The tuning cache
//===----------------------------------------------------------------------===//

/// The compiler's identity in cache entries: the source revision it was
/// configured from. Knobs tuned by another compiler are not trusted.
std::string compilerVersion();

/// The persistent cache of tuned knobs, `<dir>/tune-cache.json`: entries
/// keyed by device (TargetDevice::cacheId, which includes the driver
/// version), compiler version and kernel signature.
struct CacheEntry {
  std::string device, compiler, signature;
  mlir::DictionaryAttr knobs;
};

/// `dir`, or $HESPER_CACHE_DIR when `dir` is empty ("" when neither is set).
std::string cacheDirOr(llvm::StringRef dir);

std::string cachePath(llvm::StringRef dir);
/// The entries of the cache in `dir` (none when there is no file);
/// failure, with `error` set, for a file that is not a cache.
mlir::FailureOr<std::vector<CacheEntry>>
loadCache(llvm::StringRef dir, mlir::MLIRContext *context,
          std::string &error);
/// Adds or replaces entries and writes the cache (to a temporary file,
/// then renamed). Returns "" or the error.
std::string storeCache(llvm::StringRef dir, mlir::MLIRContext *context,
                       llvm::ArrayRef<CacheEntry> entries);
/// The plan the cache holds for `device` and this compiler: stale entries
/// (another compiler version, another device or driver) are left out.
Plan planFromCache(llvm::ArrayRef<CacheEntry> entries,
                   const TargetDevice &device);

} // namespace tune
} // namespace hesper

#endif // HESPER_TARGET_PLAN_H
