//===- ExpOps.td - Exp dialect operations ------------------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_EXP_IR_EXPOPS_TD
#define HESPER_DIALECT_EXP_IR_EXPOPS_TD

include "Hesper/Dialect/Exp/IR/ExpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Exp_CmpPredicate : I32EnumAttr<"CmpPredicate", "comparison predicate", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>,
    I32EnumAttrCase<"ult", 6>, I32EnumAttrCase<"ule", 7>,
    I32EnumAttrCase<"ugt", 8>, I32EnumAttrCase<"uge", 9>]> {
  let cppNamespace = "::hesper::exp";
}

def Exp_ReduceKind : I32EnumAttr<"ReduceKind", "subgroup reduction", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>]> {
  let cppNamespace = "::hesper::exp";
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Exp_ConstantOp : Exp_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>,
     DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a scalar or splat-vector constant";
  let description = [{
    Produces a compile-time constant. The attribute's type is the result
    type: an integer, index or float attribute, or a dense elements
    attribute of vector type.

    ```mlir
    %one = exp.constant 1.0 : f32
    %eight = exp.constant 8 : i32
    %v = exp.constant dense<0.5> : vector<4xf32>
    ```
  }];
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs Exp_Numeric:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::TypedAttr":$value), [{
      build($_builder, $_state, value.getType(), value);
    }]>
  ];
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

