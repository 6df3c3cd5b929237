// circuit.scatter_add sums source rows into the rows their indices name, in
// source order; a row nobody names is zero and an index out of range (-1,
// 9) adds nothing. src = 0, 1, ..., 23 (row s is 4s .. 4s+3) and indices
// 2, 0, 2, 3, -1, 9: row 0 = src row 1, row 1 = 0, row 2 = src rows 0 + 2,
// row 3 = src row 3. The second result gathers the rows of the first back
// by the same indices (GraphBuilder::gatherRows' form), zeros out of range.
//
// RUN: hesper-run %s --backend=interp --print-results \
// RUN:   --input src=linear:1,0 --input idx=values:2,0,2,3,-1,9 \
// RUN:   | FileCheck %s --check-prefix=EXACT
// EXACT: result #0 (tensor<4x4xf32>): 4 5 6 7 0 0 0 0 8 10 12 14 12 13 14 15{{$}}
// EXACT: result #1 (tensor<6x4xf32>): 8 10 12 14 4 5 6 7 8 10 12 14 12 13 14 15 0 0 0 0 0 0 0 0{{$}}
//
// --check-bounds names the first index out of range.
// RUN: not hesper-run %s --backend=interp --check-bounds \
// RUN:   --input src=linear:1,0 --input idx=values:2,0,2,3,-1,9 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BOUNDS
// BOUNDS: error: 'circuit.scatter_add' op --check-bounds: lane 4 adds into address -1, outside [0, 4)

circuit.graph @rows(%src: tensor<6x4xf32> {circuit.name = "src"},
                    %idx: tensor<6xi32> {circuit.name = "idx"})
    -> (tensor<4x4xf32>, tensor<6x4xf32>) {
  %sum = circuit.scatter_add %src, %idx
      : tensor<6x4xf32>, tensor<6xi32> -> tensor<4x4xf32>
  %back = circuit.gather %sum ins(%idx : tensor<6xi32>)
      : tensor<4x4xf32> -> tensor<6x4xf32> {
  ^bb0(%lane: i32, %all: tensor<6xi32>):
    %s = exp.div_by_const %lane, 4 : i32
    %r = circuit.extract %all[%s] : tensor<6xi32>
    %w = exp.constant 4 : i32
    %base = exp.mul %r, %w : i32
    %d = exp.rem_by_const %lane, 4 : i32
    %a = exp.add %base, %d : i32
    circuit.yield %a : i32
  }
  circuit.output %sum, %back : tensor<4x4xf32>, tensor<6x4xf32>
}
