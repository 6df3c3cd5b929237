// RUN: hesper-opt %s -split-input-file -circuit-merge-same-dispatch | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-merge-same-dispatch: matmuls (and multi_matmuls) of the same
// activation tensor become one circuit.multi_matmul at the later one's
// position, whatever their weight formats. Every case is also validated in
// the reference interpreter against the hesper-fuse pipeline (VALID).

//===----------------------------------------------------------------------===//
// Merged
//===----------------------------------------------------------------------===//

// Q, K and V of one x, with q4_k, q8_0 and f16 weights of different row
// counts: one multi_matmul with three results, each with an empty epilogue.

// CHECK-LABEL: circuit.graph @qkv(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[WQ:.*]]: tensor<256x256x!circuit.q4_k>, %[[WK:.*]]: tensor<64x256x!circuit.q8_0>, %[[WV:.*]]: tensor<64x256xf16>)
// CHECK-NOT:     circuit.matmul
// CHECK:         %[[R:.*]]:3 = circuit.multi_matmul %[[X]], %[[WQ]], %[[WK]], %[[WV]] : tensor<256xf32>, tensor<256x256x!circuit.q4_k>, tensor<64x256x!circuit.q8_0>, tensor<64x256xf16> -> tensor<256xf32>, tensor<64xf32>, tensor<64xf32> epilogues {
// CHECK-NEXT:    }, {
// CHECK-NEXT:    }, {
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<256xf32>, tensor<64xf32>, tensor<64xf32>
// VALID: graph @qkv: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @qkv(%x: tensor<256xf32>, %wq: tensor<256x256x!circuit.q4_k>,
                   %wk: tensor<64x256x!circuit.q8_0>, %wv: tensor<64x256xf16>)
    -> (tensor<256xf32>, tensor<64xf32>, tensor<64xf32>) {
  %q = circuit.matmul %x, %wq
      : tensor<256xf32>, tensor<256x256x!circuit.q4_k> -> tensor<256xf32>
  %k = circuit.matmul %x, %wk
      : tensor<256xf32>, tensor<64x256x!circuit.q8_0> -> tensor<64xf32>
  %v = circuit.matmul %x, %wv
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  circuit.output %q, %k, %v : tensor<256xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// Gate and up of rank-2 q8_1 activations, q6_k and q4_k weights, an f32 and
// an f16 result.

// CHECK-LABEL: circuit.graph @gate_up(
// CHECK-SAME:    %[[X:.*]]: tensor<4x256x!circuit.q8_1>, %[[WG:.*]]: tensor<128x256x!circuit.q6_k>, %[[WU:.*]]: tensor<128x256x!circuit.q4_k>)
// CHECK-NOT:     circuit.matmul
// CHECK:         %[[R:.*]]:2 = circuit.multi_matmul %[[X]], %[[WG]], %[[WU]] : tensor<4x256x!circuit.q8_1>, tensor<128x256x!circuit.q6_k>, tensor<128x256x!circuit.q4_k> -> tensor<4x128xf32>, tensor<4x128xf16> epilogues {
// CHECK-NEXT:    }, {
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]]#0, %[[R]]#1 : tensor<4x128xf32>, tensor<4x128xf16>
// VALID: graph @gate_up: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gate_up(%x: tensor<4x256x!circuit.q8_1>,
                       %wg: tensor<128x256x!circuit.q6_k>,
                       %wu: tensor<128x256x!circuit.q4_k>)
    -> (tensor<4x128xf32>, tensor<4x128xf16>) {
  %g = circuit.matmul %x, %wg
      : tensor<4x256x!circuit.q8_1>, tensor<128x256x!circuit.q6_k>
      -> tensor<4x128xf32>
  %u = circuit.matmul %x, %wu
      : tensor<4x256x!circuit.q8_1>, tensor<128x256x!circuit.q4_k>
      -> tensor<4x128xf16>
  circuit.output %g, %u : tensor<4x128xf32>, tensor<4x128xf16>
}

// -----

// A multi_matmul followed by a matmul of the same x: its weights first.

