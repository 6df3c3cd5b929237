// Diagnostic for throughput.py --diagnose: the second half of rmsnorm.mlir
// alone, y = x * w with the 4096-float weight broadcast over 64 rows (reads x
// and w, writes y), without the reduction.
circuit.graph @rmsnorm_scale(%x: tensor<64x4096xf32> {circuit.name = "x"},
                             %w: tensor<4096xf32> {circuit.name = "w"})
    -> tensor<64x4096xf32> {
  %y = circuit.map ins(%x, %w : tensor<64x4096xf32>, tensor<4096xf32>)
      -> tensor<64x4096xf32> {
  ^bb0(%lane: i32, %v: f32, %g: f32):
    %o = exp.mul %v, %g : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<64x4096xf32>
}
