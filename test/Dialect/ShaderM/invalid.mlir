// RUN: hesper-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of ShaderMOps.cpp and ShaderMTypes.cpp, plus the
// ODS constraints the ops rely on.

//===----------------------------------------------------------------------===//
// shaderm.kernel
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'shaderm.kernel' op expects 3 workgroup sizes (x, y, z), got 2}}
shaderm.kernel @two_sizes() workgroup_size(64, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects 3 workgroup sizes (x, y, z), got 4}}
shaderm.kernel @four_sizes() workgroup_size(4, 4, 4, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects positive workgroup sizes, got 0}}
shaderm.kernel @zero_size() workgroup_size(64, 0, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects positive workgroup sizes, got -1}}
shaderm.kernel @negative_size() workgroup_size(-1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects at most 1024 lanes per workgroup, got 2048}}
shaderm.kernel @too_many_lanes() workgroup_size(32, 32, 2) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects at most 1024 lanes per workgroup, got 1025}}
shaderm.kernel @one_lane_too_many() workgroup_size(1025, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{integer value too large}}
shaderm.kernel @size_overflow() workgroup_size(3000000000, 1, 1) {
  shaderm.return
}

// -----

// The custom parser rejects results in the signature.
// expected-error @+1 {{custom op 'shaderm.kernel' expects a kernel without results, got 1}}
shaderm.kernel @with_result(%a: i32) -> i32 workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// The verifier rejects them in the generic form.
// expected-error @+1 {{'shaderm.kernel' op expects a kernel without results, got 2}}
"shaderm.kernel"() <{function_type = () -> (i32, f32), sym_name = "with_results",
                     workgroup_size = array<i32: 1, 1, 1>}> ({
  "shaderm.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'shaderm.kernel' op expects binding #1 to be a !shaderm.buffer, i32 or f32, got 'tensor<4xf32>'}}
shaderm.kernel @tensor_binding(%a: !shaderm.buffer<4xf32>, %t: tensor<4xf32>)
    workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects binding #0 to be a !shaderm.buffer, i32 or f32, got 'i64'}}
shaderm.kernel @i64_binding(%n: i64) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects binding #0 to be a !shaderm.buffer, i32 or f32, got 'f16'}}
shaderm.kernel @f16_binding(%h: f16) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects binding #2 to be a !shaderm.buffer, i32 or f32, got 'index'}}
shaderm.kernel @index_binding(%a: i32, %b: f32, %i: index) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects binding #0 to be a !shaderm.buffer, i32 or f32, got '!shaderm.shared<4xf32>'}}
shaderm.kernel @shared_binding(%s: !shaderm.shared<4xf32>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects a power-of-two subgroup_size, got 48}}
shaderm.kernel @subgroup_48() workgroup_size(96, 1, 1)
    attributes {subgroup_size = 48 : i32} {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects a power-of-two subgroup_size, got 0}}
shaderm.kernel @subgroup_0() workgroup_size(32, 1, 1)
    attributes {subgroup_size = 0 : i32} {
  shaderm.return
}

// -----

