//===- CircuitBase.td - Circuit dialect definition ---------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_IR_CIRCUITBASE_TD
#define HESPER_DIALECT_CIRCUIT_IR_CIRCUITBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Circuit_Dialect : Dialect {
  let name = "circuit";
  let cppNamespace = "::hesper::circuit";
  let summary = "Shape-typed graphs of tensor primitives";
  let description = [{
    A `circuit.graph` is a dataflow graph over statically shaped tensors
    (builtin `tensor<...>` of `f32`, `f16`, `i32`, or one of the quantized
    block formats of this dialect; `bf16` is a storage format like those:
    matmul weights and gather sources, decoded to f32 where read). Graph arguments are external buffers
    bound at run time. Each primitive (map, gather, scatter, reduce, matmul,
    quantize, ...) is one candidate kernel; its per-lane behaviour is a
    region of `exp` ops. Fusion passes merge primitives so that one
    remaining primitive is one kernel.

    Iteration and broadcasting: a primitive iterates over a shape (its
    result's, or its first input's); every other input either has as many
    elements (read at the flat lane index) or broadcasts NumPy-style:
    trailing dimensions aligned, each equal to the iteration's or 1. So a
    `[D]` weight beside a `[rows, D]` activation is read at `lane mod D`, a
    `[rows, 1]` row statistic at `lane div D`, and a `[1]` scalar at 0.
    Per-lane bodies receive the flat lane index as an `i32`, followed by one
    argument per input: its element for this lane (the broadcast rule
    applies), or, when the block argument has the input's own tensor type,
    the whole input, read at computed indices with `circuit.extract` (no
    broadcast rule applies then).
  }];
  let useDefaultTypePrinterParser = 1;
  let usePropertiesForAttributes = 1;
  let dependentDialects = ["::hesper::exp::ExpDialect"];
}

class Circuit_Op<string mnemonic, list<Trait> traits = []>
    : Op<Circuit_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Quantized element types
//===----------------------------------------------------------------------===//

class Circuit_QuantType<string name, string typeMnemonic, int block,
                        int bytes, string what>
    : TypeDef<Circuit_Dialect, name> {
  let mnemonic = typeMnemonic;
  let summary = what;
  let description = what # ": blocks of " # block # " values stored in "
      # bytes # " bytes, laid out as in GGUF. A tensor of this element type "
      # "counts logical values; its last dimension is a multiple of "
      # block # ".";
  let extraClassDeclaration = [{
    static constexpr int64_t kBlockSize = }] # block # [{;
    static constexpr int64_t kBlockBytes = }] # bytes # [{;
  }];
}

def Circuit_Q8_0Type : Circuit_QuantType<"Q8_0", "q8_0", 32, 34,
    "8-bit weights, one f16 scale per block of 32">;
def Circuit_Q4_0Type : Circuit_QuantType<"Q4_0", "q4_0", 32, 18,
    "4-bit weights, one f16 scale per block of 32 (value = d * (q - 8))">;
def Circuit_Q4_1Type : Circuit_QuantType<"Q4_1", "q4_1", 32, 20,
    "4-bit weights, an f16 scale d and an f16 offset m per block of 32, "
    "then q4_0's nibbles (value = d * q + m)">;
def Circuit_Q5_0Type : Circuit_QuantType<"Q5_0", "q5_0", 32, 22,
    "5-bit weights, one f16 scale per block of 32, a 32-bit word of fifth "
    "bits (bit j for value j), then q4_0's nibbles (value = d * (q - 16))">;
def Circuit_Q5_1Type : Circuit_QuantType<"Q5_1", "q5_1", 32, 24,
    "5-bit weights, an f16 scale d and an f16 offset m per block of 32, a "
    "32-bit word of fifth bits, then q4_0's nibbles (value = d * q + m)">;
def Circuit_IQ4_NLType : Circuit_QuantType<"IQ4_NL", "iq4_nl", 32, 18,
    "4-bit non-linear weights, one f16 scale per block of 32, q4_0's nibble "
    "layout (value = d * table[q], ggml's 16 signed byte values)"> {
  let extraClassDeclaration = [{
    static constexpr int64_t kBlockSize = 32;
    static constexpr int64_t kBlockBytes = 18;
    /// The value of each nibble, as ggml defines it (the runtime's reader
    /// keeps its own copy, rt::kIq4nlValues: it links no MLIR).
    static constexpr int8_t kValues[16] = {-127, -104, -83, -65, -49, -35,
                                           -22,  -10,  1,   13,  25,  38,
                                           53,   69,   89,  113};
  }];
}
def Circuit_IQ4_XSType : Circuit_QuantType<"IQ4_XS", "iq4_xs", 256, 136,
    "4-bit non-linear weights in super-blocks of 256: f16 d, then eight "
    "6-bit sub-block scales (the high two bits of each in a u16, the low "
    "four in 4 bytes), then iq4_nl's nibbles for each 32-value sub-block "
    "(value = d * (scale - 32) * table[q])">;
