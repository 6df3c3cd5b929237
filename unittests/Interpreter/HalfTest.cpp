//===- HalfTest.cpp - Tests for the f16 conversions ----------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Support/Half.h"

#include "llvm/ADT/APFloat.h"

#include "gtest/gtest.h"

#include <cmath>
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

} // namespace
