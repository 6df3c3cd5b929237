// Lanes of a row reduction that get no element (rows shorter than the
// workgroup) must contribute the identity. With rows of 16 on 32 lanes and
// every value negative, the row max is the largest value, not 0. (In SPIR-V
// a zero-trip scf.for must still yield its initial value.)
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --check --print-results \
// RUN:   --input m=linear:-0.1,-5 | FileCheck %s
// CHECK: check against the interpreter: max error 0: ok
// CHECK: result #0 (tensor<2x1xf32>): -5 -6.6{{$}}

circuit.graph @row_max(%m: tensor<2x16xf32> {circuit.name = "m"})
    -> tensor<2x1xf32> {
  %mx = circuit.reduce max %m : tensor<2x16xf32> -> tensor<2x1xf32>
  circuit.output %mx : tensor<2x1xf32>
}
