// RUN: hesper-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of CircuitOps.cpp, plus the ODS constraints the
// ops rely on.

//===----------------------------------------------------------------------===//
// circuit.graph / circuit.output
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'circuit.graph' op expects argument #1 to be a statically shaped tensor, got 'tensor<?xf32>'}}
circuit.graph @dynamic_argument(%a: tensor<4xf32>, %b: tensor<?xf32>) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0 to be a statically shaped tensor, got 'f32'}}
circuit.graph @scalar_argument(%a: f32) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0 to be a statically shaped tensor, got 'tensor<*xf32>'}}
circuit.graph @unranked_argument(%a: tensor<*xf32>) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0's circuit.role to be one of input, weight, tokens, position, last_row, rope_freqs, rope_freqs_swa, cache, targets, got "kv"}}
circuit.graph @unknown_role(%a: tensor<4xf32> {circuit.role = "kv"}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0's circuit.role to be one of}}
circuit.graph @role_not_a_string(%a: tensor<4xf32> {circuit.role = 3 : i32}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects circuit.tensor and circuit.rows only on a weight argument, got them on argument #1}}
circuit.graph @tensor_on_cache(%w: tensor<4xf32> {circuit.role = "weight", circuit.tensor = "w"},
                               %c: tensor<4xf32> {circuit.role = "cache", circuit.tensor = "c"}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0's circuit.tensor to be a string, got 7 : i32}}
circuit.graph @tensor_not_a_string(%w: tensor<4xf32> {circuit.role = "weight", circuit.tensor = 7 : i32}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0's circuit.rows to be array<i64: first, count> with count equal to the argument's rows, got array<i64: 8, 3>}}
circuit.graph @rows_mismatch(%w: tensor<4x16xf32> {circuit.role = "weight", circuit.tensor = "e", circuit.rows = array<i64: 8, 3>}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects circuit.bound only on a tokens or targets argument, got it on argument #0}}
circuit.graph @bound_on_input(%t: tensor<4xi32> {circuit.bound = 8 : i64}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0's circuit.bound to be a positive integer on an i32 tensor, got 0 : i64}}
circuit.graph @bound_zero(%t: tensor<4xi32> {circuit.role = "tokens", circuit.bound = 0 : i64}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0's circuit.bound to be a positive integer on an i32 tensor, got 8 : i64}}
circuit.graph @bound_on_floats(%t: tensor<4xf32> {circuit.role = "targets", circuit.bound = 8 : i64}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0's circuit.rows to be array<i64: first, count>}}
circuit.graph @rows_negative(%w: tensor<4x16xf32> {circuit.role = "weight", circuit.tensor = "e", circuit.rows = array<i64: -1, 4>}) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects argument #0 to be a statically shaped tensor, got 'memref<4xf32>'}}
circuit.graph @memref_argument(%a: memref<4xf32>) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects result #1 to be a statically shaped tensor, got 'tensor<4x?xf32>'}}
circuit.graph @dynamic_result() -> (tensor<4xf32>, tensor<4x?xf32>) {
  %z = circuit.zeros : tensor<4xf32>
  circuit.output %z, %z : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'circuit.graph' op expects the last dimension of argument 'tensor<4x48x!circuit.q8_0>' to be a multiple of the block size 32}}
circuit.graph @q8_0_argument_shape(%w: tensor<4x48x!circuit.q8_0>) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects the last dimension of argument 'tensor<!circuit.q4_k>' to be a multiple of the block size 256}}
circuit.graph @q4_k_rank0_argument(%w: tensor<!circuit.q4_k>) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects the last dimension of result 'tensor<64x!circuit.i2_s>' to be a multiple of the block size 128}}
circuit.graph @i2_s_result_shape() -> tensor<64x!circuit.i2_s> {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects the last dimension of argument 'tensor<2x48x!circuit.q4_0>' to be a multiple of the block size 32}}
circuit.graph @q4_0_argument_shape(%w: tensor<2x48x!circuit.q4_0>) {
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects the last dimension of argument 'tensor<2x128x!circuit.q5_k>' to be a multiple of the block size 256}}
circuit.graph @q5_k_argument_shape(%w: tensor<2x128x!circuit.q5_k>) {
  circuit.output
}

// -----

