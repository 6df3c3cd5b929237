// Q4_K matvec benchmark of throughput.py: y = W x with W [2048, 4096] in
// GGUF q4_k blocks (144 bytes per 256 values: 4.5 MiB) and x [4096] f32;
// the blocks are decoded in the kernel.
circuit.graph @matvec_q4_k(%x: tensor<4096xf32> {circuit.name = "x"},
                           %w: tensor<2048x4096x!circuit.q4_k> {circuit.name = "w"})
    -> tensor<2048xf32> {
  %y = circuit.matmul %x, %w : tensor<4096xf32>, tensor<2048x4096x!circuit.q4_k>
      -> tensor<2048xf32>
  circuit.output %y : tensor<2048xf32>
}
