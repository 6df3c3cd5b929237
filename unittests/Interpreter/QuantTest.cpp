//===- QuantTest.cpp - The interpreter's block decoders vs the runtime's --===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The reference interpreter (lib/Interpreter/Quant.cpp) and the runtime's
// GGUF reader (runtime/lib/formats/gguf/GgufDequant.cpp) decode GGUF's block
// formats with two implementations written apart on purpose; the
// interpreter's is the oracle. Here both decode the same random blocks of
// every format they both know and must agree bit for bit. The one allowed
// difference is a NaN's quiet bit: the reader makes an f16 NaN quiet, as
// F16C does, where the interpreter keeps it as stored.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Interpreter/Interpreter.h"

#include "hesper/runtime/Gguf.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

/// Equal bits, or two NaNs that differ at most in the quiet bit.
bool sameBits(float a, float b) {
  if (bitsOf(a) == bitsOf(b))
    return true;
  constexpr uint32_t kQuiet = 0x00400000u;
  return std::isnan(a) && std::isnan(b) &&
         (bitsOf(a) | kQuiet) == (bitsOf(b) | kQuiet);
}

struct Format {
  const char *name;
  rt::GgmlType ggml;
  Type (*element)(MLIRContext *);
};

class QuantTest : public ::testing::TestWithParam<Format> {
protected:
  QuantTest() { context.loadDialect<CircuitDialect>(); }
  MLIRContext context;
};

/// Rows of random blocks in `format` (for f16 and bf16, every 16-bit
/// pattern twice over), decoded row by row by both.
TEST_P(QuantTest, InterpreterAndRuntimeDecodeTheSameBits) {
  const Format &format = GetParam();
  const int64_t blockSize = rt::ggmlBlockSize(format.ggml);
  ASSERT_GT(blockSize, 0);
  const int64_t rows = 4;
  const int64_t rowLength = blockSize == 1 ? 32768 : 64 * blockSize;
  std::optional<int64_t> rowBytes = rt::ggmlRowBytes(format.ggml, rowLength);
  ASSERT_TRUE(rowBytes);

  Type element = format.element(&context);
  ASSERT_EQ(getQuantBlockSize(element) ? getQuantBlockSize(element) : 1,
            blockSize);
  HostTensor tensor(RankedTensorType::get({rows, rowLength}, element));
  std::vector<uint8_t> &bytes = tensor.bytes();
  ASSERT_EQ(bytes.size(), static_cast<size_t>(rows * *rowBytes) +
                              rt::ggmlTensorTrailerBytes(format.ggml));

  std::mt19937 rng(20250523u + static_cast<uint32_t>(format.ggml));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t &b : bytes)
    b = static_cast<uint8_t>(byte(rng));
  if (format.ggml == rt::GgmlType::F16 || format.ggml == rt::GgmlType::BF16)
    for (size_t i = 0; i < bytes.size() / 2; ++i) {
      bytes[2 * i] = static_cast<uint8_t>(i & 0xff);
      bytes[2 * i + 1] = static_cast<uint8_t>((i >> 8) & 0xff);
    }

  // An i2_s tensor's one scale (the f32 after its blocks): a finite one, so
  // that the products compare something.
  float scale = 1.0f;
  rt::GgufTensor gguf;
  gguf.type = format.ggml;
  gguf.numElements = rows * rowLength;
  gguf.bytes = bytes.size();
  gguf.data = bytes.data();
  if (format.ggml == rt::GgmlType::I2_S) {
    scale = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng);
    std::memcpy(bytes.data() + rows * rowLength / 4, &scale, sizeof(scale));
    ASSERT_EQ(bitsOf(rt::i2sScale(gguf)), bitsOf(scale));
  }

  std::vector<float> runtime(rowLength);
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<float> oracle;
    ASSERT_TRUE(succeeded(dequantizeRow(tensor, row, oracle)));
    ASSERT_EQ(static_cast<int64_t>(oracle.size()), rowLength);
    rt::Status status = rt::dequantizeRow(
        format.ggml, bytes.data() + row * *rowBytes, runtime.data(), rowLength);
    ASSERT_TRUE(status.ok()) << status.message();
    for (int64_t i = 0; i < rowLength; ++i) {
      // The reader leaves the i2_s scale to whoever reads the tensor; the
      // interpreter applies it (code - 1) * scale, the same product.
      float got =
          format.ggml == rt::GgmlType::I2_S ? runtime[i] * scale : runtime[i];
      ASSERT_TRUE(sameBits(got, oracle[i]))
          << format.name << " row " << row << " element " << i << ": runtime 0x"
          << std::hex << bitsOf(got) << ", interpreter 0x" << bitsOf(oracle[i]);
    }
  }
}

Type f32(MLIRContext *c) { return Builder(c).getF32Type(); }
Type f16(MLIRContext *c) { return Builder(c).getF16Type(); }
Type bf16(MLIRContext *c) { return Builder(c).getBF16Type(); }
template <typename T> Type quant(MLIRContext *c) { return T::get(c); }

/// Every format both decode (q8_1 is the interpreter's alone).
const Format kFormats[] = {
    {"f32", rt::GgmlType::F32, f32},
    {"f16", rt::GgmlType::F16, f16},
    {"bf16", rt::GgmlType::BF16, bf16},
    {"q8_0", rt::GgmlType::Q8_0, quant<Q8_0Type>},
    {"q4_0", rt::GgmlType::Q4_0, quant<Q4_0Type>},
    {"q4_1", rt::GgmlType::Q4_1, quant<Q4_1Type>},
    {"q5_0", rt::GgmlType::Q5_0, quant<Q5_0Type>},
    {"q5_1", rt::GgmlType::Q5_1, quant<Q5_1Type>},
    {"iq4_nl", rt::GgmlType::IQ4_NL, quant<IQ4_NLType>},
    {"iq4_xs", rt::GgmlType::IQ4_XS, quant<IQ4_XSType>},
    {"q2_k", rt::GgmlType::Q2_K, quant<Q2_KType>},
    {"q3_k", rt::GgmlType::Q3_K, quant<Q3_KType>},
    {"q4_k", rt::GgmlType::Q4_K, quant<Q4_KType>},
    {"q5_k", rt::GgmlType::Q5_K, quant<Q5_KType>},
    {"q6_k", rt::GgmlType::Q6_K, quant<Q6_KType>},
    {"tq1_0", rt::GgmlType::TQ1_0, quant<TQ1_0Type>},
    {"tq2_0", rt::GgmlType::TQ2_0, quant<TQ2_0Type>},
    {"i2_s", rt::GgmlType::I2_S, quant<I2_SType>},
};

INSTANTIATE_TEST_SUITE_P(EveryFormat, QuantTest, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<Format> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
