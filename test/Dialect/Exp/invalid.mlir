// RUN: hesper-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of the exp verifiers and type constraints.

// The attribute's type is the result type.
func.func @constant_type_mismatch() {
  // expected-error @+1 {{'exp.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "exp.constant"() <{value = 1 : i32}> : () -> f32
  return
}

// -----

func.func @constant_vector_shape_mismatch() {
  // expected-error @+1 {{'exp.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "exp.constant"() <{value = dense<1.0> : vector<2xf32>}> : () -> vector<4xf32>
  return
}

// -----

func.func @constant_vector_not_dense() {
  // expected-error @+1 {{'exp.constant' op expects a dense elements attribute for a vector constant, got sparse<0, 1.000000e+00> : vector<4xf32>}}
  %0 = exp.constant sparse<[[0]], [1.0]> : vector<4xf32>
  return
}

// -----

func.func @constant_int_not_integer_attr() {
  // expected-error @+1 {{'exp.constant' op expects an integer or float attribute matching the result type, got "foo" : i32}}
  %0 = exp.constant "foo" : i32
  return
}

// -----

func.func @constant_float_not_float_attr() {
  // expected-error @+1 {{'exp.constant' op expects an integer or float attribute matching the result type, got "foo" : f32}}
  %0 = exp.constant "foo" : f32
  return
}

// -----

func.func @constant_not_typed() {
  // expected-error @+1 {{invalid properties {value} for op exp.constant: Invalid attribute `value` in property conversion: unit}}
  %0 = "exp.constant"() <{value = unit}> : () -> i32
  return
}

// -----

func.func @constant_i7() {
  // expected-error @+1 {{'exp.constant' op result #0 must be integer, index, float, or vector thereof, but got 'i7'}}
  %0 = exp.constant 1 : i7
  return
}

// -----

func.func @constant_f64() {
  // expected-error @+1 {{'exp.constant' op result #0 must be integer, index, float, or vector thereof, but got 'f64'}}
  %0 = exp.constant 1.0 : f64
  return
}

// -----

func.func @constant_signed_int() {
  // expected-error @+1 {{'exp.constant' op result #0 must be integer, index, float, or vector thereof, but got 'si32'}}
  %0 = exp.constant 1 : si32
  return
}

// -----

func.func @constant_tensor() {
  // expected-error @+1 {{'exp.constant' op result #0 must be integer, index, float, or vector thereof, but got 'tensor<4xf32>'}}
  %0 = exp.constant dense<1.0> : tensor<4xf32>
  return
}

// -----

// Operand types never mix implicitly.
func.func @add_mixed_types(%a: i32, %b: f32) {
  // expected-error @+1 {{'exp.add' op requires the same type for all operands and results}}
  %0 = "exp.add"(%a, %b) : (i32, f32) -> i32
  return
}

// -----

func.func @add_result_type(%a: i32) {
  // expected-error @+1 {{'exp.add' op requires the same type for all operands and results}}
  %0 = "exp.add"(%a, %a) : (i32, i32) -> i64
  return
}

// -----

func.func @neg_result_type(%a: f32) {
  // expected-error @+1 {{'exp.neg' op requires the same type for all operands and results}}
  %0 = "exp.neg"(%a) : (f32) -> f16
  return
}

// -----

func.func @add_f64(%a: f64) {
  // expected-error @+1 {{'exp.add' op operand #0 must be integer, index, float, or vector thereof, but got 'f64'}}
  %0 = exp.add %a, %a : f64
  return
}

// -----

func.func @add_vector_of_index(%a: vector<4xindex>) {
  // expected-error @+1 {{'exp.add' op operand #0 must be integer, index, float, or vector thereof, but got 'vector<4xindex>'}}
  %0 = exp.add %a, %a : vector<4xindex>
  return
}

// -----

