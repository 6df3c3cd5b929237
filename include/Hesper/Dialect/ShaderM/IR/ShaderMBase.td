//===- ShaderMBase.td - ShaderM dialect definition ---------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_SHADERM_IR_SHADERMBASE_TD
#define HESPER_DIALECT_SHADERM_IR_SHADERMBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def ShaderM_Dialect : Dialect {
  let name = "shaderm";
  let cppNamespace = "::hesper::shaderm";
  let summary = "Imperative GPU kernels";
  let description = [{
    The `shaderm` dialect writes GPU kernels as imperative programs. A
    `shaderm.kernel` names its workgroup size and its bindings: storage
    buffers (`!shaderm.buffer`, with element type, length and access) and
    scalar parameters (push constants). Its body reads builtin ids, loads and
    stores buffer elements by index, allocates workgroup (shared) memory,
    synchronizes with barriers, and updates memory with atomics. Control
    flow reuses `scf.for`, `scf.if` and `scf.while`; per-lane arithmetic uses
    the `exp` dialect (or `arith`/`math`).

    `convert-shaderm-to-gpu` lowers a kernel to a `gpu.func` whose binding
    order, dispatch grid and shared-memory size are recorded as attributes
    for the runtime.
  }];
  let useDefaultTypePrinterParser = 1;
  let usePropertiesForAttributes = 1;
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::gpu::GPUDialect"];
  let extraClassDeclaration = [{
    /// Registers the dialect's types (defined in ShaderMTypes.cpp).
    void registerTypes();
  }];
}

class ShaderM_Op<string mnemonic, list<Trait> traits = []>
    : Op<ShaderM_Dialect, mnemonic, traits>;

class ShaderM_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<ShaderM_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def ShaderM_Access : I32EnumAttr<"Access", "buffer access", [
    I32EnumAttrCase<"read_write", 0>, I32EnumAttrCase<"read_only", 1>]> {
  let cppNamespace = "::hesper::shaderm";
}

def ShaderM_Dim : I32EnumAttr<"Dim", "grid dimension", [
    I32EnumAttrCase<"x", 0>, I32EnumAttrCase<"y", 1>,
    I32EnumAttrCase<"z", 2>]> {
  let cppNamespace = "::hesper::shaderm";
}

def ShaderM_AtomicKind : I32EnumAttr<"AtomicKind", "atomic update", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"umax", 3>,
    I32EnumAttrCase<"umin", 4>, I32EnumAttrCase<"bit_and", 5, "and">,
    I32EnumAttrCase<"bit_or", 6, "or">, I32EnumAttrCase<"bit_xor", 7, "xor">,
    I32EnumAttrCase<"exchange", 8>]> {
  let cppNamespace = "::hesper::shaderm";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def ShaderM_BufferType : ShaderM_Type<"Buffer", "buffer"> {
  let summary = "a storage buffer bound to a kernel";
  let description = [{
    A one-dimensional array in device memory, bound to a kernel argument:
    `!shaderm.buffer<LENGTHxTYPE>` or `!shaderm.buffer<LENGTHxTYPE, read_only>`.
    The length is a number of elements, or `?` when only known at dispatch.
    Elements are `i8`, `i16`, `i32`, `i64`, `f16` or `f32`; quantized weights
    are bound as `i8` or `i32` words and decoded in the kernel.

    ```mlir
    !shaderm.buffer<1024xf32, read_only>
    !shaderm.buffer<?xi32>
    ```
  }];
  let parameters = (ins "int64_t":$length, "::mlir::Type":$elementType,
                        "::hesper::shaderm::Access":$access);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isReadOnly() const {
      return getAccess() == ::hesper::shaderm::Access::read_only;
    }
    bool hasStaticLength() const {
      return !::mlir::ShapedType::isDynamic(getLength());
    }
  }];
}

def ShaderM_SharedType : ShaderM_Type<"Shared", "shared"> {
  let summary = "an array in workgroup (shared) memory";
  let description = [{
    Workgroup memory visible to all lanes of one workgroup, of static
    length: `!shaderm.shared<LENGTHxTYPE>`.

    ```mlir
    !shaderm.shared<256xf32>
    ```
  }];
  let parameters = (ins "int64_t":$length, "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def ShaderM_MemoryType : AnyTypeOf<[ShaderM_BufferType, ShaderM_SharedType],
                                   "buffer or shared memory">;

#endif // HESPER_DIALECT_SHADERM_IR_SHADERMBASE_TD
