//===- Quant.cpp - Decoding and encoding GGUF block formats --------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Block layouts, as GGUF stores them (little-endian):
//   q8_0  (34 B / 32):  f16 d, int8 q[32];                 v = d * q
//   q8_1  (36 B / 32):  f16 d, f16 s (= d * sum q), int8 q[32]
//   q4_0  (18 B / 32):  f16 d, u8 qs[16]; value j (< 16) the low nibble
//                       of qs[j], value j + 16 its high one; v = d * (q - 8)
//   q4_1  (20 B / 32):  f16 d, f16 m, q4_0's nibbles;       v = d * q + m
//   q5_0  (22 B / 32):  f16 d, u32 qh (bit j: value j's fifth bit), q4_0's
//                       nibbles; q = nibble | bit << 4;    v = d * (q - 16)
//   q5_1  (24 B / 32):  f16 d, f16 m, u32 qh, the nibbles; v = d * q + m
//   iq4_nl (18 B / 32): q4_0's layout; v = d * IQ4_NLType::kValues[q]
//   iq4_xs (136 B / 256): f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128];
//                       eight 32-value sub-blocks, 6-bit scale ls (low 4
//                       bits from scales_l, high 2 from scales_h), each
//                       iq4_nl's nibble layout; v = d * (ls - 32) * table[q]
//   q2_k (84 B / 256):  u8 scales[16] (low nibble sc, high m), u8 qs[64],
//                       f16 d, f16 dmin; value 128n + 32j + l is bits 2j
//                       of qs[32n + l]; v = d * sc * q - dmin * m per 16
//   q3_k (110 B / 256): u8 hmask[32], u8 qs[64] (as q2_k's), u8
//                       scales[12] (sixteen 6-bit), f16 d; the third bit
//                       of value 128n + 32j + l is bit 4n + j of hmask[l];
//                       v = d * (sc - 32) * (q - 4)
//   q4_k (144 B / 256): f16 d, f16 dmin, u8 scales[12], u8 qs[128]
//                       eight 32-value sub-blocks with 6-bit scale and min;
//                       v = d * sc * q - dmin * m
//   q5_k (176 B / 256): f16 d, f16 dmin, u8 scales[12], u8 qh[32],
//                       u8 qs[128]: q4_k's values plus 16 where bit 2c
//                       (low nibbles) or 2c + 1 (high ones) of qh[l] is set
//   bf16  (2 B / 1):    the top 16 bits of an f32
//   q6_k (210 B / 256): u8 ql[128], u8 qh[64], int8 scales[16], f16 d;
//                       v = d * scale * (q - 32), q from 4 low + 2 high bits
//   tq1_0 (54 B / 256): u8 qs[48] (five trits per byte), u8 qh[4] (four per
//                       byte), f16 d; v = d * (t - 1), t in {0, 1, 2}
//   tq2_0 (66 B / 256): u8 qs[64] (four 2-bit values per byte), f16 d;
//                       v = d * (q - 1)
//   i2_s  (32 B / 128): 2-bit codes; v = (q - 1) * scale, the tensor's one
//                       f32 scale stored after all its blocks (+28 bytes)
//
// These decoders are the oracle's, and deliberately a second implementation:
// the runtime's GGUF reader decodes the same formats with its own code
// (runtime/lib/formats/gguf/GgufDequant.cpp), and neither calls the other.
// unittests/Interpreter/QuantTest.cpp decodes random blocks of every format
// both know with both and asserts the same bits (the runtime's follow
// ggml's reference dequantize_row_* operation for operation).
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Support/Half.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace hesper;
using namespace hesper::interp;
using namespace hesper::circuit;