func.func @mul_tensor(%a: tensor<4xf32>) {
  // expected-error @+1 {{'exp.mul' op operand #0 must be integer, index, float, or vector thereof, but got 'tensor<4xf32>'}}
  %0 = exp.mul %a, %a : tensor<4xf32>
  return
}

// -----

// Integer-only ops reject floats.
func.func @udiv_float(%a: f32) {
  // expected-error @+1 {{'exp.udiv' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.udiv %a, %a : f32
  return
}

// -----

func.func @urem_float(%a: f32) {
  // expected-error @+1 {{'exp.urem' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.urem %a, %a : f32
  return
}

// -----

func.func @umin_float(%a: f32) {
  // expected-error @+1 {{'exp.umin' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.umin %a, %a : f32
  return
}

// -----

func.func @umax_float(%a: f32) {
  // expected-error @+1 {{'exp.umax' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.umax %a, %a : f32
  return
}

// -----

func.func @and_float(%a: f32) {
  // expected-error @+1 {{'exp.and' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.and %a, %a : f32
  return
}

// -----

func.func @or_float(%a: f32) {
  // expected-error @+1 {{'exp.or' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.or %a, %a : f32
  return
}

// -----

func.func @xor_float(%a: f32) {
  // expected-error @+1 {{'exp.xor' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.xor %a, %a : f32
  return
}

// -----

func.func @shl_float(%a: f32) {
  // expected-error @+1 {{'exp.shl' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.shl %a, %a : f32
  return
}

// -----

func.func @shr_s_float(%a: f32) {
  // expected-error @+1 {{'exp.shr_s' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.shr_s %a, %a : f32
  return
}

// -----

func.func @shr_u_float(%a: f32) {
  // expected-error @+1 {{'exp.shr_u' op operand #0 must be signless integer, index, or vector thereof, but got 'f32'}}
  %0 = exp.shr_u %a, %a : f32
  return
}

// -----

func.func @not_float(%a: f16) {
  // expected-error @+1 {{'exp.not' op operand #0 must be signless integer, index, or vector thereof, but got 'f16'}}
  %0 = exp.not %a : f16
  return
}

// -----

func.func @and_float_vector(%a: vector<4xf32>) {
  // expected-error @+1 {{'exp.and' op operand #0 must be signless integer, index, or vector thereof, but got 'vector<4xf32>'}}
  %0 = exp.and %a, %a : vector<4xf32>
  return
}

// -----

func.func @and_vector_of_index(%a: vector<4xindex>) {
  // expected-error @+1 {{'exp.and' op operand #0 must be signless integer, index, or vector thereof, but got 'vector<4xindex>'}}
  %0 = exp.and %a, %a : vector<4xindex>
  return
}

// -----

// Math ops reject integers.
func.func @exp_int(%a: i32) {
  // expected-error @+1 {{'exp.exp' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.exp %a : i32
  return
}

// -----

func.func @log_int(%a: i32) {
  // expected-error @+1 {{'exp.log' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.log %a : i32
  return
}

// -----

func.func @sqrt_int(%a: i32) {
  // expected-error @+1 {{'exp.sqrt' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.sqrt %a : i32
  return
}

// -----

func.func @rsqrt_int(%a: i32) {
  // expected-error @+1 {{'exp.rsqrt' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.rsqrt %a : i32
  return
}

// -----

func.func @tanh_int(%a: i32) {
  // expected-error @+1 {{'exp.tanh' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.tanh %a : i32
  return
}

// -----

func.func @sin_int(%a: i32) {
  // expected-error @+1 {{'exp.sin' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.sin %a : i32
  return
}

// -----

func.func @cos_int(%a: i32) {
  // expected-error @+1 {{'exp.cos' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.cos %a : i32
  return
}

// -----

func.func @floor_int(%a: i32) {
  // expected-error @+1 {{'exp.floor' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.floor %a : i32
  return
}

// -----

func.func @round_int(%a: i32) {
  // expected-error @+1 {{'exp.round' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.round %a : i32
  return
}

