// A q8_0 matvec for plans.test's numerically wrong plan.
circuit.graph @matvec(%x: tensor<256xf32> {circuit.name = "x"},
                      %w: tensor<64x256x!circuit.q8_0> {circuit.name = "w"})
    -> tensor<64xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<64x256x!circuit.q8_0> -> tensor<64xf32>
  circuit.output %y : tensor<64xf32>
}
