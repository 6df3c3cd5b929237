//===- ExpToStd.h - Lower exp to arith, math and gpu ------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_CONVERSION_EXPTOSTD_EXPTOSTD_H
#define HESPER_CONVERSION_EXPTOSTD_EXPTOSTD_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace hesper {

/// Patterns that replace every exp op by arith, math and gpu ops.
void populateExpToStdPatterns(mlir::RewritePatternSet &patterns);

} // namespace hesper

#endif // HESPER_CONVERSION_EXPTOSTD_EXPTOSTD_H
