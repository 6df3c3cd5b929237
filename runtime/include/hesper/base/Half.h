//===- Half.h - IEEE binary16 and bfloat16 conversions ----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Conversions between float and IEEE 754 half precision (and bfloat16) bit
// patterns, rounding to nearest even, with subnormals, infinities and NaN.
//
// The one home of these conversions. hesper/base/ is the bottom of the
// runtime: header-only code that needs nothing (no HAL, no LLVM/MLIR), so
// the runtime's GGUF reader and the compiler (the reference interpreter,
// through Hesper/Support/Half.h) share it while the runtime still builds
// on its own.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_BASE_HALF_H
#define HESPER_BASE_HALF_H

#include <cstdint>
#include <cstring>

namespace hesper {

/// Float to the nearest half (ties to even), as bits.
inline uint16_t floatToHalfBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;

  if (exponent == 0xff) // Inf or NaN (keep NaN quiet and non-zero).
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (mantissa ? 0x200u | (mantissa >> 13) : 0));
  int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 31) // Overflow to infinity.
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // Subnormal half (or zero): shift the full significand into place.
    if (e < -10)
      return static_cast<uint16_t>(sign);
    uint32_t significand = mantissa | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = significand >> shift;
    uint32_t rest = significand & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // May carry into the exponent, which is still correct.
  return static_cast<uint16_t>(sign | half);
}

/// Half bits to float (exact). A NaN keeps its payload as it is, signalling
/// or quiet (the reference interpreter's f16 loads).
inline float halfBitsToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign; // signed zero
    } else {
      // Subnormal: shift the leading one up to the implicit bit, lowering
      // the exponent by one per shift.
      int32_t e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
             ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    // Normal: rebias the exponent from 15 to 127.
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Half bits to float as the F16C instruction (vcvtph2ps) converts them:
/// halfBitsToFloat, but a NaN is made quiet (its payload kept). The GGUF
/// reader's f16 values and block scales (rt::halfToFloat).
inline float halfBitsToFloatQuietNaN(uint16_t h) {
  float value = halfBitsToFloat(h);
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    bits |= 0x00400000u;
    std::memcpy(&value, &bits, sizeof(value));
  }
  return value;
}

/// Rounds a float to the nearest value representable as a half.
inline float roundToHalf(float value) {
  return halfBitsToFloat(floatToHalfBits(value));
}

/// bfloat16 bits (the top half of an f32) to float (exact).
inline float bfloat16BitsToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Float to the nearest bfloat16 (ties to even), as bits; a NaN stays a
/// quiet NaN of the same sign.
inline uint16_t floatToBFloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace hesper

#endif // HESPER_BASE_HALF_H
