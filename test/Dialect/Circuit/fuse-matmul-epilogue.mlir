// RUN: hesper-opt %s -split-input-file -circuit-fuse-matmul-epilogue | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-fuse-matmul-epilogue: map(matmul(x, w), extra...) becomes one
// matmul whose epilogue runs the map's body on the accumulator. The first RUN
// checks the rewrite of the pass alone; the second fuses each graph with the
// whole hesper-fuse pipeline and compares it with its source in the reference
// interpreter (dispatch counts before -> after, and `ok` for equal results).

//===----------------------------------------------------------------------===//
// Fused
//===----------------------------------------------------------------------===//

// Bias and GELU after a q4_k matvec: one matmul whose epilogue adds the bias
// (now an epilogue input) and applies GELU.

// CHECK-LABEL: circuit.graph @matmul_bias_gelu(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<64x256x!circuit.q4_k>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] ins(%[[B]] : tensor<64xf32>) : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32, %[[BIAS:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[ACC]], %[[BIAS]] : f32
// CHECK-NEXT:      %[[G:.*]] = exp.gelu %[[S]] : f32
// CHECK-NEXT:      circuit.yield %[[G]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<64xf32>
// VALID: graph @matmul_bias_gelu: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @matmul_bias_gelu(%x: tensor<256xf32>, %w: tensor<64x256x!circuit.q4_k>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
  %r = circuit.map ins(%y, %b : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    %s = exp.add %acc, %bias : f32
    %g = exp.gelu %s : f32
    circuit.yield %g : f32
  }
  circuit.output %r : tensor<64xf32>
}

// -----

// Epilogues compose: a matmul that already scales its accumulator, then a
// bias map (reading the matmul as its second input), then a SiLU map. The
// matmul's own epilogue runs first, its inputs first.

// CHECK-LABEL: circuit.graph @epilogues_compose(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<64x256xf16>, %[[S:.*]]: tensor<1xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] ins(%[[S]], %[[B]] : tensor<1xf32>, tensor<64xf32>) : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32, %[[SCALE:.*]]: f32, %[[BIAS:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[ACC]], %[[SCALE]] : f32
// CHECK-NEXT:      %[[A:.*]] = exp.add %[[M]], %[[BIAS]] : f32
// CHECK-NEXT:      %[[G:.*]] = exp.silu %[[A]] : f32
// CHECK-NEXT:      circuit.yield %[[G]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<64xf32>
// VALID: graph @epilogues_compose: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @epilogues_compose(%x: tensor<256xf32>, %w: tensor<64x256xf16>, %s: tensor<1xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %y = circuit.matmul %x, %w ins(%s : tensor<1xf32>) : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %scale: f32):
    %m = exp.mul %acc, %scale : f32
    circuit.yield %m : f32
  }
  %z = circuit.map ins(%b, %y : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %bias: f32, %v: f32):
    %a = exp.add %v, %bias : f32
    circuit.yield %a : f32
  }
  %r = circuit.map ins(%z : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %g = exp.silu %v : f32
    circuit.yield %g : f32
  }
  circuit.output %r : tensor<64xf32>
}

// -----

// A residual add over a rank-2 q8_0 matmul: the residual becomes the
// epilogue's extra input, in the map's operand order.

// CHECK-LABEL: circuit.graph @residual_add(
// CHECK-SAME:    %[[X:.*]]: tensor<4x256xf32>, %[[W:.*]]: tensor<32x256x!circuit.q8_0>, %[[RES:.*]]: tensor<4x32xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] ins(%[[RES]] : tensor<4x32xf32>) : tensor<4x256xf32>, tensor<32x256x!circuit.q8_0> -> tensor<4x32xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32, %[[R:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[R]], %[[ACC]] : f32
// CHECK-NEXT:      circuit.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<4x32xf32>
// VALID: graph @residual_add: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @residual_add(%x: tensor<4x256xf32>, %w: tensor<32x256x!circuit.q8_0>, %res: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %y = circuit.matmul %x, %w : tensor<4x256xf32>, tensor<32x256x!circuit.q8_0> -> tensor<4x32xf32>
  %r = circuit.map ins(%res, %y : tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.add %a, %b : f32
    circuit.yield %s : f32
  }
  circuit.output %r : tensor<4x32xf32>
}

// -----

// q8_1 activations times q8_0 weights, then a map that scales and stores
// f16: the fused matmul takes the map's result type. The quantize stays.

// CHECK-LABEL: circuit.graph @quantized_f16_result(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<64x256x!circuit.q8_0>)
// CHECK-NEXT:    %[[Q:.*]] = circuit.quantize %[[X]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[Q]], %[[W]] : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q8_0> -> tensor<64xf16> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[HALF:.*]] = exp.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[ACC]], %[[HALF]] : f32
// CHECK-NEXT:      %[[H:.*]] = exp.convert %[[M]] : f32 to f16
// CHECK-NEXT:      circuit.yield %[[H]] : f16
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<64xf16>
// VALID: graph @quantized_f16_result: 3 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @quantized_f16_result(%x: tensor<256xf32>, %w: tensor<64x256x!circuit.q8_0>) -> tensor<64xf16> {
  %q = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q8_0> -> tensor<64xf32>
  %r = circuit.map ins(%y : tensor<64xf32>) -> tensor<64xf16> {
  ^bb0(%lane: i32, %a: f32):
    %half = exp.constant 0.5 : f32
    %m = exp.mul %a, %half : f32
    %h = exp.convert %m : f32 to f16
    circuit.yield %h : f16
  }
  circuit.output %r : tensor<64xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Not fused: one case per legality rule
