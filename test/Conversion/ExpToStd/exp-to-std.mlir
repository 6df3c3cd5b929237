// RUN: hesper-opt %s -split-input-file --convert-exp-to-std | FileCheck %s
// RUN: hesper-opt %s -split-input-file --convert-exp-to-std | FileCheck %s --check-prefix=NOEXP
// NOEXP-NOT: exp.

// CHECK-LABEL: func.func @arith(
// CHECK-SAME: %[[A:.*]]: i32, %[[B:.*]]: i32, %[[X:.*]]: f32, %[[Y:.*]]: f32)
// CHECK-DAG: arith.addi %[[A]], %[[B]] : i32
// CHECK-DAG: arith.addf %[[X]], %[[Y]] : f32
// CHECK-DAG: arith.divsi %[[A]], %[[B]] : i32
// CHECK-DAG: arith.divui %[[A]], %[[B]] : i32
// CHECK-DAG: arith.remf %[[X]], %[[Y]] : f32
// CHECK-DAG: arith.minsi %[[A]], %[[B]] : i32
// CHECK-DAG: arith.maxnumf %[[X]], %[[Y]] : f32
// CHECK-DAG: arith.maxui %[[A]], %[[B]] : i32
// CHECK-DAG: arith.negf %[[X]] : f32
// CHECK-DAG: math.absi %[[A]] : i32
// CHECK-DAG: math.powf %[[X]], %[[Y]] : f32
func.func @arith(%a: i32, %b: i32, %x: f32, %y: f32) -> (i32, f32, i32, i32, f32, i32, f32, i32, f32, i32, f32) {
  %0 = exp.add %a, %b : i32
  %1 = exp.add %x, %y : f32
  %2 = exp.div %a, %b : i32
  %3 = exp.udiv %a, %b : i32
  %4 = exp.rem %x, %y : f32
  %5 = exp.min %a, %b : i32
  %6 = exp.max %x, %y : f32
  %7 = exp.umax %a, %b : i32
  %8 = exp.neg %x : f32
  %9 = exp.abs %a : i32
  %10 = exp.pow %x, %y : f32
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : i32, f32, i32, i32, f32, i32, f32, i32, f32, i32, f32
}

// -----

// Integer negation is 0 - x; vectors keep their type.
// CHECK-LABEL: func.func @vectors(
// CHECK: %[[Z:.*]] = arith.constant dense<0> : vector<4xi32>
// CHECK: arith.subi %[[Z]], %{{.*}} : vector<4xi32>
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<4xf32>
func.func @vectors(%a: vector<4xi32>, %x: vector<4xf32>) -> (vector<4xi32>, vector<4xf32>) {
  %0 = exp.neg %a : vector<4xi32>
  %1 = exp.mul %x, %x : vector<4xf32>
  return %0, %1 : vector<4xi32>, vector<4xf32>
}

// -----

// CHECK-LABEL: func.func @compare(
// CHECK: arith.cmpf une
// CHECK: arith.cmpf olt
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi sge
// CHECK: arith.select
func.func @compare(%x: f32, %y: f32, %a: i32, %b: i32) -> (i1, i1, i1, i32) {
  %0 = exp.cmp ne, %x, %y : f32
  %1 = exp.cmp lt, %x, %y : f32
  %2 = exp.cmp ult, %a, %b : i32
  %3 = exp.cmp ge, %a, %b : i32
  %4 = exp.select %3, %a, %b : i32
  return %0, %1, %2, %4 : i1, i1, i1, i32
}

// -----

// CHECK-LABEL: func.func @conversions(
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.uitofp %{{.*}} : i32 to f32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.index_cast %{{.*}} : i32 to index
// CHECK: arith.bitcast %{{.*}} : f32 to i32
func.func @conversions(%i: i32, %x: f32, %b: i8) -> (f32, f32, i32, f16, i32, i32, index, i32) {
  %0 = exp.convert %i : i32 to f32
  %1 = exp.convert unsigned %i : i32 to f32
  %2 = exp.convert %x : f32 to i32
  %3 = exp.convert %x : f32 to f16
  %4 = exp.convert unsigned %b : i8 to i32
  %5 = exp.convert %b : i8 to i32
  %6 = exp.convert %i : i32 to index
  %7 = exp.bitcast %x : f32 to i32
  return %0, %1, %2, %3, %4, %5, %6, %7 : f32, f32, i32, f16, i32, i32, index, i32
}

// -----

// Math functions; sigmoid, SiLU and GELU (tanh form) are expanded.
// CHECK-LABEL: func.func @math(
// CHECK: math.rsqrt
// CHECK: math.round
// CHECK: math.fma
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
func.func @math(%x: f32) -> (f32, f32, f32, f32, f32) {
  %0 = exp.rsqrt %x : f32
  %1 = exp.round %x : f32
  %2 = exp.fma %x, %x, %x : f32
  %3 = exp.silu %x : f32
  %4 = exp.gelu %x : f32
  return %0, %1, %2, %3, %4 : f32, f32, f32, f32, f32
}

// -----

