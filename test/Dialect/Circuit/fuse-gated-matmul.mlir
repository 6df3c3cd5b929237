// RUN: hesper-opt %s -split-input-file -circuit-fuse-gated-matmul | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-fuse-gated-matmul: a map of two matmuls of the same activations
// becomes one circuit.gated_matmul whose combine body is the map's body.
// Every case is also validated in the reference interpreter against the
// hesper-fuse pipeline (VALID).

// SwiGLU's silu(gate) * up with gate in q8_0 and up in f16.
// CHECK-LABEL: circuit.graph @swiglu(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>, %[[WG:.*]]: tensor<96x64x!circuit.q8_0>, %[[WU:.*]]: tensor<96x64xf16>)
// CHECK-NOT:     circuit.matmul
// CHECK-NOT:     circuit.map
// CHECK:         %[[H:.*]] = circuit.gated_matmul %[[X]], %[[WG]], %[[WU]] : tensor<64xf32>, tensor<96x64x!circuit.q8_0>, tensor<96x64xf16> -> tensor<96xf32> combine {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[G:.*]]: f32, %[[U:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = exp.silu %[[G]] : f32
// CHECK-NEXT:      %[[P:.*]] = exp.mul %[[S]], %[[U]] : f32
// CHECK-NEXT:      circuit.yield %[[P]] : f32
// CHECK:         circuit.output %[[H]]
// VALID: graph @swiglu: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @swiglu(%x: tensor<64xf32>, %wg: tensor<96x64x!circuit.q8_0>,
                      %wu: tensor<96x64xf16>) -> tensor<96xf32> {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<96x64x!circuit.q8_0> -> tensor<96xf32>
  %u = circuit.matmul %x, %wu : tensor<64xf32>, tensor<96x64xf16> -> tensor<96xf32>
  %h = circuit.map ins(%g, %u : tensor<96xf32>, tensor<96xf32>) -> tensor<96xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %p = exp.mul %s, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<96xf32>
}

// -----