// GraphOp::verify's block-argument check is preceded by the same check of
// FunctionOpInterface, whose diagnostic is the one seen.
// expected-error @+1 {{'circuit.graph' op type of entry block argument #0('tensor<8xf32>') must match the type of the corresponding argument in function signature('tensor<4xf32>')}}
"circuit.graph"() <{function_type = (tensor<4xf32>) -> (), sym_name = "wrong_block"}> ({
^bb0(%a: tensor<8xf32>):
  "circuit.output"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'circuit.graph' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
circuit.graph @declaration(%a: tensor<4xf32>)

// -----

circuit.graph @too_few_outputs(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{'circuit.output' op expects 2 results for the graph, got 1}}
  circuit.output %a : tensor<4xf32>
}

// -----

circuit.graph @too_many_outputs(%a: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.output' op expects 0 results for the graph, got 1}}
  circuit.output %a : tensor<4xf32>
}

// -----

circuit.graph @output_type(%a: tensor<4xf32>, %b: tensor<4xf16>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{'circuit.output' op expects result #1 of type 'tensor<4xf32>', got 'tensor<4xf16>'}}
  circuit.output %a, %b : tensor<4xf32>, tensor<4xf16>
}

// -----

func.func @output_outside_graph() {
  // expected-error @+1 {{'circuit.output' op expects parent op 'circuit.graph'}}
  circuit.output
}

//===----------------------------------------------------------------------===//
// ODS constraints on element types and attributes
//===----------------------------------------------------------------------===//

// -----

circuit.graph @zeros_quantized() {
  // expected-error @+1 {{'circuit.zeros' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or 32-bit signless integer values, but got 'tensor<32x!circuit.q8_0>'}}
  %z = circuit.zeros : tensor<32x!circuit.q8_0>
  circuit.output
}

// -----

circuit.graph @map_quantized_input(%w: tensor<32x!circuit.q8_0>) {
  // expected-error @+1 {{'circuit.map' op operand #0 must be variadic of statically shaped tensor of 32-bit float or 16-bit float or 32-bit signless integer values, but got 'tensor<32x!circuit.q8_0>'}}
  %r = circuit.map ins(%w : tensor<32x!circuit.q8_0>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @map_f64(%a: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.map' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or 32-bit signless integer values, but got 'tensor<4xf64>'}}
  %r = circuit.map ins(%a : tensor<4xf32>) -> tensor<4xf64> {
  ^bb0(%lane: i32, %v: f32):
    %c = exp.constant 0.0 : f32
    circuit.yield %c : f32
  }
  circuit.output
}

// -----

circuit.graph @scatter_grid_zero(%x: tensor<1xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.scatter' op attribute 'grid' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r = circuit.scatter grid(0) ins(%x : tensor<1xf32>) into %d : tensor<4xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_bad_kind(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, sum_sq, max]}}
  %r = circuit.reduce min %x : tensor<4xf32> -> tensor<1xf32>
  circuit.output
}

//===----------------------------------------------------------------------===//
// Broadcasting (verifyBroadcasts)
//===----------------------------------------------------------------------===//

// -----

circuit.graph @map_broadcast_prefix(%x: tensor<4x8xf32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.map' op expects input #1 of shape [4] to broadcast over the iteration shape [4, 8] (same size, or trailing dimensions equal or 1)}}
  %r = circuit.map ins(%x, %p : tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @map_broadcast_mismatch(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'circuit.map' op expects input #0 of shape [2, 8] to broadcast over the iteration shape [4, 8] (same size, or trailing dimensions equal or 1)}}
  %r = circuit.map ins(%x : tensor<2x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @map_broadcast_higher_rank(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'circuit.map' op expects input #0 of shape [2, 4, 8] to broadcast over the iteration shape [4, 8] (same size, or trailing dimensions equal or 1)}}
  %r = circuit.map ins(%x : tensor<2x4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @gather_broadcast(%src: tensor<64xf32>, %ids: tensor<3xi32>) {
  // expected-error @+1 {{'circuit.gather' op expects input #0 of shape [3] to broadcast over the iteration shape [8] (same size, or trailing dimensions equal or 1)}}
  %r = circuit.gather %src ins(%ids : tensor<3xi32>) : tensor<64xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32, %i: i32):
    circuit.yield %i : i32
  }
  circuit.output
}

// -----

circuit.graph @scatter_add_rank(%x: tensor<64xf32>, %t: tensor<8xi32>) {
  // expected-error @+1 {{'circuit.scatter_add' op expects a [S, D] source, [S] indices and an [R, D] result, got ranks 1, 1 and 2}}
  %r = circuit.scatter_add %x, %t : tensor<64xf32>, tensor<8xi32> -> tensor<16x8xf32>
  circuit.output
}

// -----

circuit.graph @scatter_add_count(%x: tensor<8x4xf32>, %t: tensor<6xi32>) {
  // expected-error @+1 {{'circuit.scatter_add' op expects one index per source row (8), got 6}}
  %r = circuit.scatter_add %x, %t : tensor<8x4xf32>, tensor<6xi32> -> tensor<16x4xf32>
  circuit.output
}

// -----

circuit.graph @scatter_add_width(%x: tensor<8x4xf32>, %t: tensor<8xi32>) {
  // expected-error @+1 {{'circuit.scatter_add' op expects result rows as long as the source's (4), got 5}}
  %r = circuit.scatter_add %x, %t : tensor<8x4xf32>, tensor<8xi32> -> tensor<16x5xf32>
  circuit.output
}

// -----

circuit.graph @scatter_add_f16(%x: tensor<8x4xf16>, %t: tensor<8xi32>) {
  // expected-error @+1 {{'circuit.scatter_add' op operand #0 must be statically shaped tensor of 32-bit float values}}
  %r = circuit.scatter_add %x, %t : tensor<8x4xf16>, tensor<8xi32> -> tensor<16x4xf32>
  circuit.output
}

// -----

circuit.graph @scatter_broadcast(%x: tensor<16xf32>, %d: tensor<64xf32>) {
  // expected-error @+1 {{'circuit.scatter' op expects input #0 of shape [16] to broadcast over the iteration shape [8] (same size, or trailing dimensions equal or 1)}}
  %r = circuit.scatter grid(8) ins(%x : tensor<16xf32>) into %d : tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @scatter_multi_broadcast(%x: tensor<8xf32>, %y: tensor<5xf32>,
                                       %d: tensor<64xf32>) {
  // expected-error @+1 {{'circuit.scatter_multi' op expects input #1 of shape [5] to broadcast over the iteration shape [8] (same size, or trailing dimensions equal or 1)}}
  %r = circuit.scatter_multi grid(8) ins(%x, %y : tensor<8xf32>, tensor<5xf32>)
      into(%d : tensor<64xf32>) {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    circuit.yield %lane, %a : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_broadcast(%x: tensor<4x8xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.reduce' op expects input #1 of shape [4] to broadcast over the iteration shape [4, 8] (same size, or trailing dimensions equal or 1)}}
  %r = circuit.reduce sum %x, %y : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x1xf32> prologue {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @matmul_broadcast(%x: tensor<8xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects input #0 of shape [8] to broadcast over the iteration shape [4] (same size, or trailing dimensions equal or 1)}}
  %y = circuit.matmul %x, %w ins(%b : tensor<8xf32>) : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    circuit.yield %acc : f32
  }
  circuit.output
}

//===----------------------------------------------------------------------===//
// Per-lane bodies (verifyBody)
//===----------------------------------------------------------------------===//

// -----

circuit.graph @map_empty_body(%x: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.map' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
  %r = "circuit.map"(%x) ({}) : (tensor<4xf32>) -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @map_arity(%x: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.map' op expects the body region to take 2 arguments, got 1}}
  %r = circuit.map ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: f32):
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @map_lane_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.map' op expects body argument #0 of type 'i32', got 'index'}}
  %r = circuit.map ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%lane: index, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @map_arg_type(%x: tensor<4xf32>, %h: tensor<4xf16>) {
  // expected-error @+1 {{'circuit.map' op expects body argument #2 of type 'f16', got 'f32'}}
  %r = circuit.map ins(%x, %h : tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32> {
  ^bb0(%lane: i32, %v: f32, %w: f32):
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @map_terminator(%x: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.map' op expects the body region to end in 'circuit.yield'}}
  %r = circuit.map ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%lane: i32, %v: f32):
    llvm.unreachable
  }
  circuit.output
}

// -----

circuit.graph @map_yield_count(%x: tensor<4xf32>) {
  %r = circuit.map ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects 1 yielded values in the body region, got 2}}
    circuit.yield %v, %v : f32, f32
  }
  circuit.output
}

// -----

circuit.graph @map_yield_type(%x: tensor<4xf32>) {
  %r = circuit.map ins(%x : tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #0 of type 'f16', got 'f32'}}
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @gather_yield_type(%src: tensor<8xf32>) {
  %r = circuit.gather %src : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %f = exp.convert %lane : i32 to f32
    // expected-error @+1 {{'circuit.yield' op expects yielded value #0 of type 'i32', got 'f32'}}
    circuit.yield %f : f32
  }
  circuit.output
}

// -----

circuit.graph @gather_arity(%src: tensor<8xf32>, %ids: tensor<8xi32>) {
  // expected-error @+1 {{'circuit.gather' op expects the body region to take 2 arguments, got 1}}
  %r = circuit.gather %src ins(%ids : tensor<8xi32>) : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  circuit.output
}

// -----

circuit.graph @scatter_yield_count(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  %r = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %d : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects 2 yielded values in the body region, got 1}}
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @scatter_value_type(%x: tensor<8xf32>, %d: tensor<8xi32>) {
  %r = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %d : tensor<8xi32> {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #1 of type 'i32', got 'f32'}}
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @scatter_multi_yield_count(%x: tensor<8xf32>, %a: tensor<8xf32>,
                                         %b: tensor<8xf32>) {
  %r:2 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>)
      into(%a, %b : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects 4 yielded values in the body region, got 2}}
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @scatter_multi_value_type(%x: tensor<8xf32>, %a: tensor<8xf32>,
                                        %b: tensor<8xf16>) {
  %r:2 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>)
      into(%a, %b : tensor<8xf32>, tensor<8xf16>) {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #3 of type 'f16', got 'f32'}}
    circuit.yield %lane, %v, %lane, %v : i32, f32, i32, f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_prologue_arity(%x: tensor<8xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.reduce' op expects the prologue region to take 3 arguments, got 2}}
  %r = circuit.reduce sum %x, %y : tensor<8xf32>, tensor<8xf32> -> tensor<1xf32> prologue {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_prologue_arg_type(%x: tensor<8xi32>) {
  // expected-error @+1 {{'circuit.reduce' op expects prologue argument #1 of type 'i32', got 'f32'}}
  %r = circuit.reduce sum %x : tensor<8xi32> -> tensor<1xf32> prologue {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_prologue_yield_type(%x: tensor<8xi32>) {
  %r = circuit.reduce max %x : tensor<8xi32> -> tensor<1xf32> prologue {
  ^bb0(%lane: i32, %a: i32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #0 of type 'f32', got 'i32'}}
    circuit.yield %a : i32
  }
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_arity(%x: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects the epilogue region to take 3 arguments, got 2}}
  %r = circuit.reduce_epilogue sum %x : tensor<8xf32> -> tensor<8xf32> epilogue {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_reduced_type(%x: tensor<8xf16>) {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects epilogue argument #1 of type 'f32', got 'f16'}}
  %r = circuit.reduce_epilogue sum %x : tensor<8xf16> -> tensor<8xf16> epilogue {
  ^bb0(%lane: i32, %s: f16, %v: f16):
    circuit.yield %v : f16
  }
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_yield_type(%x: tensor<8xf32>) {
  %r = circuit.reduce_epilogue sum %x : tensor<8xf32> -> tensor<8xf16> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #0 of type 'f16', got 'f32'}}
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_prologue_yield(%x: tensor<8xf32>) {
  %r = circuit.reduce_epilogue sum %x : tensor<8xf32> -> tensor<8xf32> prologue {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects 1 yielded values in the prologue region, got 0}}
    circuit.yield
  } epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_scatter_epilogue_yield(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<8xf32> into %d : tensor<8xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects 2 yielded values in the epilogue region, got 1}}
    circuit.yield %s : f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_scatter_epilogue_address(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<8xf32> into %d : tensor<8xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #0 of type 'i32', got 'f32'}}
    circuit.yield %s, %v : f32, f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_scatter_epilogue_prologue(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.reduce_scatter_epilogue' op expects prologue argument #0 of type 'i32', got 'f32'}}
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<8xf32> into %d : tensor<8xf32> prologue {
  ^bb0(%lane: f32, %v: f32):
    circuit.yield %v : f32
  } epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @matmul_epilogue_arity(%x: tensor<8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects the epilogue region to take 3 arguments, got 2}}
  %y = circuit.matmul %x, %w ins(%b : tensor<4xf32>) : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32):
    circuit.yield %acc : f32
  }
  circuit.output
}

// -----

circuit.graph @matmul_epilogue_acc_type(%x: tensor<8xf16>, %w: tensor<4x8xf16>) {
  // expected-error @+1 {{'circuit.matmul' op expects epilogue argument #1 of type 'f32', got 'f16'}}
  %y = circuit.matmul %x, %w : tensor<8xf16>, tensor<4x8xf16> -> tensor<4xf16> epilogue {
  ^bb0(%lane: i32, %acc: f16):
    circuit.yield %acc : f16
  }
  circuit.output
}

// -----

circuit.graph @matmul_epilogue_yield_type(%x: tensor<8xf32>, %w: tensor<4x8xf32>) {
  %y = circuit.matmul %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf16> epilogue {
  ^bb0(%lane: i32, %acc: f32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #0 of type 'f16', got 'f32'}}
    circuit.yield %acc : f32
  }
  circuit.output
}

//===----------------------------------------------------------------------===//
// Write destinations (verifyDestination)
//===----------------------------------------------------------------------===//

// -----

circuit.graph @scatter_into_map(%x: tensor<8xf32>) {
  %m = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  // expected-error @+1 {{'circuit.scatter' op expects a destination that is a graph argument, a 'circuit.zeros' or an earlier write into one, got a result of 'circuit.map'}}
  %r = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %m : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @scatter_multi_into_gather(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  %g = circuit.gather %x : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  // expected-error @+1 {{'circuit.scatter_multi' op expects a destination that is a graph argument, a 'circuit.zeros' or an earlier write into one, got a result of 'circuit.gather'}}
  %r:2 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>)
      into(%d, %g : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v, %lane, %v : i32, f32, i32, f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_scatter_into_reduce_epilogue(%x: tensor<8xf32>) {
  %n = circuit.reduce_epilogue sum %x : tensor<8xf32> -> tensor<8xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %s : f32
  }
  // expected-error @+1 {{'circuit.reduce_scatter_epilogue' op expects a destination that is a graph argument, a 'circuit.zeros' or an earlier write into one, got a result of 'circuit.reduce_epilogue'}}
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<8xf32> into %n : tensor<8xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %lane, %s : i32, f32
  }
  circuit.output
}

// -----

func.func @scatter_outside_graph(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.scatter' op expects a destination that is a graph argument, a 'circuit.zeros' or an earlier write into one, got a block argument outside a graph}}
  %r = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %d : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  return
}

// -----

circuit.graph @two_writes_into_argument(%x: tensor<8xf32>, %d: tensor<16xf32>) {
  // expected-error @+1 {{'circuit.scatter' op expects each buffer version to be written once, got 2 writes into the same value}}
  %a = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %d : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  // expected-error @+1 {{'circuit.scatter' op expects each buffer version to be written once, got 2 writes into the same value}}
  %b = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %d : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @two_writes_into_zeros(%x: tensor<8xf32>) {
  %z = circuit.zeros : tensor<16xf32>
  // expected-error @+1 {{'circuit.scatter' op expects each buffer version to be written once, got 2 writes into the same value}}
  %a = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %z : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  // expected-error @+1 {{'circuit.reduce_scatter_epilogue' op expects each buffer version to be written once, got 2 writes into the same value}}
  %b = circuit.reduce_scatter_epilogue sum %x : tensor<8xf32> into %z : tensor<16xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %lane, %s : i32, f32
  }
  circuit.output
}

// -----

// A fork of a version written in place: two writes into the same result.
circuit.graph @two_writes_into_version(%x: tensor<8xf32>, %d: tensor<16xf32>) {
  %v1 = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %d : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  // expected-error @+1 {{'circuit.scatter' op expects each buffer version to be written once, got 2 writes into the same value}}
  %a = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %v1 : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  // expected-error @+1 {{'circuit.scatter_multi' op expects each buffer version to be written once, got 2 writes into the same value}}
  %b:1 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>) into(%v1 : tensor<16xf32>) {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @scatter_multi_same_destination_twice(%x: tensor<8xf32>, %d: tensor<16xf32>) {
  // expected-error @+1 {{'circuit.scatter_multi' op expects each buffer version to be written once, got 2 writes into the same value}}
  %r:2 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>)
      into(%d, %d : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v, %lane, %v : i32, f32, i32, f32
  }
  circuit.output
}

//===----------------------------------------------------------------------===//
// circuit.gather
//===----------------------------------------------------------------------===//

// -----

circuit.graph @gather_element(%src: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.gather' op expects the result element type to be the source's 'f32', got 'f16'}}
  %r = circuit.gather %src : tensor<8xf32> -> tensor<8xf16> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  circuit.output
}

//===----------------------------------------------------------------------===//
// circuit.scatter_multi
//===----------------------------------------------------------------------===//

// -----

// Only the generic form can spell zero destinations.
circuit.graph @scatter_multi_no_destination(%x: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.scatter_multi' op expects at least one destination}}
  "circuit.scatter_multi"(%x) <{grid = 8 : i64, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%lane: i32, %v: f32):
    circuit.yield
  }) : (tensor<8xf32>) -> ()
  circuit.output
}

// -----

circuit.graph @scatter_multi_no_destination_custom(%x: tensor<8xf32>) {
  // expected-error @+1 {{expected ':'}}
  circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>) into() {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield
  }
  circuit.output
}

// -----

circuit.graph @scatter_multi_segments(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.scatter_multi' op operand count (2) does not match with the total size (3) specified in attribute 'operandSegmentSizes'}}
  %r = "circuit.scatter_multi"(%x, %d) <{grid = 8 : i64, operandSegmentSizes = array<i32: 1, 2>}> ({
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  circuit.output
}

// -----

circuit.graph @scatter_multi_result_count(%x: tensor<8xf32>, %d: tensor<8xf32>) {
  // expected-error @+2 {{'circuit.scatter_multi' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>', 'tensor<8xf32>'}}
  // expected-error @+1 {{'circuit.scatter_multi' op failed to infer returned types}}
  %r:2 = "circuit.scatter_multi"(%x, %d) <{grid = 8 : i64, operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  circuit.output
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

circuit.graph @reduce_no_input() {
  // expected-error @+1 {{'circuit.reduce' op expects at least one input}}
  %r = "circuit.reduce"() <{kind = 0 : i32}> ({}) : () -> tensor<1xf32>
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_no_input() {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects at least one input}}
  %r = "circuit.reduce_epilogue"() <{kind = 0 : i32}> ({}, {
  ^bb0(%lane: i32, %s: f32):
    circuit.yield %s : f32
  }) : () -> tensor<1xf32>
  circuit.output
}

// -----

circuit.graph @reduce_rank0(%x: tensor<f32>) {
  // expected-error @+1 {{'circuit.reduce' op expects a first input of rank 1 or more}}
  %r = circuit.reduce sum %x : tensor<f32> -> tensor<1xf32>
  circuit.output
}

// -----

circuit.graph @reduce_scatter_rank0(%x: tensor<f32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.reduce_scatter_epilogue' op expects a first input of rank 1 or more}}
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<f32> into %d : tensor<4xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %lane, %s : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_i32_without_prologue(%x: tensor<8xi32>) {
  // expected-error @+1 {{'circuit.reduce' op expects a float first input to reduce without a prologue, got 'i32'}}
  %r = circuit.reduce sum %x : tensor<8xi32> -> tensor<1xf32>
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_i32_without_prologue(%x: tensor<8xi32>) {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects a float first input to reduce without a prologue, got 'i32'}}
  %r = circuit.reduce_epilogue max %x : tensor<8xi32> -> tensor<8xi32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: i32):
    circuit.yield %v : i32
  }
  circuit.output
}

// -----

circuit.graph @reduce_two_inputs_without_prologue(%x: tensor<8xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.reduce' op expects a prologue to combine 2 inputs}}
  %r = circuit.reduce sum %x, %y : tensor<8xf32>, tensor<8xf32> -> tensor<1xf32>
  circuit.output
}

// -----

circuit.graph @reduce_result_dropped_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.reduce' op expects result type 'tensor<4x1xf32>', got 'tensor<4xf32>'}}
  %r = circuit.reduce sum %x : tensor<4x8xf32> -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @reduce_result_rank1(%x: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.reduce' op expects result type 'tensor<1xf32>', got 'tensor<8xf32>'}}
  %r = circuit.reduce sum_sq %x : tensor<8xf32> -> tensor<8xf32>
  circuit.output
}

// -----

circuit.graph @reduce_result_f16(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'circuit.reduce' op expects result type 'tensor<4x1xf32>', got 'tensor<4x1xf16>'}}
  %r = circuit.reduce max %x : tensor<4x8xf16> -> tensor<4x1xf16>
  circuit.output
}

// -----

circuit.graph @reduce_result_i32(%x: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.reduce' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float values, but got 'tensor<1xi32>'}}
  %r = circuit.reduce max %x : tensor<8xf32> -> tensor<1xi32>
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects the result to have the iteration shape, got 'tensor<32xf32>'}}
  %r = circuit.reduce_epilogue sum %x : tensor<4x8xf32> -> tensor<32xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_reduced_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects the result to have the iteration shape, got 'tensor<4x1xf32>'}}
  %r = circuit.reduce_epilogue sum %x : tensor<4x8xf32> -> tensor<4x1xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %s : f32
  }
  circuit.output
}

//===----------------------------------------------------------------------===//
// circuit.matmul
//===----------------------------------------------------------------------===//

// -----

circuit.graph @matmul_i32_activations(%x: tensor<8xi32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects activations of f32, f16 or q8_1, got 'i32'}}
  %y = circuit.matmul %x, %w : tensor<8xi32>, tensor<4x8xf32> -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_q8_0_activations(%x: tensor<32x!circuit.q8_0>, %w: tensor<4x32x!circuit.q8_0>) {
  // expected-error @+1 {{'circuit.matmul' op expects activations of f32, f16 or q8_1, got '!circuit.q8_0'}}
  %y = circuit.matmul %x, %w : tensor<32x!circuit.q8_0>, tensor<4x32x!circuit.q8_0> -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_q8_1_weight(%x: tensor<32xf32>, %w: tensor<4x32x!circuit.q8_1>) {
  // expected-error @+1 {{'circuit.matmul' op expects weights of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k, q6_k, tq1_0, tq2_0 or i2_s, got '!circuit.q8_1'}}
  %y = circuit.matmul %x, %w : tensor<32xf32>, tensor<4x32x!circuit.q8_1> -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_i32_weight(%x: tensor<8xf32>, %w: tensor<4x8xi32>) {
  // expected-error @+1 {{'circuit.matmul' op expects weights of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k, q6_k, tq1_0, tq2_0 or i2_s, got 'i32'}}
  %y = circuit.matmul %x, %w : tensor<8xf32>, tensor<4x8xi32> -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_rank3(%x: tensor<2x4x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects activations of rank 1 or 2, got 'tensor<2x4x8xf32>'}}
  %y = circuit.matmul %x, %w : tensor<2x4x8xf32>, tensor<4x8xf32> -> tensor<2x4x4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_rank0(%x: tensor<f32>, %w: tensor<4x1xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects activations of rank 1 or 2, got 'tensor<f32>'}}
  %y = circuit.matmul %x, %w : tensor<f32>, tensor<4x1xf32> -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_weight_rank1(%x: tensor<8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects a rank-2 [N, K] weight, got 'tensor<8xf32>'}}
  %y = circuit.matmul %x, %w : tensor<8xf32>, tensor<8xf32> -> tensor<1xf32>
  circuit.output
}

// -----

circuit.graph @matmul_k_mismatch(%x: tensor<2x16xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects the weight's K dimension to be 16, got 8}}
  %y = circuit.matmul %x, %w : tensor<2x16xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_transposed_weight(%x: tensor<8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects the weight's K dimension to be 8, got 4}}
  %y = circuit.matmul %x, %w : tensor<8xf32>, tensor<8x4xf32> -> tensor<8xf32>
  circuit.output
}

// -----

// A graph rejects such an argument; a func.func lets it reach the matmul.
func.func @matmul_q8_1_activation_shape(%x: tensor<48x!circuit.q8_1>, %w: tensor<4x48x!circuit.q8_0>) {
  // expected-error @+1 {{'circuit.matmul' op expects the last dimension of the activations 'tensor<48x!circuit.q8_1>' to be a multiple of the block size 32}}
  %y = circuit.matmul %x, %w : tensor<48x!circuit.q8_1>, tensor<4x48x!circuit.q8_0> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_q4_k_weight_shape(%x: tensor<128xf32>, %w: tensor<4x128x!circuit.q4_k>) {
  // expected-error @+1 {{'circuit.matmul' op expects the last dimension of the weight 'tensor<4x128x!circuit.q4_k>' to be a multiple of the block size 256}}
  %y = circuit.matmul %x, %w : tensor<128xf32>, tensor<4x128x!circuit.q4_k> -> tensor<4xf32>
  return
}

// -----

circuit.graph @matmul_result_shape(%x: tensor<8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects a result of type 'tensor<4xf32>', got 'tensor<1x4xf32>'}}
  %y = circuit.matmul %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<1x4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_result_shape_rank2(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects a result of type 'tensor<3x4xf16>', got 'tensor<4x3xf16>'}}
  %y = circuit.matmul %x, %w : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<4x3xf16>
  circuit.output
}

// -----

circuit.graph @matmul_ins_without_epilogue(%x: tensor<8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects an epilogue to use 1 extra inputs}}
  %y = circuit.matmul %x, %w ins(%b : tensor<4xf32>) : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  circuit.output
}

// -----

circuit.graph @matmul_result_i32(%x: tensor<8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'circuit.matmul' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float values, but got 'tensor<4xi32>'}}
  %y = circuit.matmul %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xi32>
  circuit.output
}