// -----

func.func @sigmoid_int(%a: i32) {
  // expected-error @+1 {{'exp.sigmoid' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.sigmoid %a : i32
  return
}

// -----

func.func @silu_int(%a: i32) {
  // expected-error @+1 {{'exp.silu' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.silu %a : i32
  return
}

// -----

func.func @gelu_int(%a: i32) {
  // expected-error @+1 {{'exp.gelu' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.gelu %a : i32
  return
}

// -----

func.func @exp_int_vector(%a: vector<4xi32>) {
  // expected-error @+1 {{'exp.exp' op operand #0 must be f16, f32, or vector thereof, but got 'vector<4xi32>'}}
  %0 = exp.exp %a : vector<4xi32>
  return
}

// -----

func.func @pow_int(%a: i32) {
  // expected-error @+1 {{'exp.pow' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.pow %a, %a : i32
  return
}

// -----

func.func @fma_int(%a: i32) {
  // expected-error @+1 {{'exp.fma' op operand #0 must be f16, f32, or vector thereof, but got 'i32'}}
  %0 = exp.fma %a, %a, %a : i32
  return
}

// -----

func.func @fma_mixed_types(%a: f32, %b: f16) {
  // expected-error @+1 {{'exp.fma' op requires the same type for all operands and results}}
  %0 = "exp.fma"(%a, %b, %a) : (f32, f16, f32) -> f32
  return
}

// -----

func.func @clamp_mixed_types(%a: i32, %b: i64) {
  // expected-error @+1 {{'exp.clamp' op requires the same type for all operands and results}}
  %0 = "exp.clamp"(%a, %b, %a) : (i32, i64, i32) -> i32
  return
}

// -----

func.func @clamp_f64(%a: f64) {
  // expected-error @+1 {{'exp.clamp' op operand #0 must be integer, index, float, or vector thereof, but got 'f64'}}
  %0 = exp.clamp %a, %a, %a : f64
  return
}

// -----

// Unsigned predicates are rejected for floats.
func.func @cmp_ult_float(%a: f32) {
  // expected-error @+1 {{'exp.cmp' op expects an integer operand for unsigned predicate 'ult', got 'f32'}}
  %0 = exp.cmp ult, %a, %a : f32
  return
}

// -----

func.func @cmp_ule_float(%a: f16) {
  // expected-error @+1 {{'exp.cmp' op expects an integer operand for unsigned predicate 'ule', got 'f16'}}
  %0 = exp.cmp ule, %a, %a : f16
  return
}

// -----

func.func @cmp_ugt_float(%a: f32) {
  // expected-error @+1 {{'exp.cmp' op expects an integer operand for unsigned predicate 'ugt', got 'f32'}}
  %0 = exp.cmp ugt, %a, %a : f32
  return
}

// -----

func.func @cmp_uge_float_vector(%a: vector<4xf16>) {
  // expected-error @+1 {{'exp.cmp' op expects an integer operand for unsigned predicate 'uge', got 'vector<4xf16>'}}
  %0 = exp.cmp uge, %a, %a : vector<4xf16>
  return
}

// -----

func.func @cmp_mixed_types(%a: i32, %b: i64) {
  // expected-error @+1 {{'exp.cmp' op requires all operands to have the same type}}
  %0 = "exp.cmp"(%a, %b) <{predicate = 0 : i32}> : (i32, i64) -> i1
  return
}

// -----

func.func @cmp_result_shape(%a: vector<4xi32>) {
  // expected-error @+1 {{'exp.cmp' op failed to verify that result is i1 of the operands' shape}}
  %0 = "exp.cmp"(%a, %a) <{predicate = 0 : i32}> : (vector<4xi32>, vector<4xi32>) -> i1
  return
}

// -----

