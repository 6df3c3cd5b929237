//===- GgufDequant.cpp - Block decoders of the GGUF reader ----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Dequantization follows ggml's reference dequantize_row_* (ggml-quants.c):
// the same float operations in the same order, so the results are the same
// bit for bit. (The code must not be built with FMA contraction; the
// runtime is not built with -ffp-contract=fast on an FMA target.)
//
// The reference interpreter decodes the same block formats with its own
// code (lib/Interpreter/Quant.cpp), written apart from this one on purpose:
// it is the oracle, an independent second implementation, not a caller of
// this one. unittests/Interpreter/QuantTest.cpp decodes random blocks of
// every format both know with both and asserts the same bits, so either
// one drifting from ggml shows up as a disagreement.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Gguf.h"

#include <cstring>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace hesper::rt {

namespace {

uint16_t loadU16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

float loadHalf(const uint8_t *p) { return halfToFloat(loadU16(p)); }

float loadF32(const uint8_t *p) {
  uint32_t bits = static_cast<uint32_t>(p[0]) |
                  static_cast<uint32_t>(p[1]) << 8 |
                  static_cast<uint32_t>(p[2]) << 16 |
                  static_cast<uint32_t>(p[3]) << 24;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Q8_0: an f16 scale d, then 32 signed bytes q; x = q * d.
void dequantQ8_0(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const int8_t *q = reinterpret_cast<const int8_t *>(block + 2);
  for (int j = 0; j < 32; ++j)
    y[j] = q[j] * d;
}

/// Q4_0: an f16 scale d, then 16 bytes of nibbles. Byte j holds element j
/// in its low nibble and element j + 16 in its high one; x = (nibble - 8) * d.
void dequantQ4_0(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const uint8_t *q = block + 2;
  for (int j = 0; j < 16; ++j) {
    const int low = (q[j] & 0x0f) - 8;
    const int high = (q[j] >> 4) - 8;
    y[j] = low * d;
    y[j + 16] = high * d;
  }
}

/// The legacy blocks of 32 beside Q4_0: an f16 scale d, for Q4_1 and Q5_1
/// an f16 offset m, for Q5_0 and Q5_1 a little-endian u32 whose bit j is
/// the fifth bit of element j, then Q4_0's 16 bytes of nibbles. The value
/// is d * q + m (Q4_1, Q5_1) or d * (q - 16) (Q5_0), q the nibble with its
/// fifth bit above it.
template <bool Offset, bool FifthBits>
void dequantLegacy(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const float m = Offset ? loadHalf(block + 2) : 0.0f;
  const uint8_t *p = block + (Offset ? 4 : 2);
  uint32_t fifth = 0;
  if (FifthBits) {
    fifth = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
            static_cast<uint32_t>(p[2]) << 16 |
            static_cast<uint32_t>(p[3]) << 24;
    p += 4;
  }
  for (int j = 0; j < 32; ++j) {
    int q = j < 16 ? (p[j] & 0x0f) : (p[j - 16] >> 4);
    if (FifthBits)
      q |= static_cast<int>((fifth >> j) & 1) << 4;
    y[j] = Offset ? d * static_cast<float>(q) + m
                  : d * static_cast<float>(q - (FifthBits ? 16 : 8));
  }
}

/// Q2_K and Q3_K keep 2-bit codes the same way: value 128 n + 32 j + l
/// (n < 2, j < 4, l < 32) is bits 2 j, 2 j + 1 of code byte 32 n + l, and
/// value v belongs to 16-value sub-block v / 16.
int kTwoBitCode(const uint8_t *codes, int v) {
  return (codes[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
}

/// Q2_K: 16 scale bytes (sub-block i's scale in the low nibble of byte i,
/// its min in the high one), 64 code bytes, f16 d, f16 dmin; a value is
/// d * scale * code - dmin * min.
void dequantQ2_K(const uint8_t *block, float *y) {
  const float d = loadHalf(block + 80), dmin = loadHalf(block + 82);
  for (int v = 0; v < 256; ++v) {
    const uint8_t sm = block[v / 16];
    y[v] = d * static_cast<float>(sm & 0xf) *
               static_cast<float>(kTwoBitCode(block + 16, v)) -
           dmin * static_cast<float>(sm >> 4);
  }
}

/// Q3_K: 32 bytes hmask (bit 4 n + j of byte l is the third bit of value
/// 128 n + 32 j + l), 64 code bytes, 12 bytes of sixteen 6-bit scales
/// (scale i's low four bits in byte i % 8, low nibble for i < 8; its top
/// two in byte 8 + i % 4 at bits 2 (i / 4)), f16 d; a value is
/// d * (scale - 32) * (code + 4 * bit - 4).
void dequantQ3_K(const uint8_t *block, float *y) {
  const float d = loadHalf(block + 108);
  const uint8_t *scales = block + 96;
  for (int v = 0; v < 256; ++v) {
    const int i = v / 16;
    const int scale = ((scales[i % 8] >> (4 * (i / 8))) & 0xf) |
                      (((scales[8 + i % 4] >> (2 * (i / 4))) & 3) << 4);
    const int bit = (block[v % 32] >> (4 * (v / 128) + (v % 128) / 32)) & 1;
    const int q = kTwoBitCode(block + 32, v) + 4 * bit - 4;
    y[v] = d * static_cast<float>(scale - 32) * static_cast<float>(q);
  }
}

/// IQ4_NL: q4_0's layout, each nibble an index into kIq4nlValues.
void dequantIQ4_NL(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const uint8_t *q = block + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = kIq4nlValues[q[j] & 0x0f] * d;
    y[j + 16] = kIq4nlValues[q[j] >> 4] * d;
  }
}

/// IQ4_XS: f16 d, u16 scales_h, u8 scales_l[4], then eight sub-blocks of
/// 16 bytes in IQ4_NL's nibble layout, each scaled by d * (ls - 32) with
/// its 6-bit ls: the low four bits from scales_l[ib / 2] (low nibble for
/// even ib), the high two from bits 2 ib of scales_h.
void dequantIQ4_XS(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const unsigned scalesHigh = loadU16(block + 2);
  const uint8_t *scalesLow = block + 4, *q = block + 8;
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = ((scalesLow[ib / 2] >> (4 * (ib % 2))) & 0xf) |
                   (((scalesHigh >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[32 * ib + j] = dl * kIq4nlValues[q[j] & 0x0f];
      y[32 * ib + j + 16] = dl * kIq4nlValues[q[j] >> 4];
    }
    q += 16;
  }
}

/// The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K block,
/// packed into 12 bytes. Sub-blocks 0..3 keep their scale in the low six bits
/// of byte j and their min in the low six bits of byte j + 4. Sub-blocks 4..7
/// keep the low four bits of the scale in the low nibble of byte j + 4 and
/// the low four bits of the min in its high nibble; the top two bits of each
/// sit in the spare top bits of bytes j - 4 (scale) and j (min).
void kQuantScaleMin(const uint8_t *packed, int j, uint8_t &scale,
                    uint8_t &min) {
  if (j < 4) {
    scale = packed[j] & 0x3f;
    min = packed[j + 4] & 0x3f;
    return;
  }
  scale = static_cast<uint8_t>((packed[j + 4] & 0x0f) |
                               ((packed[j - 4] >> 6) << 4));
  min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
}

/// Q4_K: 256 elements in 8 sub-blocks of 32. f16 d, f16 dmin, 12 bytes of
/// packed scales and mins, 128 bytes of nibbles. The elements come in four
/// runs of 64 that share 32 bytes: the low nibbles are the first sub-block
/// of the run, the high nibbles the second. x = d*scale * q - dmin*min.
void dequantQ4_K(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const float dmin = loadHalf(block + 2);
  const uint8_t *packed = block + 4;
  const uint8_t *q = block + 16;
  for (int run = 0; run < 4; ++run) {
    uint8_t scale, min;
    kQuantScaleMin(packed, 2 * run, scale, min);
    const float dLow = d * scale, mLow = dmin * min;
    kQuantScaleMin(packed, 2 * run + 1, scale, min);
    const float dHigh = d * scale, mHigh = dmin * min;
    for (int l = 0; l < 32; ++l) {
      y[l] = dLow * (q[l] & 0x0f) - mLow;
      y[l + 32] = dHigh * (q[l] >> 4) - mHigh;
    }
    q += 32;
    y += 64;
  }
}

/// Q5_K: Q4_K with a fifth bit per element. f16 d, f16 dmin, 12 bytes of
/// scales and mins, 32 bytes of high bits, 128 bytes of nibbles. In run r of
/// 64 elements, element l (< 32) takes bit 2r of high-bit byte l, and
/// element l + 32 takes bit 2r + 1.
void dequantQ5_K(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const float dmin = loadHalf(block + 2);
  const uint8_t *packed = block + 4;
  const uint8_t *highBits = block + 16;
  const uint8_t *q = block + 48;
  for (int run = 0; run < 4; ++run) {
    uint8_t scale, min;
    kQuantScaleMin(packed, 2 * run, scale, min);
    const float dLow = d * scale, mLow = dmin * min;
    kQuantScaleMin(packed, 2 * run + 1, scale, min);
    const float dHigh = d * scale, mHigh = dmin * min;
    const uint8_t lowMask = static_cast<uint8_t>(1u << (2 * run));
    const uint8_t highMask = static_cast<uint8_t>(2u << (2 * run));
    for (int l = 0; l < 32; ++l) {
      y[l] = dLow * ((q[l] & 0x0f) + (highBits[l] & lowMask ? 16 : 0)) - mLow;
      y[l + 32] =
          dHigh * ((q[l] >> 4) + (highBits[l] & highMask ? 16 : 0)) - mHigh;
    }
    q += 32;
    y += 64;
  }
}

/// Q6_K: 256 six-bit values in 16 sub-blocks of 16, each with a signed
/// 8-bit scale. 128 bytes of low nibbles (ql), 64 bytes of high bit pairs
/// (qh), 16 scales, and the f16 d last. Each half of 128 elements uses 64
/// bytes of ql, 32 of qh and 8 scales; its quarters g = 0..3 of 32 take
/// their low nibbles from ql[l] low, ql[l + 32] low, ql[l] high and
/// ql[l + 32] high, and their high bits from bits 2g, 2g + 1 of qh[l].
/// x = d * scale * (q - 32).
void dequantQ6_K(const uint8_t *block, float *y) {
  const uint8_t *ql = block;
  const uint8_t *qh = block + 128;
  const int8_t *scales = reinterpret_cast<const int8_t *>(block + 192);
  const float d = loadHalf(block + 208);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      const int q0 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) - 32;
      const int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * scales[s] * q0;
      y[l + 32] = d * scales[s + 2] * q1;
      y[l + 64] = d * scales[s + 4] * q2;
      y[l + 96] = d * scales[s + 6] * q3;
    }
    ql += 64;
    qh += 32;
    scales += 8;
    y += 128;
  }
}

/// TQ1_0: qs[48] and qh[4] of base-3 digits, then an f16 d; each byte is a
/// fixed-point fraction whose leading digit is (byte * 3) >> 8, the next
/// digits appearing after multiplying by 3 (mod 256). Element 32n + m is
/// digit n of qs[m] (m < 32), 160 + 16n + m digit n of qs[32 + m], 240 +
/// 4n + j digit n of qh[j]; x = (digit - 1) * d.
void dequantTQ1_0(const uint8_t *block, float *y) {
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  const float d = loadHalf(block + 52);
  auto digit = [&](uint8_t byte, int n) {
    uint8_t shifted = static_cast<uint8_t>(byte * pow3[n]);
    return static_cast<int>((static_cast<uint16_t>(shifted) * 3) >> 8);
  };
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m)
      *y++ = static_cast<float>(digit(block[m], n) - 1) * d;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m)
      *y++ = static_cast<float>(digit(block[32 + m], n) - 1) * d;
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j)
      *y++ = static_cast<float>(digit(block[48 + j], n) - 1) * d;
}

