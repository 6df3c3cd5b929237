//===- ExampleGraphs.h - Small graphs with known answers --------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The graphs `hesper-run --example=NAME` builds with the GraphBuilder API
// (RMSNorm, softmax, layer norm, NeoX RoPE, a Llama decode layer), their
// seeded inputs, and each one's formula evaluated in double precision: an
// independent answer the interpreter and the backends are checked against.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_EXAMPLEGRAPHS_H
#define HESPER_MODELS_EXAMPLEGRAPHS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <vector>

namespace hesper::models {

enum class ExampleGraph { RmsNorm, Softmax, LayerNorm, Rope, LlamaLayer };

struct ExampleShape {
  int64_t dim = 256; ///< the row length (the head size for RoPE)
  int64_t rows = 1;
};

/// Builds graph @main of the example; null after printing diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> buildExampleGraph(mlir::MLIRContext &context,
                                                    ExampleGraph example,
                                                    const ExampleShape &shape);

/// Element `i` of the seeded input bound to the argument named `name`:
/// x[i] = 2 sin(0.37 i + 0.1), w[i] = 1 + (i mod D)/D, b[i] = 0.01 (i mod
/// D), pos = 7.
double exampleInput(llvm::StringRef name, int64_t i,
                    const ExampleShape &shape);

/// The example's output on those inputs, from its formula in double
/// precision, row by row (empty for the Llama layer, which has none).
std::vector<double> exampleReference(ExampleGraph example,
                                     const ExampleShape &shape);

} // namespace hesper::models

#endif // HESPER_MODELS_EXAMPLEGRAPHS_H
