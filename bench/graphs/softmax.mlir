// Softmax benchmark of cpu_target.py: 64 rows of 4096 floats,
// y = exp(x - max(x)) / sum(exp(x - max(x))) per row, composed from two
// reductions and two maps; hesper-fuse decides how many kernels it takes.
circuit.graph @softmax(%x: tensor<64x4096xf32> {circuit.name = "x"})
    -> tensor<64x4096xf32> {
  %m = circuit.reduce max %x : tensor<64x4096xf32> -> tensor<64x1xf32>
  %e = circuit.map ins(%x, %m : tensor<64x4096xf32>, tensor<64x1xf32>)
      -> tensor<64x4096xf32> {
  ^bb0(%lane: i32, %v: f32, %mx: f32):
    %d = exp.sub %v, %mx : f32
    %r = exp.exp %d : f32
    circuit.yield %r : f32
  }
  %s = circuit.reduce sum %e : tensor<64x4096xf32> -> tensor<64x1xf32>
  %y = circuit.map ins(%e, %s : tensor<64x4096xf32>, tensor<64x1xf32>)
      -> tensor<64x4096xf32> {
  ^bb0(%lane: i32, %v: f32, %t: f32):
    %q = exp.div %v, %t : f32
    circuit.yield %q : f32
  }
  circuit.output %y : tensor<64x4096xf32>
}