//===----------------------------------------------------------------------===//
// circuit.quantize
//===----------------------------------------------------------------------===//

// -----

circuit.graph @quantize_to_f32(%x: tensor<32xf32>) {
  // expected-error @+1 {{'circuit.quantize' op expects a q8_1 or q8_0 result, got 'f32'}}
  %q = circuit.quantize %x : tensor<32xf32> -> tensor<32xf32>
  circuit.output
}

// -----

circuit.graph @quantize_to_q4_k(%x: tensor<256xf32>) {
  // expected-error @+1 {{'circuit.quantize' op expects a q8_1 or q8_0 result, got '!circuit.q4_k'}}
  %q = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q4_k>
  circuit.output
}

// -----

circuit.graph @quantize_shape(%x: tensor<64xf32>) {
  // expected-error @+1 {{'circuit.quantize' op expects the result to have the input's shape, got 'tensor<64xf32>' and 'tensor<2x32x!circuit.q8_1>'}}
  %q = circuit.quantize %x : tensor<64xf32> -> tensor<2x32x!circuit.q8_1>
  circuit.output
}

// -----

circuit.graph @quantize_block(%x: tensor<4x48xf16>) {
  // expected-error @+1 {{'circuit.quantize' op expects the last dimension of the result 'tensor<4x48x!circuit.q8_0>' to be a multiple of the block size 32}}
  %q = circuit.quantize %x : tensor<4x48xf16> -> tensor<4x48x!circuit.q8_0>
  circuit.output
}

