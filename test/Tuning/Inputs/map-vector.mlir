// A map of two f32 inputs and an f16 one into f32, with the lane index in
// its body: the `vector_width` knob makes each GPU lane take 4 (or 2)
// consecutive elements (knobs.test).
circuit.graph @mv(%a: tensor<8x128xf32> {circuit.name = "a"},
                  %b: tensor<8x128xf32> {circuit.name = "b"},
                  %c: tensor<8x128xf16> {circuit.name = "c"})
    -> tensor<8x128xf32> {
  %r = circuit.map ins(%a, %b, %c : tensor<8x128xf32>, tensor<8x128xf32>,
                       tensor<8x128xf16>) -> tensor<8x128xf32> {
  ^bb0(%i: i32, %x: f32, %y: f32, %z: f16):
    %zf = exp.convert %z : f16 to f32
    %s = exp.mul %x, %y : f32
    %t = exp.add %s, %zf : f32
    %k = exp.convert %i : i32 to f32
    %u = exp.constant 0.001 : f32
    %ku = exp.mul %k, %u : f32
    %o = exp.add %t, %ku : f32
    circuit.yield %o : f32
  }
  circuit.output %r : tensor<8x128xf32>
}