def Circuit_Q2_KType : Circuit_QuantType<"Q2_K", "q2_k", 256, 84,
    "2-bit k-quant weights, super-blocks of 256 with 4-bit sub-block scales "
    "and mins per 16 values (value = d * sc * q - dmin * m)">;
def Circuit_Q3_KType : Circuit_QuantType<"Q3_K", "q3_k", 256, 110,
    "3-bit k-quant weights, super-blocks of 256: a plane of third bits, "
    "2-bit codes and 6-bit sub-block scales per 16 values "
    "(value = d * (sc - 32) * (q - 4))">;
def Circuit_Q4_KType : Circuit_QuantType<"Q4_K", "q4_k", 256, 144,
    "4-bit k-quant weights, super-blocks of 256 with 6-bit sub-block scales">;
def Circuit_Q5_KType : Circuit_QuantType<"Q5_K", "q5_k", 256, 176,
    "5-bit k-quant weights, super-blocks of 256 with 6-bit sub-block scales "
    "(q4_k's layout plus a plane of fifth bits)">;
def Circuit_Q6_KType : Circuit_QuantType<"Q6_K", "q6_k", 256, 210,
    "6-bit k-quant weights, super-blocks of 256 with 8-bit sub-block scales">;
def Circuit_I2_SType : Circuit_QuantType<"I2_S", "i2_s", 128, 32,
    "BitNet b1.58 ternary weights, 2 bits each, with one f32 scale per tensor "
    "(the value is (code - 1) * scale); the tensor's storage ends with the "
    "scale, padded to 32 bytes, after all blocks"> {
  let extraClassDeclaration = [{
    static constexpr int64_t kBlockSize = 128;
    static constexpr int64_t kBlockBytes = 32;
    /// Bytes after the blocks of a tensor: the f32 scale and padding.
    static constexpr int64_t kTrailerBytes = 32;
  }];
}
def Circuit_TQ1_0Type : Circuit_QuantType<"TQ1_0", "tq1_0", 256, 54,
    "ternary weights (BitNet b1.58), five trits per byte in base 3 (240 "
    "values) and four per byte (16 values), one f16 scale per block of 256">;
def Circuit_TQ2_0Type : Circuit_QuantType<"TQ2_0", "tq2_0", 256, 66,
    "ternary weights (BitNet b1.58), 2 bits each (q - 1 in {-1, 0, 1}), one "
    "f16 scale per block of 256">;
def Circuit_Q8_1Type : Circuit_QuantType<"Q8_1", "q8_1", 32, 36,
    "8-bit activations, one f16 scale and one f16 scaled sum per block of 32">;

def Circuit_QuantElement : AnyTypeOf<[Circuit_Q8_0Type, Circuit_Q4_0Type,
    Circuit_Q4_1Type, Circuit_Q5_0Type, Circuit_Q5_1Type, Circuit_IQ4_NLType, Circuit_IQ4_XSType,
    Circuit_Q2_KType, Circuit_Q3_KType,
    Circuit_Q4_KType, Circuit_Q5_KType, Circuit_Q6_KType, Circuit_I2_SType, Circuit_TQ1_0Type, Circuit_TQ2_0Type,
    Circuit_Q8_1Type],
    "quantized block format">;

//===----------------------------------------------------------------------===//
// Tensor constraints
//===----------------------------------------------------------------------===//

/// Values computed per lane: f32, f16 or i32 elements.
def Circuit_ScalarElement : AnyTypeOf<[F32, F16, I32]>;
def Circuit_Tensor : StaticShapeTensorOf<[F32, F16, BF16, I32,
    Circuit_Q8_0Type, Circuit_Q4_0Type, Circuit_Q4_1Type, Circuit_Q5_0Type,
    Circuit_Q5_1Type, Circuit_IQ4_NLType, Circuit_IQ4_XSType, Circuit_Q2_KType,
    Circuit_Q3_KType, Circuit_Q4_KType,
    Circuit_Q5_KType, Circuit_Q6_KType, Circuit_I2_SType, Circuit_TQ1_0Type,
    Circuit_TQ2_0Type, Circuit_Q8_1Type]>;
def Circuit_ScalarTensor : StaticShapeTensorOf<[F32, F16, I32]>;
def Circuit_FloatTensor : StaticShapeTensorOf<[F32, F16]>;
/// A KV cache: values in f32, f16 or q8_0 blocks (llama.cpp's -ctk/-ctv).
def Circuit_CacheTensor : StaticShapeTensorOf<[F32, F16, Circuit_Q8_0Type]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Circuit_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"sum_sq", 1>,
    I32EnumAttrCase<"max", 2>]> {
  let cppNamespace = "::hesper::circuit";
}

#endif // HESPER_DIALECT_CIRCUIT_IR_CIRCUITBASE_TD
