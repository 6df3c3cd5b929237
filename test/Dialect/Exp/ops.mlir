// RUN: hesper-opt %s | hesper-opt | FileCheck %s
// RUN: hesper-opt %s --mlir-print-op-generic | hesper-opt | FileCheck %s

// Every op of the exp dialect round-trips through the custom and the generic
// form.

// CHECK-LABEL: func.func @constants()
func.func @constants() {
  // CHECK: %{{.*}} = exp.constant true
  %t = exp.constant true
  // CHECK: %{{.*}} = exp.constant false
  %f = exp.constant false
  // CHECK: %{{.*}} = exp.constant -3 : i8
  %i8 = exp.constant -3 : i8
  // CHECK: %{{.*}} = exp.constant 1000 : i16
  %i16 = exp.constant 1000 : i16
  // CHECK: %{{.*}} = exp.constant 8 : i32
  %i32 = exp.constant 8 : i32
  // CHECK: %{{.*}} = exp.constant -9223372036854775808 : i64
  %i64 = exp.constant -9223372036854775808 : i64
  // CHECK: %{{.*}} = exp.constant 42 : index
  %idx = exp.constant 42 : index
  // CHECK: %{{.*}} = exp.constant 1.500000e+00 : f16
  %h = exp.constant 1.5 : f16
  // CHECK: %{{.*}} = exp.constant -2.500000e-01 : f32
  %s = exp.constant -0.25 : f32
  // CHECK: %{{.*}} = exp.constant dense<5.000000e-01> : vector<4xf32>
  %vf = exp.constant dense<0.5> : vector<4xf32>
  // CHECK: %{{.*}} = exp.constant dense<[1, 2]> : vector<2xi32>
  %vi = exp.constant dense<[1, 2]> : vector<2xi32>
  // CHECK: %{{.*}} = exp.constant dense<[true, false]> : vector<2xi1>
  %vb = exp.constant dense<[true, false]> : vector<2xi1>
  // CHECK: %{{.*}} = exp.constant dense<0.000000e+00> : vector<2x2xf16>
  %vh = exp.constant dense<0.0> : vector<2x2xf16>
  return
}

// CHECK-LABEL: func.func @arith_int(
// CHECK-SAME: %[[A:.*]]: i32, %[[B:.*]]: i32)
func.func @arith_int(%a: i32, %b: i32) {
  // CHECK: %{{.*}} = exp.add %[[A]], %[[B]] : i32
  %0 = exp.add %a, %b : i32
  // CHECK: %{{.*}} = exp.sub %[[A]], %[[B]] : i32
  %1 = exp.sub %a, %b : i32
  // CHECK: %{{.*}} = exp.mul %[[A]], %[[B]] : i32
  %2 = exp.mul %a, %b : i32
  // CHECK: %{{.*}} = exp.div %[[A]], %[[B]] : i32
  %3 = exp.div %a, %b : i32
  // CHECK: %{{.*}} = exp.rem %[[A]], %[[B]] : i32
  %4 = exp.rem %a, %b : i32
  // CHECK: %{{.*}} = exp.udiv %[[A]], %[[B]] : i32
  %5 = exp.udiv %a, %b : i32
  // CHECK: %{{.*}} = exp.urem %[[A]], %[[B]] : i32
  %6 = exp.urem %a, %b : i32
  // CHECK: %{{.*}} = exp.min %[[A]], %[[B]] : i32
  %7 = exp.min %a, %b : i32
  // CHECK: %{{.*}} = exp.max %[[A]], %[[B]] : i32
  %8 = exp.max %a, %b : i32
  // CHECK: %{{.*}} = exp.umin %[[A]], %[[B]] : i32
  %9 = exp.umin %a, %b : i32
  // CHECK: %{{.*}} = exp.umax %[[A]], %[[B]] : i32
  %10 = exp.umax %a, %b : i32
  // CHECK: %{{.*}} = exp.neg %[[A]] : i32
  %11 = exp.neg %a : i32
  // CHECK: %{{.*}} = exp.abs %[[A]] : i32
  %12 = exp.abs %a : i32
  return
}

