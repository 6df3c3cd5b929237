// RUN: hesper-opt %s -split-input-file -cse | FileCheck %s

// Two fresh buffers are two allocations: CSE must not merge them, or both
// scatters would write one buffer version.
// CHECK-LABEL: circuit.graph @zeros_are_not_merged(
// CHECK:         %[[A:.*]] = circuit.zeros : tensor<8xf32>
// CHECK:         %[[B:.*]] = circuit.zeros : tensor<8xf32>
// CHECK:         circuit.scatter grid(8) ins(%{{.*}} : tensor<8xf32>) into %[[A]]
// CHECK:         circuit.scatter grid(8) ins(%{{.*}} : tensor<8xf32>) into %[[B]]
circuit.graph @zeros_are_not_merged(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = circuit.zeros : tensor<8xf32>
  %b = circuit.zeros : tensor<8xf32>
  %ra = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %a : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %rb = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %b : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output %ra, %rb : tensor<8xf32>, tensor<8xf32>
}

// -----

// Identical pure primitives are merged.
// CHECK-LABEL: circuit.graph @maps_are_merged(
// CHECK-COUNT-1: circuit.map
// CHECK-NOT:     circuit.map
circuit.graph @maps_are_merged(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %r = exp.mul %v, %v : f32
    circuit.yield %r : f32
  }
  %b = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %r = exp.mul %v, %v : f32
    circuit.yield %r : f32
  }
  circuit.output %a, %b : tensor<8xf32>, tensor<8xf32>
}
