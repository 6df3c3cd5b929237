// LayerNorm over one row of 771 values (two passes: the mean, then the mean
// of squared deviations), the oracle-accuracy case of check-accuracy.test.
circuit.graph @layernorm(%x: tensor<771xf32> {circuit.name = "x"})
    -> tensor<771xf32> {
  %sum = circuit.reduce sum %x : tensor<771xf32> -> tensor<1xf32>
  %mean = circuit.map ins(%sum : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %s: f32):
    %n = exp.constant 771.0 : f32
    %m = exp.div %s, %n : f32
    circuit.yield %m : f32
  }
  %dev = circuit.map ins(%x, %mean : tensor<771xf32>, tensor<1xf32>)
      -> tensor<771xf32> {
  ^bb0(%lane: i32, %v: f32, %m: f32):
    %d = exp.sub %v, %m : f32
    circuit.yield %d : f32
  }
  %ss = circuit.reduce sum_sq %dev : tensor<771xf32> -> tensor<1xf32>
  %rstd = circuit.map ins(%ss : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %s: f32):
    %n = exp.constant 771.0 : f32
    %eps = exp.constant 1.0e-05 : f32
    %var = exp.div %s, %n : f32
    %ve = exp.add %var, %eps : f32
    %r = exp.rsqrt %ve : f32
    circuit.yield %r : f32
  }
  %y = circuit.map ins(%dev, %rstd : tensor<771xf32>, tensor<1xf32>)
      -> tensor<771xf32> {
  ^bb0(%lane: i32, %d: f32, %r: f32):
    %o = exp.mul %d, %r : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<771xf32>
}
