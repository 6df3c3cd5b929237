// RUN: hesper-opt %s -split-input-file -circuit-cse-quantize | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-cse-quantize: two quantizations of one tensor to one format become
// one. The first RUN checks the pass alone; the second fuses each graph with
// the whole hesper-fuse pipeline (which also merges the two matmuls of one
// activation) and compares it with its source in the reference interpreter.

// Two q8_1 quantizations of %x, each feeding a matmul: the second matmul
// reads the first quantization.

// CHECK-LABEL: circuit.graph @same_tensor_same_format(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[WA:.*]]: tensor<64x256x!circuit.q4_k>, %[[WB:.*]]: tensor<32x256x!circuit.q8_0>)
// CHECK-NEXT:    %[[Q:.*]] = circuit.quantize %[[X]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK-NEXT:    %[[A:.*]] = circuit.matmul %[[Q]], %[[WA]] : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
// CHECK-NEXT:    %[[B:.*]] = circuit.matmul %[[Q]], %[[WB]] : tensor<256x!circuit.q8_1>, tensor<32x256x!circuit.q8_0> -> tensor<32xf32>
// CHECK-NEXT:    circuit.output %[[A]], %[[B]] : tensor<64xf32>, tensor<32xf32>
// VALID: graph @same_tensor_same_format: 4 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @same_tensor_same_format(%x: tensor<256xf32>, %wa: tensor<64x256x!circuit.q4_k>, %wb: tensor<32x256x!circuit.q8_0>) -> (tensor<64xf32>, tensor<32xf32>) {
  %qa = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %a = circuit.matmul %qa, %wa : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
  %qb = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %b = circuit.matmul %qb, %wb : tensor<256x!circuit.q8_1>, tensor<32x256x!circuit.q8_0> -> tensor<32xf32>
  circuit.output %a, %b : tensor<64xf32>, tensor<32xf32>
}

// -----

// Three quantizations of one rank-2 f16 tensor, all graph results: one.

// CHECK-LABEL: circuit.graph @three_graph_results(
// CHECK-SAME:    %[[X:.*]]: tensor<2x64xf16>)
// CHECK-NEXT:    %[[Q:.*]] = circuit.quantize %[[X]] : tensor<2x64xf16> -> tensor<2x64x!circuit.q8_1>
// CHECK-NEXT:    circuit.output %[[Q]], %[[Q]], %[[Q]] : tensor<2x64x!circuit.q8_1>, tensor<2x64x!circuit.q8_1>, tensor<2x64x!circuit.q8_1>
// VALID: graph @three_graph_results: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @three_graph_results(%x: tensor<2x64xf16>) -> (tensor<2x64x!circuit.q8_1>, tensor<2x64x!circuit.q8_1>, tensor<2x64x!circuit.q8_1>) {
  %a = circuit.quantize %x : tensor<2x64xf16> -> tensor<2x64x!circuit.q8_1>
  %b = circuit.quantize %x : tensor<2x64xf16> -> tensor<2x64x!circuit.q8_1>
  %c = circuit.quantize %x : tensor<2x64xf16> -> tensor<2x64x!circuit.q8_1>
  circuit.output %a, %b, %c : tensor<2x64x!circuit.q8_1>, tensor<2x64x!circuit.q8_1>, tensor<2x64x!circuit.q8_1>
}

// -----

// Not merged: q8_0 and q8_1 are different formats.

// CHECK-LABEL: circuit.graph @different_formats(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>)
// CHECK-NEXT:    %[[A:.*]] = circuit.quantize %[[X]] : tensor<256xf32> -> tensor<256x!circuit.q8_0>
// CHECK-NEXT:    %[[B:.*]] = circuit.quantize %[[X]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK-NEXT:    circuit.output %[[A]], %[[B]] : tensor<256x!circuit.q8_0>, tensor<256x!circuit.q8_1>
// VALID: graph @different_formats: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @different_formats(%x: tensor<256xf32>) -> (tensor<256x!circuit.q8_0>, tensor<256x!circuit.q8_1>) {
  %a = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_0>
  %b = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %a, %b : tensor<256x!circuit.q8_0>, tensor<256x!circuit.q8_1>
}

// -----

// Not merged: quantizations of two different tensors.

// CHECK-LABEL: circuit.graph @different_tensors(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[Y:.*]]: tensor<256xf32>)
// CHECK-NEXT:    %[[A:.*]] = circuit.quantize %[[X]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK-NEXT:    %[[B:.*]] = circuit.quantize %[[Y]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK-NEXT:    circuit.output %[[A]], %[[B]] : tensor<256x!circuit.q8_1>, tensor<256x!circuit.q8_1>
// VALID: graph @different_tensors: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @different_tensors(%x: tensor<256xf32>, %y: tensor<256xf32>) -> (tensor<256x!circuit.q8_1>, tensor<256x!circuit.q8_1>) {
  %a = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %b = circuit.quantize %y : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %a, %b : tensor<256x!circuit.q8_1>, tensor<256x!circuit.q8_1>
}

// -----

// Not merged: two versions of one buffer, before and after an in-place
// write into it.

// CHECK-LABEL: circuit.graph @buffer_versions(
// CHECK-SAME:    %[[BUF:.*]]: tensor<64xf32>, %[[Z:.*]]: tensor<32xf32>)
// CHECK-NEXT:    %[[A:.*]] = circuit.quantize %[[BUF]] : tensor<64xf32> -> tensor<64x!circuit.q8_1>
// CHECK-NEXT:    %[[B1:.*]] = circuit.scatter grid(32) ins(%[[Z]] : tensor<32xf32>) into %[[BUF]] : tensor<64xf32> {
// CHECK:         %[[B:.*]] = circuit.quantize %[[B1]] : tensor<64xf32> -> tensor<64x!circuit.q8_1>
// CHECK-NEXT:    circuit.output %[[A]], %[[B]] : tensor<64x!circuit.q8_1>, tensor<64x!circuit.q8_1>
// VALID: graph @buffer_versions: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @buffer_versions(%buf: tensor<64xf32>, %z: tensor<32xf32>) -> (tensor<64x!circuit.q8_1>, tensor<64x!circuit.q8_1>) {
  %a = circuit.quantize %buf : tensor<64xf32> -> tensor<64x!circuit.q8_1>
  %b1 = circuit.scatter grid(32) ins(%z : tensor<32xf32>) into %buf : tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %b = circuit.quantize %b1 : tensor<64xf32> -> tensor<64x!circuit.q8_1>
  circuit.output %a, %b : tensor<64x!circuit.q8_1>, tensor<64x!circuit.q8_1>
}