// -----

circuit.graph @quantize_i32(%x: tensor<32xi32>) {
  // expected-error @+1 {{'circuit.quantize' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float values, but got 'tensor<32xi32>'}}
  %q = circuit.quantize %x : tensor<32xi32> -> tensor<32x!circuit.q8_1>
  circuit.output
}

// -----

// Integer-dot-product kernels need quantized weights on both sides.
circuit.graph @matmul_q8_1_with_float_weight(%x: tensor<64x!circuit.q8_1>, %w: tensor<4x64xf32>) {
  // expected-error @+1 {{'circuit.matmul' op expects quantized weights with q8_1 activations, got 'f32'}}
  %y = circuit.matmul %x, %w : tensor<64x!circuit.q8_1>, tensor<4x64xf32> -> tensor<4xf32>
  circuit.output
}

// -----

// expected-error @+1 {{'circuit.graph' op expects the body to end in 'circuit.output'}}
circuit.graph @graph_ends_in_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  circuit.yield %x : tensor<4xf32>
}

// -----

func.func @yield_outside_a_body() {
  // expected-error @+1 {{'circuit.yield' op expects parent op to be one of}}
  circuit.yield
}

// -----

// Lane indices are i32.
circuit.graph @grid_too_large(%x: tensor<1xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'circuit.scatter' op expects at most 2^31-1 lanes, got 4294967296}}
  %r = circuit.scatter grid(4294967296) ins(%x : tensor<1xf32>) into %d : tensor<4xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