func.func @cmp_result_not_bool(%a: i32) {
  // expected-error @+1 {{'exp.cmp' op result #0 must be i1 or vector of i1, but got 'i32'}}
  %0 = "exp.cmp"(%a, %a) <{predicate = 0 : i32}> : (i32, i32) -> i32
  return
}

// -----

func.func @cmp_f64(%a: f64) {
  // expected-error @+1 {{custom op 'exp.cmp' 'lhs' must be integer, index, float, or vector thereof, but got 'f64'}}
  %0 = exp.cmp eq, %a, %a : f64
  return
}

// -----

func.func @cmp_unknown_predicate(%a: i32) {
  // expected-error @+1 {{custom op 'exp.cmp' expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge, ult, ule, ugt, uge]}}
  %0 = exp.cmp foo, %a, %a : i32
  return
}

// -----

func.func @cmp_predicate_out_of_range(%a: i32) {
  // expected-error @+1 {{invalid properties {predicate = 10 : i32} for op exp.cmp: Invalid attribute `predicate` in property conversion: 10 : i32}}
  %0 = "exp.cmp"(%a, %a) <{predicate = 10 : i32}> : (i32, i32) -> i1
  return
}

// -----

// A vector condition has the result's shape.
func.func @select_condition_shape(%c: vector<2xi1>, %a: vector<4xf32>) {
  // expected-error @+1 {{'exp.select' op expects an i1 condition or a vector of i1 with the result's shape, got 'vector<2xi1>' for result 'vector<4xf32>'}}
  %0 = exp.select %c, %a, %a : vector<2xi1>, vector<4xf32>
  return
}

// -----

func.func @select_condition_rank(%c: vector<2x2xi1>, %a: vector<4xf32>) {
  // expected-error @+1 {{'exp.select' op expects an i1 condition or a vector of i1 with the result's shape, got 'vector<2x2xi1>' for result 'vector<4xf32>'}}
  %0 = exp.select %c, %a, %a : vector<2x2xi1>, vector<4xf32>
  return
}

// -----

func.func @select_vector_condition_scalar_result(%c: vector<4xi1>, %a: f32) {
  // expected-error @+1 {{'exp.select' op expects an i1 condition or a vector of i1 with the result's shape, got 'vector<4xi1>' for result 'f32'}}
  %0 = exp.select %c, %a, %a : vector<4xi1>, f32
  return
}

// -----

func.func @select_condition_not_bool(%c: i32, %a: f32) {
  // expected-error @+1 {{'exp.select' op operand #0 must be i1 or vector of i1, but got 'i32'}}
  %0 = "exp.select"(%c, %a, %a) : (i32, f32, f32) -> f32
  return
}

// -----

func.func @select_mixed_types(%c: i1, %a: f32, %b: i32) {
  // expected-error @+1 {{'exp.select' op failed to verify that all of {true_value, false_value, result} have same type}}
  %0 = "exp.select"(%c, %a, %b) : (i1, f32, i32) -> f32
  return
}

// -----

func.func @convert_scalar_to_vector(%a: i32) {
  // expected-error @+1 {{'exp.convert' op expects input and result of the same shape, got 'i32' and 'vector<4xf32>'}}
  %0 = exp.convert %a : i32 to vector<4xf32>
  return
}

// -----

func.func @convert_vector_length(%a: vector<4xi32>) {
  // expected-error @+1 {{'exp.convert' op expects input and result of the same shape, got 'vector<4xi32>' and 'vector<2xf32>'}}
  %0 = exp.convert %a : vector<4xi32> to vector<2xf32>
  return
}

// -----

func.func @convert_vector_rank(%a: vector<4xf32>) {
  // expected-error @+1 {{'exp.convert' op expects input and result of the same shape, got 'vector<4xf32>' and 'vector<2x2xf32>'}}
  %0 = exp.convert %a : vector<4xf32> to vector<2x2xf32>
  return
}

// -----

