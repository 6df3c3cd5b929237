//===- ExpBase.td - Exp dialect definition -----------------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_EXP_IR_EXPBASE_TD
#define HESPER_DIALECT_EXP_IR_EXPBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Exp_Dialect : Dialect {
  let name = "exp";
  let cppNamespace = "::hesper::exp";
  let summary = "Typed per-lane expressions";
  let description = [{
    The `exp` dialect holds the pure, typed expressions that one GPU lane
    evaluates: arithmetic, comparisons, selection, numeric conversions, math
    functions, bit manipulation, packing of narrow types into 32-bit words,
    the 8-bit integer dot product, division by a compile-time constant, and
    the lane-cooperative operations of a subgroup (warp).

    Every value is a builtin scalar (`i1`, `i8`, `i16`, `i32`, `i64`,
    `index`, `f16`, `f32`) or a vector of them; operand types never mix
    implicitly, so `exp.add %a, %b : f32` with an `i32` operand is a
    verifier error. Conversions are explicit (`exp.convert`,
    `exp.bitcast`).

    Exp ops appear inside the per-lane bodies of `circuit` primitives and
    inside `shaderm.kernel` bodies. `convert-exp-to-std` lowers them to the
    upstream `arith`, `math`, `vector` and `gpu` dialects.
  }];
  let hasConstantMaterializer = 1;
  let usePropertiesForAttributes = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Exp_ScalarInt : AnyTypeOf<[I1, I8, I16, I32, I64, Index],
                              "signless integer or index">;
def Exp_ScalarFloat : AnyTypeOf<[F16, F32], "f16 or f32">;

def Exp_IntLike : AnyTypeOf<[Exp_ScalarInt,
                             FixedVectorOfAnyRank<[I1, I8, I16, I32, I64]>],
                            "signless integer, index, or vector thereof">;
def Exp_FloatLike : AnyTypeOf<[Exp_ScalarFloat, FixedVectorOfAnyRank<[F16, F32]>],
                              "f16, f32, or vector thereof">;
def Exp_Numeric : AnyTypeOf<[Exp_IntLike, Exp_FloatLike],
                            "integer, index, float, or vector thereof">;
def Exp_BoolLike : AnyTypeOf<[I1, FixedVectorOfAnyRank<[I1]>],
                             "i1 or vector of i1">;
/// Values a subgroup can exchange: one 16- or 32-bit scalar per lane.
def Exp_LaneScalar : AnyTypeOf<[I32, F16, F32], "i32, f16 or f32">;

//===----------------------------------------------------------------------===//
// Base op class
//===----------------------------------------------------------------------===//

class Exp_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exp_Dialect, mnemonic, traits>;

#endif // HESPER_DIALECT_EXP_IR_EXPBASE_TD
