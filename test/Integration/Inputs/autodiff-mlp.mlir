// The forward graph of the autodiff integration tests: RMSNorm over rows,
// a matrix product and SiLU. `hesper-opt --circuit-autodiff` adds @f_grad,
// which the tests run on each backend against the reference interpreter.
circuit.graph @f(%x: tensor<4x64xf32> {circuit.name = "x"}, %w: tensor<64xf32> {circuit.name = "w"}, %m: tensor<32x64xf32> {circuit.name = "m"}) -> tensor<4x32xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<4x64xf32> -> tensor<4x1xf32>
  %n = circuit.map ins(%x, %ss, %w : tensor<4x64xf32>, tensor<4x1xf32>, tensor<64xf32>) -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %v: f32, %s: f32, %g: f32):
    %d = exp.constant 64.0 : f32
    %eps = exp.constant 1.0e-5 : f32
    %mean = exp.div %s, %d : f32
    %me = exp.add %mean, %eps : f32
    %r = exp.rsqrt %me : f32
    %y = exp.mul %v, %r : f32
    %o = exp.mul %y, %g : f32
    circuit.yield %o : f32
  }
  %p = circuit.matmul %n, %m : tensor<4x64xf32>, tensor<32x64xf32> -> tensor<4x32xf32>
  %a = circuit.map ins(%p : tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.silu %v : f32
    circuit.yield %s : f32
  }
  circuit.output %a : tensor<4x32xf32>
}
