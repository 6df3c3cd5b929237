//===- HostTensor.cpp - Tensors of the reference interpreter --------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// HostTensor: a tensor's bytes on the host as the interpreter reads and
// writes them (f32 optionally held in double precision, f16, bf16, i32 and
// the quantized block formats, read a dequantized row at a time).
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/Interpreter.h"
#include "Hesper/Support/Half.h"

#include <cstring>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;

static size_t storageBytes(RankedTensorType type) {
  return static_cast<size_t>(getStorageBytes(type));
}

HostTensor::HostTensor(RankedTensorType type, bool wide)
    : type(type), wide(wide && type.getElementType().isF32()) {
  storage.assign(this->wide ? 8 * static_cast<size_t>(type.getNumElements())
                            : storageBytes(type),
                 0);
}

double HostTensor::getDouble(int64_t i) const {
  if (wide) {
    double v;
    std::memcpy(&v, storage.data() + 8 * i, 8);
    return v;
  }
  return getFloat(i);
}

void HostTensor::setDouble(int64_t i, double v) {
  if (wide) {
    std::memcpy(storage.data() + 8 * i, &v, 8);
    return;
  }
  setFloat(i, static_cast<float>(v));
}

HostTensor HostTensor::widened() const {
  if (wide || !getElementType().isF32())
    return *this;
  HostTensor t(type, /*wide=*/true);
  for (int64_t i = 0, e = getNumElements(); i < e; ++i)
    t.setDouble(i, getFloat(i));
  return t;
}

float HostTensor::getFloat(int64_t i) const {
  if (wide)
    return static_cast<float>(getDouble(i));
  if (getElementType().isF16()) {
    uint16_t h;
    std::memcpy(&h, storage.data() + 2 * i, 2);
    return halfBitsToFloat(h);
  }
  if (getElementType().isBF16()) {
    uint16_t h;
    std::memcpy(&h, storage.data() + 2 * i, 2);
    return bfloat16BitsToFloat(h);
  }
  float v;
  std::memcpy(&v, storage.data() + 4 * i, 4);
  return v;
}

void HostTensor::setFloat(int64_t i, float v) {
  if (wide)
    return setDouble(i, v);
  if (getElementType().isF16()) {
    uint16_t h = floatToHalfBits(v);
    std::memcpy(storage.data() + 2 * i, &h, 2);
    return;
  }
  if (getElementType().isBF16()) {
    uint16_t h = floatToBFloat16Bits(v);
    std::memcpy(storage.data() + 2 * i, &h, 2);
    return;
  }
  std::memcpy(storage.data() + 4 * i, &v, 4);
}

int32_t HostTensor::getInt(int64_t i) const {
  int32_t v;
  std::memcpy(&v, storage.data() + 4 * i, 4);
  return v;
}

void HostTensor::setInt(int64_t i, int32_t v) {
  std::memcpy(storage.data() + 4 * i, &v, 4);
}

HostTensor HostTensor::fromFloats(MLIRContext *context,
                                  ArrayRef<int64_t> shape,
                                  ArrayRef<float> values) {
  HostTensor t(RankedTensorType::get(shape, Float32Type::get(context)));
  assert(static_cast<int64_t>(values.size()) == t.getNumElements());
  for (size_t i = 0; i < values.size(); ++i)
    t.setFloat(i, values[i]);
  return t;
}

HostTensor HostTensor::fromInts(MLIRContext *context, ArrayRef<int64_t> shape,
                                ArrayRef<int32_t> values) {
  HostTensor t(RankedTensorType::get(shape, IntegerType::get(context, 32)));
  assert(static_cast<int64_t>(values.size()) == t.getNumElements());
  for (size_t i = 0; i < values.size(); ++i)
    t.setInt(i, values[i]);
  return t;
}

std::vector<float> HostTensor::toFloats() const {
  std::vector<float> out;
  Type element = getElementType();
  if (element.isInteger(32)) {
    for (int64_t i = 0, e = getNumElements(); i < e; ++i)
      out.push_back(static_cast<float>(getInt(i)));
    return out;
  }
  int64_t rowLength = type.getRank() ? type.getShape().back() : 1;
  for (int64_t row = 0, e = getNumElements() / rowLength; row < e; ++row)
    if (failed(dequantizeRow(*this, row, out)))
      return {};
  return out;
}
