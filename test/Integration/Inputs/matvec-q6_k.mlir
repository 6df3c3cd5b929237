// A batch of two activation rows times a [40, 512] q6_k weight (two
// super-blocks per row); see kquant.py for the inputs and expected values.
circuit.graph @matvec_q6_k(%x: tensor<2x512xf32> {circuit.name = "x"},
                         %w: tensor<40x512x!circuit.q6_k> {circuit.name = "w"})
    -> (tensor<2x40xf32> {circuit.name = "y"}) {
  %y = circuit.matmul %x, %w : tensor<2x512xf32>, tensor<40x512x!circuit.q6_k>
      -> tensor<2x40xf32>
  circuit.output %y : tensor<2x40xf32>
}