// KernelOp::verifyRegions' block-argument checks are preceded by the same
// checks of FunctionOpInterface, whose diagnostics are the ones seen.
// expected-error @+1 {{'shaderm.kernel' op entry block must have 1 arguments to match function signature}}
"shaderm.kernel"() <{function_type = (i32) -> (), sym_name = "missing_arg",
                     workgroup_size = array<i32: 1, 1, 1>}> ({
  "shaderm.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'shaderm.kernel' op type of entry block argument #0('f32') must match the type of the corresponding argument in function signature('i32')}}
"shaderm.kernel"() <{function_type = (i32) -> (), sym_name = "wrong_arg",
                     workgroup_size = array<i32: 1, 1, 1>}> ({
^bb0(%a: f32):
  "shaderm.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{expected '{' to begin a region}}
shaderm.kernel @no_body() workgroup_size(1, 1, 1)

// -----

func.func @return_outside_kernel() {
  // expected-error @+1 {{'shaderm.return' op expects parent op 'shaderm.kernel'}}
  shaderm.return
}

//===----------------------------------------------------------------------===//
// Ops outside a kernel
//===----------------------------------------------------------------------===//

// -----

func.func @global_id_outside() -> index {
  // expected-error @+1 {{'shaderm.global_id' op expects to be nested in a 'shaderm.kernel'}}
  %i = shaderm.global_id x
  return %i : index
}

// -----

func.func @local_id_outside() -> index {
  // expected-error @+1 {{'shaderm.local_id' op expects to be nested in a 'shaderm.kernel'}}
  %i = shaderm.local_id y
  return %i : index
}

// -----

func.func @workgroup_id_outside() -> index {
  // expected-error @+1 {{'shaderm.workgroup_id' op expects to be nested in a 'shaderm.kernel'}}
  %i = shaderm.workgroup_id z
  return %i : index
}

// -----

func.func @num_workgroups_outside() -> index {
  // expected-error @+1 {{'shaderm.num_workgroups' op expects to be nested in a 'shaderm.kernel'}}
  %i = shaderm.num_workgroups x
  return %i : index
}

// -----

func.func @subgroup_id_outside() -> index {
  // expected-error @+1 {{'shaderm.subgroup_id' op expects to be nested in a 'shaderm.kernel'}}
  %i = shaderm.subgroup_id
  return %i : index
}

// -----

func.func @shared_alloc_outside() {
  // expected-error @+1 {{'shaderm.shared_alloc' op expects to be nested in a 'shaderm.kernel'}}
  %s = shaderm.shared_alloc : !shaderm.shared<64xf32>
  return
}

// -----

func.func @barrier_outside() {
  // expected-error @+1 {{'shaderm.barrier' op expects to be nested in a 'shaderm.kernel'}}
  shaderm.barrier
  return
}

// -----

func.func @subgroup_barrier_outside() {
  // expected-error @+1 {{'shaderm.subgroup_barrier' op expects to be nested in a 'shaderm.kernel'}}
  shaderm.subgroup_barrier
  return
}

// -----

func.func @load_outside(%b: !shaderm.buffer<4xf32>, %i: index) -> f32 {
  // expected-error @+1 {{'shaderm.load' op expects to be nested in a 'shaderm.kernel'}}
  %v = shaderm.load %b[%i] : !shaderm.buffer<4xf32> -> f32
  return %v : f32
}

// -----

func.func @store_outside(%b: !shaderm.buffer<4xf32>, %i: index, %v: f32) {
  // expected-error @+1 {{'shaderm.store' op expects to be nested in a 'shaderm.kernel'}}
  shaderm.store %v, %b[%i] : f32, !shaderm.buffer<4xf32>
  return
}

// -----

func.func @atomic_outside(%b: !shaderm.buffer<4xi32>, %i: index, %v: i32) -> i32 {
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects to be nested in a 'shaderm.kernel'}}
  %o = shaderm.atomic_rmw add %v, %b[%i] : i32, !shaderm.buffer<4xi32>
  return %o : i32
}

//===----------------------------------------------------------------------===//
// Builtin ids
//===----------------------------------------------------------------------===//

// -----

shaderm.kernel @bad_dim() workgroup_size(1, 1, 1) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'dim' [x, y, z]}}
  %i = shaderm.global_id w
  shaderm.return
}

//===----------------------------------------------------------------------===//
// shaderm.load / shaderm.store
//===----------------------------------------------------------------------===//

// -----

// expected-note @+1 {{prior use here}}
shaderm.kernel @index_i32_custom(%b: !shaderm.buffer<4xf32>, %i: i32)
    workgroup_size(1, 1, 1) {
  // expected-error @+1 {{use of value '%i' expects different type than prior uses: 'index' vs 'i32'}}
  %v = shaderm.load %b[%i] : !shaderm.buffer<4xf32> -> f32
  shaderm.return
}

// -----

shaderm.kernel @load_index_i32(%b: !shaderm.buffer<4xf32>, %i: i32)
    workgroup_size(1, 1, 1) {
  // expected-error @+1 {{'shaderm.load' op operand #1 must be index, but got 'i32'}}
  %v = "shaderm.load"(%b, %i) : (!shaderm.buffer<4xf32>, i32) -> f32
  shaderm.return
}

// -----

