//===- ShaderMTypes.cpp - Buffer and shared memory types -----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hesper::shaderm;

#define GET_TYPEDEF_CLASSES
#include "Hesper/Dialect/ShaderM/IR/ShaderMTypes.cpp.inc"

void ShaderMDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "Hesper/Dialect/ShaderM/IR/ShaderMTypes.cpp.inc"
      >();
}

static bool isStorableElementType(Type type) {
  return type.isInteger(8) || type.isInteger(16) || type.isInteger(32) ||
         type.isInteger(64) || type.isF16() || type.isF32();
}

int64_t hesper::shaderm::getElementByteSize(Type elementType) {
  return (elementType.getIntOrFloatBitWidth() + 7) / 8;
}

/// Parses `LENGTH x TYPE` where LENGTH may be `?`.
static ParseResult parseLengthAndType(AsmParser &parser, int64_t &length,
                                      Type &elementType, bool allowDynamic) {
  SmallVector<int64_t, 1> dims;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseDimensionList(dims, allowDynamic, /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return failure();
  if (dims.size() != 1)
    return parser.emitError(loc, "expected one length, got ") << dims.size();
  length = dims.front();
  return success();
}

static void printLength(AsmPrinter &printer, int64_t length) {
  if (ShapedType::isDynamic(length))
    printer << '?';
  else
    printer << length;
}

Type BufferType::parse(AsmParser &parser) {
  int64_t length;
  Type elementType;
  if (parser.parseLess() ||
      parseLengthAndType(parser, length, elementType, /*allowDynamic=*/true))
    return {};
  Access access = Access::read_write;
  if (succeeded(parser.parseOptionalComma())) {
    StringRef keyword;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&keyword))
      return {};
    std::optional<Access> parsed = symbolizeAccess(keyword);
    if (!parsed) {
      parser.emitError(loc, "expected 'read_only' or 'read_write', got '")
          << keyword << "'";
      return {};
    }
    access = *parsed;
  }
  if (parser.parseGreater())
    return {};
  return BufferType::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), length, elementType, access);
}

void BufferType::print(AsmPrinter &printer) const {
  printer << '<';
  printLength(printer, getLength());
  printer << 'x' << getElementType();
  if (isReadOnly())
    printer << ", read_only";
  printer << '>';
}

LogicalResult
BufferType::verify(function_ref<InFlightDiagnostic()> emitError,
                   int64_t length, Type elementType, Access) {
  if (!ShapedType::isDynamic(length) && length <= 0)
    return emitError() << "expects a positive buffer length, got " << length;
  if (!isStorableElementType(elementType))
    return emitError() << "expects a buffer element of type i8, i16, i32, "
                          "i64, f16 or f32, got "
                       << elementType;
  return success();
}

Type SharedType::parse(AsmParser &parser) {
  int64_t length;
  Type elementType;
  if (parser.parseLess() ||
      parseLengthAndType(parser, length, elementType, /*allowDynamic=*/false) ||
      parser.parseGreater())
    return {};
  return SharedType::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), length, elementType);
}

void SharedType::print(AsmPrinter &printer) const {
  printer << '<' << getLength() << 'x' << getElementType() << '>';
}

LogicalResult
SharedType::verify(function_ref<InFlightDiagnostic()> emitError,
                   int64_t length, Type elementType) {
  if (length <= 0)
    return emitError() << "expects a positive shared array length, got "
                       << length;
  if (!isStorableElementType(elementType))
    return emitError() << "expects a shared element of type i8, i16, i32, "
                          "i64, f16 or f32, got "
                       << elementType;
  return success();
}
