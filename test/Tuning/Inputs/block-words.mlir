// q8_0, q4_0 and q4_k matvecs of 256 values (every other q8_0 block
// starts mid-word) and 37 weight rows, for the `block_words` knob.
circuit.graph @bw(%x: tensor<256xf32> {circuit.name = "x"},
                  %a: tensor<37x256x!circuit.q8_0> {circuit.name = "a"},
                  %b: tensor<37x256x!circuit.q4_0> {circuit.name = "b"},
                  %c: tensor<37x256x!circuit.q4_k> {circuit.name = "c"})
    -> (tensor<37xf32>, tensor<37xf32>, tensor<37xf32>) {
  %ya = circuit.matmul %x, %a : tensor<256xf32>, tensor<37x256x!circuit.q8_0> -> tensor<37xf32>
  %yb = circuit.matmul %x, %b : tensor<256xf32>, tensor<37x256x!circuit.q4_0> -> tensor<37xf32>
  %yc = circuit.matmul %x, %c : tensor<256xf32>, tensor<37x256x!circuit.q4_k> -> tensor<37xf32>
  circuit.output %ya, %yb, %yc : tensor<37xf32>, tensor<37xf32>, tensor<37xf32>
}
