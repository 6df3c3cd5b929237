// Diagnostic for throughput.py --diagnose: the first half of rmsnorm.mlir
// alone, the row-wise sum of squares of 64 x 4096 floats (reads x, writes 64
// floats), compiled to the same workgroup-per-row tree reduction.
circuit.graph @rmsnorm_reduce(%x: tensor<64x4096xf32> {circuit.name = "x"})
    -> tensor<64x1xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<64x4096xf32> -> tensor<64x1xf32>
  circuit.output %ss : tensor<64x1xf32>
}