shaderm.kernel @store_index_i32(%b: !shaderm.buffer<4xf32>, %i: i32, %v: f32)
    workgroup_size(1, 1, 1) {
  // expected-error @+1 {{'shaderm.store' op operand #2 must be index, but got 'i32'}}
  "shaderm.store"(%v, %b, %i) : (f32, !shaderm.buffer<4xf32>, i32) -> ()
  shaderm.return
}

// -----

shaderm.kernel @atomic_index_i32(%b: !shaderm.buffer<4xi32>, %i: i32)
    workgroup_size(1, 1, 1) {
  // expected-error @+1 {{'shaderm.atomic_rmw' op operand #2 must be index, but got 'i32'}}
  %o = "shaderm.atomic_rmw"(%i, %b, %i) <{kind = 0 : i32}>
      : (i32, !shaderm.buffer<4xi32>, i32) -> i32
  shaderm.return
}

// -----

shaderm.kernel @load_not_memory(%n: i32) workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.load' op operand #0 must be buffer or shared memory, but got 'i32'}}
  %v = "shaderm.load"(%n, %c0) : (i32, index) -> i32
  shaderm.return
}

// -----

shaderm.kernel @load_wrong_type(%b: !shaderm.buffer<4xf32, read_only>)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.load' op expects the value type to be the memory's element type 'f32' or a vector of it, got 'f16'}}
  %v = shaderm.load %b[%c0] : !shaderm.buffer<4xf32, read_only> -> f16
  shaderm.return
}

// -----

shaderm.kernel @load_wrong_vector(%b: !shaderm.buffer<16xf32>)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.load' op expects the value type to be the memory's element type 'f32' or a vector of it, got 'vector<4xi32>'}}
  %v = shaderm.load %b[%c0] : !shaderm.buffer<16xf32> -> vector<4xi32>
  shaderm.return
}

// -----

shaderm.kernel @load_shared_wrong_type() workgroup_size(1, 1, 1) {
  %s = shaderm.shared_alloc : !shaderm.shared<16xi32>
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.load' op expects the value type to be the memory's element type 'i32' or a vector of it, got 'f32'}}
  %v = shaderm.load %s[%c0] : !shaderm.shared<16xi32> -> f32
  shaderm.return
}

// -----

shaderm.kernel @load_rank2_vector(%b: !shaderm.buffer<16xf32>)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.load' op result #0 must be signless integer or 16-bit float or 32-bit float or vector of signless integer or 16-bit float or 32-bit float values of ranks 1, but got 'vector<2x2xf32>'}}
  %v = shaderm.load %b[%c0] : !shaderm.buffer<16xf32> -> vector<2x2xf32>
  shaderm.return
}

// -----

shaderm.kernel @store_read_only(%b: !shaderm.buffer<4xf32, read_only>, %v: f32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.store' op expects a writable buffer, got read_only '!shaderm.buffer<4xf32, read_only>'}}
  shaderm.store %v, %b[%c0] : f32, !shaderm.buffer<4xf32, read_only>
  shaderm.return
}

// -----

shaderm.kernel @store_wrong_type(%b: !shaderm.buffer<4xf32>, %v: i32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.store' op expects the value type to be the memory's element type 'f32' or a vector of it, got 'i32'}}
  shaderm.store %v, %b[%c0] : i32, !shaderm.buffer<4xf32>
  shaderm.return
}

// -----

shaderm.kernel @store_shared_wrong_vector() workgroup_size(1, 1, 1) {
  %s = shaderm.shared_alloc : !shaderm.shared<64xf16>
  %c0 = exp.constant 0 : index
  %v = exp.constant dense<1.0> : vector<4xf32>
  // expected-error @+1 {{'shaderm.store' op expects the value type to be the memory's element type 'f16' or a vector of it, got 'vector<4xf32>'}}
  shaderm.store %v, %s[%c0] : vector<4xf32>, !shaderm.shared<64xf16>
  shaderm.return
}

//===----------------------------------------------------------------------===//
// shaderm.atomic_rmw
//===----------------------------------------------------------------------===//

// -----

