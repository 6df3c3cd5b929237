// A GEMM of 16 rows for tune.test: on the CPU target its knob is the rows
// of x one workgroup takes (1, 2, 4, 8 (the default) or 16).
circuit.graph @gemm(%x: tensor<16x64xf32> {circuit.name = "x"},
                    %w: tensor<32x64xf32> {circuit.name = "w"})
    -> tensor<16x32xf32> {
  %y = circuit.matmul %x, %w : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
  circuit.output %y : tensor<16x32xf32>
}