// CHECK-LABEL: func.func @arith_float(
// CHECK-SAME: %[[A:.*]]: f32, %[[B:.*]]: f32)
func.func @arith_float(%a: f32, %b: f32) {
  // CHECK: %{{.*}} = exp.add %[[A]], %[[B]] : f32
  %0 = exp.add %a, %b : f32
  // CHECK: %{{.*}} = exp.sub %[[A]], %[[B]] : f32
  %1 = exp.sub %a, %b : f32
  // CHECK: %{{.*}} = exp.mul %[[A]], %[[B]] : f32
  %2 = exp.mul %a, %b : f32
  // CHECK: %{{.*}} = exp.div %[[A]], %[[B]] : f32
  %3 = exp.div %a, %b : f32
  // CHECK: %{{.*}} = exp.rem %[[A]], %[[B]] : f32
  %4 = exp.rem %a, %b : f32
  // CHECK: %{{.*}} = exp.min %[[A]], %[[B]] : f32
  %5 = exp.min %a, %b : f32
  // CHECK: %{{.*}} = exp.max %[[A]], %[[B]] : f32
  %6 = exp.max %a, %b : f32
  // CHECK: %{{.*}} = exp.neg %[[A]] : f32
  %7 = exp.neg %a : f32
  // CHECK: %{{.*}} = exp.abs %[[A]] : f32
  %8 = exp.abs %a : f32
  return
}

// CHECK-LABEL: func.func @arith_other_types(
// CHECK-SAME: %[[VF:.*]]: vector<4xf32>, %[[VI:.*]]: vector<4xi8>, %[[X:.*]]: index, %[[H:.*]]: f16, %[[L:.*]]: i64)
func.func @arith_other_types(%vf: vector<4xf32>, %vi: vector<4xi8>, %x: index,
                             %h: f16, %l: i64) {
  // CHECK: %{{.*}} = exp.mul %[[VF]], %[[VF]] : vector<4xf32>
  %0 = exp.mul %vf, %vf : vector<4xf32>
  // CHECK: %{{.*}} = exp.sub %[[VI]], %[[VI]] : vector<4xi8>
  %1 = exp.sub %vi, %vi : vector<4xi8>
  // CHECK: %{{.*}} = exp.udiv %[[VI]], %[[VI]] : vector<4xi8>
  %2 = exp.udiv %vi, %vi : vector<4xi8>
  // CHECK: %{{.*}} = exp.umax %[[VI]], %[[VI]] : vector<4xi8>
  %3 = exp.umax %vi, %vi : vector<4xi8>
  // CHECK: %{{.*}} = exp.add %[[X]], %[[X]] : index
  %4 = exp.add %x, %x : index
  // CHECK: %{{.*}} = exp.urem %[[X]], %[[X]] : index
  %5 = exp.urem %x, %x : index
  // CHECK: %{{.*}} = exp.div %[[H]], %[[H]] : f16
  %6 = exp.div %h, %h : f16
  // CHECK: %{{.*}} = exp.neg %[[VF]] : vector<4xf32>
  %7 = exp.neg %vf : vector<4xf32>
  // CHECK: %{{.*}} = exp.abs %[[L]] : i64
  %8 = exp.abs %l : i64
  return
}

