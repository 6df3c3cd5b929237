// RUN: hesper-opt %s -split-input-file --convert-circuit-to-shaderm -verify-diagnostics

// What convert-circuit-to-shaderm refuses, one case per reachable diagnostic
// of CircuitToShaderM.cpp: weight and activation formats not lowered yet,
// quantized rows it cannot write (partial words, too long for shared
// memory), and grids larger than one grid dimension holds.

// quantize and quantized reduce_epilogue results write whole 32-bit words
// per row: an odd number of q8_0 blocks (34 bytes each) is refused.
circuit.graph @quantize_odd_q8_0_blocks(%x: tensor<32xf32>) -> tensor<32x!circuit.q8_0> {
  // expected-error @+1 {{'circuit.quantize' op quantizes rows of 34 bytes; convert-circuit-to-shaderm needs rows of whole 32-bit words (an even number of q8_0 blocks)}}
  %q = circuit.quantize %x : tensor<32xf32> -> tensor<32x!circuit.q8_0>
  circuit.output %q : tensor<32x!circuit.q8_0>
}

// -----

circuit.graph @reduce_epilogue_odd_q8_0_blocks(%x: tensor<2x96xf32>)
    -> tensor<2x96x!circuit.q8_0> {
  // expected-error @+1 {{'circuit.reduce_epilogue' op quantizes rows of 102 bytes; convert-circuit-to-shaderm needs rows of whole 32-bit words (an even number of q8_0 blocks)}}
  %y = circuit.reduce_epilogue sum_sq %x : tensor<2x96xf32>
      -> tensor<2x96x!circuit.q8_0> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    %r = exp.rsqrt %ss : f32
    %n = exp.mul %v, %r : f32
    circuit.yield %n : f32
  }
  circuit.output %y : tensor<2x96x!circuit.q8_0>
}

// -----

// A row is staged in shared memory: 8192 f32 values alone fill 32 KiB.
circuit.graph @quantize_row_too_long(%x: tensor<8192xf32>) -> tensor<8192x!circuit.q8_1> {
  // expected-error @+1 {{'circuit.quantize' op quantizes rows of 8192 values, more than fit in 32 KiB of shared memory}}
  %q = circuit.quantize %x : tensor<8192xf32> -> tensor<8192x!circuit.q8_1>
  circuit.output %q : tensor<8192x!circuit.q8_1>
}

// -----

circuit.graph @reduce_epilogue_row_too_long(%x: tensor<8192xf32>)
    -> tensor<8192x!circuit.q8_1> {
  // expected-error @+1 {{'circuit.reduce_epilogue' op quantizes rows of 8192 values, more than fit in 32 KiB of shared memory}}
  %y = circuit.reduce_epilogue sum_sq %x : tensor<8192xf32>
      -> tensor<8192x!circuit.q8_1> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<8192x!circuit.q8_1>
}

// -----

circuit.graph @quantize_too_many_rows(%x: tensor<65536x32xf32>)
    -> tensor<65536x32x!circuit.q8_1> {
  // expected-error @+1 {{'circuit.quantize' op has 65536 rows, more than convert-circuit-to-shaderm launches in one grid dimension}}
  %q = circuit.quantize %x : tensor<65536x32xf32> -> tensor<65536x32x!circuit.q8_1>
  circuit.output %q : tensor<65536x32x!circuit.q8_1>
}

// -----

// Integer kernels for q8_1 activations exist for q8_0, q4_0, q4_k, q5_k,
// q6_k, q2_k, i2_s and tq2_0 weights.
circuit.graph @q8_1_activations(%x: tensor<256x!circuit.q8_1>,
                                %w: tensor<8x256x!circuit.q4_1>) -> tensor<8xf32> {
  // expected-error @+1 {{'circuit.matmul' op with q8_1 activations and '!circuit.q4_1' weights is not supported by convert-circuit-to-shaderm (q8_1 activations need q8_0, q4_0, q4_k, q5_k, q6_k, q2_k, i2_s or tq2_0 weights)}}
  %y = circuit.matmul %x, %w : tensor<256x!circuit.q8_1>, tensor<8x256x!circuit.q4_1>
      -> tensor<8xf32>
  circuit.output %y : tensor<8xf32>
}

// -----