// CHECK-LABEL: circuit.graph @multi_then_matmul(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[WQ:.*]]: tensor<64x256x!circuit.q8_0>, %[[WK:.*]]: tensor<32x256xf16>, %[[WV:.*]]: tensor<32x256x!circuit.q6_k>)
// CHECK-NOT:     circuit.matmul
// CHECK:         %[[R:.*]]:3 = circuit.multi_matmul %[[X]], %[[WQ]], %[[WK]], %[[WV]] : tensor<256xf32>, tensor<64x256x!circuit.q8_0>, tensor<32x256xf16>, tensor<32x256x!circuit.q6_k> -> tensor<64xf32>, tensor<32xf32>, tensor<32xf32> epilogues {
// CHECK-NOT:     circuit.matmul
// CHECK:         circuit.output %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<64xf32>, tensor<32xf32>, tensor<32xf32>
// VALID: graph @multi_then_matmul: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @multi_then_matmul(%x: tensor<256xf32>,
                                 %wq: tensor<64x256x!circuit.q8_0>,
                                 %wk: tensor<32x256xf16>,
                                 %wv: tensor<32x256x!circuit.q6_k>)
    -> (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>) {
  %q, %k = circuit.multi_matmul %x, %wq, %wk
      : tensor<256xf32>, tensor<64x256x!circuit.q8_0>, tensor<32x256xf16>
      -> tensor<64xf32>, tensor<32xf32> epilogues {
  }, {
  }
  %v = circuit.matmul %x, %wv
      : tensor<256xf32>, tensor<32x256x!circuit.q6_k> -> tensor<32xf32>
  circuit.output %q, %k, %v : tensor<64xf32>, tensor<32xf32>, tensor<32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Not merged
//===----------------------------------------------------------------------===//

// Different activations.

// CHECK-LABEL: circuit.graph @different_activations(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[Y:.*]]: tensor<256xf32>, %[[WA:.*]]: tensor<64x256xf16>, %[[WB:.*]]: tensor<64x256xf16>)
// CHECK:         circuit.matmul %[[X]], %[[WA]]
// CHECK:         circuit.matmul %[[Y]], %[[WB]]
// CHECK-NOT:     circuit.multi_matmul
// VALID: graph @different_activations: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @different_activations(%x: tensor<256xf32>, %y: tensor<256xf32>,
                                     %wa: tensor<64x256xf16>,
                                     %wb: tensor<64x256xf16>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %a = circuit.matmul %x, %wa
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  %b = circuit.matmul %y, %wb
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  circuit.output %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

// The earlier matmul's epilogue takes an extra input (a bias).

// CHECK-LABEL: circuit.graph @epilogue_with_inputs(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[WA:.*]]: tensor<64x256xf16>, %[[WB:.*]]: tensor<64x256xf16>, %[[BIAS:.*]]: tensor<64xf32>)
// CHECK:         circuit.matmul %[[X]], %[[WA]] ins(%[[BIAS]] : tensor<64xf32>)
// CHECK:         circuit.matmul %[[X]], %[[WB]]
// CHECK-NOT:     circuit.multi_matmul
// VALID: graph @epilogue_with_inputs: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @epilogue_with_inputs(%x: tensor<256xf32>,
                                    %wa: tensor<64x256xf16>,
                                    %wb: tensor<64x256xf16>,
                                    %bias: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %a = circuit.matmul %x, %wa ins(%bias : tensor<64xf32>)
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %bb: f32):
    %s = exp.add %acc, %bb : f32
    circuit.yield %s : f32
  }
  %b = circuit.matmul %x, %wb
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  circuit.output %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

// The later matmul's x is the earlier one's result.