circuit.graph @extract_outside_a_body(%x: tensor<8xf32>) {
  %i = exp.constant 0 : i32
  // expected-error @+1 {{'circuit.extract' op expects to be nested in the body of a circuit primitive}}
  %v = circuit.extract %x[%i] : tensor<8xf32>
  circuit.output
}

// -----

// An element-wise read is subject to the broadcast rule; a whole read is not.
circuit.graph @whole_read_skips_broadcast_but_element_read_does_not(%x: tensor<8xf32>, %big: tensor<100xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'circuit.map' op expects input #1 of shape [100] to broadcast over the iteration shape [8]}}
  %y = circuit.map ins(%x, %big : tensor<8xf32>, tensor<100xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32, %b: f32):
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<8xf32>
}

// -----

circuit.graph @reduce_first_input_whole(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects the first input, which sets the iteration shape, to be read element by element}}
  %y = circuit.reduce_epilogue sum %x : tensor<8xf32> -> tensor<8xf32> prologue {
  ^bb0(%lane: i32, %all: tensor<8xf32>):
    %v = circuit.extract %all[%lane] : tensor<8xf32>
    circuit.yield %v : f32
  } epilogue {
  ^bb0(%lane: i32, %s: f32, %all: tensor<8xf32>):
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<8xf32>
}