/// TQ2_0: qs[64] of 2-bit codes, then an f16 d. Element 128h + 32l + m is
/// bits 2l..2l+1 of qs[32h + m]; x = (code - 1) * d.
void dequantTQ2_0(const uint8_t *block, float *y) {
  const float d = loadHalf(block + 64);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m)
        *y++ = static_cast<float>(((block[32 * h + m] >> (2 * l)) & 3) - 1) *
               d;
}

/// I2_S, one 32-byte block of 128 codes: element 32k + m is bits
/// 6-2k..7-2k of byte m; x = code - 1 (the tensor's scale is applied by
/// whoever reads the tensor).
void dequantI2_S(const uint8_t *block, float *y) {
  for (int k = 0; k < 4; ++k)
    for (int m = 0; m < 32; ++m)
      *y++ = static_cast<float>(((block[m] >> (6 - 2 * k)) & 3) - 1);
}

} // namespace

float i2sScale(const GgufTensor &t) {
  // The reader sized the tensor as its blocks and the 32-byte trailer; a
  // tensor built by hand may not have one.
  const uint64_t packed = static_cast<uint64_t>(t.numElements) / 4;
  if (t.type != GgmlType::I2_S || t.bytes < packed + 4)
    return 0.0f;
  return loadF32(t.data + packed);
}