func.func @convert_unsigned_float_to_float(%a: f32) {
  // expected-error @+1 {{'exp.convert' op expects an integer side for 'unsigned', got 'f32' to 'f16'}}
  %0 = exp.convert unsigned %a : f32 to f16
  return
}

// -----

func.func @convert_unsigned_float_to_float_vector(%a: vector<2xf16>) {
  // expected-error @+1 {{'exp.convert' op expects an integer side for 'unsigned', got 'vector<2xf16>' to 'vector<2xf32>'}}
  %0 = exp.convert unsigned %a : vector<2xf16> to vector<2xf32>
  return
}

// -----

func.func @convert_f64(%a: f64) {
  // expected-error @+1 {{'exp.convert' op operand #0 must be integer, index, float, or vector thereof, but got 'f64'}}
  %0 = exp.convert %a : f64 to f32
  return
}

// -----

func.func @bitcast_width(%a: f32) {
  // expected-error @+1 {{'exp.bitcast' op expects element types of the same bit width, got 'f32' and 'i16'}}
  %0 = exp.bitcast %a : f32 to i16
  return
}

// -----

func.func @bitcast_width_vector(%a: vector<4xf32>) {
  // expected-error @+1 {{'exp.bitcast' op expects element types of the same bit width, got 'vector<4xf32>' and 'vector<4xf16>'}}
  %0 = exp.bitcast %a : vector<4xf32> to vector<4xf16>
  return
}

// -----

// index has no fixed bit width.
func.func @bitcast_index(%a: index) {
  // expected-error @+1 {{'exp.bitcast' op expects element types of the same bit width, got 'index' and 'i64'}}
  %0 = exp.bitcast %a : index to i64
  return
}

// -----

func.func @bitcast_shape(%a: vector<2xf32>) {
  // expected-error @+1 {{'exp.bitcast' op expects input and result of the same shape, got 'vector<2xf32>' and 'i64'}}
  %0 = exp.bitcast %a : vector<2xf32> to i64
  return
}

// -----

func.func @pack_f16x2_mixed_types(%a: f32, %b: f16) {
  // expected-error @+1 {{'exp.pack_f16x2' op failed to verify that all of {lo, hi} have same type}}
  %0 = "exp.pack_f16x2"(%a, %b) : (f32, f16) -> i32
  return
}

// -----

func.func @pack_f16x2_vector(%a: vector<2xf32>) {
  // expected-error @+1 {{'exp.pack_f16x2' op operand #0 must be f16 or f32, but got 'vector<2xf32>'}}
  %0 = exp.pack_f16x2 %a, %a : vector<2xf32>
  return
}

// -----

func.func @pack_f16x2_result(%a: f32) {
  // expected-error @+1 {{'exp.pack_f16x2' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = "exp.pack_f16x2"(%a, %a) : (f32, f32) -> i64
  return
}

// -----

func.func @unpack_f16x2_index(%a: i32) {
  // expected-error @+1 {{'exp.unpack_f16x2' op attribute 'index' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 1}}
  %0 = exp.unpack_f16x2 %a[2] : f32
  return
}

// -----

func.func @unpack_f16x2_result(%a: i32) {
  // expected-error @+1 {{'exp.unpack_f16x2' op result #0 must be f16 or f32, but got 'i32'}}
  %0 = exp.unpack_f16x2 %a[0] : i32
  return
}

// -----

func.func @pack_i8x4_i64(%a: i64) {
  // expected-error @+1 {{'exp.pack_i8x4' op operand #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = "exp.pack_i8x4"(%a, %a, %a, %a) : (i64, i64, i64, i64) -> i32
  return
}

// -----

func.func @unpack_i8x4_index_high(%a: i32) {
  // expected-error @+1 {{'exp.unpack_i8x4' op attribute 'index' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 3}}
  %0 = exp.unpack_i8x4 %a[4]
  return
}

// -----

