//===- ShaderM.h - ShaderM dialect ----------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The shaderm dialect: imperative GPU kernels with bindings, builtin ids,
// buffer and shared memory access, barriers and atomics.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_SHADERM_IR_SHADERM_H
#define HESPER_DIALECT_SHADERM_IR_SHADERM_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Hesper/Dialect/ShaderM/IR/ShaderMDialect.h.inc"
#include "Hesper/Dialect/ShaderM/IR/ShaderMEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Hesper/Dialect/ShaderM/IR/ShaderMTypes.h.inc"

#define GET_OP_CLASSES
#include "Hesper/Dialect/ShaderM/IR/ShaderMOps.h.inc"

namespace hesper {
namespace shaderm {

/// Largest number of lanes in one workgroup the dialect accepts (the limit of
/// both CUDA and common Vulkan devices).
constexpr int64_t kMaxWorkgroupLanes = 1024;

/// Size in bytes of one element of a buffer or shared array.
int64_t getElementByteSize(mlir::Type elementType);

} // namespace shaderm
} // namespace hesper

#endif // HESPER_DIALECT_SHADERM_IR_SHADERM_H
