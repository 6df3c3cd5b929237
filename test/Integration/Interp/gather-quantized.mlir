// Embedding lookups from quantized tables: row `id` of a q8_0, q4_k and
// q6_k table, decoded by the gather. On the interpreter the rows match the
// tables' own dequantization (the validation compares against an unfused
// copy); on Vulkan every element matches the interpreter.
//
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID
// VALID: graph @q8_0: 1 -> 1 dispatches, {{.*}}: ok
// VALID: graph @q4_k: 1 -> 1 dispatches, {{.*}}: ok
// VALID: graph @q6_k: 1 -> 1 dispatches, {{.*}}: ok

circuit.graph @q8_0(%t: tensor<8x64x!circuit.q8_0> {circuit.name = "t"},
                    %id: tensor<1xi32> {circuit.name = "id"}) -> tensor<64xf32> {
  %g = circuit.gather %t ins(%id : tensor<1xi32>) : tensor<8x64x!circuit.q8_0> -> tensor<64xf32> {
  ^bb0(%lane: i32, %i: i32):
    %c64 = exp.constant 64 : i32
    %row = exp.mul %i, %c64 : i32
    %a = exp.add %row, %lane : i32
    circuit.yield %a : i32
  }
  circuit.output %g : tensor<64xf32>
}

// -----

circuit.graph @q4_k(%t: tensor<4x512x!circuit.q4_k> {circuit.name = "t"},
                    %id: tensor<1xi32> {circuit.name = "id"}) -> tensor<512xf32> {
  %g = circuit.gather %t ins(%id : tensor<1xi32>) : tensor<4x512x!circuit.q4_k> -> tensor<512xf32> {
  ^bb0(%lane: i32, %i: i32):
    %c512 = exp.constant 512 : i32
    %row = exp.mul %i, %c512 : i32
    %a = exp.add %row, %lane : i32
    circuit.yield %a : i32
  }
  circuit.output %g : tensor<512xf32>
}

// -----

circuit.graph @q6_k(%t: tensor<3x512x!circuit.q6_k> {circuit.name = "t"},
                    %id: tensor<1xi32> {circuit.name = "id"}) -> tensor<512xf32> {
  %g = circuit.gather %t ins(%id : tensor<1xi32>) : tensor<3x512x!circuit.q6_k> -> tensor<512xf32> {
  ^bb0(%lane: i32, %i: i32):
    %c512 = exp.constant 512 : i32
    %row = exp.mul %i, %c512 : i32
    %a = exp.add %row, %lane : i32
    circuit.yield %a : i32
  }
  circuit.output %g : tensor<512xf32>
}
