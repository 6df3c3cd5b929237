// RMSNorm benchmark of throughput.py: 64 rows of 4096 floats,
// y = x * rsqrt(mean(x^2) + 1e-6) * w, composed from a reduce and two maps;
// hesper-fuse turns them into one circuit.reduce_epilogue (one kernel that
// reads x and w and writes y).
circuit.graph @rmsnorm(%x: tensor<64x4096xf32> {circuit.name = "x"},
                       %w: tensor<4096xf32> {circuit.name = "w"})
    -> tensor<64x4096xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<64x4096xf32> -> tensor<64x1xf32>
  %r = circuit.map ins(%ss : tensor<64x1xf32>) -> tensor<64x1xf32> {
  ^bb0(%row: i32, %s: f32):
    %d = exp.constant 4096.0 : f32
    %eps = exp.constant 1.0e-06 : f32
    %m = exp.div %s, %d : f32
    %me = exp.add %m, %eps : f32
    %q = exp.rsqrt %me : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r, %w
                       : tensor<64x4096xf32>, tensor<64x1xf32>, tensor<4096xf32>)
      -> tensor<64x4096xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32, %g: f32):
    %n = exp.mul %v, %rr : f32
    %o = exp.mul %n, %g : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<64x4096xf32>
}