// The refusal comes from the first unsupported op, after others lowered.
circuit.graph @after_a_map(%x: tensor<256xf32>, %w: tensor<8x256x!circuit.q3_k>)
    -> tensor<8xf32> {
  %y = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  %q = circuit.quantize %y : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  // expected-error @+1 {{'circuit.matmul' op with q8_1 activations and '!circuit.q3_k' weights is not supported by convert-circuit-to-shaderm (q8_1 activations need q8_0, q4_0, q4_k, q5_k, q6_k, q2_k, i2_s or tq2_0 weights)}}
  %z = circuit.matmul %q, %w : tensor<256x!circuit.q8_1>, tensor<8x256x!circuit.q3_k>
      -> tensor<8xf32>
  circuit.output %z : tensor<8xf32>
}

// -----

// 16777472 lanes need 65537 workgroups of 256.
circuit.graph @map_too_large(%x: tensor<16777472xf32>) -> tensor<16777472xf32> {
  // expected-error @+1 {{'circuit.map' op has 16777472 lanes, more than convert-circuit-to-shaderm launches in one grid dimension}}
  %y = circuit.map ins(%x : tensor<16777472xf32>) -> tensor<16777472xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<16777472xf32>
}

// -----

circuit.graph @scatter_too_large(%d: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'circuit.scatter' op has 16777472 lanes, more than convert-circuit-to-shaderm launches in one grid dimension}}
  %r = circuit.scatter grid(16777472) into %d : tensor<16xf32> {
  ^bb0(%lane: i32):
    %one = exp.constant 1.0 : f32
    circuit.yield %lane, %one : i32, f32
  }
  circuit.output %r : tensor<16xf32>
}

// -----

circuit.graph @reduce_too_many_rows(%x: tensor<65536x2xf32>) -> tensor<65536x1xf32> {
  // expected-error @+1 {{'circuit.reduce' op has 65536 rows, more than convert-circuit-to-shaderm launches in one grid dimension}}
  %s = circuit.reduce sum %x : tensor<65536x2xf32> -> tensor<65536x1xf32>
  circuit.output %s : tensor<65536x1xf32>
}

// -----

circuit.graph @matmul_too_many_rows(%x: tensor<32xf32>, %w: tensor<65536x32xf32>)
    -> tensor<65536xf32> {
  // expected-error @+1 {{'circuit.matmul' op has more output rows than convert-circuit-to-shaderm launches in one grid dimension}}
  %y = circuit.matmul %x, %w : tensor<32xf32>, tensor<65536x32xf32>
      -> tensor<65536xf32>
  circuit.output %y : tensor<65536xf32>
}

// -----

// M (the grid's y dimension) is limited as well: blocks of `rows` rows of
// x in the kernel the knobs shape...
circuit.graph @matmul_too_many_m(%x: tensor<65536x32xf32>, %w: tensor<2x32xf32>)
    -> tensor<65536x2xf32> {
  // expected-error @+1 {{'circuit.matmul' op has more output rows than convert-circuit-to-shaderm launches in one grid dimension}}
  %y = circuit.matmul %x, %w : tensor<65536x32xf32>, tensor<2x32xf32>
      -> tensor<65536x2xf32> attributes {circuit.knobs = {rows = 1 : i64}}
  circuit.output %y : tensor<65536x2xf32>
}

// -----

// ... and tiles of 64 in the tiled GEMM of many rows of x.
circuit.graph @gemm_too_many_m(%x: tensor<4194368x32xf32>, %w: tensor<2x32xf32>)
    -> tensor<4194368x2xf32> {
  // expected-error @+1 {{'circuit.matmul' op has more output rows than convert-circuit-to-shaderm launches in one grid dimension}}
  %y = circuit.matmul %x, %w : tensor<4194368x32xf32>, tensor<2x32xf32>
      -> tensor<4194368x2xf32>
  circuit.output %y : tensor<4194368x2xf32>
}

// -----

// Rows of all weights together: 40000 + 40000 > 65535.
circuit.graph @multi_too_many_rows(%x: tensor<32xf32>, %a: tensor<40000x32xf32>,
                                   %b: tensor<40000x32xf32>)
    -> (tensor<40000xf32>, tensor<40000xf32>) {
  // expected-error @+1 {{'circuit.multi_matmul' op has more output rows than convert-circuit-to-shaderm launches in one grid dimension}}
  %p, %q = circuit.multi_matmul %x, %a, %b
      : tensor<32xf32>, tensor<40000x32xf32>, tensor<40000x32xf32>
      -> tensor<40000xf32>, tensor<40000xf32> epilogues {
  }, {
  }
  circuit.output %p, %q : tensor<40000xf32>, tensor<40000xf32>
}

// -----

// An op that is not a Circuit dispatch op at the graph's top level.
circuit.graph @not_a_dispatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exp.constant' op is not supported by convert-circuit-to-shaderm yet}}
  %c = exp.constant 1 : i32
  circuit.output %x : tensor<4xf32>
}
