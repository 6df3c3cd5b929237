//===- Half.h - IEEE binary16 conversions -----------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Conversions between float and IEEE 754 half precision (and bfloat16) bit
// patterns: hesper::floatToHalfBits, halfBitsToFloat, roundToHalf,
// bfloat16BitsToFloat and floatToBFloat16Bits. They live in the runtime's
// header-only base (runtime/include/hesper/base/Half.h), their one home,
// which the runtime's GGUF reader uses too: the runtime builds on its own
// and cannot include the compiler's headers.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_SUPPORT_HALF_H
#define HESPER_SUPPORT_HALF_H

#include "hesper/base/Half.h"

#endif // HESPER_SUPPORT_HALF_H
