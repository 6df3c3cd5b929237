// Matvec benchmark of cpu_target.py: y = W x with W [4096, 4096] q6_k and
// x [4096] f32 (the weights read once per step).
circuit.graph @matvec_q6_k(%x: tensor<4096xf32> {circuit.name = "x"},
                        %w: tensor<4096x4096x!circuit.q6_k> {circuit.name = "w"})
    -> tensor<4096xf32> {
  %y = circuit.matmul %x, %w : tensor<4096xf32>, tensor<4096x4096x!circuit.q6_k>
      -> tensor<4096xf32>
  circuit.output %y : tensor<4096xf32>
}