// -----

circuit.graph @multi_matmul_result_count(%x: tensor<64xf32>, %a: tensor<8x64xf32>, %b: tensor<4x64xf32>) {
  // expected-error @+1 {{'circuit.multi_matmul' op expects one result and one epilogue region per weight, got 2 weights, 1 results and 2 epilogues}}
  %p = circuit.multi_matmul %x, %a, %b : tensor<64xf32>, tensor<8x64xf32>, tensor<4x64xf32> -> tensor<8xf32> epilogues {
  }, {
  }
  circuit.output
}

// -----

circuit.graph @multi_matmul_k_mismatch(%x: tensor<64xf32>, %a: tensor<8x64xf32>, %b: tensor<4x32xf32>) {
  // expected-error @+1 {{'circuit.multi_matmul' op expects the weight's K dimension to be 64, got 32}}
  %p, %q = circuit.multi_matmul %x, %a, %b : tensor<64xf32>, tensor<8x64xf32>, tensor<4x32xf32> -> tensor<8xf32>, tensor<4xf32> epilogues {
  }, {
  }
  circuit.output
}

// -----

circuit.graph @quantized_reduce_epilogue_yields_f32(%x: tensor<64xf32>) {
  %y = circuit.reduce_epilogue sum %x : tensor<64xf32> -> tensor<64x!circuit.q8_1> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    // expected-error @+1 {{'circuit.yield' op expects yielded value #0 of type 'f32', got 'i32'}}
    circuit.yield %lane : i32
  }
  circuit.output
}

// -----

circuit.graph @reduce_epilogue_k_quant(%x: tensor<256xf32>) {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects a q8_0 or q8_1 result when quantizing, got '!circuit.q4_k'}}
  %y = circuit.reduce_epilogue sum %x : tensor<256xf32> -> tensor<256x!circuit.q4_k> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %s : f32
  }
  circuit.output
}

// -----

circuit.graph @attention_heads_not_multiple(%q: tensor<48xf32>, %k: tensor<512xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects heads to be a multiple of kv_heads, got 3 and 2}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 3 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<48xf32>, tensor<512xf32>, tensor<512xf32>, tensor<1xi32> -> tensor<48xf32>
  circuit.output
}

// -----

circuit.graph @attention_q_size(%q: tensor<60xf32>, %k: tensor<512xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects q of a positive multiple of heads * head_dim = 64 elements, got 'tensor<60xf32>'}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<60xf32>, tensor<512xf32>, tensor<512xf32>, tensor<1xi32> -> tensor<60xf32>
  circuit.output
}

// -----

circuit.graph @attention_cache_size(%q: tensor<64xf32>, %k: tensor<500xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects caches of a positive multiple of kv_heads * head_dim = 32 elements, got 500}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<64xf32>, tensor<500xf32>, tensor<500xf32>, tensor<1xi32> -> tensor<64xf32>
  circuit.output
}

// -----

circuit.graph @attention_cache_types(%q: tensor<64xf32>, %k: tensor<512xf32>, %v: tensor<1024xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects k_cache and v_cache of one shape, got 'tensor<512xf32>' and 'tensor<1024xf32>'}}
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<64xf32>, tensor<512xf32>, tensor<1024xf32>, tensor<1xi32> -> tensor<64xf32>
  circuit.output
}

// -----

circuit.graph @attention_cache_bf16(%q: tensor<64xf32>, %k: tensor<512xf32>, %v: tensor<512xbf16>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op operand #2 must be statically shaped tensor of 32-bit float or 16-bit float or 8-bit weights, one f16 scale per block of 32 values, but got 'tensor<512xbf16>'}}
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<64xf32>, tensor<512xf32>, tensor<512xbf16>, tensor<1xi32> -> tensor<64xf32>
  circuit.output
}

// -----

circuit.graph @attention_q8_0_head(%q: tensor<64xf32>, %k: tensor<512x!circuit.q8_0>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects a head_dim that is a multiple of 32 for a q8_0 cache, got 16}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<64xf32>, tensor<512x!circuit.q8_0>, tensor<512x!circuit.q8_0>, tensor<1xi32> -> tensor<64xf32>
  circuit.output
}

