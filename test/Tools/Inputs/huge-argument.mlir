// A graph whose gather table is 1099511627776x8 floats (32 TiB): it verifies
// (nothing bounds a gather source), and hesper-run must refuse it before
// allocating anything (test/Tools/sizes.test).
circuit.graph @huge(%x: tensor<1099511627776x8xf32> {circuit.name = "x"}, %i: tensor<4xi32> {circuit.name = "i"}) -> tensor<4xf32> {
  %y = circuit.gather %x ins(%i : tensor<4xi32>) : tensor<1099511627776x8xf32> -> tensor<4xf32> {
  ^bb0(%lane: i32, %v: i32):
    circuit.yield %v : i32
  }
  circuit.output %y : tensor<4xf32>
}