// The map's input order decides which weight is which: up first here.
// CHECK-LABEL: circuit.graph @swapped(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>, %[[WG:.*]]: tensor<32x64xf32>, %[[WU:.*]]: tensor<32x64xf32>)
// CHECK:         circuit.gated_matmul %[[X]], %[[WU]], %[[WG]]
// VALID: graph @swapped: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @swapped(%x: tensor<64xf32>, %wg: tensor<32x64xf32>,
                       %wu: tensor<32x64xf32>) -> tensor<32xf32> {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %u = circuit.matmul %x, %wu : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %h = circuit.map ins(%u, %g : tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.gelu %b : f32
    %p = exp.mul %s, %a : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<32xf32>
}

// -----

// Not fused: the matmuls read different activations.
// CHECK-LABEL: circuit.graph @different_x(
// CHECK-NOT:     circuit.gated_matmul
// CHECK:         circuit.map
circuit.graph @different_x(%x: tensor<64xf32>, %y: tensor<64xf32>,
                           %wg: tensor<32x64xf32>, %wu: tensor<32x64xf32>) -> tensor<32xf32> {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %u = circuit.matmul %y, %wu : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %h = circuit.map ins(%g, %u : tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %p = exp.mul %a, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<32xf32>
}

// -----

// Not fused: a product has another user (it must be stored anyway).
// CHECK-LABEL: circuit.graph @second_user(
// CHECK-NOT:     circuit.gated_matmul
// CHECK:         circuit.map
circuit.graph @second_user(%x: tensor<64xf32>, %wg: tensor<32x64xf32>,
                           %wu: tensor<32x64xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %u = circuit.matmul %x, %wu : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %h = circuit.map ins(%g, %u : tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %p = exp.mul %a, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h, %g : tensor<32xf32>, tensor<32xf32>
}

// -----

// Not fused: a matmul has an epilogue (its stored value is not the product).
// CHECK-LABEL: circuit.graph @epilogue(
// CHECK-NOT:     circuit.gated_matmul
// CHECK:         circuit.map
circuit.graph @epilogue(%x: tensor<64xf32>, %wg: tensor<32x64xf32>,
                        %wu: tensor<32x64xf32>) -> tensor<32xf32> {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32):
    %t = exp.tanh %acc : f32
    circuit.yield %t : f32
  }
  %u = circuit.matmul %x, %wu : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %h = circuit.map ins(%g, %u : tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %p = exp.mul %a, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<32xf32>
}

// -----

// Not fused: the map has a third input.
// CHECK-LABEL: circuit.graph @three_inputs(
// CHECK-NOT:     circuit.gated_matmul
// CHECK:         circuit.map
circuit.graph @three_inputs(%x: tensor<64xf32>, %wg: tensor<32x64xf32>,
                            %wu: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<32xf32> {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %u = circuit.matmul %x, %wu : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %h = circuit.map ins(%g, %u, %b : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %a: f32, %c: f32, %d: f32):
    %p = exp.mul %a, %c : f32
    %q = exp.add %p, %d : f32
    circuit.yield %q : f32
  }
  circuit.output %h : tensor<32xf32>
}

// -----

// Not fused: the map reads one product whole (another lane's element).
// CHECK-LABEL: circuit.graph @whole(
// CHECK-NOT:     circuit.gated_matmul
// CHECK:         circuit.map
circuit.graph @whole(%x: tensor<64xf32>, %wg: tensor<32x64xf32>,
                     %wu: tensor<32x64xf32>) -> tensor<32xf32> {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %u = circuit.matmul %x, %wu : tensor<64xf32>, tensor<32x64xf32> -> tensor<32xf32>
  %h = circuit.map ins(%g, %u : tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %a: tensor<32xf32>, %b: f32):
    %c31 = exp.constant 31 : i32
    %r = exp.sub %c31, %lane : i32
    %e = circuit.extract %a[%r] : tensor<32xf32>
    %p = exp.mul %e, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<32xf32>
}

// -----

// Not fused: the weight the earlier matmul reads is written in place
// before the map (moving the read to the map would see the new values).
// CHECK-LABEL: circuit.graph @hazard(
// CHECK-NOT:     circuit.gated_matmul
// CHECK:         circuit.map
circuit.graph @hazard(%x: tensor<4xf32>, %wg: tensor<2x4xf32>,
                      %wu: tensor<2x4xf32>) -> tensor<2xf32> {
  %g = circuit.matmul %x, %wg : tensor<4xf32>, tensor<2x4xf32> -> tensor<2xf32>
  %w2 = circuit.scatter grid(8) into %wg : tensor<2x4xf32> {
  ^bb0(%lane: i32):
    %one = exp.constant 1.0 : f32
    circuit.yield %lane, %one : i32, f32
  }
  %u = circuit.matmul %x, %wu : tensor<4xf32>, tensor<2x4xf32> -> tensor<2xf32>
  %h = circuit.map ins(%g, %u : tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %p = exp.mul %a, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<2xf32>
}

// -----

// Two expert_matmuls of the same activations and experts: one
// expert_matmul of both weights, the map's body as its combine body.
// CHECK-LABEL: circuit.graph @experts(
// CHECK-SAME:    %[[X:.*]]: tensor<2x64xf32>, %[[IDS:.*]]: tensor<2x2xi32>, %[[WG:.*]]: tensor<4x32x64x!circuit.q8_0>, %[[WU:.*]]: tensor<4x32x64xf16>)
// CHECK-NOT:     circuit.map
// CHECK:         %[[H:.*]] = circuit.expert_matmul %[[X]], %[[IDS]], %[[WG]], %[[WU]] : tensor<2x64xf32>, tensor<2x2xi32>, tensor<4x32x64x!circuit.q8_0>, tensor<4x32x64xf16> -> tensor<2x2x32xf32> combine {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[G:.*]]: f32, %[[U:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = exp.silu %[[G]] : f32
// CHECK-NEXT:      %[[P:.*]] = exp.mul %[[S]], %[[U]] : f32
// CHECK:         circuit.output %[[H]]
// VALID: graph @experts: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @experts(%x: tensor<2x64xf32>, %ids: tensor<2x2xi32>,
                       %wg: tensor<4x32x64x!circuit.q8_0>,
                       %wu: tensor<4x32x64xf16>) -> tensor<2x2x32xf32> {
  %g = circuit.expert_matmul %x, %ids, %wg : tensor<2x64xf32>, tensor<2x2xi32>, tensor<4x32x64x!circuit.q8_0> -> tensor<2x2x32xf32>
  %u = circuit.expert_matmul %x, %ids, %wu : tensor<2x64xf32>, tensor<2x2xi32>, tensor<4x32x64xf16> -> tensor<2x2x32xf32>
  %h = circuit.map ins(%g, %u : tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<2x2x32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %p = exp.mul %s, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<2x2x32xf32>
}

// -----

// Not fused: the two products choose their experts by different ids.
// CHECK-LABEL: circuit.graph @experts_other_ids(
// CHECK-NOT:     combine
// CHECK:         circuit.map
// VALID: graph @experts_other_ids: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @experts_other_ids(%x: tensor<64xf32>, %ids: tensor<2xi32>,
                                 %other: tensor<2xi32>,
                                 %wg: tensor<4x32x64xf32>,
                                 %wu: tensor<4x32x64xf32>) -> tensor<2x32xf32> {
  %g = circuit.expert_matmul %x, %ids, %wg : tensor<64xf32>, tensor<2xi32>, tensor<4x32x64xf32> -> tensor<2x32xf32>
  %u = circuit.expert_matmul %x, %other, %wu : tensor<64xf32>, tensor<2xi32>, tensor<4x32x64xf32> -> tensor<2x32xf32>
  %h = circuit.map ins(%g, %u : tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %p = exp.mul %a, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<2x32xf32>
}
