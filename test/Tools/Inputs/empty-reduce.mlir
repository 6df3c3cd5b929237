// A reduction over an empty row (test/Tools/sizes.test).
circuit.graph @e(%x: tensor<0xf32> {circuit.name = "x"}) -> tensor<1xf32> {
  %s = circuit.reduce sum_sq %x : tensor<0xf32> -> tensor<1xf32>
  circuit.output %s : tensor<1xf32>
}
