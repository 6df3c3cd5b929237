// A subgroup reduction in a map whose size is not a multiple of 32: the last
// subgroup would be partial, and lanes past the end would join it with
// clamped values where exp.subgroup_reduce means only the active lanes (the
// interpreter gives 4 for lanes 32-35 of 36 ones on subgroups of 8). The
// lowering refuses it rather than compute something else.
//
// RUN: hesper-opt %s --convert-circuit-to-shaderm -verify-diagnostics
// RUN: %if vulkan %{ not hesper-run %s --backend=vulkan --input x=const:1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RUN-ERR %}
// RUN-ERR: error: 'circuit.map' op has subgroup operations in its body over 36 lanes; convert-circuit-to-shaderm needs a multiple of 32 lanes so that every subgroup is full

circuit.graph @warp(%x: tensor<36xf32> {circuit.name = "x"}) -> tensor<36xf32> {
  // expected-error @+1 {{has subgroup operations in its body over 36 lanes}}
  %y = circuit.map ins(%x : tensor<36xf32>) -> tensor<36xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.subgroup_reduce sum %v : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<36xf32>
}
