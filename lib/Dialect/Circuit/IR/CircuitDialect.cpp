//===- CircuitDialect.cpp - Circuit dialect registration and types -------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hesper::circuit;

#include "Hesper/Dialect/Circuit/IR/CircuitDialect.cpp.inc"
#include "Hesper/Dialect/Circuit/IR/CircuitEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Hesper/Dialect/Circuit/IR/CircuitTypes.cpp.inc"

void CircuitDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "Hesper/Dialect/Circuit/IR/CircuitTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "Hesper/Dialect/Circuit/IR/CircuitOps.cpp.inc"
      >();
}

// bf16 counts as a block format of one value in two bytes: like the
// quantized formats it is only stored (matmul weights, gather sources) and
// decoded to f32 where it is read.
int64_t hesper::circuit::getQuantBlockSize(Type type) {
  return llvm::TypeSwitch<Type, int64_t>(type)
      .Case<Q8_0Type, Q4_0Type, Q4_1Type, Q5_0Type, Q5_1Type, IQ4_NLType,
            IQ4_XSType, Q2_KType, Q3_KType, Q4_KType, Q5_KType, Q6_KType,
            I2_SType, TQ1_0Type, TQ2_0Type, Q8_1Type>(
          [](auto t) { return decltype(t)::kBlockSize; })
      .Case([](BFloat16Type) { return 1; })
      .Default([](Type) { return 0; });
}

int64_t hesper::circuit::getQuantBlockBytes(Type type) {
  return llvm::TypeSwitch<Type, int64_t>(type)
      .Case<Q8_0Type, Q4_0Type, Q4_1Type, Q5_0Type, Q5_1Type, IQ4_NLType,
            IQ4_XSType, Q2_KType, Q3_KType, Q4_KType, Q5_KType, Q6_KType,
            I2_SType, TQ1_0Type, TQ2_0Type, Q8_1Type>(
          [](auto t) { return decltype(t)::kBlockBytes; })
      .Case([](BFloat16Type) { return 2; })
      .Default([](Type) { return 0; });
}

int64_t hesper::circuit::getStorageBytes(RankedTensorType type) {
  Type element = type.getElementType();
  if (int64_t block = getQuantBlockSize(element)) {
    int64_t bytes = type.getNumElements() / block * getQuantBlockBytes(element);
    // An i2_s tensor ends with its one f32 scale, padded to 32 bytes, as
    // GGUF stores it.
    if (isa<I2_SType>(element))
      bytes += I2_SType::kTrailerBytes;
    return bytes;
  }
  return type.getNumElements() * (element.getIntOrFloatBitWidth() / 8);
}