class Exp_BinaryOp<string mnemonic, TypeConstraint type,
                   list<Trait> traits = []>
    : Exp_Op<mnemonic, traits # [Pure, SameOperandsAndResultType]> {
  let arguments = (ins type:$lhs, type:$rhs);
  let results = (outs type:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

class Exp_UnaryOp<string mnemonic, TypeConstraint type,
                  list<Trait> traits = []>
    : Exp_Op<mnemonic, traits # [Pure, SameOperandsAndResultType]> {
  let arguments = (ins type:$operand);
  let results = (outs type:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Exp_AddOp : Exp_BinaryOp<"add", Exp_Numeric, [Commutative]> {
  let summary = "addition";
  let description = [{
    Integer (wrapping) or floating-point addition.

    ```mlir
    %s = exp.add %a, %b : f32
    ```
  }];
  let hasFolder = 1;
}

def Exp_SubOp : Exp_BinaryOp<"sub", Exp_Numeric> {
  let summary = "subtraction";
  let description = [{
    Integer (wrapping) or floating-point subtraction, `lhs - rhs`.

    ```mlir
    %d = exp.sub %a, %b : i32
    ```
  }];
  let hasFolder = 1;
}

def Exp_MulOp : Exp_BinaryOp<"mul", Exp_Numeric, [Commutative]> {
  let summary = "multiplication";
  let description = [{
    Integer (wrapping) or floating-point multiplication.

    ```mlir
    %p = exp.mul %a, %b : vector<4xf32>
    ```
  }];
  let hasFolder = 1;
}

def Exp_DivOp : Exp_BinaryOp<"div", Exp_Numeric> {
  let summary = "signed integer or floating-point division";
  let description = [{
    Floating-point division, or signed integer division rounding toward
    zero. Integer division by zero is undefined, as in `arith.divsi`.

    ```mlir
    %q = exp.div %a, %b : f32
    ```
  }];
  let hasFolder = 1;
}

def Exp_RemOp : Exp_BinaryOp<"rem", Exp_Numeric> {
  let summary = "signed integer or floating-point remainder";
  let description = [{
    The remainder of `exp.div`; its sign follows the dividend.

    ```mlir
    %r = exp.rem %a, %b : i32
    ```
  }];
  let hasFolder = 1;
}

def Exp_UDivOp : Exp_BinaryOp<"udiv", Exp_IntLike> {
  let summary = "unsigned integer division";
  let description = [{
    Treats both operands as unsigned.

    ```mlir
    %q = exp.udiv %a, %b : i32
    ```
  }];
  let hasFolder = 1;
}

def Exp_URemOp : Exp_BinaryOp<"urem", Exp_IntLike> {
  let summary = "unsigned integer remainder";
  let description = [{
    Treats both operands as unsigned.

    ```mlir
    %r = exp.urem %a, %b : i32
    ```
  }];
  let hasFolder = 1;
}

def Exp_MinOp : Exp_BinaryOp<"min", Exp_Numeric, [Commutative]> {
  let summary = "signed integer or floating-point minimum";
  let description = [{
    For floats, a NaN operand yields the other operand (IEEE `minNum`).

    ```mlir
    %m = exp.min %a, %b : f32
    ```
  }];
  let hasFolder = 1;
}

def Exp_MaxOp : Exp_BinaryOp<"max", Exp_Numeric, [Commutative]> {
  let summary = "signed integer or floating-point maximum";
  let description = [{
    For floats, a NaN operand yields the other operand (IEEE `maxNum`).

    ```mlir
    %m = exp.max %a, %b : f32
    ```
  }];
  let hasFolder = 1;
}

def Exp_UMinOp : Exp_BinaryOp<"umin", Exp_IntLike, [Commutative]> {
  let summary = "unsigned integer minimum";
  let description = [{
    ```mlir
    %m = exp.umin %a, %b : i32
    ```
  }];
  let hasFolder = 1;
}

def Exp_UMaxOp : Exp_BinaryOp<"umax", Exp_IntLike, [Commutative]> {
  let summary = "unsigned integer maximum";
  let description = [{
    ```mlir
    %m = exp.umax %a, %b : i32
    ```
  }];
  let hasFolder = 1;
}

def Exp_NegOp : Exp_UnaryOp<"neg", Exp_Numeric> {
  let summary = "negation";
  let description = [{
    Floating-point negation, or two's complement negation of an integer.

    ```mlir
    %n = exp.neg %a : f32
    ```
  }];
  let hasFolder = 1;
}

def Exp_AbsOp : Exp_UnaryOp<"abs", Exp_Numeric> {
  let summary = "absolute value";
  let description = [{
    ```mlir
    %m = exp.abs %a : f32
    ```
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

def Exp_CmpOp : Exp_Op<"cmp", [Pure, SameTypeOperands,
    TypesMatchWith<"result is i1 of the operands' shape", "lhs", "result",
                   "::hesper::exp::getI1SameShape($_self)">]> {
  let summary = "comparison";
  let description = [{
    Compares two values of the same type. `eq ne lt le gt ge` are signed
    for integers and ordered for floats (false when either is NaN, except
    `ne`, which is unordered); `ult ule ugt uge` compare integers as
    unsigned and are rejected for floats. The result is `i1`, or a vector
    of `i1` of the operands' shape.

    ```mlir
    %lt = exp.cmp lt, %a, %b : f32
    %in = exp.cmp ult, %i, %n : i32
    ```
  }];
  let arguments = (ins Exp_CmpPredicate:$predicate, Exp_Numeric:$lhs,
                       Exp_Numeric:$rhs);
  let results = (outs Exp_BoolLike:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Exp_SelectOp : Exp_Op<"select", [Pure, AllTypesMatch<["true_value",
    "false_value", "result"]>]> {
  let summary = "choose one of two values";
  let description = [{
    Yields `true_value` where the condition holds, else `false_value`. The
    condition is `i1`, or for vector values either `i1` (the whole vector)
    or a vector of `i1` of the same shape (per element).

    ```mlir
    %y = exp.select %c, %a, %b : f32
    ```
  }];
  let arguments = (ins Exp_BoolLike:$condition, Exp_Numeric:$true_value,
                       Exp_Numeric:$false_value);
  let results = (outs Exp_Numeric:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:`
    custom<SelectConditionType>(type($condition), type($result))
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

def Exp_ConvertOp : Exp_Op<"convert", [Pure]> {
  let summary = "numeric conversion between integer and float types";
  let description = [{
    Converts a value to another numeric type of the same shape:
    float to float (`f16` <-> `f32`, rounding to nearest even), integer to
    integer (truncation, or sign/zero extension), integer to float and float
    to integer (rounding toward zero; out-of-range values are undefined).
    With `unsigned`, the integer side is read or produced as unsigned (zero
    extension, `uitofp`, `fptoui`). `index` converts like a 64-bit integer.

    ```mlir
    %f = exp.convert %i : i32 to f32
    %u = exp.convert unsigned %b : i8 to i32
    %h = exp.convert %x : f32 to f16
    ```
  }];
  let arguments = (ins Exp_Numeric:$input, UnitAttr:$is_unsigned);
  let results = (outs Exp_Numeric:$result);
  let assemblyFormat = [{
    (`unsigned` $is_unsigned^)? $input attr-dict `:` type($input) `to`
    type($result)
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Exp_BitcastOp : Exp_Op<"bitcast", [Pure]> {
  let summary = "reinterpret the bits of a value as another type";
  let description = [{
    Both types have the same shape and the same element bit width.

    ```mlir
    %bits = exp.bitcast %x : f32 to i32
    ```
  }];
  let arguments = (ins Exp_Numeric:$input);
  let results = (outs Exp_Numeric:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

class Exp_MathOp<string mnemonic, string what, string example>
    : Exp_UnaryOp<mnemonic, Exp_FloatLike> {
  let summary = what;
  let description = "Elementwise " # what # " of a float value.\n\n"
                    # "```mlir\n" # example # "\n```";
}

def Exp_ExpOp : Exp_MathOp<"exp", "natural exponential e^x",
                           "%y = exp.exp %x : f32">;
def Exp_LogOp : Exp_MathOp<"log", "natural logarithm",
                           "%y = exp.log %x : f32">;
def Exp_SqrtOp : Exp_MathOp<"sqrt", "square root",
                            "%y = exp.sqrt %x : f32"> {
  let hasFolder = 1;
}
def Exp_RsqrtOp : Exp_MathOp<"rsqrt", "reciprocal square root 1/sqrt(x)",
                             "%y = exp.rsqrt %x : f32">;
def Exp_TanhOp : Exp_MathOp<"tanh", "hyperbolic tangent",
                            "%y = exp.tanh %x : f32">;
def Exp_SinOp : Exp_MathOp<"sin", "sine (radians)", "%y = exp.sin %x : f32">;
def Exp_CosOp : Exp_MathOp<"cos", "cosine (radians)",
                           "%y = exp.cos %x : f32">;
def Exp_FloorOp : Exp_MathOp<"floor", "round toward negative infinity",
                             "%y = exp.floor %x : f32"> {
  let hasFolder = 1;
}
def Exp_RoundOp : Exp_MathOp<"round",
    "round to nearest, ties away from zero (C roundf)",
    "%y = exp.round %x : f32"> {
  let hasFolder = 1;
}
def Exp_SigmoidOp : Exp_MathOp<"sigmoid", "logistic function 1/(1+e^-x)",
                               "%y = exp.sigmoid %x : f32">;
def Exp_SiluOp : Exp_MathOp<"silu", "SiLU activation x/(1+e^-x)",
                            "%y = exp.silu %x : f32">;
def Exp_GeluOp : Exp_MathOp<"gelu",
    "GELU activation, tanh form 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))",
    "%y = exp.gelu %x : f32">;

def Exp_PowOp : Exp_BinaryOp<"pow", Exp_FloatLike> {
  let summary = "power x^y";
  let description = [{
    Floating-point power, as C `powf`.

    ```mlir
    %y = exp.pow %base, %e : f32
    ```
  }];
}

def Exp_FmaOp : Exp_Op<"fma", [Pure, SameOperandsAndResultType]> {
  let summary = "fused multiply-add a*b+c";
  let description = [{
    Computes `a * b + c` with a single rounding.

    ```mlir
    %y = exp.fma %a, %b, %c : f32
    ```
  }];
  let arguments = (ins Exp_FloatLike:$a, Exp_FloatLike:$b, Exp_FloatLike:$c);
  let results = (outs Exp_FloatLike:$result);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($result)";
}

def Exp_ClampOp : Exp_Op<"clamp", [Pure, SameOperandsAndResultType]> {
  let summary = "clamp a value into [lo, hi]";
  let description = [{
    Computes `min(max(x, lo), hi)` (signed for integers).

    ```mlir
    %q = exp.clamp %x, %lo, %hi : i32
    ```
  }];
  let arguments = (ins Exp_Numeric:$x, Exp_Numeric:$lo, Exp_Numeric:$hi);
  let results = (outs Exp_Numeric:$result);
  let assemblyFormat = "$x `,` $lo `,` $hi attr-dict `:` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Bit operations
//===----------------------------------------------------------------------===//

def Exp_AndOp : Exp_BinaryOp<"and", Exp_IntLike, [Commutative]> {
  let summary = "bitwise and";
  let description = "```mlir\n%y = exp.and %a, %b : i32\n```";
  let hasFolder = 1;
}
def Exp_OrOp : Exp_BinaryOp<"or", Exp_IntLike, [Commutative]> {
  let summary = "bitwise or";
  let description = "```mlir\n%y = exp.or %a, %b : i32\n```";
  let hasFolder = 1;
}
def Exp_XorOp : Exp_BinaryOp<"xor", Exp_IntLike, [Commutative]> {
  let summary = "bitwise exclusive or";
  let description = "```mlir\n%y = exp.xor %a, %b : i32\n```";
  let hasFolder = 1;
}
def Exp_NotOp : Exp_UnaryOp<"not", Exp_IntLike> {
  let summary = "bitwise complement";
  let description = "```mlir\n%y = exp.not %a : i32\n```";
  let hasFolder = 1;
}
def Exp_ShlOp : Exp_BinaryOp<"shl", Exp_IntLike> {
  let summary = "shift left";
  let description = [{
    Shifts `lhs` left by `rhs` bits; a shift by the bit width or more is
    undefined.

    ```mlir
    %y = exp.shl %a, %n : i32
    ```
  }];
  let hasFolder = 1;
}
def Exp_ShrSOp : Exp_BinaryOp<"shr_s", Exp_IntLike> {
  let summary = "arithmetic (sign-filling) shift right";
  let description = "```mlir\n%y = exp.shr_s %a, %n : i32\n```";
  let hasFolder = 1;
}
def Exp_ShrUOp : Exp_BinaryOp<"shr_u", Exp_IntLike> {
  let summary = "logical (zero-filling) shift right";
  let description = "```mlir\n%y = exp.shr_u %a, %n : i32\n```";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

def Exp_PackF16x2Op : Exp_Op<"pack_f16x2", [Pure, AllTypesMatch<["lo", "hi"]>]> {
  let summary = "pack two halves into a 32-bit word";
  let description = [{
    Rounds `lo` and `hi` to `f16` (if they are `f32`) and packs them into one
    `i32`: `lo` in bits 0-15, `hi` in bits 16-31.

    ```mlir
    %w = exp.pack_f16x2 %a, %b : f32
    ```
  }];
  let arguments = (ins Exp_ScalarFloat:$lo, Exp_ScalarFloat:$hi);
  let results = (outs I32:$result);
  let assemblyFormat = "$lo `,` $hi attr-dict `:` type($lo)";
}

def Exp_UnpackF16x2Op : Exp_Op<"unpack_f16x2", [Pure]> {
  let summary = "extract one half from a 32-bit word";
  let description = [{
    Reads the `f16` in half `index` (0: bits 0-15, 1: bits 16-31) of a
    word, widened to the result type.

    ```mlir
    %hi = exp.unpack_f16x2 %w[1] : f32
    ```
  }];
  let arguments = (ins I32:$word,
                       ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<1>]>:$index);
  let results = (outs Exp_ScalarFloat:$result);
  let assemblyFormat = "$word `[` $index `]` attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Exp_PackI8x4Op : Exp_Op<"pack_i8x4", [Pure]> {
  let summary = "pack four bytes into a 32-bit word";
  let description = [{
    Truncates four `i32` values to 8 bits and packs them little-endian:
    `b0` in bits 0-7, ..., `b3` in bits 24-31.

    ```mlir
    %w = exp.pack_i8x4 %b0, %b1, %b2, %b3
    ```
  }];
  let arguments = (ins I32:$b0, I32:$b1, I32:$b2, I32:$b3);
  let results = (outs I32:$result);
  let assemblyFormat = "$b0 `,` $b1 `,` $b2 `,` $b3 attr-dict";
  let hasFolder = 1;
}

def Exp_UnpackI8x4Op : Exp_Op<"unpack_i8x4", [Pure]> {
  let summary = "extract one byte from a 32-bit word";
  let description = [{
    Reads byte `index` (0 = bits 0-7) of a word, sign-extended to `i32`, or
    zero-extended with `unsigned`.

    ```mlir
    %b = exp.unpack_i8x4 %w[2]
    %u = exp.unpack_i8x4 unsigned %w[3]
    ```
  }];
  let arguments = (ins I32:$word,
                       ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<3>]>:$index,
                       UnitAttr:$is_unsigned);
  let results = (outs I32:$result);
  let assemblyFormat =
      "(`unsigned` $is_unsigned^)? $word `[` $index `]` attr-dict";
  let hasFolder = 1;
}

def Exp_Dot4I8Op : Exp_Op<"dot4_i8", [Pure]> {
  let summary = "dot product of packed signed bytes plus accumulator";
  let description = [{
    Treats `a` and `b` as four signed 8-bit lanes each and returns
    `acc + a0*b0 + a1*b1 + a2*b2 + a3*b3` (wrapping `i32`), as PTX
    `dp4a.s32.s32`. On SPIR-V it is `OpSDot` followed by an ordinary add
    (`OpSDotAccSat` would saturate).

    ```mlir
    %d = exp.dot4_i8 %a, %b, %acc
    ```
  }];
  let arguments = (ins I32:$a, I32:$b, I32:$acc);
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict";
  let hasFolder = 1;
}

def Exp_VectorDot4I8Op : Exp_Op<"vector_dot4_i8", [Pure,
    AllTypesMatch<["a", "b"]>, AllTypesMatch<["acc", "result"]>]> {
  let summary = "dot products of groups of four signed bytes, per lane";
  let description = [{
    `exp.dot4_i8` on vectors, for one-lane (CPU) kernels: lane `i` of the
    result is `acc[i] + a[4i]*b[4i] + ... + a[4i+3]*b[4i+3]` (signed bytes,
    wrapping `i32`); `a` and `b` have four times as many lanes as `acc`.
    With `a_unsigned`, `a`'s bytes are read as unsigned (0..255), as
    `vpdpbusd` reads its first operand. Otherwise `b` must not hold -128
    (circuit.quantize's bytes never do): the CPU target takes it as
    `vpdpbusd` of `|a|` and `b` with `a`'s signs where the ISA has AVX-VNNI
    or AVX512-VNNI (of `a` as it is where its bytes are known to be
    0..127, or with `a_unsigned`), and everywhere else it is widened,
    multiplied and added.

    ```mlir
    %d = exp.vector_dot4_i8 %a, %b, %acc : vector<32xi8>, vector<8xi32>
    %e = exp.vector_dot4_i8 %a, %b, %acc {a_unsigned}
        : vector<64xi8>, vector<16xi32>
    ```
  }];
  let arguments = (ins VectorOfRankAndType<[1], [I8]>:$a,
                   VectorOfRankAndType<[1], [I8]>:$b,
                   VectorOfRankAndType<[1], [I32]>:$acc,
                   UnitAttr:$a_unsigned);
  let results = (outs VectorOfRankAndType<[1], [I32]>:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($acc)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Division by a constant
//===----------------------------------------------------------------------===//

def Exp_DivByConstOp : Exp_Op<"div_by_const", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "unsigned division by a compile-time constant";
  let description = [{
    `floor(x / divisor)` for a non-negative `x` read as unsigned. Lowerings
    use a shift for powers of two and a multiply-high by a magic number
    otherwise, exact for every 32-bit input.

    ```mlir
    %head = exp.div_by_const %i, 16 : i32
    ```
  }];
  let arguments = (ins AnyTypeOf<[I32, I64, Index]>:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$divisor);
  let results = (outs AnyTypeOf<[I32, I64, Index]>:$result);
  let assemblyFormat = "$input `,` $divisor attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Exp_RemByConstOp : Exp_Op<"rem_by_const", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "unsigned remainder by a compile-time constant";
  let description = [{
    `x mod divisor` for `x` read as unsigned, computed as
    `x - divisor * div_by_const(x)`.

    ```mlir
    %d = exp.rem_by_const %i, 16 : i32
    ```
  }];
  let arguments = (ins AnyTypeOf<[I32, I64, Index]>:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$divisor);
  let results = (outs AnyTypeOf<[I32, I64, Index]>:$result);
  let assemblyFormat = "$input `,` $divisor attr-dict `:` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Lane-cooperative operations
//===----------------------------------------------------------------------===//

// lane_id and subgroup_size are plain values. The ops that exchange values
// between lanes (subgroup_reduce, shuffle_xor, broadcast_first) are
// convergent: their result depends on which lanes are active where they
// execute. MLIR has no convergence trait, so they declare no memory-effect
// interface at all; CSE, DCE and hoisting then leave them where they are
// (two identical reductions in different branches are not the same value).

def Exp_LaneIdOp : Exp_Op<"lane_id", [NoMemoryEffect]> {
  let summary = "index of this lane within its subgroup";
  let description = [{
    In `[0, subgroup_size)`.

    ```mlir
    %lane = exp.lane_id : i32
    ```
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Exp_SubgroupSizeOp : Exp_Op<"subgroup_size", [NoMemoryEffect]> {
  let summary = "number of lanes in a subgroup";
  let description = [{
    32 on NVIDIA; a Vulkan device reports its own (lavapipe: 8).

    ```mlir
    %n = exp.subgroup_size : i32
    ```
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Exp_SubgroupReduceOp : Exp_Op<"subgroup_reduce",
    [AllTypesMatch<["value", "result"]>]> {
  let summary = "reduce a value across the lanes of a subgroup";
  let description = [{
    Every active lane receives the `sum`, `max` or `min` of `value` over all
    lanes of its subgroup. All lanes of the subgroup must execute it. Sums
    are combined in a fixed butterfly order, so results are deterministic.

    ```mlir
    %total = exp.subgroup_reduce sum %x : f32
    ```
  }];
  let arguments = (ins Exp_ReduceKind:$kind, Exp_LaneScalar:$value);
  let results = (outs Exp_LaneScalar:$result);
  let assemblyFormat = "$kind $value attr-dict `:` type($result)";
}

def Exp_ShuffleXorOp : Exp_Op<"shuffle_xor",
    [AllTypesMatch<["value", "result"]>]> {
  let summary = "read a value from the lane whose id is this lane's xor mask";
  let description = [{
    Returns `value` as held by lane `lane_id ^ mask`. The mask is a
    constant smaller than the subgroup size.

    ```mlir
    %other = exp.shuffle_xor %x, 16 : f32
    ```
  }];
  let arguments = (ins Exp_LaneScalar:$value,
                       ConfinedAttr<I32Attr, [IntPositive, IntMaxValue<127>]>:$mask);
  let results = (outs Exp_LaneScalar:$result);
  let assemblyFormat = "$value `,` $mask attr-dict `:` type($result)";
}

def Exp_BroadcastFirstOp : Exp_Op<"broadcast_first",
    [AllTypesMatch<["value", "result"]>]> {
  let summary = "broadcast the value of the first active lane";
  let description = [{
    ```mlir
    %u = exp.broadcast_first %x : i32
    ```
  }];
  let arguments = (ins Exp_LaneScalar:$value);
  let results = (outs Exp_LaneScalar:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

#endif // HESPER_DIALECT_EXP_IR_EXPOPS_TD