// CHECK-LABEL: func.func @cmp_int(
// CHECK-SAME: %[[A:.*]]: i32, %[[B:.*]]: i32)
func.func @cmp_int(%a: i32, %b: i32) {
  // CHECK: %{{.*}} = exp.cmp eq, %[[A]], %[[B]] : i32
  %0 = exp.cmp eq, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp ne, %[[A]], %[[B]] : i32
  %1 = exp.cmp ne, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp lt, %[[A]], %[[B]] : i32
  %2 = exp.cmp lt, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp le, %[[A]], %[[B]] : i32
  %3 = exp.cmp le, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp gt, %[[A]], %[[B]] : i32
  %4 = exp.cmp gt, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp ge, %[[A]], %[[B]] : i32
  %5 = exp.cmp ge, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp ult, %[[A]], %[[B]] : i32
  %6 = exp.cmp ult, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp ule, %[[A]], %[[B]] : i32
  %7 = exp.cmp ule, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp ugt, %[[A]], %[[B]] : i32
  %8 = exp.cmp ugt, %a, %b : i32
  // CHECK: %{{.*}} = exp.cmp uge, %[[A]], %[[B]] : i32
  %9 = exp.cmp uge, %a, %b : i32
  return
}

// CHECK-LABEL: func.func @cmp_float(
// CHECK-SAME: %[[A:.*]]: f32, %[[B:.*]]: f32)
func.func @cmp_float(%a: f32, %b: f32) {
  // CHECK: %{{.*}} = exp.cmp eq, %[[A]], %[[B]] : f32
  %0 = exp.cmp eq, %a, %b : f32
  // CHECK: %{{.*}} = exp.cmp ne, %[[A]], %[[B]] : f32
  %1 = exp.cmp ne, %a, %b : f32
  // CHECK: %{{.*}} = exp.cmp lt, %[[A]], %[[B]] : f32
  %2 = exp.cmp lt, %a, %b : f32
  // CHECK: %{{.*}} = exp.cmp le, %[[A]], %[[B]] : f32
  %3 = exp.cmp le, %a, %b : f32
  // CHECK: %{{.*}} = exp.cmp gt, %[[A]], %[[B]] : f32
  %4 = exp.cmp gt, %a, %b : f32
  // CHECK: %{{.*}} = exp.cmp ge, %[[A]], %[[B]] : f32
  %5 = exp.cmp ge, %a, %b : f32
  return
}

// CHECK-LABEL: func.func @cmp_vector(
// CHECK-SAME: %[[A:.*]]: vector<4xi32>, %[[F:.*]]: vector<2xf16>, %[[X:.*]]: index)
func.func @cmp_vector(%a: vector<4xi32>, %f: vector<2xf16>, %x: index) -> vector<4xi1> {
  // CHECK: %[[LT:.*]] = exp.cmp lt, %[[A]], %[[A]] : vector<4xi32>
  %0 = exp.cmp lt, %a, %a : vector<4xi32>
  // CHECK: %{{.*}} = exp.cmp uge, %[[A]], %[[A]] : vector<4xi32>
  %1 = exp.cmp uge, %a, %a : vector<4xi32>
  // CHECK: %{{.*}} = exp.cmp ne, %[[F]], %[[F]] : vector<2xf16>
  %2 = exp.cmp ne, %f, %f : vector<2xf16>
  // CHECK: %{{.*}} = exp.cmp ult, %[[X]], %[[X]] : index
  %3 = exp.cmp ult, %x, %x : index
  // CHECK: return %[[LT]] : vector<4xi1>
  return %0 : vector<4xi1>
}

// CHECK-LABEL: func.func @select(
// CHECK-SAME: %[[C:.*]]: i1, %[[VC:.*]]: vector<4xi1>, %[[A:.*]]: f32, %[[B:.*]]: f32, %[[VA:.*]]: vector<4xf32>, %[[VB:.*]]: vector<4xf32>)
func.func @select(%c: i1, %vc: vector<4xi1>, %a: f32, %b: f32,
                  %va: vector<4xf32>, %vb: vector<4xf32>) {
  // CHECK: %{{.*}} = exp.select %[[C]], %[[A]], %[[B]] : f32
  %0 = exp.select %c, %a, %b : f32
  // A vector condition of the result's shape is the default and is elided.
  // CHECK: %{{.*}} = exp.select %[[VC]], %[[VA]], %[[VB]] : vector<4xf32>
  %1 = exp.select %vc, %va, %vb : vector<4xf32>
  // CHECK: %{{.*}} = exp.select %[[VC]], %[[VA]], %[[VB]] : vector<4xf32>
  %2 = exp.select %vc, %va, %vb : vector<4xi1>, vector<4xf32>
  // An i1 condition picks a whole vector.
  // CHECK: %{{.*}} = exp.select %[[C]], %[[VA]], %[[VB]] : i1, vector<4xf32>
  %3 = exp.select %c, %va, %vb : i1, vector<4xf32>
  // CHECK: %{{.*}} = exp.select %[[C]], %[[A]], %[[B]] : f32
  %4 = exp.select %c, %a, %b : i1, f32
  return
}