// Packing: halves are rounded to f16 and shifted into place; bytes masked.
// CHECK-LABEL: func.func @packing(
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.bitcast %{{.*}} : f16 to i16
// CHECK: arith.shli
// CHECK: arith.ori
// CHECK: arith.constant 255 : i32
// CHECK: arith.andi
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: arith.extui %{{.*}} : i8 to i32
func.func @packing(%x: f32, %b: i32) -> (i32, i32, i32) {
  %0 = exp.pack_f16x2 %x, %x : f32
  %1 = exp.pack_i8x4 %b, %b, %b, %b
  %2 = exp.unpack_i8x4 unsigned %b[2]
  return %0, %1, %2 : i32, i32, i32
}

// -----

// Division by a power of two is a shift; by anything else a 64-bit
// multiply-high; remainders by a power of two are masks.
// CHECK-LABEL: func.func @fast_division(
// CHECK: %[[S:.*]] = arith.constant 4 : i32
// CHECK: arith.shrui %{{.*}}, %[[S]] : i32
// CHECK: arith.extui %{{.*}} : i32 to i64
// CHECK: arith.constant 2635249153387078803 : i64
// CHECK: arith.mului_extended
// CHECK: arith.constant 15 : i32
// CHECK: arith.andi
func.func @fast_division(%x: i32) -> (i32, i32, i32) {
  %0 = exp.div_by_const %x, 16 : i32
  %1 = exp.div_by_const %x, 7 : i32
  %2 = exp.rem_by_const %x, 16 : i32
  return %0, %1, %2 : i32, i32, i32
}

// -----

// Lane operations map to the gpu dialect.
// CHECK-LABEL: func.func @lanes(
// CHECK: gpu.lane_id
// CHECK: gpu.subgroup_reduce maxnumf
// CHECK: gpu.subgroup_size
// CHECK: gpu.shuffle  xor
// CHECK: gpu.subgroup_broadcast %{{.*}}, first_active_lane
func.func @lanes(%x: f32) -> (i32, f32, f32, f32) {
  %0 = exp.lane_id : i32
  %1 = exp.subgroup_reduce max %x : f32
  %2 = exp.shuffle_xor %x, 16 : f32
  %3 = exp.broadcast_first %x : f32
  return %0, %1, %2, %3 : i32, f32, f32, f32
}

// -----

// The vector form, where no target lowered it first: bytes widened and
// multiplied, then added in pairs twice, so lane i adds products 4i .. 4i+3.
// CHECK-LABEL: func.func @vector_dot4_i8(
// CHECK-SAME: %[[A:.*]]: vector<16xi8>, %[[B:.*]]: vector<16xi8>, %[[C:.*]]: vector<4xi32>)
// CHECK-DAG: %[[WA:.*]] = arith.extsi %[[A]] : vector<16xi8> to vector<16xi32>
// CHECK-DAG: %[[WB:.*]] = arith.extsi %[[B]] : vector<16xi8> to vector<16xi32>
// CHECK: %[[P:.*]] = arith.muli %[[WA]], %[[WB]] : vector<16xi32>
// CHECK-DAG: %[[E:.*]] = vector.shuffle %[[P]], %[[P]] [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK-DAG: %[[O:.*]] = vector.shuffle %[[P]], %[[P]] [1, 3, 5, 7, 9, 11, 13, 15]
// CHECK: %[[S:.*]] = arith.addi %[[E]], %[[O]] : vector<8xi32>
// CHECK-DAG: %[[E2:.*]] = vector.shuffle %[[S]], %[[S]] [0, 2, 4, 6]
// CHECK-DAG: %[[O2:.*]] = vector.shuffle %[[S]], %[[S]] [1, 3, 5, 7]
// CHECK: %[[S2:.*]] = arith.addi %[[E2]], %[[O2]] : vector<4xi32>
// CHECK: %[[R:.*]] = arith.addi %[[C]], %[[S2]] : vector<4xi32>
// CHECK: return %[[R]]
func.func @vector_dot4_i8(%a: vector<16xi8>, %b: vector<16xi8>,
                          %acc: vector<4xi32>) -> vector<4xi32> {
  %0 = exp.vector_dot4_i8 %a, %b, %acc : vector<16xi8>, vector<4xi32>
  return %0 : vector<4xi32>
}

// With a_unsigned, a's bytes are widened as unsigned (0..255), b's still
// signed.
// CHECK-LABEL: func.func @vector_dot4_u8i8(
// CHECK-SAME: %[[A:.*]]: vector<16xi8>, %[[B:.*]]: vector<16xi8>, %[[C:.*]]: vector<4xi32>)
// CHECK-DAG: %[[WA:.*]] = arith.extui %[[A]] : vector<16xi8> to vector<16xi32>
// CHECK-DAG: %[[WB:.*]] = arith.extsi %[[B]] : vector<16xi8> to vector<16xi32>
// CHECK: arith.muli %[[WA]], %[[WB]] : vector<16xi32>
func.func @vector_dot4_u8i8(%a: vector<16xi8>, %b: vector<16xi8>,
                            %acc: vector<4xi32>) -> vector<4xi32> {
  %0 = exp.vector_dot4_i8 %a, %b, %acc {a_unsigned} : vector<16xi8>, vector<4xi32>
  return %0 : vector<4xi32>
}
