// circuit.scatter_add wider than a workgroup (300 columns), 40 rows into
// 16, for the backends' kernels against the interpreter (random:N indices
// are 0..15, so rows repeat). The rows are summed in source order: row 7
// of the result is checked against a sum written out below.
//
// RUN: hesper-run %s --backend=interp --print-results --input src=linear:1,0 \
// RUN:   --input idx=linear:0,7 | FileCheck %s
// All 40 rows go to row 7: element d of row 7 is sum_s (300 s + d)
// = 234000 + 40 d; the other rows are zero.
// CHECK: result #0 (tensor<16x300xf32>): {{((0 ){100}){21}234000}} 234040 234080
circuit.graph @wide(%src: tensor<40x300xf32> {circuit.name = "src"},
                    %idx: tensor<40xi32> {circuit.name = "idx"})
    -> tensor<16x300xf32> {
  %sum = circuit.scatter_add %src, %idx
      : tensor<40x300xf32>, tensor<40xi32> -> tensor<16x300xf32>
  circuit.output %sum : tensor<16x300xf32>
}