shaderm.kernel @atomic_read_only(%b: !shaderm.buffer<4xi32, read_only>, %v: i32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects a writable buffer, got read_only '!shaderm.buffer<4xi32, read_only>'}}
  %o = shaderm.atomic_rmw add %v, %b[%c0] : i32, !shaderm.buffer<4xi32, read_only>
  shaderm.return
}

// -----

shaderm.kernel @atomic_wrong_element(%b: !shaderm.buffer<4xi64>, %v: i32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects value and result of the memory's element type 'i64', got 'i32' and 'i32'}}
  %o = shaderm.atomic_rmw add %v, %b[%c0] : i32, !shaderm.buffer<4xi64>
  shaderm.return
}

// -----

shaderm.kernel @atomic_f32_on_i32(%b: !shaderm.buffer<4xi32>, %v: f32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects value and result of the memory's element type 'i32', got 'f32' and 'f32'}}
  %o = shaderm.atomic_rmw add %v, %b[%c0] : f32, !shaderm.buffer<4xi32>
  shaderm.return
}

// -----

shaderm.kernel @atomic_f16() workgroup_size(1, 1, 1) {
  %s = shaderm.shared_alloc : !shaderm.shared<4xf16>
  %c0 = exp.constant 0 : index
  %v = exp.constant 1.0 : f16
  // expected-error @+1 {{'shaderm.atomic_rmw' op operand #0 must be 32-bit signless integer or 64-bit signless integer or 32-bit float, but got 'f16'}}
  %o = shaderm.atomic_rmw add %v, %s[%c0] : f16, !shaderm.shared<4xf16>
  shaderm.return
}

// -----

shaderm.kernel @atomic_and_f32(%b: !shaderm.buffer<4xf32>, %v: f32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects an integer element for atomic 'and', got 'f32'}}
  %o = shaderm.atomic_rmw and %v, %b[%c0] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}

// -----

shaderm.kernel @atomic_or_f32(%b: !shaderm.buffer<4xf32>, %v: f32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects an integer element for atomic 'or', got 'f32'}}
  %o = shaderm.atomic_rmw or %v, %b[%c0] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}

// -----

shaderm.kernel @atomic_xor_f32_shared(%v: f32) workgroup_size(1, 1, 1) {
  %s = shaderm.shared_alloc : !shaderm.shared<4xf32>
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects an integer element for atomic 'xor', got 'f32'}}
  %o = shaderm.atomic_rmw xor %v, %s[%c0] : f32, !shaderm.shared<4xf32>
  shaderm.return
}

// -----

shaderm.kernel @atomic_umax_f32(%b: !shaderm.buffer<4xf32>, %v: f32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects an integer element for atomic 'umax', got 'f32'}}
  %o = shaderm.atomic_rmw umax %v, %b[%c0] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}

// -----

shaderm.kernel @atomic_umin_f32(%b: !shaderm.buffer<4xf32>, %v: f32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{'shaderm.atomic_rmw' op expects an integer element for atomic 'umin', got 'f32'}}
  %o = shaderm.atomic_rmw umin %v, %b[%c0] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}

// -----

shaderm.kernel @atomic_bad_kind(%b: !shaderm.buffer<4xi32>, %v: i32)
    workgroup_size(1, 1, 1) {
  %c0 = exp.constant 0 : index
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [add, max, min, umax, umin, and, or, xor, exchange]}}
  %o = shaderm.atomic_rmw nand %v, %b[%c0] : i32, !shaderm.buffer<4xi32>
  shaderm.return
}