//===----------------------------------------------------------------------===//

// The matmul result has another user (a graph result).

// CHECK-LABEL: circuit.graph @two_users(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<64x256x!circuit.q4_k>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>{{$}}
// CHECK-NEXT:    %[[R:.*]] = circuit.map ins(%[[Y]] : tensor<64xf32>) -> tensor<64xf32> {
// CHECK:         circuit.output %[[Y]], %[[R]] : tensor<64xf32>, tensor<64xf32>
// VALID: graph @two_users: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @two_users(%x: tensor<256xf32>, %w: tensor<64x256x!circuit.q4_k>) -> (tensor<64xf32>, tensor<64xf32>) {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
  %r = circuit.map ins(%y : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32):
    %g = exp.gelu %a : f32
    circuit.yield %g : f32
  }
  circuit.output %y, %r : tensor<64xf32>, tensor<64xf32>
}

// -----

// The map iterates over [4, 32], reading the [32] matmul result through a
// broadcast: not the matmul's result shape.

// CHECK-LABEL: circuit.graph @other_shape(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<32x256xf32>, %[[H:.*]]: tensor<4x32xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32>{{$}}
// CHECK-NEXT:    %[[R:.*]] = circuit.map ins(%[[H]], %[[Y]] : tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32> {
// CHECK:         circuit.output %[[R]] : tensor<4x32xf32>
// VALID: graph @other_shape: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @other_shape(%x: tensor<256xf32>, %w: tensor<32x256xf32>, %h: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32>
  %r = circuit.map ins(%h, %y : tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  circuit.output %r : tensor<4x32xf32>
}

// -----

// The map takes the matmul result whole and reads it at computed indices.

// CHECK-LABEL: circuit.graph @reads_whole(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<32x256xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32>{{$}}
// CHECK-NEXT:    %[[R:.*]] = circuit.map ins(%[[Y]] : tensor<32xf32>) -> tensor<32xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ALL:.*]]: tensor<32xf32>):
// CHECK:           circuit.extract %[[ALL]][%{{.*}}] : tensor<32xf32>
// CHECK:         circuit.output %[[R]] : tensor<32xf32>
// VALID: graph @reads_whole: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reads_whole(%x: tensor<256xf32>, %w: tensor<32x256xf32>) -> tensor<32xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32>
  %r = circuit.map ins(%y : tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %all: tensor<32xf32>):
    %c31 = exp.constant 31 : i32
    %i = exp.sub %c31, %lane : i32
    %v = circuit.extract %all[%i] : tensor<32xf32>
    circuit.yield %v : f32
  }
  circuit.output %r : tensor<32xf32>
}

// -----

// The matmul's activations %x are written in place between the matmul and
// the map: the fused matmul, at the map's position, would read the new %x.

// CHECK-LABEL: circuit.graph @x_written_between(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>, %[[W:.*]]: tensor<16x64xf32>, %[[Z:.*]]: tensor<64xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] : tensor<64xf32>, tensor<16x64xf32> -> tensor<16xf32>{{$}}
// CHECK-NEXT:    circuit.scatter grid(64) ins(%[[Z]] : tensor<64xf32>) into %[[X]] : tensor<64xf32> {
// CHECK:         %[[R:.*]] = circuit.map ins(%[[Y]] : tensor<16xf32>) -> tensor<16xf32> {
// CHECK:         circuit.output %[[R]] : tensor<16xf32>
// VALID: graph @x_written_between: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @x_written_between(%x: tensor<64xf32>, %w: tensor<16x64xf32>, %z: tensor<64xf32>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<64xf32>, tensor<16x64xf32> -> tensor<16xf32>
  %x1 = circuit.scatter grid(64) ins(%z : tensor<64xf32>) into %x : tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %r = circuit.map ins(%y : tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%lane: i32, %a: f32):
    %g = exp.gelu %a : f32
    circuit.yield %g : f32
  }
  circuit.output %r : tensor<16xf32>
}

// -----

// A matmul result is a float: a map to i32 is not an epilogue.

// CHECK-LABEL: circuit.graph @integer_result(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<32x256xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32>{{$}}
// CHECK-NEXT:    %[[R:.*]] = circuit.map ins(%[[Y]] : tensor<32xf32>) -> tensor<32xi32> {
// CHECK:         circuit.output %[[R]] : tensor<32xi32>
// VALID: graph @integer_result: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @integer_result(%x: tensor<256xf32>, %w: tensor<32x256xf32>) -> tensor<32xi32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32>
  %r = circuit.map ins(%y : tensor<32xf32>) -> tensor<32xi32> {
  ^bb0(%lane: i32, %a: f32):
    %i = exp.convert %a : f32 to i32
    circuit.yield %i : i32
  }
  circuit.output %r : tensor<32xi32>
}