func.func @unpack_i8x4_index_negative(%a: i32) {
  // expected-error @+1 {{'exp.unpack_i8x4' op attribute 'index' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 3}}
  %0 = exp.unpack_i8x4 unsigned %a[-1]
  return
}

// -----

func.func @unpack_i8x4_result(%a: i32) {
  // expected-error @+1 {{'exp.unpack_i8x4' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = "exp.unpack_i8x4"(%a) <{index = 1 : i32}> : (i32) -> i64
  return
}

// -----

func.func @dot4_i8_vector(%a: vector<4xi8>, %b: i32) {
  // expected-error @+1 {{'exp.dot4_i8' op operand #0 must be 32-bit signless integer, but got 'vector<4xi8>'}}
  %0 = "exp.dot4_i8"(%a, %a, %b) : (vector<4xi8>, vector<4xi8>, i32) -> i32
  return
}

// -----

func.func @dot4_i8_result(%a: i32) {
  // expected-error @+1 {{'exp.dot4_i8' op result #0 must be 32-bit signless integer, but got 'f32'}}
  %0 = "exp.dot4_i8"(%a, %a, %a) : (i32, i32, i32) -> f32
  return
}

// -----

func.func @div_by_const_zero(%a: i32) {
  // expected-error @+1 {{'exp.div_by_const' op attribute 'divisor' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = exp.div_by_const %a, 0 : i32
  return
}

// -----

func.func @div_by_const_negative(%a: i32) {
  // expected-error @+1 {{'exp.div_by_const' op attribute 'divisor' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = exp.div_by_const %a, -4 : i32
  return
}

// -----

func.func @rem_by_const_zero(%a: i64) {
  // expected-error @+1 {{'exp.rem_by_const' op attribute 'divisor' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = exp.rem_by_const %a, 0 : i64
  return
}

// -----

func.func @div_by_const_i16(%a: i16) {
  // expected-error @+1 {{'exp.div_by_const' op operand #0 must be 32-bit signless integer or 64-bit signless integer or index, but got 'i16'}}
  %0 = exp.div_by_const %a, 3 : i16
  return
}

// -----

func.func @rem_by_const_vector(%a: vector<4xi32>) {
  // expected-error @+1 {{'exp.rem_by_const' op operand #0 must be 32-bit signless integer or 64-bit signless integer or index, but got 'vector<4xi32>'}}
  %0 = exp.rem_by_const %a, 3 : vector<4xi32>
  return
}

// -----

func.func @div_by_const_result_type(%a: i32) {
  // expected-error @+1 {{'exp.div_by_const' op failed to verify that all of {input, result} have same type}}
  %0 = "exp.div_by_const"(%a) <{divisor = 3 : i64}> : (i32) -> i64
  return
}

// -----

func.func @div_by_const_missing_divisor(%a: i32) {
  // expected-error @+1 {{'exp.div_by_const' op requires attribute 'divisor'}}
  %0 = "exp.div_by_const"(%a) : (i32) -> i32
  return
}

// -----

func.func @lane_id_i64() {
  // expected-error @+1 {{'exp.lane_id' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = exp.lane_id : i64
  return
}

// -----

func.func @subgroup_size_index() {
  // expected-error @+1 {{custom op 'exp.subgroup_size' invalid kind of type specified: expected builtin.integer, but found 'index'}}
  %0 = exp.subgroup_size : index
  return
}

// -----

func.func @subgroup_size_i16() {
  // expected-error @+1 {{'exp.subgroup_size' op result #0 must be 32-bit signless integer, but got 'i16'}}
  %0 = exp.subgroup_size : i16
  return
}

// -----

func.func @subgroup_reduce_vector(%a: vector<4xf32>) {
  // expected-error @+1 {{'exp.subgroup_reduce' op operand #0 must be i32, f16 or f32, but got 'vector<4xf32>'}}
  %0 = exp.subgroup_reduce sum %a : vector<4xf32>
  return
}

// -----

