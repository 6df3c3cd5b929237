//===- HalfTest.cpp - Tests for the f16 conversions ----------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Support/Half.h"

#include "llvm/ADT/APFloat.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace hesper;

namespace {

/// LLVM's APFloat is the independent reference.
uint16_t referenceHalf(float v) {
  llvm::APFloat f(v);
  bool losesInfo = false;
  f.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00); // Rounds to infinity.
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000); // Tie to even.
  EXPECT_EQ(halfBitsToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(NAN))));
  EXPECT_EQ(halfBitsToFloat(0xfc00), -std::numeric_limits<float>::infinity());
}

TEST(HalfTest, MatchesAPFloatOnAWideSweep) {
  // Every 16th float bit pattern across the whole range, plus neighbours of
  // every half boundary would be too slow; this sweep covers normals,
  // subnormals, overflow and ties.
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4099) {
    uint32_t b = static_cast<uint32_t>(bits);
    float v;
    std::memcpy(&v, &b, 4);
    if (std::isnan(v))
      continue;
    ASSERT_EQ(floatToHalfBits(v), referenceHalf(v)) << "bits 0x" << std::hex
                                                    << b;
  }
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float v = halfBitsToFloat(static_cast<uint16_t>(h));
    if (std::isnan(v))
      continue;
    ASSERT_EQ(floatToHalfBits(v), h) << "half 0x" << std::hex << h;
  }
}

/// bfloat16: known values, round-to-nearest-even against APFloat, NaN.
TEST(HalfTest, BFloat16) {
  EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBFloat16Bits(-2.5f), 0xc020);
  EXPECT_EQ(bfloat16BitsToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80); // tie
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16BitsToFloat(floatToBFloat16Bits(NAN))));
  uint32_t state = 12345;
  for (int i = 0; i < 100000; ++i) {
    state = state * 1664525u + 1013904223u;
    float v;
    std::memcpy(&v, &state, sizeof(v));
    if (std::isnan(v))
      continue;
    llvm::APFloat f(v);
    bool losesInfo = false;
    f.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
              &losesInfo);
    ASSERT_EQ(floatToBFloat16Bits(v),
              static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue()))
        << v;
  }
}

} // namespace