// CHECK-LABEL: func.func @convert(
// CHECK-SAME: %[[I:.*]]: i32, %[[F:.*]]: f32, %[[H:.*]]: f16, %[[B:.*]]: i8, %[[X:.*]]: index, %[[V:.*]]: vector<4xi32>)
func.func @convert(%i: i32, %f: f32, %h: f16, %b: i8, %x: index,
                   %v: vector<4xi32>) {
  // CHECK: %{{.*}} = exp.convert %[[I]] : i32 to f32
  %0 = exp.convert %i : i32 to f32
  // CHECK: %{{.*}} = exp.convert unsigned %[[I]] : i32 to f32
  %1 = exp.convert unsigned %i : i32 to f32
  // CHECK: %{{.*}} = exp.convert %[[F]] : f32 to i32
  %2 = exp.convert %f : f32 to i32
  // CHECK: %{{.*}} = exp.convert unsigned %[[F]] : f32 to i32
  %3 = exp.convert unsigned %f : f32 to i32
  // CHECK: %{{.*}} = exp.convert %[[F]] : f32 to f16
  %4 = exp.convert %f : f32 to f16
  // CHECK: %{{.*}} = exp.convert %[[H]] : f16 to f32
  %5 = exp.convert %h : f16 to f32
  // CHECK: %{{.*}} = exp.convert %[[B]] : i8 to i32
  %6 = exp.convert %b : i8 to i32
  // CHECK: %{{.*}} = exp.convert unsigned %[[B]] : i8 to i32
  %7 = exp.convert unsigned %b : i8 to i32
  // CHECK: %{{.*}} = exp.convert %[[I]] : i32 to i8
  %8 = exp.convert %i : i32 to i8
  // CHECK: %{{.*}} = exp.convert %[[X]] : index to i32
  %9 = exp.convert %x : index to i32
  // CHECK: %{{.*}} = exp.convert unsigned %[[I]] : i32 to index
  %10 = exp.convert unsigned %i : i32 to index
  // CHECK: %{{.*}} = exp.convert %[[V]] : vector<4xi32> to vector<4xf32>
  %11 = exp.convert %v : vector<4xi32> to vector<4xf32>
  // CHECK: %{{.*}} = exp.convert unsigned %[[H]] : f16 to i16
  %12 = exp.convert unsigned %h : f16 to i16
  return
}

// CHECK-LABEL: func.func @bitcast(
// CHECK-SAME: %[[F:.*]]: f32, %[[H:.*]]: f16, %[[V:.*]]: vector<4xf32>, %[[I:.*]]: i32)
func.func @bitcast(%f: f32, %h: f16, %v: vector<4xf32>, %i: i32) {
  // CHECK: %{{.*}} = exp.bitcast %[[F]] : f32 to i32
  %0 = exp.bitcast %f : f32 to i32
  // CHECK: %{{.*}} = exp.bitcast %[[H]] : f16 to i16
  %1 = exp.bitcast %h : f16 to i16
  // CHECK: %{{.*}} = exp.bitcast %[[V]] : vector<4xf32> to vector<4xi32>
  %2 = exp.bitcast %v : vector<4xf32> to vector<4xi32>
  // CHECK: %{{.*}} = exp.bitcast %[[I]] : i32 to f32
  %3 = exp.bitcast %i : i32 to f32
  return
}