func.func @subgroup_reduce_i64(%a: i64) {
  // expected-error @+1 {{'exp.subgroup_reduce' op operand #0 must be i32, f16 or f32, but got 'i64'}}
  %0 = exp.subgroup_reduce max %a : i64
  return
}

// -----

func.func @subgroup_reduce_result_type(%a: f32) {
  // expected-error @+1 {{'exp.subgroup_reduce' op failed to verify that all of {value, result} have same type}}
  %0 = "exp.subgroup_reduce"(%a) <{kind = 0 : i32}> : (f32) -> i32
  return
}

// -----

func.func @subgroup_reduce_unknown_kind(%a: f32) {
  // expected-error @+1 {{custom op 'exp.subgroup_reduce' expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, min]}}
  %0 = exp.subgroup_reduce prod %a : f32
  return
}

// -----

func.func @shuffle_xor_mask_zero(%a: f32) {
  // expected-error @+1 {{'exp.shuffle_xor' op attribute 'mask' failed to satisfy constraint: 32-bit signless integer attribute whose value is positive whose maximum value is 127}}
  %0 = exp.shuffle_xor %a, 0 : f32
  return
}

// -----

func.func @shuffle_xor_mask_128(%a: f32) {
  // expected-error @+1 {{'exp.shuffle_xor' op attribute 'mask' failed to satisfy constraint: 32-bit signless integer attribute whose value is positive whose maximum value is 127}}
  %0 = exp.shuffle_xor %a, 128 : f32
  return
}

// -----

func.func @shuffle_xor_vector(%a: vector<2xf32>) {
  // expected-error @+1 {{'exp.shuffle_xor' op operand #0 must be i32, f16 or f32, but got 'vector<2xf32>'}}
  %0 = exp.shuffle_xor %a, 1 : vector<2xf32>
  return
}

// -----

func.func @shuffle_xor_result_type(%a: f32) {
  // expected-error @+1 {{'exp.shuffle_xor' op failed to verify that all of {value, result} have same type}}
  %0 = "exp.shuffle_xor"(%a) <{mask = 1 : i32}> : (f32) -> f16
  return
}

// -----

func.func @broadcast_first_i8(%a: i8) {
  // expected-error @+1 {{'exp.broadcast_first' op operand #0 must be i32, f16 or f32, but got 'i8'}}
  %0 = exp.broadcast_first %a : i8
  return
}

// -----

func.func @broadcast_first_result_type(%a: f32) {
  // expected-error @+1 {{'exp.broadcast_first' op failed to verify that all of {value, result} have same type}}
  %0 = "exp.broadcast_first"(%a) : (f32) -> i32
  return
}

// -----

// Lanes hold fixed-length vectors only.
func.func @scalable_vector(%a: vector<[4]xf32>) -> vector<[4]xf32> {
  // expected-error @+1 {{'exp.add' op operand #0 must be integer, index, float, or vector thereof}}
  %0 = exp.add %a, %a : vector<[4]xf32>
  return %0 : vector<[4]xf32>
}

// -----

func.func @vector_dot4_i8_lanes(%a: vector<32xi8>, %acc: vector<4xi32>) {
  // expected-error @+1 {{'exp.vector_dot4_i8' op expects four bytes per accumulator lane, got 'vector<32xi8>' for 'vector<4xi32>'}}
  %0 = exp.vector_dot4_i8 %a, %a, %acc : vector<32xi8>, vector<4xi32>
  return
}

// -----

func.func @vector_dot4_i8_types(%a: vector<32xi8>, %b: vector<16xi8>,
                                %acc: vector<8xi32>) {
  // expected-error @+1 {{'exp.vector_dot4_i8' op failed to verify that all of {a, b} have same type}}
  %0 = "exp.vector_dot4_i8"(%a, %b, %acc)
      : (vector<32xi8>, vector<16xi8>, vector<8xi32>) -> vector<8xi32>
  return
}
