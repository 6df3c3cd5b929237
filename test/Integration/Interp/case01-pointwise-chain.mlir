// Acceptance case 1: a pointwise chain x*2, +1, square over x[i] = i,
// n = 128, written as three maps, fuses into one kernel (one circuit.map)
// and computes out[i] = (2i + 1)^2 exactly.
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input x=iota --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input x=iota --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @chain(
// FUSED-SAME:    %[[X:[^:]*]]: tensor<128xf32>
// FUSED-NOT:     circuit.map
// FUSED:         %[[R:.*]] = circuit.map ins(%[[X]] : tensor<128xf32>) -> tensor<128xf32> {
// FUSED-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[V:.*]]: f32):
// FUSED-DAG:       %[[ONE:.*]] = exp.constant 1.000000e+00 : f32
// FUSED-DAG:       %[[TWO:.*]] = exp.constant 2.000000e+00 : f32
// FUSED:           %[[A:.*]] = exp.mul %[[V]], %[[TWO]] : f32
// FUSED-NEXT:      %[[B:.*]] = exp.add %[[A]], %[[ONE]] : f32
// FUSED-NEXT:      %[[C:.*]] = exp.mul %[[B]], %[[B]] : f32
// FUSED-NEXT:      circuit.yield %[[C]] : f32
// FUSED-NEXT:    }
// FUSED-NEXT:    circuit.output %[[R]] : tensor<128xf32>

// COUNT: graph @chain: 1 dispatches (1 map)

// VALUES: result #0 (tensor<128xf32>): 1 9 25 49 81 121 169 225 289 361 441 529 625 729 841 961 1089 1225 1369 1521 1681 1849 2025 2209 2401 2601 2809 3025 3249 3481 3721 3969 4225 4489 4761 5041 5329 5625 5929 6241 6561 6889 7225 7569 7921 8281 8649 9025 9409 9801 10201 10609 11025 11449 11881 12321 12769 13225 13689 14161 14641 15129 15625 16129 16641 17161 17689 18225 18769 19321 19881 20449 21025 21609 22201 22801 23409 24025 24649 25281 25921 26569 27225 27889 28561 29241 29929 30625 31329 32041 32761 33489 34225 34969 35721 36481 37249 38025 38809 39601 40401 41209 42025 42849 43681 44521 45369 46225 47089 47961 48841 49729 50625 51529 52441 53361 54289 55225 56169 57121 58081 59049 60025 61009 62001 63001 64009 65025{{$}}

// VALID: graph @chain: 3 -> 1 dispatches, {{.*}}: ok

circuit.graph @chain(%x: tensor<128xf32> {circuit.name = "x"})
    -> tensor<128xf32> {
  %a = circuit.map ins(%x : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %r = exp.mul %v, %two : f32
    circuit.yield %r : f32
  }
  %b = circuit.map ins(%a : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %one = exp.constant 1.0 : f32
    %r = exp.add %v, %one : f32
    circuit.yield %r : f32
  }
  %c = circuit.map ins(%b : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %r = exp.mul %v, %v : f32
    circuit.yield %r : f32
  }
  circuit.output %c : tensor<128xf32>
}