//===----------------------------------------------------------------------===//
// !shaderm.buffer
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{expects a buffer element of type i8, i16, i32, i64, f16 or f32, got 'bf16'}}
shaderm.kernel @buffer_bf16(%b: !shaderm.buffer<4xbf16>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{expects a buffer element of type i8, i16, i32, i64, f16 or f32, got 'i1'}}
shaderm.kernel @buffer_i1(%b: !shaderm.buffer<4xi1>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{expects a buffer element of type i8, i16, i32, i64, f16 or f32, got 'f64'}}
shaderm.kernel @buffer_f64(%b: !shaderm.buffer<?xf64, read_only>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{expects a buffer element of type i8, i16, i32, i64, f16 or f32, got 'vector<4xf32>'}}
shaderm.kernel @buffer_vector(%b: !shaderm.buffer<4xvector<4xf32>>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{expects a positive buffer length, got 0}}
shaderm.kernel @buffer_zero(%b: !shaderm.buffer<0xf32>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// A negative length is not a dimension: the dimension list does not parse.
// expected-error @+1 {{expected non-function type}}
shaderm.kernel @buffer_negative(%b: !shaderm.buffer<-4xf32>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{expected 'read_only' or 'read_write', got 'write_only'}}
shaderm.kernel @buffer_access(%b: !shaderm.buffer<4xf32, write_only>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{expected one length, got 2}}
shaderm.kernel @buffer_2d(%b: !shaderm.buffer<4x4xf32>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// -----

// expected-error @+1 {{expected one length, got 0}}
shaderm.kernel @buffer_0d(%b: !shaderm.buffer<f32>) workgroup_size(1, 1, 1) {
  shaderm.return
}

//===----------------------------------------------------------------------===//
// !shaderm.shared
//===----------------------------------------------------------------------===//

// -----

shaderm.kernel @shared_dynamic() workgroup_size(1, 1, 1) {
  // expected-error @+1 {{expected static shape}}
  %s = shaderm.shared_alloc : !shaderm.shared<?xf32>
  shaderm.return
}

// -----

shaderm.kernel @shared_zero() workgroup_size(1, 1, 1) {
  // expected-error @+1 {{expects a positive shared array length, got 0}}
  %s = shaderm.shared_alloc : !shaderm.shared<0xf32>
  shaderm.return
}

// -----

shaderm.kernel @shared_bf16() workgroup_size(1, 1, 1) {
  // expected-error @+1 {{expects a shared element of type i8, i16, i32, i64, f16 or f32, got 'bf16'}}
  %s = shaderm.shared_alloc : !shaderm.shared<16xbf16>
  shaderm.return
}

// -----

shaderm.kernel @shared_2d() workgroup_size(1, 1, 1) {
  // expected-error @+1 {{expected one length, got 2}}
  %s = shaderm.shared_alloc : !shaderm.shared<16x16xf32>
  shaderm.return
}

// -----

shaderm.kernel @shared_alloc_buffer_type() workgroup_size(1, 1, 1) {
  // expected-error @+1 {{'shaderm.shared_alloc' op result #0 must be}}
  %s = "shaderm.shared_alloc"() : () -> !shaderm.buffer<16xf32>
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects a positive min_workgroups_per_sm, got 0}}
shaderm.kernel @zero_min_workgroups() workgroup_size(32, 1, 1) attributes {min_workgroups_per_sm = 0 : i32} {
  shaderm.return
}

// -----

// expected-error @+1 {{'shaderm.kernel' op expects a power-of-two subgroup_size, got -32}}
shaderm.kernel @negative_subgroup() workgroup_size(32, 1, 1) attributes {subgroup_size = -32 : i32} {
  shaderm.return
}

//===----------------------------------------------------------------------===//
// Matrix tiles
//===----------------------------------------------------------------------===//

// -----

shaderm.kernel @tile_shape(%b: !shaderm.buffer<1024xf16, read_only>) workgroup_size(32, 1, 1) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'shaderm.matrix_load' op expects 16 x 16 tiles, got '!gpu.mma_matrix<16x8xf16, "AOp">'}}
  %a = shaderm.matrix_load %b[%c0] {lead = 64} : !shaderm.buffer<1024xf16, read_only> -> !gpu.mma_matrix<16x8xf16, "AOp">
  shaderm.return
}

// -----

shaderm.kernel @tile_element(%b: !shaderm.buffer<1024xf32, read_only>) workgroup_size(32, 1, 1) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'shaderm.matrix_load' op expects a tile of the memory's element type 'f32', got '!gpu.mma_matrix<16x16xf16, "AOp">'}}
  %a = shaderm.matrix_load %b[%c0] {lead = 64} : !shaderm.buffer<1024xf32, read_only> -> !gpu.mma_matrix<16x16xf16, "AOp">
  shaderm.return
}

// -----