// -----

//===----------------------------------------------------------------------===//
// circuit.write_rows
//===----------------------------------------------------------------------===//

circuit.graph @write_rows_rank(%x: tensor<64xf32>, %c: tensor<512xf32>, %p: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.write_rows' op expects values of rank 2 ([rows, D]), got 'tensor<64xf32>'}}
  %w = circuit.write_rows %x at %p into %c : tensor<64xf32>, tensor<1xi32> into tensor<512xf32>
  circuit.output
}

// -----

circuit.graph @write_rows_width(%x: tensor<2x48xf32>, %c: tensor<512xf32>, %p: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.write_rows' op expects a destination of rank 1 holding whole rows of 48 values, got 'tensor<512xf32>'}}
  %w = circuit.write_rows %x at %p into %c : tensor<2x48xf32>, tensor<1xi32> into tensor<512xf32>
  circuit.output
}

// -----

circuit.graph @write_rows_q8_0_block(%x: tensor<2x16xf32>, %c: tensor<512x!circuit.q8_0>, %p: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.write_rows' op stores rows of 16 values into q8_0, not a multiple of its 32-value block}}
  %w = circuit.write_rows %x at %p into %c : tensor<2x16xf32>, tensor<1xi32> into tensor<512x!circuit.q8_0>
  circuit.output
}

// -----

circuit.graph @write_rows_positions(%x: tensor<3x32xf32>, %c: tensor<512xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'circuit.write_rows' op expects pos of one element or one per row (3), got 'tensor<2xi32>'}}
  %w = circuit.write_rows %x at %p into %c : tensor<3x32xf32>, tensor<2xi32> into tensor<512xf32>
  circuit.output
}

// -----

circuit.graph @write_rows_q4_0(%x: tensor<2x32xf32>, %c: tensor<512x!circuit.q4_0>, %p: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.write_rows' op operand #2 must be statically shaped tensor of}}
  %w = circuit.write_rows %x at %p into %c : tensor<2x32xf32>, tensor<1xi32> into tensor<512x!circuit.q4_0>
  circuit.output
}

// -----

circuit.graph @write_rows_read_after(%x: tensor<2x32xf32>, %c: tensor<512xf32>, %p: tensor<1xi32>) -> tensor<512xf32> {
  // expected-note @+1 {{the in-place write}}
  %w = circuit.write_rows %x at %p into %c : tensor<2x32xf32>, tensor<1xi32> into tensor<512xf32>
  // expected-error @+1 {{'circuit.map' op reads operand #0 after 'circuit.write_rows' wrote over it in place}}
  %m = circuit.map ins(%c : tensor<512xf32>) -> tensor<512xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %m : tensor<512xf32>
}

// -----

circuit.graph @attention_pos(%q: tensor<64xf32>, %k: tensor<512xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects pos of one i32, got 'tensor<2xi32>'}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<2xi32> -> tensor<64xf32>
  circuit.output
}

// -----

circuit.graph @attention_scale(%q: tensor<64xf32>, %k: tensor<512xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects a positive finite scale, got -1}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = -1.0 : f32} : tensor<64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<1xi32> -> tensor<64xf32>
  circuit.output
}

// -----

circuit.graph @attention_softcap(%q: tensor<64xf32>, %k: tensor<512xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects a positive finite softcap, got 0}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = 0.0 : f32} : tensor<64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<1xi32> -> tensor<64xf32>
  circuit.output
}

// -----

circuit.graph @attention_window(%q: tensor<64xf32>, %k: tensor<512xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects a positive window, got -3}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, window = -3 : i64} : tensor<64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<1xi32> -> tensor<64xf32>
  circuit.output
}

// -----

circuit.graph @attention_result(%q: tensor<64xf32>, %k: tensor<512xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects the result type to be q's 'tensor<64xf32>', got 'tensor<8x8xf32>'}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<1xi32> -> tensor<8x8xf32>
  circuit.output
}

// -----

circuit.graph @gated_matmul_rows(%x: tensor<64xf32>, %g: tensor<32x64xf32>, %u: tensor<16x64xf32>) {
  // expected-error @+1 {{'circuit.gated_matmul' op expects a result of type 'tensor<16xf32>', got 'tensor<32xf32>'}}
  %h = circuit.gated_matmul %x, %g, %u : tensor<64xf32>, tensor<32x64xf32>, tensor<16x64xf32> -> tensor<32xf32> combine {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @gated_matmul_body(%x: tensor<64xf32>, %g: tensor<32x64xf32>, %u: tensor<32x64xf32>) {
  // expected-error @+1 {{'circuit.gated_matmul' op expects the combine region to take 3 arguments, got 2}}
  %h = circuit.gated_matmul %x, %g, %u : tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32> -> tensor<32xf32> combine {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @expert_matmul_rank(%x: tensor<64xf32>, %ids: tensor<2xi32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects rank-3 [E, N, K] weights, got 'tensor<32x64xf32>'}}
  %y = circuit.expert_matmul %x, %ids, %w : tensor<64xf32>, tensor<2xi32>, tensor<32x64xf32> -> tensor<2x32xf32>
  circuit.output
}

// -----

circuit.graph @expert_matmul_k(%x: tensor<64xf32>, %ids: tensor<2xi32>, %w: tensor<4x32x96xf32>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects the weights' K dimension to be 64, got 96}}
  %y = circuit.expert_matmul %x, %ids, %w : tensor<64xf32>, tensor<2xi32>, tensor<4x32x96xf32> -> tensor<2x32xf32>
  circuit.output
}

// -----

circuit.graph @expert_matmul_rows(%x: tensor<3x64xf32>, %ids: tensor<2x2xi32>, %w: tensor<4x32x64xf32>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects the activations' leading dimensions to be those of ids 'tensor<2x2xi32>', got 'tensor<3x64xf32>'}}
  %y = circuit.expert_matmul %x, %ids, %w : tensor<3x64xf32>, tensor<2x2xi32>, tensor<4x32x64xf32> -> tensor<2x2x32xf32>
  circuit.output
}

// -----

circuit.graph @expert_matmul_result(%x: tensor<64xf32>, %ids: tensor<2xi32>, %w: tensor<4x32x64xf32>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects a result of type 'tensor<2x32xf32>', got 'tensor<32xf32>'}}
  %y = circuit.expert_matmul %x, %ids, %w : tensor<64xf32>, tensor<2xi32>, tensor<4x32x64xf32> -> tensor<32xf32>
  circuit.output
}

