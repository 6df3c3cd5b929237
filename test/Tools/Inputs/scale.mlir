// y = x * 2 over 4x8 values: a small graph for hesper-run's I/O tests.
circuit.graph @scale(%x: tensor<4x8xf32> {circuit.name = "x"})
    -> (tensor<4x8xf32> {circuit.name = "y"}) {
  %y = circuit.map ins(%x : tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %r = exp.mul %v, %two : f32
    circuit.yield %r : f32
  }
  circuit.output %y : tensor<4x8xf32>
}
