// Elementwise benchmark of throughput.py: y = x * 2 + 1 over 64 x 4096
// floats. Written as two maps, as a user composes it; hesper-fuse makes them
// one kernel (reads 1 MiB, writes 1 MiB, like copy.mlir).
circuit.graph @elementwise(%x: tensor<64x4096xf32> {circuit.name = "x"})
    -> tensor<64x4096xf32> {
  %t = circuit.map ins(%x : tensor<64x4096xf32>) -> tensor<64x4096xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %m = exp.mul %v, %two : f32
    circuit.yield %m : f32
  }
  %y = circuit.map ins(%t : tensor<64x4096xf32>) -> tensor<64x4096xf32> {
  ^bb0(%lane: i32, %v: f32):
    %one = exp.constant 1.0 : f32
    %a = exp.add %v, %one : f32
    circuit.yield %a : f32
  }
  circuit.output %y : tensor<64x4096xf32>
}