Status dequantizeRow(GgmlType t, const uint8_t *src, float *dst, int64_t n) {
  int64_t blockSize = ggmlBlockSize(t);
  if (blockSize == 0)
    return Status::error("dequantizeRow: unknown ggml type " +
                         std::to_string(static_cast<uint32_t>(t)));
  if (n < 0 || n % blockSize != 0)
    return Status::error("dequantizeRow: " + std::to_string(n) +
                         " elements are not a whole number of " +
                         ggmlTypeName(t) + " blocks of " +
                         std::to_string(blockSize));
  const size_t blockBytes = static_cast<size_t>(ggmlBlockBytes(t));
  const size_t blocks = static_cast<size_t>(n / blockSize);
  void (*perBlock)(const uint8_t *, float *) = nullptr;
  switch (t) {
  case GgmlType::F32:
    for (size_t i = 0; i < blocks; ++i)
      dst[i] = loadF32(src + 4 * i);
    return Status();
  case GgmlType::F16:
    for (size_t i = 0; i < blocks; ++i)
      dst[i] = halfToFloat(loadU16(src + 2 * i));
    return Status();
  case GgmlType::BF16:
    for (size_t i = 0; i < blocks; ++i)
      dst[i] = bf16ToFloat(loadU16(src + 2 * i));
    return Status();
  case GgmlType::Q4_0:
    perBlock = dequantQ4_0;
    break;
  case GgmlType::Q4_1:
    perBlock = dequantLegacy<true, false>;
    break;
  case GgmlType::Q5_0:
    perBlock = dequantLegacy<false, true>;
    break;
  case GgmlType::Q5_1:
    perBlock = dequantLegacy<true, true>;
    break;
  case GgmlType::IQ4_NL:
    perBlock = dequantIQ4_NL;
    break;
  case GgmlType::IQ4_XS:
    perBlock = dequantIQ4_XS;
    break;
  case GgmlType::Q8_0:
    perBlock = dequantQ8_0;
    break;
  case GgmlType::Q2_K:
    perBlock = dequantQ2_K;
    break;
  case GgmlType::Q3_K:
    perBlock = dequantQ3_K;
    break;
  case GgmlType::Q4_K:
    perBlock = dequantQ4_K;
    break;
  case GgmlType::Q5_K:
    perBlock = dequantQ5_K;
    break;
  case GgmlType::Q6_K:
    perBlock = dequantQ6_K;
    break;
  case GgmlType::TQ1_0:
    perBlock = dequantTQ1_0;
    break;
  case GgmlType::TQ2_0:
    perBlock = dequantTQ2_0;
    break;
  case GgmlType::I2_S:
    perBlock = dequantI2_S;
    break;
  }
  for (size_t i = 0; i < blocks; ++i)
    perBlock(src + i * blockBytes, dst + i * static_cast<size_t>(blockSize));
  return Status();
}

} // namespace hesper::rt
