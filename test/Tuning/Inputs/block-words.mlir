// q8_0 and q4_0 matvecs of 3 blocks a row (every other q8_0 block starts
// mid-word) and 37 weight rows, for the `block_words` knob.
circuit.graph @bw(%x: tensor<96xf32> {circuit.name = "x"},
                  %a: tensor<37x96x!circuit.q8_0> {circuit.name = "a"},
                  %b: tensor<37x96x!circuit.q4_0> {circuit.name = "b"})
    -> (tensor<37xf32>, tensor<37xf32>) {
  %ya = circuit.matmul %x, %a : tensor<96xf32>, tensor<37x96x!circuit.q8_0> -> tensor<37xf32>
  %yb = circuit.matmul %x, %b : tensor<96xf32>, tensor<37x96x!circuit.q4_0> -> tensor<37xf32>
  circuit.output %ya, %yb : tensor<37xf32>, tensor<37xf32>
}
