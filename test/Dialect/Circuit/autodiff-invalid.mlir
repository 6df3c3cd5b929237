// RUN: hesper-opt %s -split-input-file -circuit-autodiff="wrt=s" -verify-diagnostics -o /dev/null

// What circuit-autodiff refuses, each error on the op that cannot be
// differentiated.

circuit.graph @whole_read(%s: tensor<8xf32> {circuit.name = "s"}) -> tensor<8xf32> {
  // expected-error @+1 {{circuit-autodiff: cannot differentiate input #0, which the body reads whole (circuit.extract)}}
  %y = circuit.map ins(%s : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %all: tensor<8xf32>):
    %c7 = exp.constant 7 : i32
    %i = exp.sub %c7, %lane : i32
    %v = circuit.extract %all[%i] : tensor<8xf32>
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<8xf32>
}

// -----

circuit.graph @in_place(%s: tensor<4xf32> {circuit.name = "s"}, %cache: tensor<16xf32> {circuit.name = "cache"}) -> tensor<16xf32> {
  // expected-error @+1 {{circuit-autodiff: an in-place write into a graph argument is not differentiated}}
  %r = circuit.scatter grid(4) ins(%s : tensor<4xf32>) into %cache : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output %r : tensor<16xf32>
}

// -----

circuit.graph @quantized(%s: tensor<32xf32> {circuit.name = "s"}, %w: tensor<4x32x!circuit.q8_0> {circuit.name = "w"}) -> tensor<4xf32> {
  %q = circuit.quantize %s : tensor<32xf32> -> tensor<32x!circuit.q8_1>
  // expected-error @+1 {{circuit-autodiff: activations of type 'tensor<32x!circuit.q8_1>' are not differentiated (f32 only)}}
  %y = circuit.matmul %q, %w : tensor<32x!circuit.q8_1>, tensor<4x32x!circuit.q8_0> -> tensor<4xf32>
  circuit.output %y : tensor<4xf32>
}

// -----

circuit.graph @no_rule(%s: tensor<4xf32> {circuit.name = "s"}) -> tensor<4xf32> {
  %y = circuit.map ins(%s : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%lane: i32, %v: f32):
    // expected-error @+1 {{circuit-autodiff: no derivative rule for this op}}
    %r = exp.rem %v, %v : f32
    circuit.yield %r : f32
  }
  circuit.output %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{circuit-autodiff: no argument named 's'}}
circuit.graph @unnamed(%x: tensor<4xf32>) -> tensor<4xf32> {
  circuit.output %x : tensor<4xf32>
}

// -----

circuit.graph @attention(%q: tensor<16xf32> {circuit.name = "s"}, %k: tensor<64xf32>, %v: tensor<64xf32>, %pos: tensor<1xi32>) -> tensor<16xf32> {
  // expected-error @+1 {{circuit-autodiff: no vector-Jacobian rule for this primitive}}
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 2 : i64, head_dim = 8 : i64, scale = 0.35 : f32} : tensor<16xf32>, tensor<64xf32>, tensor<64xf32>, tensor<1xi32> -> tensor<16xf32>
  circuit.output %o : tensor<16xf32>
}

// -----

// expected-error @+1 {{circuit-autodiff: argument #0 of type 'tensor<4xi32>' cannot be differentiated (f32 only)}}
circuit.graph @integer(%s: tensor<4xi32> {circuit.name = "s"}) -> tensor<4xi32> {
  circuit.output %s : tensor<4xi32>
}