// CHECK-LABEL: func.func @math(
// CHECK-SAME: %[[X:.*]]: f32, %[[Y:.*]]: f32, %[[Z:.*]]: f32)
func.func @math(%x: f32, %y: f32, %z: f32) {
  // CHECK: %{{.*}} = exp.exp %[[X]] : f32
  %0 = exp.exp %x : f32
  // CHECK: %{{.*}} = exp.log %[[X]] : f32
  %1 = exp.log %x : f32
  // CHECK: %{{.*}} = exp.sqrt %[[X]] : f32
  %2 = exp.sqrt %x : f32
  // CHECK: %{{.*}} = exp.rsqrt %[[X]] : f32
  %3 = exp.rsqrt %x : f32
  // CHECK: %{{.*}} = exp.tanh %[[X]] : f32
  %4 = exp.tanh %x : f32
  // CHECK: %{{.*}} = exp.sin %[[X]] : f32
  %5 = exp.sin %x : f32
  // CHECK: %{{.*}} = exp.cos %[[X]] : f32
  %6 = exp.cos %x : f32
  // CHECK: %{{.*}} = exp.floor %[[X]] : f32
  %7 = exp.floor %x : f32
  // CHECK: %{{.*}} = exp.round %[[X]] : f32
  %8 = exp.round %x : f32
  // CHECK: %{{.*}} = exp.sigmoid %[[X]] : f32
  %9 = exp.sigmoid %x : f32
  // CHECK: %{{.*}} = exp.silu %[[X]] : f32
  %10 = exp.silu %x : f32
  // CHECK: %{{.*}} = exp.gelu %[[X]] : f32
  %11 = exp.gelu %x : f32
  // CHECK: %{{.*}} = exp.pow %[[X]], %[[Y]] : f32
  %12 = exp.pow %x, %y : f32
  // CHECK: %{{.*}} = exp.fma %[[X]], %[[Y]], %[[Z]] : f32
  %13 = exp.fma %x, %y, %z : f32
  return
}

// CHECK-LABEL: func.func @math_vector(
// CHECK-SAME: %[[V:.*]]: vector<4xf16>, %[[H:.*]]: f16)
func.func @math_vector(%v: vector<4xf16>, %h: f16) {
  // CHECK: %{{.*}} = exp.exp %[[V]] : vector<4xf16>
  %0 = exp.exp %v : vector<4xf16>
  // CHECK: %{{.*}} = exp.gelu %[[V]] : vector<4xf16>
  %1 = exp.gelu %v : vector<4xf16>
  // CHECK: %{{.*}} = exp.pow %[[V]], %[[V]] : vector<4xf16>
  %2 = exp.pow %v, %v : vector<4xf16>
  // CHECK: %{{.*}} = exp.fma %[[V]], %[[V]], %[[V]] : vector<4xf16>
  %3 = exp.fma %v, %v, %v : vector<4xf16>
  // CHECK: %{{.*}} = exp.tanh %[[H]] : f16
  %4 = exp.tanh %h : f16
  return
}

// CHECK-LABEL: func.func @clamp(
// CHECK-SAME: %[[I:.*]]: i32, %[[F:.*]]: f32, %[[V:.*]]: vector<4xf32>)
func.func @clamp(%i: i32, %f: f32, %v: vector<4xf32>) {
  // CHECK: %{{.*}} = exp.clamp %[[I]], %[[I]], %[[I]] : i32
  %0 = exp.clamp %i, %i, %i : i32
  // CHECK: %{{.*}} = exp.clamp %[[F]], %[[F]], %[[F]] : f32
  %1 = exp.clamp %f, %f, %f : f32
  // CHECK: %{{.*}} = exp.clamp %[[V]], %[[V]], %[[V]] : vector<4xf32>
  %2 = exp.clamp %v, %v, %v : vector<4xf32>
  return
}