// CHECK-LABEL: circuit.graph @result_as_x(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[WA:.*]]: tensor<256x256xf16>, %[[WB:.*]]: tensor<64x256xf16>)
// CHECK:         %[[A:.*]] = circuit.matmul %[[X]], %[[WA]]
// CHECK:         circuit.matmul %[[A]], %[[WB]]
// CHECK-NOT:     circuit.multi_matmul
// VALID: graph @result_as_x: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @result_as_x(%x: tensor<256xf32>, %wa: tensor<256x256xf16>,
                           %wb: tensor<64x256xf16>) -> tensor<64xf32> {
  %a = circuit.matmul %x, %wa
      : tensor<256xf32>, tensor<256x256xf16> -> tensor<256xf32>
  %b = circuit.matmul %a, %wb
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  circuit.output %b : tensor<64xf32>
}

// -----

// Same x, but the later matmul's weight is the earlier one's result: it
// depends on the earlier matmul.

// CHECK-LABEL: circuit.graph @result_as_weight(
// CHECK-SAME:    %[[X:.*]]: tensor<8x256xf32>, %[[WA:.*]]: tensor<256x256xf16>)
// CHECK:         %[[A:.*]] = circuit.matmul %[[X]], %[[WA]]
// CHECK:         circuit.matmul %[[X]], %[[A]]
// CHECK-NOT:     circuit.multi_matmul
// VALID: graph @result_as_weight: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @result_as_weight(%x: tensor<8x256xf32>,
                                %wa: tensor<256x256xf16>) -> tensor<8x8xf32> {
  %a = circuit.matmul %x, %wa
      : tensor<8x256xf32>, tensor<256x256xf16> -> tensor<8x256xf32>
  %b = circuit.matmul %x, %a
      : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x8xf32>
  circuit.output %b : tensor<8x8xf32>
}

// -----

// The earlier matmul's result is used in between (quantized for the next
// layer).

// CHECK-LABEL: circuit.graph @result_used_between(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[WA:.*]]: tensor<64x256xf16>, %[[WB:.*]]: tensor<64x256xf16>)
// CHECK:         %[[A:.*]] = circuit.matmul %[[X]], %[[WA]]
// CHECK:         circuit.quantize %[[A]]
// CHECK:         circuit.matmul %[[X]], %[[WB]]
// CHECK-NOT:     circuit.multi_matmul
// VALID: graph @result_used_between: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @result_used_between(%x: tensor<256xf32>,
                                   %wa: tensor<64x256xf16>,
                                   %wb: tensor<64x256xf16>)
    -> (tensor<64x!circuit.q8_1>, tensor<64xf32>) {
  %a = circuit.matmul %x, %wa
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  %qa = circuit.quantize %a : tensor<64xf32> -> tensor<64x!circuit.q8_1>
  %b = circuit.matmul %x, %wb
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  circuit.output %qa, %b : tensor<64x!circuit.q8_1>, tensor<64xf32>
}

// -----

// Hazard: the earlier matmul's weight is a graph argument that a scatter
// writes in place between the two. Delayed, the earlier matmul would read
// the updated weight.

// CHECK-LABEL: circuit.graph @write_between_into_weight(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[WA:.*]]: tensor<64x256xf16>, %[[WB:.*]]: tensor<64x256xf16>, %[[ROW:.*]]: tensor<256xf16>)
// CHECK:         circuit.matmul %[[X]], %[[WA]]
// CHECK:         circuit.scatter grid(256) ins(%[[ROW]] : tensor<256xf16>) into %[[WA]]
// CHECK:         circuit.matmul %[[X]], %[[WB]]
// CHECK-NOT:     circuit.multi_matmul
// VALID: graph @write_between_into_weight: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @write_between_into_weight(%x: tensor<256xf32>,
                                         %wa: tensor<64x256xf16>,
                                         %wb: tensor<64x256xf16>,
                                         %row: tensor<256xf16>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %a = circuit.matmul %x, %wa
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  %wa2 = circuit.scatter grid(256) ins(%row : tensor<256xf16>)
      into %wa : tensor<64x256xf16> {
  ^bb0(%lane: i32, %v: f16):
    circuit.yield %lane, %v : i32, f16
  }
  %b = circuit.matmul %x, %wb
      : tensor<256xf32>, tensor<64x256xf16> -> tensor<64xf32>
  circuit.output %a, %b : tensor<64xf32>, tensor<64xf32>
}