shaderm.kernel @tile_lead(%b: !shaderm.buffer<1024xf16, read_only>) workgroup_size(32, 1, 1) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'shaderm.matrix_load' op expects a lead of at least 16 elements and a multiple of 16 bytes, got 20}}
  %a = shaderm.matrix_load %b[%c0] {lead = 20} : !shaderm.buffer<1024xf16, read_only> -> !gpu.mma_matrix<16x16xf16, "AOp">
  shaderm.return
}

// -----

shaderm.kernel @tile_layout(%b: !shaderm.buffer<1024xf16, read_only>) workgroup_size(32, 1, 1) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %acc = shaderm.matrix_fill %z : f32 -> !gpu.mma_matrix<16x16xf32, "COp">
  %a = shaderm.matrix_load %b[%c0] {lead = 64, transpose} : !shaderm.buffer<1024xf16, read_only> -> !gpu.mma_matrix<16x16xf16, "AOp">
  %w = shaderm.matrix_load %b[%c0] {lead = 64} : !shaderm.buffer<1024xf16, read_only> -> !gpu.mma_matrix<16x16xf16, "BOp">
  // expected-error @+1 {{'shaderm.matrix_mma' op expects a_transpose to match the matrix_load of a}}
  %d = shaderm.matrix_mma %a, %w, %acc : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
  shaderm.return
}

// -----

shaderm.kernel @tile_kinds(%b: !shaderm.buffer<1024xf16, read_only>) workgroup_size(32, 1, 1) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %acc = shaderm.matrix_fill %z : f32 -> !gpu.mma_matrix<16x16xf32, "COp">
  %a = shaderm.matrix_load %b[%c0] {lead = 64} : !shaderm.buffer<1024xf16, read_only> -> !gpu.mma_matrix<16x16xf16, "AOp">
  // expected-error @+1 {{'shaderm.matrix_mma' op expects b of kind "BOp", got '!gpu.mma_matrix<16x16xf16, "AOp">'}}
  %d = shaderm.matrix_mma %a, %a, %acc : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "AOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
  shaderm.return
}

// -----

shaderm.kernel @tile_sums(%b: !shaderm.buffer<1024xf16, read_only>) workgroup_size(32, 1, 1) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i32
  %acc = shaderm.matrix_fill %z : i32 -> !gpu.mma_matrix<16x16xi32, "COp">
  %a = shaderm.matrix_load %b[%c0] {lead = 64} : !shaderm.buffer<1024xf16, read_only> -> !gpu.mma_matrix<16x16xf16, "AOp">
  %w = shaderm.matrix_load %b[%c0] {lead = 64} : !shaderm.buffer<1024xf16, read_only> -> !gpu.mma_matrix<16x16xf16, "BOp">
  // expected-error @+1 {{'shaderm.matrix_mma' op expects f16 tiles accumulated in f32 or f16, or i8 tiles in i32}}
  %d = shaderm.matrix_mma %a, %w, %acc : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xi32, "COp">
  shaderm.return
}

// -----

shaderm.kernel @tile_fill() workgroup_size(32, 1, 1) {
  %z = arith.constant 0.0 : f16
  // expected-error @+1 {{'shaderm.matrix_fill' op expects a value of the tile's element type, got 'f16'}}
  %acc = shaderm.matrix_fill %z : f16 -> !gpu.mma_matrix<16x16xf32, "COp">
  shaderm.return
}

// -----

shaderm.kernel @tile_store(%b: !shaderm.buffer<4096xf32, read_only>) workgroup_size(32, 1, 1) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %acc = shaderm.matrix_fill %z : f32 -> !gpu.mma_matrix<16x16xf32, "COp">
  // expected-error @+1 {{'shaderm.matrix_store' op expects a writable buffer, got read_only '!shaderm.buffer<4096xf32, read_only>'}}
  shaderm.matrix_store %acc, %b[%c0] {lead = 64} : !gpu.mma_matrix<16x16xf32, "COp">, !shaderm.buffer<4096xf32, read_only>
  shaderm.return
}

// -----

func.func @tile_outside(%m: !shaderm.shared<1024xf16>, %i: index) {
  // expected-error @+1 {{'shaderm.matrix_load' op expects to be nested in a 'shaderm.kernel'}}
  %t = shaderm.matrix_load %m[%i] {lead = 64} : !shaderm.shared<1024xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
  return
}