// CHECK-LABEL: func.func @bits(
// CHECK-SAME: %[[A:.*]]: i32, %[[B:.*]]: i32, %[[P:.*]]: vector<4xi1>, %[[L:.*]]: i64)
func.func @bits(%a: i32, %b: i32, %p: vector<4xi1>, %l: i64) {
  // CHECK: %{{.*}} = exp.and %[[A]], %[[B]] : i32
  %0 = exp.and %a, %b : i32
  // CHECK: %{{.*}} = exp.or %[[A]], %[[B]] : i32
  %1 = exp.or %a, %b : i32
  // CHECK: %{{.*}} = exp.xor %[[A]], %[[B]] : i32
  %2 = exp.xor %a, %b : i32
  // CHECK: %{{.*}} = exp.not %[[A]] : i32
  %3 = exp.not %a : i32
  // CHECK: %{{.*}} = exp.shl %[[A]], %[[B]] : i32
  %4 = exp.shl %a, %b : i32
  // CHECK: %{{.*}} = exp.shr_s %[[A]], %[[B]] : i32
  %5 = exp.shr_s %a, %b : i32
  // CHECK: %{{.*}} = exp.shr_u %[[A]], %[[B]] : i32
  %6 = exp.shr_u %a, %b : i32
  // CHECK: %{{.*}} = exp.and %[[P]], %[[P]] : vector<4xi1>
  %7 = exp.and %p, %p : vector<4xi1>
  // CHECK: %{{.*}} = exp.not %[[P]] : vector<4xi1>
  %8 = exp.not %p : vector<4xi1>
  // CHECK: %{{.*}} = exp.shr_u %[[L]], %[[L]] : i64
  %9 = exp.shr_u %l, %l : i64
  return
}

// CHECK-LABEL: func.func @packing(
// CHECK-SAME: %[[F:.*]]: f32, %[[G:.*]]: f32, %[[H:.*]]: f16, %[[W:.*]]: i32)
func.func @packing(%f: f32, %g: f32, %h: f16, %w: i32) {
  // CHECK: %{{.*}} = exp.pack_f16x2 %[[F]], %[[G]] : f32
  %0 = exp.pack_f16x2 %f, %g : f32
  // CHECK: %{{.*}} = exp.pack_f16x2 %[[H]], %[[H]] : f16
  %1 = exp.pack_f16x2 %h, %h : f16
  // CHECK: %{{.*}} = exp.unpack_f16x2 %[[W]][0] : f32
  %2 = exp.unpack_f16x2 %w[0] : f32
  // CHECK: %{{.*}} = exp.unpack_f16x2 %[[W]][1] : f16
  %3 = exp.unpack_f16x2 %w[1] : f16
  // CHECK: %[[P:.*]] = exp.pack_i8x4 %[[W]], %[[W]], %[[W]], %[[W]]{{$}}
  %4 = exp.pack_i8x4 %w, %w, %w, %w
  // CHECK: %{{.*}} = exp.unpack_i8x4 %[[P]][0]{{$}}
  %5 = exp.unpack_i8x4 %4[0]
  // CHECK: %{{.*}} = exp.unpack_i8x4 unsigned %[[P]][3]{{$}}
  %6 = exp.unpack_i8x4 unsigned %4[3]
  // CHECK: %{{.*}} = exp.unpack_i8x4 %[[W]][2]{{$}}
  %7 = exp.unpack_i8x4 %w[2]
  // CHECK: %{{.*}} = exp.dot4_i8 %[[P]], %[[W]], %[[W]]{{$}}
  %8 = exp.dot4_i8 %4, %w, %w
  return
}

