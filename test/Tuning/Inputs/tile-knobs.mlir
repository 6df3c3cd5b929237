// tile.mlir's GEMM with its knobs written in place (no plan: a
// compile-only target has no device to check a plan against).
circuit.graph @tile(%x: tensor<5x256xf32> {circuit.name = "x"},
                    %w: tensor<37x256xf32> {circuit.name = "w"})
    -> tensor<5x37xf32> {
  %y = circuit.matmul %x, %w : tensor<5x256xf32>, tensor<37x256xf32> -> tensor<5x37xf32>
      attributes {circuit.knobs = {cols = 4 : i64, rows = 2 : i64, unroll = 2 : i64, vector_width = 2 : i64}}
  circuit.output %y : tensor<5x37xf32>
}
