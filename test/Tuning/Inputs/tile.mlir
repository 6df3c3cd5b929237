// A GEMM for knobs.test whose weight rows (37) no tile size divides and
// whose x rows (5) no rows knob but 1 and 5 divides: every partial tile is
// exercised.
circuit.graph @tile(%x: tensor<5x256xf32> {circuit.name = "x"},
                    %w: tensor<37x256xf32> {circuit.name = "w"})
    -> tensor<5x37xf32> {
  %y = circuit.matmul %x, %w : tensor<5x256xf32>, tensor<37x256xf32> -> tensor<5x37xf32>
  circuit.output %y : tensor<5x37xf32>
}