// -----

circuit.graph @expert_matmul_pair(%x: tensor<64xf32>, %ids: tensor<2xi32>, %g: tensor<4x32x64xf32>, %u: tensor<3x32x64xf32>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects gate and up of the same experts and rows, got 'tensor<4x32x64xf32>' and 'tensor<3x32x64xf32>'}}
  %y = circuit.expert_matmul %x, %ids, %g, %u : tensor<64xf32>, tensor<2xi32>, tensor<4x32x64xf32>, tensor<3x32x64xf32> -> tensor<2x32xf32> combine {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @expert_matmul_no_combine(%x: tensor<64xf32>, %ids: tensor<2xi32>, %g: tensor<4x32x64xf32>, %u: tensor<4x32x64xf32>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects a combine body with two weights}}
  %y = circuit.expert_matmul %x, %ids, %g, %u : tensor<64xf32>, tensor<2xi32>, tensor<4x32x64xf32>, tensor<4x32x64xf32> -> tensor<2x32xf32>
  circuit.output
}

// -----

circuit.graph @expert_matmul_stray_combine(%x: tensor<64xf32>, %ids: tensor<2xi32>, %w: tensor<4x32x64xf32>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects no combine body with one weight}}
  %y = circuit.expert_matmul %x, %ids, %w : tensor<64xf32>, tensor<2xi32>, tensor<4x32x64xf32> -> tensor<2x32xf32> combine {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    circuit.yield %a : f32
  }
  circuit.output
}

// -----

circuit.graph @expert_matmul_q8_1(%x: tensor<64x!circuit.q8_1>, %ids: tensor<2xi32>, %w: tensor<4x32x64x!circuit.q8_0>) {
  // expected-error @+1 {{'circuit.expert_matmul' op expects activations of f32 or f16, got '!circuit.q8_1'}}
  %y = circuit.expert_matmul %x, %ids, %w : tensor<64x!circuit.q8_1>, tensor<2xi32>, tensor<4x32x64x!circuit.q8_0> -> tensor<2x32xf32>
  circuit.output
}

// -----

circuit.graph @gather_quantized_f16(%t: tensor<4x256x!circuit.q4_k>) {
  // expected-error @+1 {{'circuit.gather' op expects an f32 result for a quantized source, got 'f16'}}
  %g = circuit.gather %t : tensor<4x256x!circuit.q4_k> -> tensor<256xf16> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  circuit.output
}

// -----

circuit.graph @gather_bf16_bf16(%t: tensor<4x8xbf16>) {
  // expected-error @+1 {{'circuit.gather' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or 32-bit signless integer values, but got 'tensor<8xbf16>'}}
  %g = circuit.gather %t : tensor<4x8xbf16> -> tensor<8xbf16> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  circuit.output
}

// -----

circuit.graph @gather_q8_1(%t: tensor<256x!circuit.q8_1>) {
  // expected-error @+1 {{'circuit.gather' op expects a scalar, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k, q6_k, tq1_0 or tq2_0 source, got '!circuit.q8_1'}}
  %g = circuit.gather %t : tensor<256x!circuit.q8_1> -> tensor<256xf32> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  circuit.output
}

// -----

// An empty row: no value for max, a division by zero in the lowerings.
circuit.graph @reduce_empty(%x: tensor<0xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'circuit.reduce' op expects a first input with no empty dimension (a reduction needs at least one element per row), got 'tensor<0xf32>'}}
  %s = circuit.reduce sum_sq %x : tensor<0xf32> -> tensor<1xf32>
  circuit.output %s : tensor<1xf32>
}

// -----

circuit.graph @reduce_epilogue_empty_rows(%x: tensor<4x0xf32>) -> tensor<4x0xf32> {
  // expected-error @+1 {{'circuit.reduce_epilogue' op expects a first input with no empty dimension}}
  %y = circuit.reduce_epilogue max %x : tensor<4x0xf32> -> tensor<4x0xf32> epilogue {
  ^bb0(%lane: i32, %m: f32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<4x0xf32>
}

// -----

// A read of a graph argument after a scatter wrote over it in place: every
// backend would read the written values, so the graph is refused.
circuit.graph @read_after_in_place_write(%x: tensor<8xf32>, %d: tensor<8xf32>) -> tensor<8xf32> {
  // expected-note @+1 {{the in-place write}}
  %w = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %d : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  // expected-error @+1 {{'circuit.map' op reads operand #0 after 'circuit.scatter' wrote over it in place; read that write's result instead, or read before the write}}
  %old = circuit.map ins(%d : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %old : tensor<8xf32>
}

// -----

// The same through a chain of versions and a fresh buffer: %v1 is read by
// the output after the second write replaced it.
circuit.graph @read_old_version(%x: tensor<8xf32>) -> tensor<16xf32> {
  %z = circuit.zeros : tensor<16xf32>
  %v1 = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %z : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  // expected-note @+1 {{the in-place write}}
  %v2 = circuit.reduce_scatter_epilogue sum %x : tensor<8xf32> into %v1 : tensor<16xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    %c8 = exp.constant 8 : i32
    %a = exp.add %lane, %c8 : i32
    circuit.yield %a, %s : i32, f32
  }
  // expected-error @+1 {{'circuit.output' op reads operand #0 after 'circuit.reduce_scatter_epilogue' wrote over it in place}}
  circuit.output %v1 : tensor<16xf32>
}

// -----

circuit.graph @attention_seq_len_divides(%q: tensor<128xf32>, %k: tensor<512xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects seq_len to divide the caches' 16 positions, got 5}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, seq_len = 5 : i64} : tensor<128xf32>, tensor<512xf32>, tensor<512xf32>, tensor<2xi32> -> tensor<128xf32>
  circuit.output
}

// -----

circuit.graph @attention_seq_len_positive(%q: tensor<128xf32>, %k: tensor<512xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'circuit.attention' op expects seq_len to divide the caches' 16 positions, got 0}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, seq_len = 0 : i64} : tensor<128xf32>, tensor<512xf32>, tensor<512xf32>, tensor<2xi32> -> tensor<128xf32>
  circuit.output
}

// -----

circuit.graph @attention_seq_len_pos_per_row(%q: tensor<128xf32>, %k: tensor<512xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'circuit.attention' op with seq_len expects pos of one i32 per row (2), got 'tensor<1xi32>'}}
  %o = circuit.attention %q, %k, %k, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, seq_len = 8 : i64} : tensor<128xf32>, tensor<512xf32>, tensor<512xf32>, tensor<1xi32> -> tensor<128xf32>
  circuit.output
}
