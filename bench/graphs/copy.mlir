// Baseline of throughput.py: y = x over 64 x 4096 floats, one plain copy
// kernel (reads 1 MiB, writes 1 MiB).
circuit.graph @copy(%x: tensor<64x4096xf32> {circuit.name = "x"})
    -> tensor<64x4096xf32> {
  %y = circuit.map ins(%x : tensor<64x4096xf32>) -> tensor<64x4096xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<64x4096xf32>
}
