// Prompt-chunk matmuls for the gemm_rows knob (knobs.test): a gated
// feed-forward of q8_0 weights (150 rows of x: one whole tile of 128 and a
// ragged one; 70 weight rows: ragged; K = 160, ten slices) and the f32
// projection after it (K = 70: not a multiple of 4, so staged one value at
// a time; 150 x 37).
circuit.graph @ffn(%x: tensor<150x160xf32> {circuit.name = "x"},
                   %wg: tensor<70x160x!circuit.q8_0> {circuit.name = "wg"},
                   %wu: tensor<70x160x!circuit.q8_0> {circuit.name = "wu"},
                   %wd: tensor<37x70xf32> {circuit.name = "wd"})
    -> tensor<150x37xf32> {
  %g = circuit.matmul %x, %wg : tensor<150x160xf32>, tensor<70x160x!circuit.q8_0> -> tensor<150x70xf32>
  %u = circuit.matmul %x, %wu : tensor<150x160xf32>, tensor<70x160x!circuit.q8_0> -> tensor<150x70xf32>
  %h = circuit.map ins(%g, %u : tensor<150x70xf32>, tensor<150x70xf32>) -> tensor<150x70xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %p = exp.mul %s, %b : f32
    circuit.yield %p : f32
  }
  %y = circuit.matmul %h, %wd : tensor<150x70xf32>, tensor<37x70xf32> -> tensor<150x37xf32>
  circuit.output %y : tensor<150x37xf32>
}
