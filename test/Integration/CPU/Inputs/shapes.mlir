// Shapes for the CPU target's partition of work: element counts that no
// vector width divides, a row of length 1, more workgroups than threads by
// far and fewer than the threads, a K no vector width divides, and a
// matmul of one output row with 13 rows of x (one partial block of 8).

circuit.graph @one(%x: tensor<1xf32> {circuit.name = "x"}) -> tensor<1xf32> {
  %y = circuit.map ins(%x : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %v: f32):
    %t = exp.tanh %v : f32
    circuit.yield %t : f32
  }
  circuit.output %y : tensor<1xf32>
}

// -----

circuit.graph @many(%x: tensor<100003xf32> {circuit.name = "x"})
    -> tensor<100003xf32> {
  %y = circuit.map ins(%x : tensor<100003xf32>) -> tensor<100003xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    %l = exp.convert %lane : i32 to f32
    %o = exp.add %e, %l : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<100003xf32>
}

// -----

circuit.graph @rows_of_one(%x: tensor<37x1xf32> {circuit.name = "x"})
    -> tensor<37x1xf32> {
  %s = circuit.reduce sum_sq %x : tensor<37x1xf32> -> tensor<37x1xf32>
  circuit.output %s : tensor<37x1xf32>
}

// -----

circuit.graph @long_rows(%x: tensor<3x1001xf32> {circuit.name = "x"})
    -> tensor<3x1xf32> {
  %s = circuit.reduce max %x : tensor<3x1001xf32> -> tensor<3x1xf32>
  circuit.output %s : tensor<3x1xf32>
}

// -----

circuit.graph @odd_matmul(%x: tensor<13x19xf32> {circuit.name = "x"},
                          %w: tensor<1x19xf32> {circuit.name = "w"})
    -> tensor<13x1xf32> {
  %y = circuit.matmul %x, %w : tensor<13x19xf32>, tensor<1x19xf32>
      -> tensor<13x1xf32>
  circuit.output %y : tensor<13x1xf32>
}