static float readHalf(const uint8_t *p) {
  return halfBitsToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

static void writeHalf(uint8_t *p, float v) {
  uint16_t h = floatToHalfBits(v);
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}

static void decodeQ8(const uint8_t *block, bool withSum, float *out) {
  float d = readHalf(block);
  const int8_t *q =
      reinterpret_cast<const int8_t *>(block + (withSum ? 4 : 2));
  for (int i = 0; i < 32; ++i)
    out[i] = d * static_cast<float>(q[i]);
}

/// The 6-bit scale and min of sub-block `j` of a q4_k super-block.
static void q4kScaleMin(int j, const uint8_t *scales, uint8_t &sc,
                        uint8_t &m) {
  if (j < 4) {
    sc = scales[j] & 63;
    m = scales[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((scales[j + 4] & 0xf) | ((scales[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

static void decodeQ4K(const uint8_t *block, float *out) {
  float d = readHalf(block), dmin = readHalf(block + 2);
  const uint8_t *scales = block + 4;
  const uint8_t *qs = block + 16;
  int is = 0;
  for (int j = 0; j < 256; j += 64) {
    uint8_t sc, m;
    q4kScaleMin(is, scales, sc, m);
    float d1 = d * sc, m1 = dmin * m;
    q4kScaleMin(is + 1, scales, sc, m);
    float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l)
      *out++ = d1 * static_cast<float>(qs[l] & 0xf) - m1;
    for (int l = 0; l < 32; ++l)
      *out++ = d2 * static_cast<float>(qs[l] >> 4) - m2;
    qs += 32;
    is += 2;
  }
}

static void decodeQ4_0(const uint8_t *block, float *out) {
  float d = readHalf(block);
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>((qs[j] & 0xf) - 8);
    out[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

/// q4_1, q5_0 and q5_1: q4_0's nibbles after an optional offset m and an
/// optional word of fifth bits.
static void decodeLegacy(const uint8_t *block, bool offset, bool fifthBits,
                         float *out) {
  float d = readHalf(block);
  float m = offset ? readHalf(block + 2) : 0.0f;
  const uint8_t *at = block + (offset ? 4 : 2);
  uint32_t qh = 0;
  if (fifthBits) {
    qh = at[0] | (at[1] << 8) | (at[2] << 16) | (uint32_t(at[3]) << 24);
    at += 4;
  }
  for (int j = 0; j < 32; ++j) {
    int q = j < 16 ? (at[j] & 0xf) : (at[j - 16] >> 4);
    q |= int((qh >> j) & 1) << 4;
    out[j] = offset ? d * static_cast<float>(q) + m
                    : d * static_cast<float>(q - (fifthBits ? 16 : 8));
  }
}

/// Bits 2j of code byte 32n + l: value v = 128n + 32j + l's 2-bit code.
static int kCode(const uint8_t *qs, int v) {
  return (qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
}

static void decodeQ2K(const uint8_t *block, float *out) {
  float d = readHalf(block + 80), dmin = readHalf(block + 82);
  for (int v = 0; v < 256; ++v) {
    int sm = block[v / 16];
    out[v] = d * static_cast<float>(sm & 0xf) *
                 static_cast<float>(kCode(block + 16, v)) -
             dmin * static_cast<float>(sm >> 4);
  }
}

static void decodeQ3K(const uint8_t *block, float *out) {
  float d = readHalf(block + 108);
  const uint8_t *sc = block + 96;
  for (int v = 0; v < 256; ++v) {
    int i = v / 16;
    int scale = ((sc[i % 8] >> (4 * (i / 8))) & 0xf) |
                (((sc[8 + i % 4] >> (2 * (i / 4))) & 3) << 4);
    int bit = (block[v % 32] >> (4 * (v / 128) + (v % 128) / 32)) & 1;
    out[v] = d * static_cast<float>(scale - 32) *
             static_cast<float>(kCode(block + 32, v) + 4 * bit - 4);
  }
}

static void decodeIQ4_NL(const uint8_t *block, float *out) {
  float d = readHalf(block);
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>(IQ4_NLType::kValues[qs[j] & 0xf]);
    out[j + 16] = d * static_cast<float>(IQ4_NLType::kValues[qs[j] >> 4]);
  }
}

static void decodeIQ4_XS(const uint8_t *block, float *out) {
  float d = readHalf(block);
  unsigned scalesHigh = block[2] | (block[3] << 8);
  const uint8_t *scalesLow = block + 4, *qs = block + 8;
  for (int ib = 0; ib < 8; ++ib) {
    int ls = ((scalesLow[ib / 2] >> (4 * (ib % 2))) & 0xf) |
             (((scalesHigh >> (2 * ib)) & 3) << 4);
    float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      out[32 * ib + j] =
          dl * static_cast<float>(IQ4_NLType::kValues[qs[j] & 0xf]);
      out[32 * ib + j + 16] =
          dl * static_cast<float>(IQ4_NLType::kValues[qs[j] >> 4]);
    }
    qs += 16;
  }
}

static void decodeQ5K(const uint8_t *block, float *out) {
  float d = readHalf(block), dmin = readHalf(block + 2);
  const uint8_t *scales = block + 4;
  const uint8_t *qh = block + 16;
  const uint8_t *qs = block + 48;
  for (int c = 0; c < 4; ++c) {
    uint8_t sc, m;
    q4kScaleMin(2 * c, scales, sc, m);
    float d1 = d * sc, m1 = dmin * m;
    q4kScaleMin(2 * c + 1, scales, sc, m);
    float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) {
      int high = (qh[l] >> (2 * c)) & 1;
      *out++ = d1 * static_cast<float>((qs[l] & 0xf) + 16 * high) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      int high = (qh[l] >> (2 * c + 1)) & 1;
      *out++ = d2 * static_cast<float>((qs[l] >> 4) + 16 * high) - m2;
    }
    qs += 32;
  }
}

static void decodeQ6K(const uint8_t *block, float *out) {
  const uint8_t *ql = block;
  const uint8_t *qh = block + 128;
  const int8_t *sc = reinterpret_cast<const int8_t *>(block + 192);
  float d = readHalf(block + 208);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * sc[is] * q1;
      out[l + 32] = d * sc[is + 2] * q2;
      out[l + 64] = d * sc[is + 4] * q3;
      out[l + 96] = d * sc[is + 6] * q4;
    }
    out += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

/// Trit `n` (0 = most significant) of a byte that holds base-3 digits as
/// a fixed-point fraction (ggml's TQ1_0 packing: byte = ceil(value * 256 /
/// 3^k)): multiplying by 3^n drops the first n digits (mod 256), and the
/// top digit of what is left is (byte * 3) >> 8.
static int tritAt(uint8_t byte, int n) {
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  uint8_t shifted = static_cast<uint8_t>(byte * pow3[n]);
  return (static_cast<uint16_t>(shifted) * 3) >> 8;
}

/// Value order: for qs[0..31] then qs[32..47], digit n of every byte of the
/// group before digit n + 1; then digit n of the four qh bytes.
static void decodeTQ1(const uint8_t *block, float *out) {
  const uint8_t *qs = block, *qh = block + 48;
  float d = readHalf(block + 52);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m)
      *out++ = static_cast<float>(tritAt(qs[m], n) - 1) * d;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m)
      *out++ = static_cast<float>(tritAt(qs[32 + m], n) - 1) * d;
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j)
      *out++ = static_cast<float>(tritAt(qh[j], n) - 1) * d;
}

/// Value 128h + 32l + m is bits 2l..2l+1 of qs[32h + m].
static void decodeTQ2(const uint8_t *block, float *out) {
  float d = readHalf(block + 64);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m)
        *out++ =
            static_cast<float>(((block[32 * h + m] >> (2 * l)) & 3) - 1) * d;
}

/// Value 32k + m is bits 7-2k..6-2k of byte m: (code - 1) * scale.
static void decodeI2S(const uint8_t *block, float scale, float *out) {
  for (int k = 0; k < 4; ++k)
    for (int m = 0; m < 32; ++m)
      *out++ = static_cast<float>(((block[m] >> (6 - 2 * k)) & 3) - 1) * scale;
}

/// The f32 after the blocks of an i2_s tensor.
static float i2sScaleOf(const HostTensor &tensor) {
  size_t at = static_cast<size_t>(tensor.getNumElements() / 4);
  float scale = 0;
  if (at + sizeof(float) <= tensor.bytes().size())
    std::memcpy(&scale, tensor.bytes().data() + at, sizeof(float));
  return scale;
}

LogicalResult hesper::interp::dequantizeRow(const HostTensor &tensor,
                                            int64_t row,
                                            std::vector<float> &out) {
  RankedTensorType type = tensor.getType();
  int64_t rowLength = type.getShape().back();
  Type element = type.getElementType();
  if (element.isF32() || element.isF16()) {
    for (int64_t i = 0; i < rowLength; ++i)
      out.push_back(tensor.getFloat(row * rowLength + i));
    return success();
  }
  int64_t blockSize = getQuantBlockSize(element);
  int64_t blockBytes = getQuantBlockBytes(element);
  if (!blockSize)
    return failure();
  int64_t blocksPerRow = rowLength / blockSize;
  const uint8_t *base =
      tensor.bytes().data() + row * blocksPerRow * blockBytes;
  size_t start = out.size();
  out.resize(start + rowLength);
  float *dst = out.data() + start;
  for (int64_t b = 0; b < blocksPerRow; ++b) {
    const uint8_t *block = base + b * blockBytes;
    float *o = dst + b * blockSize;
    if (element.isBF16())
      *o = bfloat16BitsToFloat(static_cast<uint16_t>(block[0] | (block[1] << 8)));
    else if (isa<Q8_0Type>(element))
      decodeQ8(block, /*withSum=*/false, o);
    else if (isa<Q4_0Type>(element))
      decodeQ4_0(block, o);
    else if (isa<Q4_1Type>(element))
      decodeLegacy(block, /*offset=*/true, /*fifthBits=*/false, o);
    else if (isa<Q5_0Type>(element))
      decodeLegacy(block, /*offset=*/false, /*fifthBits=*/true, o);
    else if (isa<Q5_1Type>(element))
      decodeLegacy(block, /*offset=*/true, /*fifthBits=*/true, o);
    else if (isa<IQ4_NLType>(element))
      decodeIQ4_NL(block, o);
    else if (isa<IQ4_XSType>(element))
      decodeIQ4_XS(block, o);
    else if (isa<Q5_KType>(element))
      decodeQ5K(block, o);
    else if (isa<Q2_KType>(element))
      decodeQ2K(block, o);
    else if (isa<Q3_KType>(element))
      decodeQ3K(block, o);
    else if (isa<Q8_1Type>(element))
      decodeQ8(block, /*withSum=*/true, o);
    else if (isa<Q4_KType>(element))
      decodeQ4K(block, o);
    else if (isa<TQ1_0Type>(element))
      decodeTQ1(block, o);
    else if (isa<TQ2_0Type>(element))
      decodeTQ2(block, o);
    else if (isa<I2_SType>(element))
      decodeI2S(block, i2sScaleOf(tensor), o);
    else
      decodeQ6K(block, o);
  }
  return success();
}

void hesper::interp::quantizeBlocks(ArrayRef<float> values, bool withSums,
                                    std::vector<uint8_t> &out) {
  const size_t blockBytes = withSums ? 36 : 34;
  for (size_t b = 0; b + 32 <= values.size(); b += 32) {
    float amax = 0.0f;
    for (size_t i = 0; i < 32; ++i)
      amax = std::fmax(amax, std::fabs(values[b + i]));
    float d = amax / 127.0f;
    size_t at = out.size();
    out.resize(at + blockBytes);
    uint8_t *block = out.data() + at;
    int8_t *q = reinterpret_cast<int8_t *>(block + (withSums ? 4 : 2));
    int sum = 0;
    for (size_t i = 0; i < 32; ++i) {
      float scaled = d != 0.0f ? values[b + i] / d : 0.0f;
      float r = std::fmin(std::fmax(std::round(scaled), -127.0f), 127.0f);
      q[i] = static_cast<int8_t>(r);
      sum += q[i];
    }
    writeHalf(block, d);
    if (withSums)
      writeHalf(block + 2, d * static_cast<float>(sum));
  }
}
