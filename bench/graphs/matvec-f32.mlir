// f32 matvec benchmark of throughput.py: y = W x with W [512, 4096] f32
// (8 MiB, read once) and x [4096]; one circuit.matmul, one kernel.
circuit.graph @matvec_f32(%x: tensor<4096xf32> {circuit.name = "x"},
                          %w: tensor<512x4096xf32> {circuit.name = "w"})
    -> tensor<512xf32> {
  %y = circuit.matmul %x, %w : tensor<4096xf32>, tensor<512x4096xf32>
      -> tensor<512xf32>
  circuit.output %y : tensor<512xf32>
}
