// RUN: hesper-opt %s -canonicalize -cse -split-input-file | FileCheck %s

// Folders of the exp dialect: constant folding (values checked by hand),
// algebraic identities, and the cases that must not fold.

//===----------------------------------------------------------------------===//
// Arithmetic: constant folding
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_i32(
// CHECK-NEXT: %[[C:.*]] = exp.constant 12 : i32
// CHECK-NEXT: return %[[C]] : i32
func.func @add_i32() -> i32 {
  %a = exp.constant 7 : i32
  %b = exp.constant 5 : i32
  %0 = exp.add %a, %b : i32
  return %0 : i32
}

// -----

// Integer addition wraps.
// CHECK-LABEL: func.func @add_i32_wraps(
// CHECK-NEXT: %[[C:.*]] = exp.constant -2147483648 : i32
// CHECK-NEXT: return %[[C]] : i32
func.func @add_i32_wraps() -> i32 {
  %a = exp.constant 2147483647 : i32
  %b = exp.constant 1 : i32
  %0 = exp.add %a, %b : i32
  return %0 : i32
}

// -----

// CHECK-LABEL: func.func @add_f32(
// CHECK-NEXT: %[[C:.*]] = exp.constant 3.750000e+00 : f32
// CHECK-NEXT: return %[[C]] : f32
func.func @add_f32() -> f32 {
  %a = exp.constant 1.5 : f32
  %b = exp.constant 2.25 : f32
  %0 = exp.add %a, %b : f32
  return %0 : f32
}

// -----

// CHECK-LABEL: func.func @add_vector(
// CHECK-NEXT: %[[C:.*]] = exp.constant dense<[11, 22]> : vector<2xi32>
// CHECK-NEXT: return %[[C]] : vector<2xi32>
func.func @add_vector() -> vector<2xi32> {
  %a = exp.constant dense<[1, 2]> : vector<2xi32>
  %b = exp.constant dense<[10, 20]> : vector<2xi32>
  %0 = exp.add %a, %b : vector<2xi32>
  return %0 : vector<2xi32>
}

// -----

// CHECK-LABEL: func.func @sub(
// CHECK-DAG: %[[I:.*]] = exp.constant -2 : i32
// CHECK-DAG: %[[F:.*]] = exp.constant 7.500000e-01 : f32
// CHECK-NOT: exp.sub
// CHECK: return %[[I]], %[[F]] : i32, f32
func.func @sub() -> (i32, f32) {
  %a = exp.constant 5 : i32
  %b = exp.constant 7 : i32
  %0 = exp.sub %a, %b : i32
  %c = exp.constant 1.0 : f32
  %d = exp.constant 0.25 : f32
  %1 = exp.sub %c, %d : f32
  return %0, %1 : i32, f32
}

// -----

// CHECK-LABEL: func.func @mul(
// CHECK-DAG: %[[I:.*]] = exp.constant -42 : i32
// CHECK-DAG: %[[W:.*]] = exp.constant 44 : i8
// CHECK-DAG: %[[F:.*]] = exp.constant 6.000000e+00 : f32
// CHECK-NOT: exp.mul
// CHECK: return %[[I]], %[[W]], %[[F]] : i32, i8, f32
func.func @mul() -> (i32, i8, f32) {
  %a = exp.constant 6 : i32
  %b = exp.constant -7 : i32
  %0 = exp.mul %a, %b : i32
  // 100 * 3 = 300 wraps to 44 in i8.
  %c = exp.constant 100 : i8
  %d = exp.constant 3 : i8
  %1 = exp.mul %c, %d : i8
  %e = exp.constant 1.5 : f32
  %f = exp.constant 4.0 : f32
  %2 = exp.mul %e, %f : f32
  return %0, %1, %2 : i32, i8, f32
}

// -----

// Signed division rounds toward zero.
// CHECK-LABEL: func.func @div(
// CHECK-DAG: %[[Q:.*]] = exp.constant -3 : i32
// CHECK-DAG: %[[F:.*]] = exp.constant 2.500000e-01 : f32
// CHECK-DAG: %[[INF:.*]] = exp.constant 0x7F800000 : f32
// CHECK-NOT: exp.div
// CHECK: return %[[Q]], %[[Q]], %[[F]], %[[INF]] : i32, i32, f32, f32
func.func @div() -> (i32, i32, f32, f32) {
  %m7 = exp.constant -7 : i32
  %p7 = exp.constant 7 : i32
  %p2 = exp.constant 2 : i32
  %m2 = exp.constant -2 : i32
  %0 = exp.div %m7, %p2 : i32
  %1 = exp.div %p7, %m2 : i32
  %one = exp.constant 1.0 : f32
  %four = exp.constant 4.0 : f32
  %zero = exp.constant 0.0 : f32
  %2 = exp.div %one, %four : f32
  // Float division by zero is defined: +inf.
  %3 = exp.div %one, %zero : f32
  return %0, %1, %2, %3 : i32, i32, f32, f32
}

// -----

// The remainder's sign follows the dividend.
// CHECK-LABEL: func.func @rem(
// CHECK-DAG: %[[NEG:.*]] = exp.constant -1 : i32
// CHECK-DAG: %[[POS:.*]] = exp.constant 1 : i32
// CHECK-DAG: %[[F:.*]] = exp.constant -1.500000e+00 : f32
// CHECK-NOT: exp.rem
// CHECK: return %[[NEG]], %[[POS]], %[[F]] : i32, i32, f32
func.func @rem() -> (i32, i32, f32) {
  %m7 = exp.constant -7 : i32
  %p7 = exp.constant 7 : i32
  %p2 = exp.constant 2 : i32
  %m2 = exp.constant -2 : i32
  %0 = exp.rem %m7, %p2 : i32
  %1 = exp.rem %p7, %m2 : i32
  %a = exp.constant -7.5 : f32
  %b = exp.constant 2.0 : f32
  %2 = exp.rem %a, %b : f32
  return %0, %1, %2 : i32, i32, f32
}

// -----

// -8 is 0xFFFFFFF8 unsigned: / 2 = 0x7FFFFFFC; -1 is 4294967295: % 10 = 5.
// CHECK-LABEL: func.func @udiv_urem(
// CHECK-DAG: %[[Q:.*]] = exp.constant 2147483644 : i32
// CHECK-DAG: %[[R:.*]] = exp.constant 5 : i32
// CHECK-NOT: exp.udiv
// CHECK-NOT: exp.urem
// CHECK: return %[[Q]], %[[R]] : i32, i32
func.func @udiv_urem() -> (i32, i32) {
  %m8 = exp.constant -8 : i32
  %two = exp.constant 2 : i32
  %0 = exp.udiv %m8, %two : i32
  %m1 = exp.constant -1 : i32
  %ten = exp.constant 10 : i32
  %1 = exp.urem %m1, %ten : i32
  return %0, %1 : i32, i32
}

// -----

// -3 is the signed minimum but the unsigned maximum of {-3, 2}.
// CHECK-LABEL: func.func @min_max_int(
// CHECK-DAG: %[[M3:.*]] = exp.constant -3 : i32
// CHECK-DAG: %[[P2:.*]] = exp.constant 2 : i32
// CHECK-NOT: exp.{{u?}}{{min|max}}
// CHECK: return %[[M3]], %[[P2]], %[[P2]], %[[M3]] : i32, i32, i32, i32
func.func @min_max_int() -> (i32, i32, i32, i32) {
  %a = exp.constant -3 : i32
  %b = exp.constant 2 : i32
  %0 = exp.min %a, %b : i32
  %1 = exp.max %a, %b : i32
  %2 = exp.umin %a, %b : i32
  %3 = exp.umax %a, %b : i32
  return %0, %1, %2, %3 : i32, i32, i32, i32
}

// -----

// A NaN operand yields the other operand (minNum / maxNum).
// CHECK-LABEL: func.func @min_max_float(
// CHECK-DAG: %[[M2:.*]] = exp.constant -2.000000e+00 : f32
// CHECK-DAG: %[[ONE:.*]] = exp.constant 1.000000e+00 : f32
// CHECK-DAG: %[[THREE:.*]] = exp.constant 3.000000e+00 : f32
// CHECK-NOT: exp.min
// CHECK-NOT: exp.max
// CHECK: return %[[M2]], %[[ONE]], %[[ONE]], %[[THREE]] : f32, f32, f32, f32
func.func @min_max_float() -> (f32, f32, f32, f32) {
  %one = exp.constant 1.0 : f32
  %m2 = exp.constant -2.0 : f32
  %three = exp.constant 3.0 : f32
  %nan = exp.constant 0x7FC00000 : f32
  %0 = exp.min %one, %m2 : f32
  %1 = exp.max %one, %m2 : f32
  %2 = exp.min %nan, %one : f32
  %3 = exp.max %nan, %three : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// -----

// CHECK-LABEL: func.func @neg(
// CHECK-DAG: %[[I:.*]] = exp.constant -5 : i32
// CHECK-DAG: %[[MIN:.*]] = exp.constant -2147483648 : i32
// CHECK-DAG: %[[F:.*]] = exp.constant -1.500000e+00 : f32
// CHECK-NOT: exp.neg
// CHECK: return %[[I]], %[[MIN]], %[[F]] : i32, i32, f32
func.func @neg() -> (i32, i32, f32) {
  %a = exp.constant 5 : i32
  %0 = exp.neg %a : i32
  // Two's complement negation of the minimum wraps to itself.
  %min = exp.constant -2147483648 : i32
  %1 = exp.neg %min : i32
  %f = exp.constant 1.5 : f32
  %2 = exp.neg %f : f32
  return %0, %1, %2 : i32, i32, f32
}

// -----

// CHECK-LABEL: func.func @abs(
// CHECK-DAG: %[[I:.*]] = exp.constant 5 : i32
// CHECK-DAG: %[[B:.*]] = exp.constant -128 : i8
// CHECK-DAG: %[[F:.*]] = exp.constant 2.500000e+00 : f32
// CHECK-NOT: exp.abs
// CHECK: return %[[I]], %[[B]], %[[F]] : i32, i8, f32
func.func @abs() -> (i32, i8, f32) {
  %a = exp.constant -5 : i32
  %0 = exp.abs %a : i32
  %b = exp.constant -128 : i8
  %1 = exp.abs %b : i8
  %f = exp.constant -2.5 : f32
  %2 = exp.abs %f : f32
  return %0, %1, %2 : i32, i8, f32
}

// -----

// Vector operands fold element by element.
// CHECK-LABEL: func.func @vector_elementwise(
// CHECK-DAG: %[[NEG:.*]] = exp.constant dense<[-1.000000e+00, 2.000000e+00, -3.000000e+00, 4.000000e+00]> : vector<4xf32>
// CHECK-DAG: %[[SHL:.*]] = exp.constant dense<[4, 8, 12, 16]> : vector<4xi32>
// CHECK-DAG: %[[REM:.*]] = exp.constant dense<[1, -1]> : vector<2xi32>
// CHECK-NOT: exp.{{neg|shl|rem}}
// CHECK: return %[[NEG]], %[[SHL]], %[[REM]] : vector<4xf32>, vector<4xi32>, vector<2xi32>
func.func @vector_elementwise() -> (vector<4xf32>, vector<4xi32>, vector<2xi32>) {
  %v = exp.constant dense<[1.0, -2.0, 3.0, -4.0]> : vector<4xf32>
  %0 = exp.neg %v : vector<4xf32>
  %vi = exp.constant dense<[1, 2, 3, 4]> : vector<4xi32>
  %two = exp.constant dense<2> : vector<4xi32>
  %1 = exp.shl %vi, %two : vector<4xi32>
  %a = exp.constant dense<[7, -7]> : vector<2xi32>
  %b = exp.constant dense<2> : vector<2xi32>
  %2 = exp.rem %a, %b : vector<2xi32>
  return %0, %1, %2 : vector<4xf32>, vector<4xi32>, vector<2xi32>
}

// -----

// CHECK-LABEL: func.func @index_arith(
// CHECK-NEXT: %[[C:.*]] = exp.constant 35 : index
// CHECK-NEXT: return %[[C]] : index
func.func @index_arith() -> index {
  %a = exp.constant 5 : index
  %b = exp.constant 7 : index
  %0 = exp.mul %a, %b : index
  return %0 : index
}

// -----

//===----------------------------------------------------------------------===//
// Arithmetic: identities
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_zero(
// CHECK-SAME: %[[X:.*]]: i32, %[[F:.*]]: f32, %[[V:.*]]: vector<4xi32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[F]], %[[V]] : i32, i32, f32, vector<4xi32>
func.func @add_zero(%x: i32, %f: f32, %v: vector<4xi32>)
    -> (i32, i32, f32, vector<4xi32>) {
  %zero = exp.constant 0 : i32
  %0 = exp.add %x, %zero : i32
  // The constant is moved to the right (add is commutative).
  %1 = exp.add %zero, %x : i32
  // x + -0.0 == x for every x, -0.0 and NaN included.
  %nz = exp.constant -0.0 : f32
  %2 = exp.add %f, %nz : f32
  %vz = exp.constant dense<0> : vector<4xi32>
  %3 = exp.add %v, %vz : vector<4xi32>
  return %0, %1, %2, %3 : i32, i32, f32, vector<4xi32>
}

// -----

// CHECK-LABEL: func.func @sub_identities(
// CHECK-SAME: %[[X:.*]]: i32, %[[F:.*]]: f32, %[[V:.*]]: vector<4xi32>)
// CHECK-DAG: %[[Z:.*]] = exp.constant 0 : i32
// CHECK-DAG: %[[VZ:.*]] = exp.constant dense<0> : vector<4xi32>
// CHECK-NOT: exp.sub
// CHECK: return %[[X]], %[[F]], %[[Z]], %[[VZ]] : i32, f32, i32, vector<4xi32>
func.func @sub_identities(%x: i32, %f: f32, %v: vector<4xi32>)
    -> (i32, f32, i32, vector<4xi32>) {
  %zero = exp.constant 0 : i32
  %0 = exp.sub %x, %zero : i32
  // x - +0.0 == x for every x.
  %pz = exp.constant 0.0 : f32
  %1 = exp.sub %f, %pz : f32
  %2 = exp.sub %x, %x : i32
  %3 = exp.sub %v, %v : vector<4xi32>
  return %0, %1, %2, %3 : i32, f32, i32, vector<4xi32>
}

// -----

// CHECK-LABEL: func.func @mul_identities(
// CHECK-SAME: %[[X:.*]]: i32, %[[F:.*]]: f32)
// CHECK-DAG: %[[Z:.*]] = exp.constant 0 : i32
// CHECK-NOT: exp.mul
// CHECK: return %[[X]], %[[F]], %[[Z]], %[[Z]] : i32, f32, i32, i32
func.func @mul_identities(%x: i32, %f: f32) -> (i32, f32, i32, i32) {
  %one = exp.constant 1 : i32
  %0 = exp.mul %x, %one : i32
  %fone = exp.constant 1.0 : f32
  %1 = exp.mul %fone, %f : f32
  %zero = exp.constant 0 : i32
  %2 = exp.mul %x, %zero : i32
  %3 = exp.mul %zero, %x : i32
  return %0, %1, %2, %3 : i32, f32, i32, i32
}

// -----

// CHECK-LABEL: func.func @div_identities(
// CHECK-SAME: %[[X:.*]]: i32, %[[F:.*]]: f32)
// CHECK-DAG: %[[Z:.*]] = exp.constant 0 : i32
// CHECK-NOT: exp.div
// CHECK-NOT: exp.udiv
// CHECK-NOT: exp.urem
// CHECK: return %[[X]], %[[F]], %[[X]], %[[Z]] : i32, f32, i32, i32
func.func @div_identities(%x: i32, %f: f32) -> (i32, f32, i32, i32) {
  %one = exp.constant 1 : i32
  %0 = exp.div %x, %one : i32
  %fone = exp.constant 1.0 : f32
  %1 = exp.div %f, %fone : f32
  %2 = exp.udiv %x, %one : i32
  %3 = exp.urem %x, %one : i32
  return %0, %1, %2, %3 : i32, f32, i32, i32
}

// -----

// CHECK-LABEL: func.func @min_max_self(
// CHECK-SAME: %[[X:.*]]: i32, %[[F:.*]]: f32)
// CHECK-NEXT: return %[[X]], %[[F]], %[[X]], %[[X]] : i32, f32, i32, i32
func.func @min_max_self(%x: i32, %f: f32) -> (i32, f32, i32, i32) {
  %0 = exp.min %x, %x : i32
  %1 = exp.max %f, %f : f32
  %2 = exp.umin %x, %x : i32
  %3 = exp.umax %x, %x : i32
  return %0, %1, %2, %3 : i32, f32, i32, i32
}

// -----

// CHECK-LABEL: func.func @neg_neg(
// CHECK-SAME: %[[X:.*]]: i32, %[[F:.*]]: f32)
// CHECK-NEXT: return %[[X]], %[[F]] : i32, f32
func.func @neg_neg(%x: i32, %f: f32) -> (i32, f32) {
  %0 = exp.neg %x : i32
  %1 = exp.neg %0 : i32
  %2 = exp.neg %f : f32
  %3 = exp.neg %2 : f32
  return %1, %3 : i32, f32
}

// -----

// CHECK-LABEL: func.func @abs_abs(
// CHECK-SAME: %[[F:.*]]: f32)
// CHECK-NEXT: %[[A:.*]] = exp.abs %[[F]] : f32
// CHECK-NEXT: return %[[A]], %[[A]] : f32, f32
func.func @abs_abs(%f: f32) -> (f32, f32) {
  %0 = exp.abs %f : f32
  %1 = exp.abs %0 : f32
  return %0, %1 : f32, f32
}

// -----

// Splat identity constants work on vectors too.
// CHECK-LABEL: func.func @vector_identities(
// CHECK-SAME: %[[X:.*]]: vector<4xf32>)
// CHECK-NEXT: return %[[X]], %[[X]] : vector<4xf32>, vector<4xf32>
func.func @vector_identities(%x: vector<4xf32>) -> (vector<4xf32>, vector<4xf32>) {
  %one = exp.constant dense<1.0> : vector<4xf32>
  %0 = exp.mul %x, %one : vector<4xf32>
  %nz = exp.constant dense<-0.0> : vector<4xf32>
  %1 = exp.add %x, %nz : vector<4xf32>
  return %0, %1 : vector<4xf32>, vector<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Arithmetic: must not fold
//===----------------------------------------------------------------------===//

// x * 0.0 is NaN for x = NaN or inf, and -0.0 for negative x.
// CHECK-LABEL: func.func @no_fold_float_mul_zero(
// CHECK-SAME: %[[F:.*]]: f32)
// CHECK: %[[Z:.*]] = exp.constant 0.000000e+00 : f32
// CHECK: %[[R:.*]] = exp.mul %[[F]], %[[Z]] : f32
// CHECK: return %[[R]] : f32
func.func @no_fold_float_mul_zero(%f: f32) -> f32 {
  %zero = exp.constant 0.0 : f32
  %0 = exp.mul %f, %zero : f32
  return %0 : f32
}

// -----

// x - x is NaN for x = NaN or inf.
// CHECK-LABEL: func.func @no_fold_float_sub_self(
// CHECK-SAME: %[[F:.*]]: f32)
// CHECK: %[[R:.*]] = exp.sub %[[F]], %[[F]] : f32
// CHECK: return %[[R]] : f32
func.func @no_fold_float_sub_self(%f: f32) -> f32 {
  %0 = exp.sub %f, %f : f32
  return %0 : f32
}

// -----

// -0.0 + +0.0 is +0.0, not -0.0.
// CHECK-LABEL: func.func @no_fold_float_add_pos_zero(
// CHECK-SAME: %[[F:.*]]: f32)
// CHECK: %[[Z:.*]] = exp.constant 0.000000e+00 : f32
// CHECK: %[[R:.*]] = exp.add %[[F]], %[[Z]] : f32
// CHECK: return %[[R]] : f32
func.func @no_fold_float_add_pos_zero(%f: f32) -> f32 {
  %zero = exp.constant 0.0 : f32
  %0 = exp.add %f, %zero : f32
  return %0 : f32
}

// -----

// -0.0 - -0.0 is +0.0, not -0.0.
// CHECK-LABEL: func.func @no_fold_float_sub_neg_zero(
// CHECK-SAME: %[[F:.*]]: f32)
// CHECK: %[[Z:.*]] = exp.constant -0.000000e+00 : f32
// CHECK: %[[R:.*]] = exp.sub %[[F]], %[[Z]] : f32
// CHECK: return %[[R]] : f32
func.func @no_fold_float_sub_neg_zero(%f: f32) -> f32 {
  %zero = exp.constant -0.0 : f32
  %0 = exp.sub %f, %zero : f32
  return %0 : f32
}

// -----

// CHECK-LABEL: func.func @no_fold_float_cmp_self(
// CHECK-SAME: %[[F:.*]]: f32)
// CHECK: %[[R:.*]] = exp.cmp eq, %[[F]], %[[F]] : f32
// CHECK: return %[[R]] : i1
func.func @no_fold_float_cmp_self(%f: f32) -> i1 {
  %0 = exp.cmp eq, %f, %f : f32
  return %0 : i1
}

// -----

// Integer division by zero is undefined: left alone.
// CHECK-LABEL: func.func @no_fold_int_div_by_zero(
// CHECK-DAG: %[[SEVEN:.*]] = exp.constant 7 : i32
// CHECK-DAG: %[[ZERO:.*]] = exp.constant 0 : i32
// CHECK: %[[D:.*]] = exp.div %[[SEVEN]], %[[ZERO]] : i32
// CHECK: %[[R:.*]] = exp.rem %[[SEVEN]], %[[ZERO]] : i32
// CHECK: %[[UD:.*]] = exp.udiv %[[SEVEN]], %[[ZERO]] : i32
// CHECK: %[[UR:.*]] = exp.urem %[[SEVEN]], %[[ZERO]] : i32
// CHECK: return %[[D]], %[[R]], %[[UD]], %[[UR]] : i32, i32, i32, i32
func.func @no_fold_int_div_by_zero() -> (i32, i32, i32, i32) {
  %seven = exp.constant 7 : i32
  %zero = exp.constant 0 : i32
  %0 = exp.div %seven, %zero : i32
  %1 = exp.rem %seven, %zero : i32
  %2 = exp.udiv %seven, %zero : i32
  %3 = exp.urem %seven, %zero : i32
  return %0, %1, %2, %3 : i32, i32, i32, i32
}

// -----

// INT_MIN / -1 overflows.
// CHECK-LABEL: func.func @no_fold_int_div_overflow(
// CHECK-DAG: %[[MIN:.*]] = exp.constant -2147483648 : i32
// CHECK-DAG: %[[M1:.*]] = exp.constant -1 : i32
// CHECK: %[[D:.*]] = exp.div %[[MIN]], %[[M1]] : i32
// CHECK: return %[[D]] : i32
func.func @no_fold_int_div_overflow() -> i32 {
  %min = exp.constant -2147483648 : i32
  %m1 = exp.constant -1 : i32
  %0 = exp.div %min, %m1 : i32
  return %0 : i32
}

// -----

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

// -1 < 1 signed, but 0xFFFFFFFF > 1 unsigned.
// CHECK-LABEL: func.func @cmp_int_signed_vs_unsigned(
// CHECK-DAG: %[[T:.*]] = exp.constant true
// CHECK-DAG: %[[F:.*]] = exp.constant false
// CHECK-NOT: exp.cmp
// CHECK: return %[[F]], %[[T]], %[[T]], %[[T]], %[[F]], %[[F]], %[[F]], %[[F]], %[[T]], %[[T]] :
func.func @cmp_int_signed_vs_unsigned() -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) {
  %a = exp.constant -1 : i32
  %b = exp.constant 1 : i32
  %eq = exp.cmp eq, %a, %b : i32
  %ne = exp.cmp ne, %a, %b : i32
  %lt = exp.cmp lt, %a, %b : i32
  %le = exp.cmp le, %a, %b : i32
  %gt = exp.cmp gt, %a, %b : i32
  %ge = exp.cmp ge, %a, %b : i32
  %ult = exp.cmp ult, %a, %b : i32
  %ule = exp.cmp ule, %a, %b : i32
  %ugt = exp.cmp ugt, %a, %b : i32
  %uge = exp.cmp uge, %a, %b : i32
  return %eq, %ne, %lt, %le, %gt, %ge, %ult, %ule, %ugt, %uge
      : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1
}

// -----

// CHECK-LABEL: func.func @cmp_index(
// CHECK-DAG: %[[T:.*]] = exp.constant true
// CHECK-DAG: %[[F:.*]] = exp.constant false
// CHECK-NOT: exp.cmp
// CHECK: return %[[T]], %[[F]] : i1, i1
func.func @cmp_index() -> (i1, i1) {
  %a = exp.constant 3 : index
  %b = exp.constant 4 : index
  %0 = exp.cmp lt, %a, %b : index
  %1 = exp.cmp uge, %a, %b : index
  return %0, %1 : i1, i1
}

// -----

// Ordered predicates are false on NaN; ne is unordered (true).
// CHECK-LABEL: func.func @cmp_float(
// CHECK-DAG: %[[T:.*]] = exp.constant true
// CHECK-DAG: %[[F:.*]] = exp.constant false
// CHECK-NOT: exp.cmp
// CHECK: return %[[F]], %[[T]], %[[T]], %[[T]], %[[F]], %[[F]], %[[T]], %[[F]], %[[T]], %[[F]], %[[F]] :
func.func @cmp_float() -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) {
  %one = exp.constant 1.0 : f32
  %two = exp.constant 2.0 : f32
  %nan = exp.constant 0x7FC00000 : f32
  %eq = exp.cmp eq, %one, %two : f32
  %ne = exp.cmp ne, %one, %two : f32
  %lt = exp.cmp lt, %one, %two : f32
  %le = exp.cmp le, %one, %two : f32
  %gt = exp.cmp gt, %one, %two : f32
  %ge = exp.cmp ge, %one, %two : f32
  %ge_self = exp.cmp ge, %two, %two : f32
  %nan_eq = exp.cmp eq, %nan, %nan : f32
  %nan_ne = exp.cmp ne, %nan, %one : f32
  %nan_lt = exp.cmp lt, %nan, %one : f32
  %nan_ge = exp.cmp ge, %nan, %one : f32
  return %eq, %ne, %lt, %le, %gt, %ge, %ge_self, %nan_eq, %nan_ne, %nan_lt,
         %nan_ge : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1
}

// -----

// x cmp x for integers: true for eq le ge ule uge, false otherwise.
// CHECK-LABEL: func.func @cmp_int_self(
// CHECK-DAG: %[[T:.*]] = exp.constant true
// CHECK-DAG: %[[F:.*]] = exp.constant false
// CHECK-NOT: exp.cmp
// CHECK: return %[[T]], %[[F]], %[[F]], %[[T]], %[[F]], %[[T]], %[[F]], %[[T]], %[[F]], %[[T]] :
func.func @cmp_int_self(%x: i32) -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) {
  %eq = exp.cmp eq, %x, %x : i32
  %ne = exp.cmp ne, %x, %x : i32
  %lt = exp.cmp lt, %x, %x : i32
  %le = exp.cmp le, %x, %x : i32
  %gt = exp.cmp gt, %x, %x : i32
  %ge = exp.cmp ge, %x, %x : i32
  %ult = exp.cmp ult, %x, %x : i32
  %ule = exp.cmp ule, %x, %x : i32
  %ugt = exp.cmp ugt, %x, %x : i32
  %uge = exp.cmp uge, %x, %x : i32
  return %eq, %ne, %lt, %le, %gt, %ge, %ult, %ule, %ugt, %uge
      : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1
}

// -----

// CHECK-LABEL: func.func @select(
// CHECK-SAME: %[[C:.*]]: i1, %[[A:.*]]: f32, %[[B:.*]]: f32, %[[VA:.*]]: vector<4xf32>, %[[VB:.*]]: vector<4xf32>)
// CHECK-NEXT: return %[[A]], %[[B]], %[[A]], %[[VA]] : f32, f32, f32, vector<4xf32>
func.func @select(%c: i1, %a: f32, %b: f32, %va: vector<4xf32>,
                  %vb: vector<4xf32>) -> (f32, f32, f32, vector<4xf32>) {
  %true = exp.constant true
  %false = exp.constant false
  %0 = exp.select %true, %a, %b : f32
  %1 = exp.select %false, %a, %b : f32
  %2 = exp.select %c, %a, %a : f32
  %3 = exp.select %true, %va, %vb : i1, vector<4xf32>
  return %0, %1, %2, %3 : f32, f32, f32, vector<4xf32>
}

// -----

// CHECK-LABEL: func.func @select_constants(
// CHECK-NEXT: %[[C:.*]] = exp.constant 2 : i32
// CHECK-NEXT: return %[[C]] : i32
func.func @select_constants() -> i32 {
  %false = exp.constant false
  %a = exp.constant 1 : i32
  %b = exp.constant 2 : i32
  %0 = exp.select %false, %a, %b : i32
  return %0 : i32
}

// -----

// A per-element condition that is not constant keeps the select.
// CHECK-LABEL: func.func @no_fold_select_vector_condition(
// CHECK-SAME: %[[C:.*]]: vector<4xi1>, %[[A:.*]]: vector<4xf32>, %[[B:.*]]: vector<4xf32>)
// CHECK: %[[R:.*]] = exp.select %[[C]], %[[A]], %[[B]] : vector<4xf32>
// CHECK: return %[[R]]
func.func @no_fold_select_vector_condition(%c: vector<4xi1>, %a: vector<4xf32>,
                                           %b: vector<4xf32>) -> vector<4xf32> {
  %0 = exp.select %c, %a, %b : vector<4xf32>
  return %0 : vector<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @convert_int_to_float(
// CHECK-DAG: %[[S:.*]] = exp.constant -7.000000e+00 : f32
// CHECK-DAG: %[[U:.*]] = exp.constant 4.2949673E+9 : f32
// CHECK-DAG: %[[H:.*]] = exp.constant 0x7C00 : f16
// CHECK-DAG: %[[T:.*]] = exp.constant -1.000000e+00 : f32
// CHECK-NOT: exp.convert
// CHECK: return %[[S]], %[[U]], %[[H]], %[[T]] : f32, f32, f16, f32
func.func @convert_int_to_float() -> (f32, f32, f16, f32) {
  %m7 = exp.constant -7 : i32
  %0 = exp.convert %m7 : i32 to f32
  // 0xFFFFFFFF unsigned is 4294967295, which rounds to 2^32 in f32.
  %m1 = exp.constant -1 : i32
  %1 = exp.convert unsigned %m1 : i32 to f32
  // 100000 overflows f16 to +inf.
  %big = exp.constant 100000 : i32
  %2 = exp.convert %big : i32 to f16
  // i1 true is -1 when signed.
  %true = exp.constant true
  %3 = exp.convert %true : i1 to f32
  return %0, %1, %2, %3 : f32, f32, f16, f32
}

// -----

// CHECK-LABEL: func.func @convert_float_to_int(
// CHECK-DAG: %[[P:.*]] = exp.constant 3 : i32
// CHECK-DAG: %[[N:.*]] = exp.constant -2 : i32
// CHECK-DAG: %[[U:.*]] = exp.constant -1294967296 : i32
// CHECK-DAG: %[[H:.*]] = exp.constant 1024 : i64
// CHECK-NOT: exp.convert
// CHECK: return %[[P]], %[[N]], %[[U]], %[[H]] : i32, i32, i32, i64
func.func @convert_float_to_int() -> (i32, i32, i32, i64) {
  %three = exp.constant 3.0 : f32
  %0 = exp.convert %three : f32 to i32
  %m2 = exp.constant -2.0 : f32
  %1 = exp.convert %m2 : f32 to i32
  // 3e9 fits an unsigned i32: 0xB2D05E00, which reads as -1294967296.
  %big = exp.constant 3.0e9 : f32
  %2 = exp.convert unsigned %big : f32 to i32
  %h = exp.constant 1024.0 : f16
  %3 = exp.convert %h : f16 to i64
  return %0, %1, %2, %3 : i32, i32, i32, i64
}

// -----

// CHECK-LABEL: func.func @convert_float_to_float(
// CHECK-DAG: %[[H:.*]] = exp.constant 9.997550e-02 : f16
// CHECK-DAG: %[[INF:.*]] = exp.constant 0x7C00 : f16
// CHECK-DAG: %[[F:.*]] = exp.constant 1.500000e+00 : f32
// CHECK-NOT: exp.convert
// CHECK: return %[[H]], %[[INF]], %[[F]] : f16, f16, f32
func.func @convert_float_to_float() -> (f16, f16, f32) {
  // 0.1 rounds to the nearest f16, 0x2E66 = 0.0999755859375.
  %a = exp.constant 0.1 : f32
  %0 = exp.convert %a : f32 to f16
  // 65520 is halfway between 65504 (f16 max) and 65536: ties to even, +inf.
  %b = exp.constant 65520.0 : f32
  %1 = exp.convert %b : f32 to f16
  %c = exp.constant 1.5 : f16
  %2 = exp.convert %c : f16 to f32
  return %0, %1, %2 : f16, f16, f32
}

// -----

// CHECK-LABEL: func.func @convert_int_to_int(
// CHECK-DAG: %[[S:.*]] = exp.constant -1 : i32
// CHECK-DAG: %[[U:.*]] = exp.constant 255 : i32
// CHECK-DAG: %[[T:.*]] = exp.constant 44 : i8
// CHECK-DAG: %[[ONE:.*]] = exp.constant 1 : i32
// CHECK-DAG: %[[XU:.*]] = exp.constant 4294967295 : index
// CHECK-DAG: %[[XS:.*]] = exp.constant -1 : index
// CHECK-NOT: exp.convert
// CHECK: return %[[S]], %[[U]], %[[T]], %[[S]], %[[ONE]], %[[XU]], %[[XS]] : i32, i32, i8, i32, i32, index, index
func.func @convert_int_to_int() -> (i32, i32, i8, i32, i32, index, index) {
  %m1 = exp.constant -1 : i8
  %0 = exp.convert %m1 : i8 to i32
  %1 = exp.convert unsigned %m1 : i8 to i32
  // 300 = 0x12C truncates to 0x2C = 44.
  %big = exp.constant 300 : i32
  %2 = exp.convert %big : i32 to i8
  %true = exp.constant true
  %3 = exp.convert %true : i1 to i32
  %4 = exp.convert unsigned %true : i1 to i32
  %m1w = exp.constant -1 : i32
  %5 = exp.convert unsigned %m1w : i32 to index
  %6 = exp.convert %m1w : i32 to index
  return %0, %1, %2, %3, %4, %5, %6 : i32, i32, i8, i32, i32, index, index
}

// -----

// CHECK-LABEL: func.func @convert_same_type(
// CHECK-SAME: %[[X:.*]]: i32)
// CHECK-NEXT: return %[[X]] : i32
func.func @convert_same_type(%x: i32) -> i32 {
  %0 = exp.convert %x : i32 to i32
  return %0 : i32
}

// -----

// Float to integer is undefined out of range: 3e9 > INT32_MAX, -1.0 is not
// an unsigned value, NaN is not a number.
// CHECK-LABEL: func.func @no_fold_convert_out_of_range(
// CHECK-DAG: %[[BIG:.*]] = exp.constant 3.000000e+09 : f32
// CHECK-DAG: %[[M1:.*]] = exp.constant -1.000000e+00 : f32
// CHECK-DAG: %[[NAN:.*]] = exp.constant 0x7FC00000 : f32
// CHECK-DAG: %[[R0:.*]] = exp.convert %[[BIG]] : f32 to i32
// CHECK-DAG: %[[R1:.*]] = exp.convert unsigned %[[M1]] : f32 to i32
// CHECK-DAG: %[[R2:.*]] = exp.convert %[[NAN]] : f32 to i32
// CHECK-DAG: %[[R3:.*]] = exp.convert %[[BIG]] : f32 to i16
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]] : i32, i32, i32, i16
func.func @no_fold_convert_out_of_range() -> (i32, i32, i32, i16) {
  %big = exp.constant 3.0e9 : f32
  %0 = exp.convert %big : f32 to i32
  %m1 = exp.constant -1.0 : f32
  %1 = exp.convert unsigned %m1 : f32 to i32
  %nan = exp.constant 0x7FC00000 : f32
  %2 = exp.convert %nan : f32 to i32
  %3 = exp.convert %big : f32 to i16
  return %0, %1, %2, %3 : i32, i32, i32, i16
}

// -----

// CHECK-LABEL: func.func @bitcast(
// CHECK-DAG: %[[I:.*]] = exp.constant 1065353216 : i32
// CHECK-DAG: %[[F:.*]] = exp.constant -1.000000e+00 : f32
// CHECK-DAG: %[[H:.*]] = exp.constant 15360 : i16
// CHECK-NOT: exp.bitcast
// CHECK: return %[[I]], %[[F]], %[[H]] : i32, f32, i16
func.func @bitcast() -> (i32, f32, i16) {
  // 1.0f is 0x3F800000.
  %one = exp.constant 1.0 : f32
  %0 = exp.bitcast %one : f32 to i32
  // 0xBF800000 is -1.0f.
  %bits = exp.constant -1082130432 : i32
  %1 = exp.bitcast %bits : i32 to f32
  // 1.0 in f16 is 0x3C00.
  %h = exp.constant 1.0 : f16
  %2 = exp.bitcast %h : f16 to i16
  return %0, %1, %2 : i32, f32, i16
}

// -----

// CHECK-LABEL: func.func @bitcast_identities(
// CHECK-SAME: %[[F:.*]]: f32, %[[V:.*]]: vector<4xf32>)
// CHECK-NEXT: return %[[F]], %[[F]], %[[V]] : f32, f32, vector<4xf32>
func.func @bitcast_identities(%f: f32, %v: vector<4xf32>)
    -> (f32, f32, vector<4xf32>) {
  %0 = exp.bitcast %f : f32 to i32
  %1 = exp.bitcast %0 : i32 to f32
  %2 = exp.bitcast %f : f32 to f32
  %3 = exp.bitcast %v : vector<4xf32> to vector<4xi32>
  %4 = exp.bitcast %3 : vector<4xi32> to vector<4xf32>
  return %1, %2, %4 : f32, f32, vector<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sqrt(
// CHECK-DAG: %[[FOUR:.*]] = exp.constant 4.000000e+00 : f32
// CHECK-DAG: %[[ROOT2:.*]] = exp.constant 1.41421354 : f32
// CHECK-DAG: %[[H:.*]] = exp.constant 2.000000e+00 : f16
// CHECK-NOT: exp.sqrt
// CHECK: return %[[FOUR]], %[[ROOT2]], %[[H]] : f32, f32, f16
func.func @sqrt() -> (f32, f32, f16) {
  %a = exp.constant 16.0 : f32
  %0 = exp.sqrt %a : f32
  // sqrt(2) rounded to f32 is 0x3FB504F3 = 1.41421354.
  %b = exp.constant 2.0 : f32
  %1 = exp.sqrt %b : f32
  %c = exp.constant 4.0 : f16
  %2 = exp.sqrt %c : f16
  return %0, %1, %2 : f32, f32, f16
}

// -----

// CHECK-LABEL: func.func @no_fold_sqrt_negative(
// CHECK: %[[C:.*]] = exp.constant -4.000000e+00 : f32
// CHECK: %[[R:.*]] = exp.sqrt %[[C]] : f32
// CHECK: return %[[R]] : f32
func.func @no_fold_sqrt_negative() -> f32 {
  %a = exp.constant -4.0 : f32
  %0 = exp.sqrt %a : f32
  return %0 : f32
}

// -----

// CHECK-LABEL: func.func @floor(
// CHECK-DAG: %[[M2:.*]] = exp.constant -2.000000e+00 : f32
// CHECK-DAG: %[[P2:.*]] = exp.constant 2.000000e+00 : f32
// CHECK-NOT: exp.floor
// CHECK: return %[[M2]], %[[P2]] : f32, f32
func.func @floor() -> (f32, f32) {
  %a = exp.constant -1.5 : f32
  %0 = exp.floor %a : f32
  %b = exp.constant 2.7 : f32
  %1 = exp.floor %b : f32
  return %0, %1 : f32, f32
}

// -----

// Round to nearest, ties away from zero.
// CHECK-LABEL: func.func @round(
// CHECK-DAG: %[[P3:.*]] = exp.constant 3.000000e+00 : f32
// CHECK-DAG: %[[M3:.*]] = exp.constant -3.000000e+00 : f32
// CHECK-DAG: %[[P1:.*]] = exp.constant 1.000000e+00 : f32
// CHECK-NOT: exp.round
// CHECK: return %[[P3]], %[[M3]], %[[P1]] : f32, f32, f32
func.func @round() -> (f32, f32, f32) {
  %a = exp.constant 2.5 : f32
  %0 = exp.round %a : f32
  %b = exp.constant -2.5 : f32
  %1 = exp.round %b : f32
  %c = exp.constant 1.4 : f32
  %2 = exp.round %c : f32
  return %0, %1, %2 : f32, f32, f32
}

// -----

// CHECK-LABEL: func.func @clamp(
// CHECK-DAG: %[[TEN:.*]] = exp.constant 10 : i32
// CHECK-DAG: %[[ZERO:.*]] = exp.constant 0 : i32
// CHECK-DAG: %[[FIVE:.*]] = exp.constant 5 : i32
// CHECK-DAG: %[[FONE:.*]] = exp.constant 1.000000e+00 : f32
// CHECK-DAG: %[[FZERO:.*]] = exp.constant 0.000000e+00 : f32
// CHECK-NOT: exp.clamp
// CHECK: return %[[TEN]], %[[ZERO]], %[[FIVE]], %[[FONE]], %[[FZERO]] : i32, i32, i32, f32, f32
func.func @clamp() -> (i32, i32, i32, f32, f32) {
  %lo = exp.constant 0 : i32
  %hi = exp.constant 10 : i32
  %a = exp.constant 15 : i32
  %b = exp.constant -5 : i32
  %c = exp.constant 5 : i32
  %0 = exp.clamp %a, %lo, %hi : i32
  %1 = exp.clamp %b, %lo, %hi : i32
  %2 = exp.clamp %c, %lo, %hi : i32
  %flo = exp.constant 0.0 : f32
  %fhi = exp.constant 1.0 : f32
  %fa = exp.constant 1.5 : f32
  %fb = exp.constant -0.5 : f32
  %3 = exp.clamp %fa, %flo, %fhi : f32
  %4 = exp.clamp %fb, %flo, %fhi : f32
  return %0, %1, %2, %3, %4 : i32, i32, i32, f32, f32
}

// -----

//===----------------------------------------------------------------------===//
// Bit operations
//===----------------------------------------------------------------------===//

// 12 = 0b1100, 10 = 0b1010.
// CHECK-LABEL: func.func @bitwise(
// CHECK-DAG: %[[AND:.*]] = exp.constant 8 : i32
// CHECK-DAG: %[[OR:.*]] = exp.constant 14 : i32
// CHECK-DAG: %[[XOR:.*]] = exp.constant 6 : i32
// CHECK-DAG: %[[NOT0:.*]] = exp.constant -1 : i32
// CHECK-DAG: %[[NOT5:.*]] = exp.constant -6 : i32
// CHECK-DAG: %[[F:.*]] = exp.constant false
// CHECK-NOT: exp.{{and|or|xor|not}}
// CHECK: return %[[AND]], %[[OR]], %[[XOR]], %[[NOT0]], %[[NOT5]], %[[F]] : i32, i32, i32, i32, i32, i1
func.func @bitwise() -> (i32, i32, i32, i32, i32, i1) {
  %a = exp.constant 12 : i32
  %b = exp.constant 10 : i32
  %0 = exp.and %a, %b : i32
  %1 = exp.or %a, %b : i32
  %2 = exp.xor %a, %b : i32
  %zero = exp.constant 0 : i32
  %3 = exp.not %zero : i32
  %five = exp.constant 5 : i32
  %4 = exp.not %five : i32
  %true = exp.constant true
  %5 = exp.not %true : i1
  return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, i32, i1
}

// -----

// CHECK-LABEL: func.func @bitwise_identities(
// CHECK-SAME: %[[X:.*]]: i32, %[[V:.*]]: vector<4xi32>)
// CHECK-DAG: %[[Z:.*]] = exp.constant 0 : i32
// CHECK-DAG: %[[VZ:.*]] = exp.constant dense<0> : vector<4xi32>
// CHECK-NOT: exp.{{and|or|xor|not}}
// CHECK: return %[[X]], %[[Z]], %[[X]], %[[X]], %[[X]], %[[Z]], %[[VZ]], %[[X]], %[[X]] :
func.func @bitwise_identities(%x: i32, %v: vector<4xi32>)
    -> (i32, i32, i32, i32, i32, i32, vector<4xi32>, i32, i32) {
  %zero = exp.constant 0 : i32
  %ones = exp.constant -1 : i32
  %0 = exp.and %x, %x : i32
  %1 = exp.and %x, %zero : i32
  %2 = exp.and %x, %ones : i32
  %3 = exp.or %x, %x : i32
  %4 = exp.or %x, %zero : i32
  %5 = exp.xor %x, %x : i32
  %6 = exp.xor %v, %v : vector<4xi32>
  %7 = exp.xor %x, %zero : i32
  %n = exp.not %x : i32
  %8 = exp.not %n : i32
  return %0, %1, %2, %3, %4, %5, %6, %7, %8
      : i32, i32, i32, i32, i32, i32, vector<4xi32>, i32, i32
}

// -----

// -16 = 0xFFFFFFF0: arithmetic >> 2 is -4, logical >> 2 is 0x3FFFFFFC.
// CHECK-LABEL: func.func @shifts(
// CHECK-DAG: %[[SHL:.*]] = exp.constant 16 : i32
// CHECK-DAG: %[[MIN:.*]] = exp.constant -2147483648 : i32
// CHECK-DAG: %[[SHRS:.*]] = exp.constant -4 : i32
// CHECK-DAG: %[[SHRU:.*]] = exp.constant 1073741820 : i32
// CHECK-DAG: %[[M1:.*]] = exp.constant -1 : i32
// CHECK-DAG: %[[P1:.*]] = exp.constant 1 : i32
// CHECK-NOT: exp.sh
// CHECK: return %[[SHL]], %[[MIN]], %[[SHRS]], %[[SHRU]], %[[M1]], %[[P1]] : i32, i32, i32, i32, i32, i32
func.func @shifts() -> (i32, i32, i32, i32, i32, i32) {
  %one = exp.constant 1 : i32
  %four = exp.constant 4 : i32
  %m1 = exp.constant -1 : i32
  %n31 = exp.constant 31 : i32
  %m16 = exp.constant -16 : i32
  %two = exp.constant 2 : i32
  %min = exp.constant -2147483648 : i32
  %0 = exp.shl %one, %four : i32
  %1 = exp.shl %m1, %n31 : i32
  %2 = exp.shr_s %m16, %two : i32
  %3 = exp.shr_u %m16, %two : i32
  %4 = exp.shr_s %min, %n31 : i32
  %5 = exp.shr_u %min, %n31 : i32
  return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, i32, i32
}

// -----

// CHECK-LABEL: func.func @shift_by_zero(
// CHECK-SAME: %[[X:.*]]: i32)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]] : i32, i32, i32
func.func @shift_by_zero(%x: i32) -> (i32, i32, i32) {
  %zero = exp.constant 0 : i32
  %0 = exp.shl %x, %zero : i32
  %1 = exp.shr_s %x, %zero : i32
  %2 = exp.shr_u %x, %zero : i32
  return %0, %1, %2 : i32, i32, i32
}

// -----

// A shift by the bit width or more is undefined: left alone.
// CHECK-LABEL: func.func @no_fold_shift_out_of_range(
// CHECK-DAG: %[[ONE:.*]] = exp.constant 1 : i32
// CHECK-DAG: %[[N32:.*]] = exp.constant 32 : i32
// CHECK-DAG: %[[N33:.*]] = exp.constant 33 : i32
// CHECK-DAG: %[[M1:.*]] = exp.constant -1 : i32
// CHECK-DAG: %[[B:.*]] = exp.constant 1 : i8
// CHECK-DAG: %[[N8:.*]] = exp.constant 8 : i8
// CHECK-DAG: %[[R0:.*]] = exp.shl %[[ONE]], %[[N32]] : i32
// CHECK-DAG: %[[R1:.*]] = exp.shr_s %[[M1]], %[[N32]] : i32
// CHECK-DAG: %[[R2:.*]] = exp.shr_u %[[M1]], %[[N33]] : i32
// CHECK-DAG: %[[R3:.*]] = exp.shl %[[ONE]], %[[M1]] : i32
// CHECK-DAG: %[[R4:.*]] = exp.shl %[[B]], %[[N8]] : i8
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]] : i32, i32, i32, i32, i8
func.func @no_fold_shift_out_of_range() -> (i32, i32, i32, i32, i8) {
  %one = exp.constant 1 : i32
  %n32 = exp.constant 32 : i32
  %n33 = exp.constant 33 : i32
  %m1 = exp.constant -1 : i32
  %0 = exp.shl %one, %n32 : i32
  %1 = exp.shr_s %m1, %n32 : i32
  %2 = exp.shr_u %m1, %n33 : i32
  // -1 reads as 0xFFFFFFFF.
  %3 = exp.shl %one, %m1 : i32
  %b = exp.constant 1 : i8
  %n8 = exp.constant 8 : i8
  %4 = exp.shl %b, %n8 : i8
  return %0, %1, %2, %3, %4 : i32, i32, i32, i32, i8
}

// -----

//===----------------------------------------------------------------------===//
// Packing and dot products
//===----------------------------------------------------------------------===//

// 0x3C00C000: half 0 is 0xC000 = -2.0, half 1 is 0x3C00 = 1.0;
// 0x7BFF0000: half 1 is 0x7BFF = 65504, the largest f16.
// CHECK-LABEL: func.func @unpack_f16x2(
// CHECK-DAG: %[[LO:.*]] = exp.constant -2.000000e+00 : f32
// CHECK-DAG: %[[HI:.*]] = exp.constant 1.000000e+00 : f16
// CHECK-DAG: %[[MAX:.*]] = exp.constant 6.550400e+04 : f32
// CHECK-NOT: exp.unpack_f16x2
// CHECK: return %[[LO]], %[[HI]], %[[MAX]] : f32, f16, f32
func.func @unpack_f16x2() -> (f32, f16, f32) {
  %w = exp.constant 1006682112 : i32
  %0 = exp.unpack_f16x2 %w[0] : f32
  %1 = exp.unpack_f16x2 %w[1] : f16
  %m = exp.constant 2080309248 : i32
  %2 = exp.unpack_f16x2 %m[1] : f32
  return %0, %1, %2 : f32, f16, f32
}

// -----

// unpack(pack(a, b)) is a rounded to f16, not a: left alone.
// CHECK-LABEL: func.func @no_fold_unpack_f16x2_of_pack(
// CHECK-SAME: %[[A:.*]]: f32, %[[B:.*]]: f32)
// CHECK: %[[P:.*]] = exp.pack_f16x2 %[[A]], %[[B]] : f32
// CHECK: %[[U:.*]] = exp.unpack_f16x2 %[[P]][0] : f32
// CHECK: return %[[U]] : f32
func.func @no_fold_unpack_f16x2_of_pack(%a: f32, %b: f32) -> f32 {
  %0 = exp.pack_f16x2 %a, %b : f32
  %1 = exp.unpack_f16x2 %0[0] : f32
  return %1 : f32
}

// -----

// (1, 2, 3, 4) packs to 0x04030201 = 67305985; (-1, 256, 127, 128) truncates
// to bytes (0xFF, 0x00, 0x7F, 0x80) = 0x807F00FF = -2139160321.
// CHECK-LABEL: func.func @pack_i8x4(
// CHECK-DAG: %[[A:.*]] = exp.constant 67305985 : i32
// CHECK-DAG: %[[B:.*]] = exp.constant -2139160321 : i32
// CHECK-NOT: exp.pack_i8x4
// CHECK: return %[[A]], %[[B]] : i32, i32
func.func @pack_i8x4() -> (i32, i32) {
  %c1 = exp.constant 1 : i32
  %c2 = exp.constant 2 : i32
  %c3 = exp.constant 3 : i32
  %c4 = exp.constant 4 : i32
  %0 = exp.pack_i8x4 %c1, %c2, %c3, %c4
  %m1 = exp.constant -1 : i32
  %c256 = exp.constant 256 : i32
  %c127 = exp.constant 127 : i32
  %c128 = exp.constant 128 : i32
  %1 = exp.pack_i8x4 %m1, %c256, %c127, %c128
  return %0, %1 : i32, i32
}

// -----

// 0x807F00FF: bytes 0xFF, 0x00, 0x7F, 0x80.
// CHECK-LABEL: func.func @unpack_i8x4(
// CHECK-DAG: %[[M1:.*]] = exp.constant -1 : i32
// CHECK-DAG: %[[U255:.*]] = exp.constant 255 : i32
// CHECK-DAG: %[[ZERO:.*]] = exp.constant 0 : i32
// CHECK-DAG: %[[P127:.*]] = exp.constant 127 : i32
// CHECK-DAG: %[[M128:.*]] = exp.constant -128 : i32
// CHECK-DAG: %[[U128:.*]] = exp.constant 128 : i32
// CHECK-NOT: exp.unpack_i8x4
// CHECK: return %[[M1]], %[[U255]], %[[ZERO]], %[[P127]], %[[M128]], %[[U128]] : i32, i32, i32, i32, i32, i32
func.func @unpack_i8x4() -> (i32, i32, i32, i32, i32, i32) {
  %w = exp.constant -2139160321 : i32
  %0 = exp.unpack_i8x4 %w[0]
  %1 = exp.unpack_i8x4 unsigned %w[0]
  %2 = exp.unpack_i8x4 %w[1]
  %3 = exp.unpack_i8x4 %w[2]
  %4 = exp.unpack_i8x4 %w[3]
  %5 = exp.unpack_i8x4 unsigned %w[3]
  return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, i32, i32
}

// -----

// A byte packed from a constant that fits is recovered even when the other
// bytes are not constant.
// CHECK-LABEL: func.func @unpack_i8x4_of_pack(
// CHECK-SAME: %[[X:.*]]: i32)
// CHECK-DAG: %[[FIVE:.*]] = exp.constant 5 : i32
// CHECK-DAG: %[[U200:.*]] = exp.constant 200 : i32
// CHECK-DAG: %[[M56:.*]] = exp.constant -56 : i32
// CHECK-NOT: exp.unpack_i8x4
// CHECK: return %[[FIVE]], %[[FIVE]], %[[U200]], %[[M56]] : i32, i32, i32, i32
func.func @unpack_i8x4_of_pack(%x: i32) -> (i32, i32, i32, i32) {
  %c5 = exp.constant 5 : i32
  %c200 = exp.constant 200 : i32
  %cm56 = exp.constant -56 : i32
  %p = exp.pack_i8x4 %x, %c5, %c200, %cm56
  %0 = exp.unpack_i8x4 %p[1]
  %1 = exp.unpack_i8x4 unsigned %p[1]
  %2 = exp.unpack_i8x4 unsigned %p[2]
  %3 = exp.unpack_i8x4 %p[3]
  return %0, %1, %2, %3 : i32, i32, i32, i32
}

// -----

// 200 does not fit a signed byte (it reads back as -56), and -56 does not fit
// an unsigned one (it reads back as 200): these need the whole word.
// CHECK-LABEL: func.func @no_fold_unpack_i8x4_of_pack_not_fitting(
// CHECK-SAME: %[[X:.*]]: i32)
// CHECK: %[[P:.*]] = exp.pack_i8x4 %[[X]], %{{.*}}, %{{.*}}, %{{.*}}
// CHECK-DAG: %[[S:.*]] = exp.unpack_i8x4 %[[P]][1]
// CHECK-DAG: %[[U:.*]] = exp.unpack_i8x4 unsigned %[[P]][2]
// CHECK: return %[[S]], %[[U]] : i32, i32
func.func @no_fold_unpack_i8x4_of_pack_not_fitting(%x: i32) -> (i32, i32) {
  %c200 = exp.constant 200 : i32
  %cm56 = exp.constant -56 : i32
  %p = exp.pack_i8x4 %x, %c200, %cm56, %x
  %0 = exp.unpack_i8x4 %p[1]
  %1 = exp.unpack_i8x4 unsigned %p[2]
  return %0, %1 : i32, i32
}

// -----

// a = 0xFC03FE01 = bytes (1, -2, 3, -4); b = 0x08F90605 = bytes (5, 6, -7, 8):
// 100 + 1*5 + (-2)*6 + 3*(-7) + (-4)*8 = 100 + 5 - 12 - 21 - 32 = 40.
// 0x80808080 . 0x80808080 = 4 * (-128)^2 = 65536.
// INT32_MAX + 1*1 wraps to INT32_MIN.
// CHECK-LABEL: func.func @dot4_i8(
// CHECK-DAG: %[[D:.*]] = exp.constant 40 : i32
// CHECK-DAG: %[[E:.*]] = exp.constant 65536 : i32
// CHECK-DAG: %[[W:.*]] = exp.constant -2147483648 : i32
// CHECK-NOT: exp.dot4_i8
// CHECK: return %[[D]], %[[E]], %[[W]] : i32, i32, i32
func.func @dot4_i8() -> (i32, i32, i32) {
  %a = exp.constant -66847231 : i32
  %b = exp.constant 150537733 : i32
  %acc = exp.constant 100 : i32
  %0 = exp.dot4_i8 %a, %b, %acc
  %m = exp.constant -2139062144 : i32
  %zero = exp.constant 0 : i32
  %1 = exp.dot4_i8 %m, %m, %zero
  %one = exp.constant 1 : i32
  %max = exp.constant 2147483647 : i32
  %2 = exp.dot4_i8 %one, %one, %max
  return %0, %1, %2 : i32, i32, i32
}

// -----

// The same dot product with the words built by pack_i8x4.
// CHECK-LABEL: func.func @dot4_i8_of_packs(
// CHECK-NEXT: %[[D:.*]] = exp.constant 40 : i32
// CHECK-NEXT: return %[[D]] : i32
func.func @dot4_i8_of_packs() -> i32 {
  %c1 = exp.constant 1 : i32
  %cm2 = exp.constant -2 : i32
  %c3 = exp.constant 3 : i32
  %cm4 = exp.constant -4 : i32
  %c5 = exp.constant 5 : i32
  %c6 = exp.constant 6 : i32
  %cm7 = exp.constant -7 : i32
  %c8 = exp.constant 8 : i32
  %a = exp.pack_i8x4 %c1, %cm2, %c3, %cm4
  %b = exp.pack_i8x4 %c5, %c6, %cm7, %c8
  %acc = exp.constant 100 : i32
  %0 = exp.dot4_i8 %a, %b, %acc
  return %0 : i32
}

// -----

//===----------------------------------------------------------------------===//
// Division by a constant
//===----------------------------------------------------------------------===//

// The input reads as unsigned: -1 : i32 is 4294967295, / 16 = 268435455,
// % 16 = 15; -1 : i64 / 3 = 6148914691236517205.
// CHECK-LABEL: func.func @div_rem_by_const(
// CHECK-DAG: %[[Q:.*]] = exp.constant 14 : i32
// CHECK-DAG: %[[R:.*]] = exp.constant 2 : i32
// CHECK-DAG: %[[UQ:.*]] = exp.constant 268435455 : i32
// CHECK-DAG: %[[UR:.*]] = exp.constant 15 : i32
// CHECK-DAG: %[[IQ:.*]] = exp.constant 100 : index
// CHECK-DAG: %[[LQ:.*]] = exp.constant 6148914691236517205 : i64
// CHECK-NOT: exp.{{div|rem}}_by_const
// CHECK: return %[[Q]], %[[R]], %[[UQ]], %[[UR]], %[[IQ]], %[[LQ]] : i32, i32, i32, i32, index, i64
func.func @div_rem_by_const() -> (i32, i32, i32, i32, index, i64) {
  %c100 = exp.constant 100 : i32
  %0 = exp.div_by_const %c100, 7 : i32
  %1 = exp.rem_by_const %c100, 7 : i32
  %m1 = exp.constant -1 : i32
  %2 = exp.div_by_const %m1, 16 : i32
  %3 = exp.rem_by_const %m1, 16 : i32
  %c1000 = exp.constant 1000 : index
  %4 = exp.div_by_const %c1000, 10 : index
  %m1l = exp.constant -1 : i64
  %5 = exp.div_by_const %m1l, 3 : i64
  return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, index, i64
}

// -----

// CHECK-LABEL: func.func @div_rem_by_one(
// CHECK-SAME: %[[X:.*]]: i32, %[[I:.*]]: index)
// CHECK-DAG: %[[Z:.*]] = exp.constant 0 : i32
// CHECK-DAG: %[[IZ:.*]] = exp.constant 0 : index
// CHECK-NOT: exp.{{div|rem}}_by_const
// CHECK: return %[[X]], %[[Z]], %[[I]], %[[IZ]] : i32, i32, index, index
func.func @div_rem_by_one(%x: i32, %i: index) -> (i32, i32, index, index) {
  %0 = exp.div_by_const %x, 1 : i32
  %1 = exp.rem_by_const %x, 1 : i32
  %2 = exp.div_by_const %i, 1 : index
  %3 = exp.rem_by_const %i, 1 : index
  return %0, %1, %2, %3 : i32, i32, index, index
}

// -----

// A non-constant input with a divisor other than 1 stays.
// CHECK-LABEL: func.func @no_fold_div_by_const_variable(
// CHECK-SAME: %[[X:.*]]: i32)
// CHECK: %[[Q:.*]] = exp.div_by_const %[[X]], 16 : i32
// CHECK: %[[R:.*]] = exp.rem_by_const %[[X]], 16 : i32
// CHECK: return %[[Q]], %[[R]] : i32, i32
func.func @no_fold_div_by_const_variable(%x: i32) -> (i32, i32) {
  %0 = exp.div_by_const %x, 16 : i32
  %1 = exp.rem_by_const %x, 16 : i32
  return %0, %1 : i32, i32
}

// -----

// A divisor wider than the input type: the quotient is 0, the remainder x.
// CHECK-LABEL: func.func @div_by_const_wider_than_type(
// CHECK-DAG: %[[Z:.*]] = exp.constant 0 : i32
// CHECK-DAG: %[[H:.*]] = exp.constant 100 : i32
// CHECK: return %[[Z]], %[[H]] : i32, i32
func.func @div_by_const_wider_than_type() -> (i32, i32) {
  %c = exp.constant 100 : i32
  %0 = exp.div_by_const %c, 4294967297 : i32
  %1 = exp.rem_by_const %c, 4294967297 : i32
  return %0, %1 : i32, i32
}

// -----

// In-range float to integer conversions round toward zero.
// CHECK-LABEL: func.func @convert_float_to_int_truncates(
// CHECK-DAG: %[[P:.*]] = exp.constant 2 : i32
// CHECK-DAG: %[[N:.*]] = exp.constant -2 : i32
// CHECK: return %[[P]], %[[N]] : i32, i32
func.func @convert_float_to_int_truncates() -> (i32, i32) {
  %a = exp.constant 2.5 : f32
  %b = exp.constant -2.75 : f32
  %0 = exp.convert %a : f32 to i32
  %1 = exp.convert %b : f32 to i32
  return %0, %1 : i32, i32
}

// -----

// Lane-exchanging ops are convergent: CSE must not merge a reduction inside
// a branch with one outside it, and unused ones are not erased either.
// CHECK-LABEL: func.func @subgroup_ops_are_not_merged(
// CHECK: exp.subgroup_reduce sum
// CHECK: scf.if
// CHECK: exp.subgroup_reduce sum
// CHECK: exp.broadcast_first
// CHECK: exp.shuffle_xor
func.func @subgroup_ops_are_not_merged(%x: f32, %c: i1) -> f32 {
  %outer = exp.subgroup_reduce sum %x : f32
  %inner = scf.if %c -> f32 {
    %r = exp.subgroup_reduce sum %x : f32
    scf.yield %r : f32
  } else {
    scf.yield %outer : f32
  }
  %unused0 = exp.broadcast_first %x : f32
  %unused1 = exp.shuffle_xor %x, 1 : f32
  return %inner : f32
}