// CHECK-LABEL: func.func @vector_dot4_i8(
// CHECK-SAME: %[[A:.*]]: vector<32xi8>, %[[B:.*]]: vector<32xi8>, %[[C:.*]]: vector<8xi32>, %[[D:.*]]: vector<16xi8>
func.func @vector_dot4_i8(%a: vector<32xi8>, %b: vector<32xi8>,
                          %acc: vector<8xi32>, %d: vector<16xi8>,
                          %e: vector<4xi32>) {
  // CHECK: exp.vector_dot4_i8 %[[A]], %[[B]], %[[C]] : vector<32xi8>, vector<8xi32>{{$}}
  %0 = exp.vector_dot4_i8 %a, %b, %acc : vector<32xi8>, vector<8xi32>
  // CHECK: exp.vector_dot4_i8 %[[D]], %[[D]], %{{.*}} : vector<16xi8>, vector<4xi32>{{$}}
  %1 = exp.vector_dot4_i8 %d, %d, %e : vector<16xi8>, vector<4xi32>
  // CHECK: exp.vector_dot4_i8 %[[A]], %[[B]], %[[C]] {a_unsigned} : vector<32xi8>, vector<8xi32>{{$}}
  %2 = exp.vector_dot4_i8 %a, %b, %acc {a_unsigned} : vector<32xi8>, vector<8xi32>
  return
}

// CHECK-LABEL: func.func @div_by_const(
// CHECK-SAME: %[[I:.*]]: i32, %[[L:.*]]: i64, %[[X:.*]]: index)
func.func @div_by_const(%i: i32, %l: i64, %x: index) {
  // CHECK: %{{.*}} = exp.div_by_const %[[I]], 16 : i32
  %0 = exp.div_by_const %i, 16 : i32
  // CHECK: %{{.*}} = exp.rem_by_const %[[I]], 16 : i32
  %1 = exp.rem_by_const %i, 16 : i32
  // CHECK: %{{.*}} = exp.div_by_const %[[L]], 1000000007 : i64
  %2 = exp.div_by_const %l, 1000000007 : i64
  // CHECK: %{{.*}} = exp.rem_by_const %[[L]], 3 : i64
  %3 = exp.rem_by_const %l, 3 : i64
  // CHECK: %{{.*}} = exp.div_by_const %[[X]], 7 : index
  %4 = exp.div_by_const %x, 7 : index
  // CHECK: %{{.*}} = exp.rem_by_const %[[X]], 1 : index
  %5 = exp.rem_by_const %x, 1 : index
  return
}

// CHECK-LABEL: func.func @subgroup(
// CHECK-SAME: %[[F:.*]]: f32, %[[I:.*]]: i32, %[[H:.*]]: f16)
func.func @subgroup(%f: f32, %i: i32, %h: f16) {
  // CHECK: %{{.*}} = exp.lane_id : i32
  %0 = exp.lane_id : i32
  // CHECK: %{{.*}} = exp.subgroup_size : i32
  %1 = exp.subgroup_size : i32
  // CHECK: %{{.*}} = exp.subgroup_reduce sum %[[F]] : f32
  %2 = exp.subgroup_reduce sum %f : f32
  // CHECK: %{{.*}} = exp.subgroup_reduce max %[[I]] : i32
  %3 = exp.subgroup_reduce max %i : i32
  // CHECK: %{{.*}} = exp.subgroup_reduce min %[[H]] : f16
  %4 = exp.subgroup_reduce min %h : f16
  // CHECK: %{{.*}} = exp.shuffle_xor %[[F]], 1 : f32
  %5 = exp.shuffle_xor %f, 1 : f32
  // CHECK: %{{.*}} = exp.shuffle_xor %[[I]], 127 : i32
  %6 = exp.shuffle_xor %i, 127 : i32
  // CHECK: %{{.*}} = exp.shuffle_xor %[[H]], 16 : f16
  %7 = exp.shuffle_xor %h, 16 : f16
  // CHECK: %{{.*}} = exp.broadcast_first %[[F]] : f32
  %8 = exp.broadcast_first %f : f32
  // CHECK: %{{.*}} = exp.broadcast_first %[[I]] : i32
  %9 = exp.broadcast_first %i : i32
  return
}
